"""Gate 1, static: the source is what it claims to be and reaches for nothing it has no business with.

Checked without running anything (the sources are parsed, never imported here):

- a ``triton`` solution defines a ``@triton.jit`` kernel and launches it (``kernel[grid](...)``);
  a ``cuda`` solution has a ``__global__`` kernel that some source launches (``<<<`` or
  ``cudaLaunchKernel``; with ``binding = "kernelcraft"``, ``kernels.NAME`` in a Python source);
- every source is a file the gate reads: ``.py`` only in a python/triton solution (a data file
  there could only be run by something the gate cannot see, like ``runpy``), ``.py`` and C/C++/CUDA
  sources and headers in a cuda/cpp one;
- Python sources are read as the importer reads them (UTF-8 bytes; another coding cookie is
  ``[encoding]``), import no module that reaches outside the kernel (threads, processes, files,
  sockets, timers, foreign functions, code from strings, the harness itself), import no forbidden
  *name* from a library (``from torch import sys``), refer to no dynamic-code builtin (a reference
  is enough: ``ex = exec``), use no introspection escape hatch (``__builtins__``, ``__dict__``,
  ``__globals__``, frames, ``getattr`` with a computed name, private library names), reseed or
  read no generator, and assign no attribute of an imported module (monkeypatching torch or
  triton); :mod:`kernelcraft.gauntlet.static_python` has the rules;
- C/C++/CUDA sources, raw and as the preprocessor expands them, create no CUDA streams, synchronize
  no device (work left on another stream would escape the timer; a task whose contract says
  ``[integrity] allow_device_sync`` allows ``cudaDeviceSynchronize``), set no L2 persistence policy,
  start no threads or processes, drive no profiler, and call no Python C-API;
  :mod:`kernelcraft.gauntlet.static_cxx` has the rules.

Every finding starts with the integrity class it belongs to (``[harness-tamper]``, ``[threads]``,
``[escaped-timer]``, ``[seed-replay]``, ``[l2-persistence]``, ``[torch-compute]``, ``[encoding]``),
as the run-time gates' reasons do.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelcraft.gauntlet.static_cxx import CXX_SUFFIXES, DEVICE_SYNC, cxx_findings
from kernelcraft.gauntlet.static_cxx import RULES as CXX_RULES
from kernelcraft.gauntlet.static_python import (
    FORBIDDEN_ATTRS,
    FORBIDDEN_CALLS,
    FORBIDDEN_MODULES,
    FORBIDDEN_NAMES,
    parse_source,
    python_findings,
)
from kernelcraft.solution.model import Solution

__all__ = ["CXX_RULES", "FORBIDDEN_ATTRS", "FORBIDDEN_CALLS", "FORBIDDEN_MODULES", "FORBIDDEN_NAMES",
           "StaticVerdict", "check_static"]

@dataclass
class StaticVerdict:
    passed: bool
    reason: str = ""


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


def _kind_findings(solution: Solution) -> list[str]:
    lang = solution.spec.language
    found = []
    for s in solution.sources:
        if lang in ("python", "triton") and not s.path.endswith(".py"):
            found.append(f"[harness-tamper] {s.path}: a {lang} solution's sources must all be Python (.py) files "
                         "the static gate reads; anything else could only be run by a route the gate cannot "
                         "follow (runpy, exec, a loader): inline it into a .py source or drop it")
        elif lang in ("cuda", "cpp") and not s.path.endswith((".py", *CXX_SUFFIXES)):
            found.append(f"[harness-tamper] {s.path}: not a source the static gate reads (a {lang} solution holds "
                         f".py and C/C++/CUDA files: {', '.join(CXX_SUFFIXES)}); drop it or rename it")
    return found


def allowed_groups(contract) -> frozenset[str]:
    """The C/C++ rule groups a task's contract lets its solutions use (``[integrity] allow_device_sync``)."""
    return frozenset({DEVICE_SYNC}) if contract is not None and contract.integrity.allow_device_sync else frozenset()


def check_static(solution: Solution, allow: frozenset[str] = frozenset()) -> StaticVerdict:
    """``allow``: C/C++ rule groups to leave out (:func:`allowed_groups` of the task's contract)."""
    lang = solution.spec.language
    findings: list[str] = _kind_findings(solution)
    trees: dict[str, ast.Module] = {}
    unparsable = False
    for s in solution.sources:
        if s.path.endswith(".py"):
            tree, problems = parse_source(s.path, s.content)
            findings += problems
            if tree is None:
                unparsable = True  # a syntax error: the build gate reports it, with the importer's message
            else:
                trees[s.path] = tree
    cxx_sources = [s for s in solution.sources if not s.path.endswith(".py")]
    # the solution's own modules, which its sources may import by absolute name (`helpers.py`, `pkg/__init__.py`)
    own = frozenset(p.split("/")[0].removesuffix(".py") for p in trees)
    for path, tree in trees.items():
        findings += python_findings(path, tree, own)
    findings += cxx_findings(solution, allow)
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
