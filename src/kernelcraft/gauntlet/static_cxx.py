"""The static gate's C/C++/CUDA rules, applied to the raw text and to what the compiler will see.

A regex over the raw text misses what macros build: ``#define CAT(a, b) a##b`` then
``CAT(cudaStream, Create)`` creates a stream without the name ever being written. So the rules are
also applied to the preprocessor's expansion of the solution's own lines
(:mod:`kernelcraft.gauntlet.preprocess`), and the headers they include are checked too.

Rules are grouped so that a contract option can allow a group: ``[integrity] allow_device_sync``
leaves out ``device-sync`` (FlashInfer-Trace CUDA solutions call ``cudaDeviceSynchronize``; a
device-wide sync inside the call lets no work escape the timer, it only costs the candidate time).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kernelcraft.gauntlet.preprocess import INCLUDE, UNIT_SUFFIXES, expand
from kernelcraft.solution.model import Solution

HEADER_SUFFIXES = (".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".ipp", ".tcc")
CXX_SUFFIXES = UNIT_SUFFIXES + HEADER_SUFFIXES
DEVICE_SYNC = "device-sync"


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern
    cls: str
    why: str
    group: str = "core"


def _rule(pattern: str, cls: str, why: str, group: str = "core") -> Rule:
    return Rule(re.compile(pattern), cls, why, group)


_OTHER_STREAM = "launches work on a stream other than the timed one"
RULES = [
    _rule(r"\bcudaStreamCreate\w*", "escaped-timer", "creates a CUDA stream"),
    _rule(r"\bcuStreamCreate\w*", "escaped-timer", "creates a CUDA stream"),
    _rule(r"\bgetStreamFromPool\b", "escaped-timer", "takes another CUDA stream"),
    _rule(r"\bgetStreamFromExternal\b", "escaped-timer", "uses another CUDA stream"),
    _rule(r"\b(?:cudaStreamPerThread|cudaStreamLegacy|CU_STREAM_PER_THREAD|CU_STREAM_LEGACY)\b", "escaped-timer", _OTHER_STREAM),
    _rule(r"\bcudaDeviceSynchronize\b", "escaped-timer", "synchronizes the device", DEVICE_SYNC),
    _rule(r"\bcuCtxSynchronize\b", "escaped-timer", "synchronizes the device", DEVICE_SYNC),
    _rule(r"\b(?:c10::cuda::device_synchronize|torch::cuda::synchronize)\b", "escaped-timer",
          "synchronizes the device", DEVICE_SYNC),
    _rule(r"\bstd::thread\b", "threads", "starts threads"), _rule(r"\bpthread_create\b", "threads", "starts threads"),
    _rule(r"\bstd::(?:jthread|async)\b", "threads", "starts threads"),
    _rule(r"\bfork\s*\(", "threads", "starts processes"),
    _rule(r"\bfopen\s*\(", "harness-tamper", "opens files"), _rule(r"\bsystem\s*\(", "harness-tamper", "runs commands"),
    _rule(r"\bstd::[io]?fstream\b", "harness-tamper", "opens files"),
    _rule(r"\bpopen\s*\(|\bexec[lv]p?e?\s*\(|\bposix_spawnp?\b", "harness-tamper", "runs commands"),
    _rule(r"\bdlopen\s*\(|\bdlsym\s*\(", "harness-tamper", "loads code the gate cannot read"),
    _rule(r"\bcu(?:Module|Library)Load\w*|\bcudaLibraryLoad\w*", "harness-tamper", "loads code the gate cannot read"),
    _rule(r"\bcudaGetDriverEntryPoint\w*|\bcuGetProcAddress\w*", "harness-tamper",
          "looks driver functions up by name, past the gate's name rules"),
    _rule(r"\bcudaDeviceReset\b", "harness-tamper", "resets the device under the harness"),
    _rule(r"\bstd::chrono::|\bclock_gettime\s*\(|\bgettimeofday\s*\(", "harness-tamper", "reads a host clock"),
    _rule(r"\b(?:cudaProfilerStart|cudaProfilerStop|cuProfilerStart|cuProfilerStop)\b|\bcupti[A-Z]\w*",
          "harness-tamper", "drives the profiler (its range bounds what ncu measures)", "profiler"),
    _rule(r"\b(cudaLimitPersistingL2CacheSize|accessPolicyWindow|cudaStreamAttributeAccessPolicyWindow|"
          r"cudaAccessPropertyPersisting|cudaCtxResetPersistingL2Cache)\b",
          "l2-persistence", "sets an L2 persistence policy (a carve-out that survives the timer's L2 flush)"),
    # The Python C-API from host code reaches the interpreter (and through it the harness) past the
    # Python rules. A torch binding's PYBIND11_MODULE expands to PyInit_*, PyModuleDef*,
    # Py_GetVersion and PyErr_Format only; none of these families.
    _rule(r"\bPy(?:Run|Import|Eval|Sys|Code|Frame|Marshal|ThreadState|InterpreterState|CFunction_Call)_\w+|"
          r"\bPy_(?:Initialize\w*|Finalize\w*|Main|BytesMain|RunMain|NewInterpreter|EndInterpreter|"
          r"CompileString\w*|SetProgramName)\b|"
          r"\bPyObject_(?:Call\w*|Vectorcall\w*|GetAttr\w*|SetAttr\w*|DelAttr\w*|GenericSetAttr)\b|"
          r"\bPyModule_GetDict\b|\bPyVectorcall_\w+",
          "harness-tamper", "calls the Python C-API (reaches the interpreter past the Python rules)", "python-c-api"),
    _rule(r"\b(?:py|pybind11)::(?:exec|eval|eval_file|globals|module_?::import|getattr|setattr|delattr)\b|"
          r"\bmodule_?::import\b|\beval_file\b|"
          r"\.attr\s*\(\s*\"__(?:globals|builtins|dict|subclasses|code|closure|import|self|getattribute|setattr)__\"",
          "harness-tamper", "runs Python from C++ (pybind11's interpreter API)", "python-c-api"),
]
# Headers a solution's own files may not include: the Python interpreter's (what a torch binding
# needs comes through <torch/extension.h>) and pybind11's embedding API.
FORBIDDEN_HEADERS = {
    "Python.h": "the Python C-API", "frameobject.h": "the Python C-API", "pybind11/embed.h": "pybind11's interpreter API",
    "pybind11/eval.h": "pybind11's interpreter API", "thread": "threads", "pthread.h": "threads", "future": "threads",
    "dlfcn.h": "dynamic loading", "cupti.h": "the profiler",
}
_HEADER_CLASS = {"threads": "threads"}



def cxx_findings(solution: Solution, allow: frozenset[str] = frozenset()) -> list[str]:
    """Findings over every non-Python source: raw text always, the expansion where it can be made.

    ``allow`` names rule groups to leave out (``device-sync`` where the contract allows it)."""
    sources = [s for s in solution.sources if not s.path.endswith(".py")]
    rules = [r for r in RULES if r.group not in allow]
    found: list[str] = []
    raw_hits: dict[str, set[int]] = {}
    raw_headers: set[tuple[str, str]] = set()  # (file, header) already found in the raw text
    for s in sources:
        hits = raw_hits.setdefault(s.path, set())
        for i, r in enumerate(rules):
            hit = _search_logical_lines(r.pattern, s.content)
            if hit:
                line, text = hit
                hits.add(i)
                found.append(f"[{r.cls}] {s.path}:{line}: {r.why} ({text})")
        for line, header in _raw_includes(s.content):
            name = _forbidden_header(header)
            if name:
                raw_headers.add((s.path, name))
                found.append(_header_finding(s.path, line, name))
    if solution.spec.language in ("cuda", "cpp") and any(s.path.endswith(UNIT_SUFFIXES) for s in sources):
        exp = expand(solution)
        for path, lines in exp.lines.items():
            for i, r in enumerate(rules):
                if i in raw_hits.get(path, ()):
                    continue
                for line, text in lines:
                    m = r.pattern.search(text)
                    if m:
                        found.append(f"[{r.cls}] {path}:{line}: {r.why} ({m.group(0).strip()}, after macro expansion)")
                        break
        for path, incs in exp.includes.items():
            for line, header in sorted(incs):
                name = _forbidden_header(header)
                if name and (path, name) not in raw_headers:
                    found.append(_header_finding(path, line, name, expanded=True))
    return list(dict.fromkeys(found))


def _forbidden_header(header: str) -> str | None:
    """The FORBIDDEN_HEADERS name an include spelling or path stands for, if any."""
    return next((name for name in FORBIDDEN_HEADERS if header == name or header.endswith("/" + name)), None)


def _header_finding(path: str, line: int, name: str, expanded: bool = False) -> str:
    why = FORBIDDEN_HEADERS[name]
    how = " (found by the preprocessor)" if expanded else ""
    return f"[{_HEADER_CLASS.get(why, 'harness-tamper')}] {path}:{line}: includes <{name}> ({why}){how}"


def _logical_lines(text: str):
    """(first physical line, logical line) with backslash-newline splices joined, as the compiler does."""
    start, buf = 1, ""
    for i, phys in enumerate(text.split("\n"), 1):
        if phys.endswith("\\"):
            if not buf:
                start = i
            buf += phys[:-1]
            continue
        yield (start if buf else i), buf + phys
        buf = ""
    if buf:
        yield start, buf


def _search_logical_lines(pattern: re.Pattern, text: str) -> tuple[int, str] | None:
    for line, logical in _logical_lines(text):
        m = pattern.search(_squash(logical))
        if m:
            return line, m.group(0).strip()
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s*::\s*", "::", text)




def _raw_includes(text: str):
    for line, logical in _logical_lines(text):
        m = INCLUDE.match(logical)
        if m:
            yield line, m.group(1).strip()
