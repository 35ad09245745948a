"""Gate 1, static: the source is what it claims to be and reaches for nothing it has no business with.

Checked without running anything (the sources are parsed, never imported here):

- a ``triton`` solution defines a ``@triton.jit`` kernel and launches it (``kernel[grid](...)``);
  a ``cuda`` solution has a ``__global__`` kernel that some source launches (``<<<`` or
  ``cudaLaunchKernel``; with ``binding = "kernelcraft"``, ``kernels.NAME`` in a Python source);
- Python sources import no module that reaches outside the kernel (threads, processes, files,
  sockets, timers, foreign functions, the harness itself), call no dynamic-code builtins, use no
  introspection escape hatch (``__builtins__``, ``__dict__``, ``__globals__``, frames,
  ``getattr`` with a computed name), reseed or read no generator, and assign no attribute of an
  imported module (monkeypatching torch or triton);
- no source creates its own CUDA streams or synchronizes the device (work left on another stream
  would escape the timer) or sets an L2 persistence policy.

Every finding starts with the integrity class it belongs to (``[harness-tamper]``, ``[threads]``,
``[escaped-timer]``, ``[seed-replay]``, ``[l2-persistence]``), as the run-time gates' reasons do.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelcraft.solution.model import Solution

# module -> (integrity class, what it reaches). Honest kernels need none of these.
FORBIDDEN_MODULES = {
    "threading": ("threads", "threads"), "_thread": ("threads", "threads"),
    "concurrent": ("threads", "threads"), "multiprocessing": ("threads", "processes"),
    "subprocess": ("harness-tamper", "processes"), "asyncio": ("threads", "an event loop"),
    "socket": ("harness-tamper", "the network"), "ctypes": ("harness-tamper", "foreign functions"),
    "cffi": ("harness-tamper", "foreign functions"), "signal": ("harness-tamper", "signal handlers"),
    "time": ("harness-tamper", "timers"), "timeit": ("harness-tamper", "timers"),
    "kernelcraft": ("harness-tamper", "the harness"), "inspect": ("harness-tamper", "stack inspection"),
    "gc": ("harness-tamper", "the garbage collector"), "importlib": ("harness-tamper", "dynamic imports"),
    "builtins": ("harness-tamper", "builtins"), "pickle": ("harness-tamper", "pickling"),
    "shutil": ("harness-tamper", "files"), "tempfile": ("harness-tamper", "files"),
    "pathlib": ("harness-tamper", "files"), "io": ("harness-tamper", "files"),
    "os": ("harness-tamper", "the operating system"), "atexit": ("harness-tamper", "exit hooks"),
    "faulthandler": ("harness-tamper", "fault handlers"),
    "sys": ("harness-tamper", "the interpreter's internals (sys.modules reaches the harness)"),
    "operator": ("harness-tamper", "attribute access by computed names"),
    "random": ("seed-replay", "a random generator"),
}
FORBIDDEN_CALLS = {
    "open": "harness-tamper", "exec": "harness-tamper", "eval": "harness-tamper", "compile": "harness-tamper",
    "__import__": "harness-tamper", "globals": "harness-tamper", "locals": "harness-tamper",
    "vars": "harness-tamper", "breakpoint": "harness-tamper", "input": "harness-tamper",
    "setattr": "harness-tamper", "delattr": "harness-tamper",
}
# attribute -> (class, why)
FORBIDDEN_ATTRS = {
    "Stream": ("escaped-timer", "creates a CUDA stream"), "set_stream": ("escaped-timer", "switches streams"),
    "stream": ("escaped-timer", "switches streams"), "synchronize": ("escaped-timer", "synchronizes the device"),
    "ExternalStream": ("escaped-timer", "uses another CUDA stream"),
    "_C": ("harness-tamper", "reaches into torch internals"),
    "set_default_device": ("harness-tamper", "changes global torch state"),
    "cpp_extension": ("harness-tamper", "compiles C++ at run time, past the static gate"),
    "load_inline": ("harness-tamper", "compiles C++ at run time, past the static gate"),
    "manual_seed": ("seed-replay", "reseeds a generator"), "initial_seed": ("seed-replay", "reads the seed"),
    "seed": ("seed-replay", "reseeds the generator"), "get_rng_state": ("seed-replay", "reads generator state"),
    "set_rng_state": ("seed-replay", "sets generator state"),
    "is_current_stream_capturing": ("harness-tamper", "behaves differently under the timer's graph capture"),
    "__builtins__": ("harness-tamper", "reaches builtins by name"), "__dict__": ("harness-tamper", "reads namespaces"),
    "__globals__": ("harness-tamper", "reads another function's globals"),
    "__subclasses__": ("harness-tamper", "walks the class tree"), "__code__": ("harness-tamper", "rewrites code"),
    "__closure__": ("harness-tamper", "reads closures"), "f_back": ("harness-tamper", "walks stack frames"),
    "f_globals": ("harness-tamper", "walks stack frames"), "f_locals": ("harness-tamper", "walks stack frames"),
    "gi_frame": ("harness-tamper", "walks stack frames"), "tb_frame": ("harness-tamper", "walks stack frames"),
}
FORBIDDEN_NAMES = {"__builtins__": ("harness-tamper", "reaches builtins by name")}
CUDA_FORBIDDEN = {
    r"\bcudaStreamCreate": ("escaped-timer", "creates a CUDA stream"),
    r"\bgetStreamFromPool\b": ("escaped-timer", "takes another CUDA stream"),
    r"\bcudaDeviceSynchronize\b": ("escaped-timer", "synchronizes the device"),
    r"\bstd::thread\b": ("threads", "starts threads"), r"\bpthread_create\b": ("threads", "starts threads"),
    r"\bfopen\s*\(": ("harness-tamper", "opens files"), r"\bsystem\s*\(": ("harness-tamper", "runs commands"),
    r"\b(cudaLimitPersistingL2CacheSize|accessPolicyWindow|cudaStreamAttributeAccessPolicyWindow|"
    r"cudaAccessPropertyPersisting|cudaCtxResetPersistingL2Cache)\b": (
        "l2-persistence", "sets an L2 persistence policy (a carve-out that survives the timer's L2 flush)"),
}


@dataclass
class StaticVerdict:
    passed: bool
    reason: str = ""


def _python_findings(path: str, tree: ast.Module) -> list[str]:
    found = []
    modules: set[str] = set()  # names bound to imported modules: assigning their attributes patches them
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.Import):
                modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
            for m in mods:
                top = m.split(".")[0]
                if top in FORBIDDEN_MODULES:
                    cls, why = FORBIDDEN_MODULES[top]
                    found.append(f"[{cls}] {path}:{node.lineno}: imports {m!r} ({why})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in FORBIDDEN_CALLS:
                found.append(f"[{FORBIDDEN_CALLS[name]}] {path}:{node.lineno}: calls {name}()")
            elif name == "getattr" and len(node.args) >= 2:
                attr = node.args[1]
                if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                    found.append(f"[harness-tamper] {path}:{node.lineno}: getattr() with a computed name")
                elif attr.value in FORBIDDEN_ATTRS:
                    cls, why = FORBIDDEN_ATTRS[attr.value]
                    found.append(f"[{cls}] {path}:{node.lineno}: getattr(..., {attr.value!r}) ({why})")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            cls, why = FORBIDDEN_ATTRS[node.attr]
            found.append(f"[{cls}] {path}:{node.lineno}: uses .{node.attr} ({why})")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            cls, why = FORBIDDEN_NAMES[node.id]
            found.append(f"[{cls}] {path}:{node.lineno}: uses {node.id} ({why})")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for t in targets:
                root = t
                while isinstance(root, ast.Attribute | ast.Subscript):
                    root = root.value
                if isinstance(t, ast.Attribute) and isinstance(root, ast.Name) and root.id in modules:
                    found.append(f"[harness-tamper] {path}:{node.lineno}: assigns {ast.unparse(t)} "
                                 "(patches a library the harness relies on)")
    return found


def _triton_kernels(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names of @triton.jit functions, and names used as ``name[...](...)`` launches."""
    kernels, launched = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(target) in ("triton.jit", "jit", "triton.autotune", "autotune", "triton.heuristics"):
                    kernels.add(node.name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name):
            launched.add(node.func.value.id)
    return kernels, launched


def check_static(solution: Solution) -> StaticVerdict:
    lang = solution.spec.language
    findings: list[str] = []
    trees: dict[str, ast.Module] = {}
    unparsable = False
    for s in solution.sources:
        if s.path.endswith(".py"):
            try:
                trees[s.path] = ast.parse(s.content, filename=s.path)
            except SyntaxError:
                # The build gate reports it, with the importer's own message and line.
                unparsable = True
    cxx_sources = [s for s in solution.sources if not s.path.endswith(".py")]
    for path, tree in trees.items():
        findings += _python_findings(path, tree)
    for s in cxx_sources:
        for pattern, (cls, why) in CUDA_FORBIDDEN.items():
            m = re.search(pattern, s.content)
            if m:
                line = s.content[: m.start()].count("\n") + 1
                findings.append(f"[{cls}] {s.path}:{line}: {why} ({m.group(0).strip()})")
    if lang == "triton" and not unparsable:
        kernels, launched = set(), set()
        for tree in trees.values():
            k, la = _triton_kernels(tree)
            kernels |= k
            launched |= la
        if not kernels:
            findings.append("language is triton but no source defines a @triton.jit kernel")
        elif not kernels & launched:
            findings.append(f"@triton.jit kernels {sorted(kernels)} are defined but never launched as kernel[grid](...)")
    if lang == "cuda":
        text = "\n".join(s.content for s in cxx_sources)
        if "__global__" not in text:
            findings.append("language is cuda but no source defines a __global__ kernel")
        elif solution.spec.binding == "kernelcraft":
            from kernelcraft.solution.cubin import launch_findings

            if not unparsable:  # the build gate reports the syntax error, with its line
                findings += launch_findings(text, trees)
        elif "<<<" not in text and "cudaLaunchKernel" not in text and "cuLaunchKernel" not in text:
            findings.append("a __global__ kernel is defined but never launched (no <<<...>>> or cudaLaunchKernel)")
    if findings:
        return StaticVerdict(False, "; ".join(findings[:8]) + (f"; and {len(findings) - 8} more" if len(findings) > 8 else ""))
    return StaticVerdict(True)
