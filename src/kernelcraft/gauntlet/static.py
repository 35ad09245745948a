"""Gate 1, static: the source is what it claims to be and reaches for nothing it has no business with.

Checked without running anything (the sources are parsed, never imported here):

- a ``triton`` solution defines a ``@triton.jit`` kernel and launches it (``kernel[grid](...)``);
  a ``cuda`` solution has a ``__global__`` kernel that some source launches (``<<<`` or
  ``cudaLaunchKernel``);
- Python sources import no module that reaches outside the kernel (threads, processes, files,
  sockets, timers, foreign functions, the harness itself) and call no dynamic-code builtins;
- no source creates its own CUDA streams or synchronizes the device (work left on another stream
  would escape the timer).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelcraft.solution.model import Solution

FORBIDDEN_MODULES = {
    "threading": "threads", "_thread": "threads", "multiprocessing": "processes", "concurrent": "threads",
    "subprocess": "processes", "asyncio": "an event loop", "socket": "the network", "ctypes": "foreign functions",
    "cffi": "foreign functions", "signal": "signal handlers", "time": "timers", "timeit": "timers",
    "kernelcraft": "the harness", "inspect": "stack inspection", "gc": "the garbage collector",
    "importlib": "dynamic imports", "builtins": "builtins", "pickle": "pickling", "shutil": "files",
    "tempfile": "files", "pathlib": "files", "io": "files",
    "os": "the operating system", "atexit": "exit hooks", "faulthandler": "fault handlers",
}
FORBIDDEN_CALLS = {"open", "exec", "eval", "compile", "__import__", "globals", "breakpoint", "input"}
FORBIDDEN_ATTRS = {
    "Stream": "creates a CUDA stream", "set_stream": "switches streams", "stream": "switches streams",
    "synchronize": "synchronizes the device", "_C": "reaches into torch internals",
    "set_default_device": "changes global torch state", "manual_seed": "reseeds the generator",
}
CUDA_FORBIDDEN = {
    r"\bcudaStreamCreate": "creates a CUDA stream", r"\bcudaDeviceSynchronize\b": "synchronizes the device",
    r"\bstd::thread\b": "starts threads", r"\bfopen\s*\(": "opens files", r"\bsystem\s*\(": "runs commands",
    r"\bpthread_create\b": "starts threads",
}


@dataclass
class StaticVerdict:
    passed: bool
    reason: str = ""


def _python_findings(path: str, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for m in mods:
                top = m.split(".")[0]
                if top in FORBIDDEN_MODULES:
                    found.append(f"{path}:{node.lineno}: imports {m!r} ({FORBIDDEN_MODULES[top]})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            found.append(f"{path}:{node.lineno}: calls {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            found.append(f"{path}:{node.lineno}: uses .{node.attr} ({FORBIDDEN_ATTRS[node.attr]})")
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
        for pattern, why in CUDA_FORBIDDEN.items():
            m = re.search(pattern, s.content)
            if m:
                line = s.content[: m.start()].count("\n") + 1
                findings.append(f"{s.path}:{line}: {why} ({m.group(0).strip()})")
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
        elif "<<<" not in text and "cudaLaunchKernel" not in text and "cuLaunchKernel" not in text:
            findings.append("a __global__ kernel is defined but never launched (no <<<...>>> or cudaLaunchKernel)")
    if findings:
        return StaticVerdict(False, "; ".join(findings[:8]) + (f"; and {len(findings) - 8} more" if len(findings) > 8 else ""))
    return StaticVerdict(True)
