"""The static gate's Python rules: a source is read as the import system will read it, then its
imports, names and attribute chains are checked against what an honest kernel never needs.

What is checked, beyond the imports themselves (:mod:`kernelcraft.gauntlet.static` lists the gate):

- bytes, not text: a source is the UTF-8 its file will hold; a coding cookie naming anything else is
  refused (``# coding: raw_unicode_escape`` makes ``\\u000a`` in a comment a line break for the
  importer, so code the gate read as a comment would run), and the tree is parsed from those bytes;
- every imported *name* (``from torch import sys``, ``from torch.cuda import Stream``), every
  module path component (``torch._C``, ``torch.utils.cpp_extension``), star imports;
- every *reference* to a dynamic-code builtin (``ex = exec`` is as bad as ``exec(...)``), unless a
  function binds the name itself (a parameter called ``input`` is not the builtin);
- attribute chains qualified through the imports and simple aliases (``lib = torch``): names on
  :data:`FORBIDDEN_QUALIFIED`, private names of a library (``torch._dynamo``), and, for torch,
  triton and numpy, what the chain really is (``torch.os`` is the module ``os``; an alias of
  ``torch.load`` under another name is still ``torch.load``);
- the modules of torch, triton and numpy a name reaches: an allowlist (:data:`MODULES_ALLOWED`,
  :data:`MODULE_TREES_ALLOWED`), the backstop behind the denylist's specific reasons;
- a module object passed around as a value (into a list, a call, a default), past which no
  qualified name can be followed; format templates whose fields walk attributes.
"""

from __future__ import annotations

import ast
import codecs
import importlib
import importlib.machinery
import io
import re
import string
import sys
import tokenize
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType

# module -> (integrity class, what it reaches). Honest kernels need none of these.
FORBIDDEN_MODULES = {
    "threading": ("threads", "threads"), "_thread": ("threads", "threads"),
    "concurrent": ("threads", "threads"), "multiprocessing": ("threads", "processes"),
    "subprocess": ("harness-tamper", "processes"), "asyncio": ("threads", "an event loop"),
    "socket": ("harness-tamper", "the network"), "ctypes": ("harness-tamper", "foreign functions"),
    "cffi": ("harness-tamper", "foreign functions"), "signal": ("harness-tamper", "signal handlers"),
    "time": ("harness-tamper", "timers"), "timeit": ("harness-tamper", "timers"),
    "datetime": ("harness-tamper", "timers (a clock tells a timed call from a checked one)"),
    "kernelcraft": ("harness-tamper", "the harness"), "inspect": ("harness-tamper", "stack inspection"),
    "gc": ("harness-tamper", "the garbage collector"), "importlib": ("harness-tamper", "dynamic imports"),
    "builtins": ("harness-tamper", "builtins"), "pickle": ("harness-tamper", "pickling"),
    "shutil": ("harness-tamper", "files"), "tempfile": ("harness-tamper", "files"),
    "pathlib": ("harness-tamper", "files"), "io": ("harness-tamper", "files"),
    "os": ("harness-tamper", "the operating system"), "atexit": ("harness-tamper", "exit hooks"),
    "faulthandler": ("harness-tamper", "fault handlers"),
    "weakref": ("harness-tamper", "finalizers that run at any later time"),
    "sys": ("harness-tamper", "the interpreter's internals (sys.modules reaches the harness)"),
    "operator": ("harness-tamper", "attribute access by computed names"),
    "random": ("seed-replay", "a random generator"),
    # code from strings, files or bytes: what the gate reads would not be what runs
    "runpy": ("harness-tamper", "running files as code"), "code": ("harness-tamper", "running strings as code"),
    "codeop": ("harness-tamper", "compiling strings as code"), "types": ("harness-tamper", "building code objects"),
    "marshal": ("harness-tamper", "code objects from bytes"), "_pickle": ("harness-tamper", "pickling"),
    "copyreg": ("harness-tamper", "pickling"), "shelve": ("harness-tamper", "pickling"),
    "dill": ("harness-tamper", "pickling"), "cloudpickle": ("harness-tamper", "pickling"),
    "zipimport": ("harness-tamper", "dynamic imports"), "pkgutil": ("harness-tamper", "dynamic imports"),
    "imp": ("harness-tamper", "dynamic imports"), "site": ("harness-tamper", "dynamic imports"),
    "pydoc": ("harness-tamper", "objects found by dotted name"), "doctest": ("harness-tamper", "running strings as code"),
    "pdb": ("harness-tamper", "a debugger"), "bdb": ("harness-tamper", "a debugger"),
    "trace": ("harness-tamper", "running strings as code"), "profile": ("harness-tamper", "running strings as code"),
    "cProfile": ("harness-tamper", "running strings as code"), "traceback": ("harness-tamper", "stack frames"),
    "tracemalloc": ("harness-tamper", "heap introspection"),
    "string": ("harness-tamper", "attribute access by computed names (string.Formatter)"),
    "linecache": ("harness-tamper", "files"), "fileinput": ("harness-tamper", "files"), "glob": ("harness-tamper", "files"),
    "mmap": ("harness-tamper", "files"), "fcntl": ("harness-tamper", "files"), "zipfile": ("harness-tamper", "files"),
    "tarfile": ("harness-tamper", "files"), "sqlite3": ("harness-tamper", "files"), "dbm": ("harness-tamper", "files"),
    "posix": ("harness-tamper", "the operating system"), "pwd": ("harness-tamper", "the operating system"),
    "resource": ("harness-tamper", "the operating system"), "platform": ("harness-tamper", "the operating system"),
    "pty": ("harness-tamper", "processes"), "select": ("harness-tamper", "the operating system"),
    "selectors": ("harness-tamper", "the operating system"),
    "setuptools": ("harness-tamper", "processes"), "distutils": ("harness-tamper", "processes"),
    "pip": ("harness-tamper", "processes"), "venv": ("harness-tamper", "processes"),
    "urllib": ("harness-tamper", "the network"), "http": ("harness-tamper", "the network"),
    "ssl": ("harness-tamper", "the network"), "socketserver": ("harness-tamper", "the network"),
    "ftplib": ("harness-tamper", "the network"), "smtplib": ("harness-tamper", "the network"),
    "xmlrpc": ("harness-tamper", "the network"), "webbrowser": ("harness-tamper", "processes"),
    # CUDA from Python past the gate's CUDA rules: runtime compilation, raw runtime/driver calls
    "cuda": ("harness-tamper", "the CUDA runtime and NVRTC directly, past the static gate's CUDA rules"),
    "cupy": ("harness-tamper", "kernels compiled at run time, past the static gate's CUDA rules"),
    "pycuda": ("harness-tamper", "kernels compiled at run time, past the static gate's CUDA rules"),
    "numba": ("harness-tamper", "kernels compiled at run time, past the static gate's CUDA rules"),
}
# Module names that are also ordinary attribute names (``torch.cuda``, ``x.time``): reaching
# them through an attribute is judged by what the attribute is (torch/triton/numpy), not its name.
AMBIGUOUS_MODULE_NAMES = frozenset({
    "time", "io", "signal", "random", "operator", "types", "code", "platform", "glob", "select", "resource",
    "site", "string", "traceback", "http", "ssl", "mmap", "copyreg", "shelve", "imp", "fcntl", "pty", "selectors",
    "urllib", "webbrowser", "ftplib", "smtplib", "xmlrpc", "socketserver", "fileinput", "posix", "pwd", "cuda",
    "trace", "profile", "pip", "venv", "zipfile", "tarfile", "dbm", "doctest", "pdb", "bdb", "pathlib",
    "concurrent", "linecache", "sqlite3", "setuptools", "distutils",
})
FORBIDDEN_CALLS = {
    "open": "harness-tamper", "exec": "harness-tamper", "eval": "harness-tamper", "compile": "harness-tamper",
    "__import__": "harness-tamper", "globals": "harness-tamper", "locals": "harness-tamper",
    "vars": "harness-tamper", "breakpoint": "harness-tamper", "input": "harness-tamper",
    "setattr": "harness-tamper", "delattr": "harness-tamper",
}
# Builtins whose mere reference is refused (an alias calls them out of the gate's sight); getattr
# is allowed only as getattr(x, "constant") in a call.
DYNAMIC_BUILTINS = {**FORBIDDEN_CALLS, "getattr": "harness-tamper", "help": "harness-tamper",
                    "__build_class__": "harness-tamper"}
_STREAMS = ("escaped-timer", "uses another CUDA stream")
_SEED = ("seed-replay", "reads or sets generator state")
# attribute (or imported name) -> (class, why)
FORBIDDEN_ATTRS = {
    "Stream": ("escaped-timer", "creates a CUDA stream"), "set_stream": ("escaped-timer", "switches streams"),
    "stream": ("escaped-timer", "switches streams"), "synchronize": ("escaped-timer", "synchronizes the device"),
    "ExternalStream": _STREAMS, "default_stream": _STREAMS, "StreamContext": _STREAMS,
    "_C": ("harness-tamper", "reaches into torch internals"),
    "set_default_device": ("harness-tamper", "changes global torch state"),
    "set_default_dtype": ("harness-tamper", "changes global torch state"),
    "set_default_tensor_type": ("harness-tamper", "changes global torch state"),
    "set_flush_denormal": ("harness-tamper", "changes global torch state"),
    "cpp_extension": ("harness-tamper", "compiles C++ at run time, past the static gate"),
    "load_inline": ("harness-tamper", "compiles C++ at run time, past the static gate"),
    "load_library": ("harness-tamper", "loads a shared library, past the static gate"),
    "load_binary": ("harness-tamper", "loads a kernel binary, past the static gate"),
    "CUDAPluggableAllocator": ("harness-tamper", "loads an allocator from a shared library"),
    "change_current_allocator": ("harness-tamper", "replaces the CUDA allocator"),
    "cudart": ("harness-tamper", "calls the CUDA runtime directly, past the static gate's CUDA rules"),
    "profiler": ("harness-tamper", "drives the profiler (its range bounds what ncu measures)"),
    "get_type_hints": ("harness-tamper", "evaluates annotation strings as code"),
    "exec": ("harness-tamper", "runs a string as code"), "run_path": ("harness-tamper", "runs a file as code"),
    "run_module": ("harness-tamper", "runs a module by name"), "exec_module": ("harness-tamper", "runs a module"),
    "load_module": ("harness-tamper", "runs a module"),
    "manual_seed": ("seed-replay", "reseeds a generator"), "initial_seed": ("seed-replay", "reads the seed"),
    "seed": ("seed-replay", "reseeds the generator"), "get_rng_state": ("seed-replay", "reads generator state"),
    "set_rng_state": ("seed-replay", "sets generator state"),
    "manual_seed_all": _SEED, "seed_all": _SEED, "get_rng_state_all": _SEED, "set_rng_state_all": _SEED,
    "fork_rng": _SEED, "default_generator": _SEED, "default_generators": _SEED, "get_state": _SEED,
    "set_state": _SEED, "graphsafe_get_state": _SEED, "graphsafe_set_state": _SEED,
    "is_current_stream_capturing": ("harness-tamper", "behaves differently under the timer's graph capture"),
    "__builtins__": ("harness-tamper", "reaches builtins by name"), "__dict__": ("harness-tamper", "reads namespaces"),
    "__globals__": ("harness-tamper", "reads another function's globals"),
    "__subclasses__": ("harness-tamper", "walks the class tree"), "__code__": ("harness-tamper", "rewrites code"),
    "__closure__": ("harness-tamper", "reads closures"), "f_back": ("harness-tamper", "walks stack frames"),
    "f_globals": ("harness-tamper", "walks stack frames"), "f_locals": ("harness-tamper", "walks stack frames"),
    "gi_frame": ("harness-tamper", "walks stack frames"), "tb_frame": ("harness-tamper", "walks stack frames"),
    "f_builtins": ("harness-tamper", "walks stack frames"), "cr_frame": ("harness-tamper", "walks stack frames"),
    "ag_frame": ("harness-tamper", "walks stack frames"),
    "__self__": ("harness-tamper", "reaches the module of a builtin (len.__self__ is builtins)"),
    "__getattribute__": ("harness-tamper", "attribute access by computed names"),
    "__setattr__": ("harness-tamper", "sets attributes by computed names"),
    "__delattr__": ("harness-tamper", "deletes attributes by computed names"),
    "__import__": ("harness-tamper", "imports by computed names"),
    "__loader__": ("harness-tamper", "reaches a module's loader (it reads and runs files)"),
    "__spec__": ("harness-tamper", "reaches a module's loader (it reads and runs files)"),
    "__reduce__": ("harness-tamper", "reaches pickling internals"),
    "__reduce_ex__": ("harness-tamper", "reaches pickling internals"),
}
FORBIDDEN_NAMES = {
    "__builtins__": ("harness-tamper", "reaches builtins by name"),
    "__loader__": ("harness-tamper", "reaches this module's loader (it reads and runs files)"),
    "__spec__": ("harness-tamper", "reaches this module's loader (it reads and runs files)"),
}
# Qualified names (through the imports and aliases): the name and everything under it.
FORBIDDEN_QUALIFIED = {
    "torch.load": ("harness-tamper", "unpickles: runs code from bytes"),
    "torch.serialization": ("harness-tamper", "unpickles: runs code from bytes"),
    "torch.jit.load": ("harness-tamper", "loads code the gate cannot read"),
    "torch.package": ("harness-tamper", "unpickles: runs code from bytes"),
    "torch.hub": ("harness-tamper", "downloads and runs code"),
    "numpy.load": ("harness-tamper", "unpickles: runs code from bytes"),
    "numpy.ctypeslib": ("harness-tamper", "foreign functions"),
    "logging.config": ("harness-tamper", "builds objects from dotted names (dictConfig calls any callable)"),
    # red team round 10 (session 33): `update_wrapper(w, f, assigned=(name,))` is getattr and setattr by names given
    # as data (a frame's locals, builtins' exec reached; a clock's pending samples divided: a forged CPU time)
    "functools.update_wrapper": ("harness-tamper", "reads and sets attributes by names given as data"),
    "functools.wraps": ("harness-tamper", "reads and sets attributes by names given as data"),
    # all of it: Library/impl/register_kernel override torch operators (the harness's comparisons included), and
    # an op defined here runs its body where the op audit sees only the op's name, which may be one the audit
    # exempts (custom_op("torchvision::_cuda_version"): red team round 4, session 32)
    "torch.library": ("harness-tamper", "registers or overrides torch operators (their bodies run unseen by the op audit)"),
    "torch.overrides": ("harness-tamper", "intercepts every torch call, the harness's checks included"),
    "torch.utils._python_dispatch": ("harness-tamper", "intercepts every torch op, the harness's checks included"),
    "torch.utils.benchmark": ("harness-tamper", "runs strings as code (timeit)"),
    # code generators that exec text built from the caller's strings (red team round 8, session 32: a torch.fx
    # placeholder's target became a default argument of the generated forward, run at import)
    "torch.fx": ("harness-tamper", "generates Python from the caller's strings and runs it"),
    "torch.jit": ("harness-tamper", "compiles and runs code from strings"),
    "torch.export": ("harness-tamper", "generates Python and runs it"),
    "torch.compile": ("torch-compute", "generates kernels from torch code at run time"),
    "torch.cuda.graph": ("escaped-timer", "captures its own CUDA graph (on a side stream)"),
    "torch.cuda.graphs": ("escaped-timer", "captures its own CUDA graph (on a side stream)"),
    "torch.cuda.CUDAGraph": ("escaped-timer", "captures its own CUDA graph (on a side stream)"),
    "torch.multiprocessing": ("threads", "processes"), "torch.distributed": ("threads", "processes"),
    "torch.utils.data": ("threads", "worker processes"),
    "triton.compile": ("harness-tamper", "compiles kernels from strings, past the static gate"),
    "triton.compiler": ("harness-tamper", "compiles kernels from strings, past the static gate"),
}
# Attribute names that reach the interpreter's internals through allowed modules, with why (also: names starting
# `co_`, and dunder names outside DUNDER_ALLOWED: `_internal`). Red team round 5, session 32:
# `functools.singledispatch().register` evaluates annotation strings through typing.get_type_hints;
# `typing.ForwardRef(s)._evaluate` any expression; `enum.global_enum` / `Enum._convert_` copy a class's members into the
# module its `__module__` names, the runner's included. Round 6: code objects and the stack.
INTERNAL_ATTRS = {
    "ForwardRef": "evaluates a string as code", "singledispatch": "evaluates annotation strings as code",
    "singledispatchmethod": "evaluates annotation strings as code", "__annotations__": "annotation strings are code",
    "_evaluate": "evaluates a string as code",
    "global_enum": "writes another module's globals", "_convert_": "writes another module's globals",
    "global_enum_repr": "writes another module's globals", "global_flag_repr": "writes another module's globals",
    "global_str": "writes another module's globals", "__module__": "names the module an enum writes into",
    "__class__": "walks the class tree", "__mro__": "walks the class tree", "__bases__": "walks the class tree",
    "__base__": "walks the class tree", "mro": "walks the class tree",
    "gi_code": "reaches a code object", "cr_code": "reaches a code object", "ag_code": "reaches a code object",
    "f_code": "reaches a code object",
    "findCaller": "reads the stack (tells a timed call from a checked one)",
    "currentframe": "reads the stack (tells a timed call from a checked one)",
}
# Dunder attributes a kernel's Python reads; every other one is the interpreter's internals (red team round 6,
# session 32: `typing.List["..."].__args__[0]` is a ForwardRef that evaluates its string; `__forward_code__`,
# a generator's code object renamed with `.replace(co_names=...)` and rebuilt by `type(fn)(code, {})` reached
# sys with no library at all).
DUNDER_ALLOWED = frozenset({"__init__", "__version__", "__name__", "__qualname__", "__doc__", "__call__", "__enter__",
                            "__exit__", "__len__", "__getitem__", "__setitem__", "__iter__", "__next__", "__contains__"})
# Methods the interpreter calls at a time of its own choosing (a collection, the harness reading an output).
LATER_HOOKS = {"__del__": "a finalizer", "__torch_function__": "torch's override protocol",
               "__torch_dispatch__": "torch's dispatch protocol"}
# Forbidden modules whose every class and function is forbidden under any name it is re-exported as.
INTERCEPTING = ("torch.overrides", "torch.utils._python_dispatch", "torch.fx", "torch.jit", "torch.export")
# Libraries every honest solution imports anyway: the gate imports them too, to see what a name
# under them really is (only their module dictionaries are read; nothing is called).
TRUSTED_ROOTS = ("torch", "triton", "numpy")
# The modules of torch, triton and numpy a kernel's Python may reach (by import, attribute chain, `from X import Y`,
# alias): an allowlist, as the standard library's is (STDLIB_ALLOWED). Red team rounds 4-8 each found one more module
# inside an allowed library that runs strings as code (torch.fx, torch.jit, ...); a denylist inside them keeps leaking.
# Judged by the module a name reaches last (`torch.nn.functional.relu` reaches torch.nn.functional; `torch.nn.modules`
# is refused though torch.nn is allowed): a module here allows its own names, not its submodules, unless listed in
# MODULE_TREES_ALLOWED. The denylist's checks (FORBIDDEN_QUALIFIED, FORBIDDEN_ATTRS, private names) still run first and
# give their specific reasons inside these modules (torch.cuda.Stream, torch.random.manual_seed). Built from every
# honest source in the repository (scripts/gate_namespaces.py --names lists what they reach).
MODULES_ALLOWED = frozenset({
    "torch",                  # tensors, dtypes, allocation (torch.empty), views and metadata
    "torch.cuda",             # device queries: get_device_properties, current_device, is_available (streams,
                              # graphs, seeds, the allocator stay refused by name)
    "torch.nn",               # only as the path to torch.nn.functional (and torch.nn.Module for a wrapper class)
    "torch.nn.functional",    # F.softplus, F.rms_norm ...: torch compute, which the op audit judges at run time
    "torch.linalg",           # solve_triangular in the kda/gdn candidates (op audit as above)
    "torch.special",          # elementwise math beside torch.linalg/fft, same footing
    "torch.fft",              # the FFT tasks' baselines (tests/fixtures/kda_fft_*), same footing
    "torch.random",           # `from torch import random` is an honest form (tests); its seeding stays refused
    "torch.version",          # torch.version.cuda / .hip: constants, to pick a code path
    "triton",                 # triton.jit, autotune, heuristics, Config, cdiv, next_power_of_2, set_allocator
    "triton.tools.tensor_descriptor",  # TensorDescriptor: host-side TMA descriptors (Hopper kernels)
    "numpy",                  # dtypes and host-side arrays
    "numpy.lib",              # only as the path to numpy.lib.stride_tricks
    "numpy.lib.stride_tricks",  # as_strided views (softmax/solutions/wrong/crashes.py must reach its run-time gate)
})
# Whole subtrees: the module and every submodule under it.
MODULE_TREES_ALLOWED = frozenset({
    "triton.language",        # tl.*, tl.math, tl.extra.cuda.libdevice (device code, compiled by triton.jit; its
                              # triton.language.extra.modules, a dictionary of modules, stays refused)
})


def module_allowed(name: str) -> bool:
    """Whether a kernel may reach this module of torch/triton/numpy (MODULES_ALLOWED, MODULE_TREES_ALLOWED)."""
    return name in MODULES_ALLOWED or any(name == t or name.startswith(t + ".") for t in MODULE_TREES_ALLOWED)


def allowed_modules_text() -> str:
    return ", ".join([*sorted(MODULES_ALLOWED), *(f"{t}.*" for t in sorted(MODULE_TREES_ALLOWED))])
# The standard library's modules a kernel's Python may import: an allowlist, every other one is refused (a
# module the gate has not read may re-export anything: ``logging.sys``, ``logging.time`` and
# ``getattr(logging, "os")`` reached the interpreter, a clock and the operating system past the gate, red team
# round 4, session 32). The gate imports these too and reads what every name under them is, as for torch. A
# third-party package is refused too (red team round 5: pydantic, mako and jinja2 run strings as code, and any
# package may re-export anything); a candidate imports torch, triton, numpy, these and its own modules. Not
# dataclasses: it `exec`s text built from field names, and a field name can hold any code (red team round 7). Not
# logging or warnings (red team round 9, session 33): logging.FileHandler writes files (one outlived the runner in the
# shared Triton cache), logging.handlers starts threads, and `stack_info=` / `stacklevel=` name the caller of each call
# (a timed call told from a checked one); no honest solution imports either. Not copy (round 10): copy.copy calls a
# class's own __reduce_ex__, whose result makes copy._reconstruct call anything and set attributes by name.
STDLIB_ALLOWED = frozenset({
    "__future__", "math", "cmath", "functools", "itertools", "collections", "typing", "enum", "abc",
    "contextlib", "numbers", "statistics", "bisect", "heapq", "fractions", "decimal", "struct",
    "array", "re", "json", "hashlib", "textwrap", "keyword", "queue",
})


def _finding(cls: str, path: str, line: int, what: str) -> str:
    return f"[{cls}] {path}:{line}: {what}"


# ------------------------------------------------------------------------------------------------
# bytes -> tree, as the importer does it


def parse_source(path: str, content: str) -> tuple[ast.Module | None, list[str]]:
    """The tree the importer will build from this source, or None; findings name a refused encoding.

    A syntax error gives (None, []): the build gate reports it with the importer's own message."""
    try:
        data = content.encode("utf-8")  # solution/build.py writes every source as UTF-8
    except UnicodeEncodeError as e:
        line = content[: e.start].count("\n") + 1
        return None, [_finding("encoding", path, line, f"is not valid Unicode text ({e.reason}); "
                               "save the source as UTF-8")]
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:  # an unknown codec, or a BOM with another cookie
        return None, [_finding("encoding", path, e.lineno or 1, f"{e.msg}; remove the coding cookie "
                               "(sources are read as UTF-8)")]
    if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):
        line = 1 if _cookie_on(data, 1) else 2
        return None, [_finding("encoding", path, line, f"declares the source encoding {encoding!r}: the "
                               "importer would decode the file with it and could run text the gate reads "
                               "as comments or strings; remove the coding cookie (sources are UTF-8)")]
    try:
        return ast.parse(data, filename=path), []
    except (SyntaxError, ValueError):
        return None, []


def _cookie_on(data: bytes, line: int) -> bool:
    lines = data.splitlines()
    return len(lines) >= line and b"coding" in lines[line - 1]


# ------------------------------------------------------------------------------------------------
# what a dotted name really is (torch, triton, numpy, the allowed standard library)

_MISSING = object()
_roots: dict[str, object] = {}
_banned_objects: dict[int, tuple[object, str, str, str]] | None = None  # id -> (obj, class, why, name)


def resolvable(root: str) -> bool:
    """Names under this top-level module are read by the gate: torch, triton, numpy and the allowed standard
    library, the only modules a candidate may import besides its own."""
    return root in TRUSTED_ROOTS or root in STDLIB_ALLOWED


def _root(name: str):
    if name not in _roots:
        try:
            _roots[name] = importlib.import_module(name) if resolvable(name) else _MISSING
        except Exception:  # noqa: BLE001 - not installed or broken here: names under it stay unresolved
            _roots[name] = _MISSING
    return _roots[name]


def resolve(qualified: str):
    """The object a dotted name under a resolvable root names, read from module dictionaries only
    (no import is triggered, no ``__getattr__`` runs), or ``_MISSING``."""
    parts = qualified.split(".")
    obj = _root(parts[0])
    if obj is _MISSING:
        return _MISSING
    for p in parts[1:]:
        if not isinstance(obj, ModuleType):
            return _MISSING
        d = vars(obj)
        obj = d[p] if p in d else sys.modules.get(f"{obj.__name__}.{p}", _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _find_submodule(package: str, path, name: str):
    """The search path of a package's submodule that is not imported yet (``torch.onnx``, ``numpy.f2py`` load
    lazily through the package's ``__getattr__``), [] for a plain module, None when there is none. Found by the
    path finder, which imports nothing."""
    if not path or not name.isidentifier():
        return None
    try:
        spec = importlib.machinery.PathFinder.find_spec(f"{package}.{name}", list(path))
    except Exception:  # noqa: BLE001 - an odd path entry: not found
        return None
    return None if spec is None else list(spec.submodule_search_locations or [])


def reached_module(qualified: str) -> tuple[str, str] | None:
    """The last module of torch/triton/numpy a dotted name passes through, as (its real name, the name as spelled
    up to it); submodules not imported yet count (found on their package's path). None outside the trusted roots,
    or where the chain leaves them (``torch.os``: the module rules judge that)."""
    parts = qualified.split(".")
    if parts[0] not in TRUSTED_ROOTS:
        return None
    obj = _root(parts[0])
    if not isinstance(obj, ModuleType):
        return None
    last = (obj.__name__, parts[0])
    unloaded = None  # the search path of the last module when it is not imported here
    for i, p in enumerate(parts[1:], start=2):
        if unloaded is None:
            d = vars(obj)
            nxt = d[p] if p in d else sys.modules.get(f"{obj.__name__}.{p}", _MISSING)
            if isinstance(nxt, ModuleType):
                obj, last = nxt, (nxt.__name__, ".".join(parts[:i]))
                continue
            if nxt is not _MISSING:
                break  # an object: what it holds is not followed
            path = vars(obj).get("__path__")
        else:
            path = unloaded
        found = _find_submodule(last[0], path, p)
        if found is None:
            break
        unloaded, last = found, (f"{last[0]}.{p}", ".".join(parts[:i]))
    if last[0].split(".")[0] not in TRUSTED_ROOTS:
        return None
    return last


def _origin(obj) -> str:
    """The module an object was defined in: a class's or function's own ``__module__``, else its class's (read from
    dictionaries: nothing of the object runs), or ""."""
    if isinstance(obj, FunctionType | BuiltinFunctionType | MethodType):
        m = getattr(obj, "__module__", None)
    else:  # type's own descriptor: a class's __module__, C types (numpy.ufunc, torch.device) included
        try:
            m = type.__dict__["__module__"].__get__(obj if isinstance(obj, type) else type(obj))
        except Exception:  # noqa: BLE001 - none to read
            m = None
    return m if isinstance(m, str) else ""


def _banned_by_identity() -> dict[int, tuple[object, str, str, str]]:
    """Forbidden callables and classes, by identity: an alias under another name is still them."""
    global _banned_objects
    if _banned_objects is None:
        import builtins

        found: dict[int, tuple[object, str, str, str]] = {}
        for name, cls in DYNAMIC_BUILTINS.items():
            found[id(getattr(builtins, name))] = (getattr(builtins, name), cls, "a dynamic-code builtin", name)
        for q, (cls, why) in FORBIDDEN_QUALIFIED.items():
            obj = resolve(q)
            if obj is not _MISSING and not isinstance(obj, ModuleType):
                found[id(obj)] = (obj, cls, why, q)
            elif isinstance(obj, ModuleType) and q in INTERCEPTING:
                # what an intercepting module defines is forbidden under any other name: torch.fx re-exports
                # torch.overrides' TorchFunctionMode, torch.autograd.graph the dispatch mode (red team,
                # session 31: a mode entered at import ran the kernel after the timer)
                for k, v in list(vars(obj).items()):
                    if (isinstance(v, type) or callable(v)) and not isinstance(v, ModuleType) \
                            and str(getattr(v, "__module__", "") or "").startswith(obj.__name__):
                        found.setdefault(id(v), (v, cls, why, f"{q}.{k}"))
        for attr, (cls, why) in FORBIDDEN_ATTRS.items():
            for base in ("torch", "torch.cuda", "torch.random", "torch.utils", "numpy.random"):
                obj = resolve(f"{base}.{attr}")
                if obj is not _MISSING and not isinstance(obj, ModuleType | int | str | bool):
                    found.setdefault(id(obj), (obj, cls, why, f"{base}.{attr}"))
        _banned_objects = found
    return _banned_objects


def _holds_modules(obj) -> bool:
    """A dictionary of modules (``sys.modules`` under another name: triton.language.extra re-exports it):
    a subscript of it is any module, sys and os included, and the gate qualifies no subscript."""
    if obj is sys.modules:
        return True
    if not isinstance(obj, dict):
        return False
    try:
        return any(isinstance(v, ModuleType) for v in list(obj.values())[:4096])
    except Exception:  # noqa: BLE001 - a dict the gate cannot read: refused
        return True


def _module_finding(qualified: str, obj) -> tuple[str, str] | None:
    if _holds_modules(obj):
        return "harness-tamper", f"{qualified} is a dictionary of modules (sys.modules: any module by name)"
    if isinstance(obj, ModuleType):
        top = obj.__name__.split(".")[0]
        if top in FORBIDDEN_MODULES and top not in TRUSTED_ROOTS:
            cls, why = FORBIDDEN_MODULES[top]
            return cls, f"{qualified} is the module {obj.__name__!r} ({why})"
        if top in sys.stdlib_module_names and top not in STDLIB_ALLOWED:
            return "harness-tamper", (f"{qualified} is the module {obj.__name__!r}, a standard-library module "
                                      "the gate does not allow (it reads only those of STDLIB_ALLOWED)")
        return None
    hit = _banned_by_identity().get(id(obj))
    if hit is not None and hit[0] is obj and hit[3] != qualified:
        return hit[1], f"{qualified} is {hit[3]} ({hit[2]})"
    if obj is not _MISSING and qualified.split(".")[0] in TRUSTED_ROOTS \
            and not (isinstance(obj, type) and issubclass(obj, BaseException)):  # `except triton.CompilationError`
        return _origin_finding(qualified, _origin(obj), obj)
    return None


def _origin_finding(qualified: str, origin: str, obj: object = None) -> tuple[str, str] | None:
    """An object re-exported under an allowed name is judged by the module that defines it too (``torch.save`` is
    torch.serialization's), where that module is one the gate refuses by name: a FORBIDDEN_QUALIFIED module, or the
    interpreter's (``triton.language.extra.module_from_spec`` is importlib's). ``__module__`` is no guide beyond
    that: torch's C functions say ``torch._C._linalg``, ``torch._C._nn`` or nothing, triton.jit says
    triton.runtime.jit; so the name a kernel reaches an object under is what the allowlist judges."""
    if not origin:
        return None
    for q, (cls, why) in FORBIDDEN_QUALIFIED.items():
        if origin == q or origin.startswith(q + "."):
            return cls, f"{qualified} is defined in {origin} ({why})"
    top = origin.split(".")[0]
    if top in TRUSTED_ROOTS or top in STDLIB_ALLOWED or top == "builtins" or origin == "types" and not callable(obj):
        return None  # (torch.cuda.Device is a `X | Y` annotation: a types.UnionType)
    bare = top.lstrip("_").removeprefix("frozen_").removesuffix("_external")
    if bare in FORBIDDEN_MODULES:
        return "harness-tamper", (f"{qualified} is defined in the module {origin!r} "
                                  f"({FORBIDDEN_MODULES[bare][1]})")
    return None


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


# ------------------------------------------------------------------------------------------------
# the rules


class _Checker:
    def __init__(self, path: str, tree: ast.Module, own: frozenset[str] = frozenset()):
        self.path, self.tree, self.own = path, tree, own
        self.found: list[str] = []
        self._seen: set[str] = set()
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.imported: set[str] = set()  # names bound by `import x` (modules, whose attributes are the library's)
        self.quals: dict[str, set[str]] = {}  # name -> the dotted names it may stand for
        self._bind_names()

    def add(self, cls: str, line: int, what: str) -> None:
        f = _finding(cls, self.path, line, what)
        if f not in self._seen:
            self._seen.add(f)
            self.found.append(f)

    # --- name bindings ---------------------------------------------------------------------------

    def _bind_names(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.quals.setdefault(a.asname, set()).add(a.name)
                    else:
                        top = a.name.split(".")[0]
                        self.quals.setdefault(top, set()).add(top)
                    self.imported.add((a.asname or a.name).split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    if a.name != "*":
                        self.quals.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
                        if isinstance(resolve(f"{node.module}.{a.name}"), ModuleType):
                            self.imported.add(a.asname or a.name)  # `from torch import cuda`: a module too
        aliases = [n for n in ast.walk(self.tree) if isinstance(n, ast.Assign | ast.AnnAssign | ast.NamedExpr)]
        for _ in range(3):  # aliases of aliases, to a small depth
            for node in aliases:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is None:
                    continue
                q = self.qualify(node.value)
                for t in targets:
                    if q and isinstance(t, ast.Name):
                        self.quals.setdefault(t.id, set()).update(q)

    def qualify(self, node: ast.AST) -> set[str]:
        """The dotted names an expression may stand for (empty when unknown)."""
        if isinstance(node, ast.Name):
            return set(self.quals.get(node.id, ()))
        if isinstance(node, ast.Attribute):
            return {f"{q}.{node.attr}" for q in self.qualify(node.value)}
        if _const_getattr(node):
            return {f"{q}.{node.args[1].value}" for q in self.qualify(node.args[0])}
        return set()

    # --- checks -----------------------------------------------------------------------------------

    def check_qualified(self, node: ast.AST, qualified: str, allowlist: bool = True) -> None:
        """``allowlist``: also judge the module the name reaches against MODULES_ALLOWED (not for the leading
        parts of an import's path, which check_module_path judges whole)."""
        line = getattr(node, "lineno", 0)
        parts = qualified.split(".")
        for i in range(1, len(parts) + 1):
            hit = FORBIDDEN_QUALIFIED.get(".".join(parts[:i]))
            if hit:
                self.add(hit[0], line, f"uses {'.'.join(parts[:i])} ({hit[1]})")
                return
        if len(parts) > 1 and _private(parts[-1]) and parts[-1] not in FORBIDDEN_ATTRS:
            self.add("harness-tamper", line, f"uses {qualified}, a private name of {parts[0]} "
                     "(honest kernels use the public API)")
            return
        if len(parts) > 1 and resolvable(parts[0]):
            hit = _module_finding(qualified, resolve(qualified))
            if hit:
                self.add(hit[0], line, hit[1])
                return
        if allowlist:
            reached = reached_module(qualified)
            if reached and not module_allowed(reached[0]):
                self.outside_allowlist(line, reached[0], f"through {reached[1]}")

    def outside_allowlist(self, line: int, module: str, how: str) -> None:
        self.add("harness-tamper", line, f"reaches the module {module!r} ({how}), which is not among the torch/"
                 f"triton/numpy modules a kernel needs: kernels may use {allowed_modules_text()} (the gate reads "
                 "only these; ask for another to be added, naming what the kernel needs from it)")

    def check_module_path(self, node: ast.AST, module: str, verb: str) -> None:
        line = node.lineno
        top = module.split(".")[0]
        if top in FORBIDDEN_MODULES:
            cls, why = FORBIDDEN_MODULES[top]
            self.add(cls, line, f"{verb} {module!r} ({why})")
            return
        if top not in TRUSTED_ROOTS and top not in STDLIB_ALLOWED and top not in self.own and not _private(top):
            kind = "a standard-library module" if top in sys.stdlib_module_names else "a module"
            self.add("harness-tamper", line, f"{verb} {module!r}, {kind} the gate does not allow (a candidate "
                     f"imports torch, triton, numpy, its own modules and, of the standard library, "
                     f"{', '.join(sorted(STDLIB_ALLOWED - {'__future__'}))}: the gate reads what every name "
                     "under those is; ask for another to be added)")
            return
        for part in module.split(".")[1:]:
            if part in FORBIDDEN_ATTRS:
                cls, why = FORBIDDEN_ATTRS[part]
                self.add(cls, line, f"{verb} {module!r} ({why})")
                return
            if _private(part):
                self.add("harness-tamper", line, f"{verb} {module!r}, a private module (honest kernels use the public API)")
                return
        if _private(top) and top != "__future__":
            self.add("harness-tamper", line, f"{verb} {module!r}, a private interpreter module")
            return
        parts = module.split(".")
        before = len(self.found)
        for i in range(2, len(parts) + 1):
            self.check_qualified(node, ".".join(parts[:i]), allowlist=False)
        if top in TRUSTED_ROOTS and len(self.found) == before:
            # an import's path names a module whether or not this machine has it (numpy.distutils)
            reached = reached_module(module)
            name = reached[0] if reached and reached[1] == module else module
            if not module_allowed(name):
                self.outside_allowlist(line, name, f"{verb} {module!r}")

    def imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.check_module_path(node, a.name, "imports")
            return
        if node.level:
            return  # the solution's own modules: each is a source the gate reads
        module = node.module or ""
        self.check_module_path(node, module, "imports from")
        for a in node.names:
            if a.name == "*":
                self.add("harness-tamper", node.lineno, f"imports * from {module!r}: name what you import "
                         "(a star import binds names the gate cannot see)")
                continue
            if a.name in FORBIDDEN_ATTRS:
                cls, why = FORBIDDEN_ATTRS[a.name]
                self.add(cls, node.lineno, f"imports {a.name!r} from {module!r} ({why})")
                continue
            if _internal(a.name):
                self.add("harness-tamper", node.lineno, f"imports {a.name!r} from {module!r} ({_internal(a.name)})")
                continue
            qualified = f"{module}.{a.name}"
            obj = resolve(qualified)
            if a.name in FORBIDDEN_MODULES and (obj is _MISSING or isinstance(obj, ModuleType)
                                                and obj.__name__.split(".")[0] == a.name):
                cls, why = FORBIDDEN_MODULES[a.name]
                self.add(cls, node.lineno, f"imports {a.name!r} from {module!r} ({why})")
                continue
            if _private(a.name):
                self.add("harness-tamper", node.lineno, f"imports {a.name!r} from {module!r}, a private name "
                         "(honest kernels use the public API)")
                continue
            self.check_qualified(node, qualified)

    def attribute(self, node: ast.Attribute) -> None:
        if node.attr in INTERNAL_ATTRS:
            self.add("harness-tamper", node.lineno, f"uses .{node.attr} ({INTERNAL_ATTRS[node.attr]})")
            return
        if node.attr in FORBIDDEN_ATTRS:
            cls, why = FORBIDDEN_ATTRS[node.attr]
            self.add(cls, node.lineno, f"uses .{node.attr} ({why})")
            return
        if node.attr in FORBIDDEN_MODULES and node.attr not in AMBIGUOUS_MODULE_NAMES:
            cls, why = FORBIDDEN_MODULES[node.attr]
            self.add(cls, node.lineno, f"reaches the module {node.attr!r} through .{node.attr} ({why})")
            return
        why = _internal(node.attr)  # the general rules: names starting co_, dunder names outside DUNDER_ALLOWED
        if why:
            self.add("harness-tamper", node.lineno, f"uses .{node.attr} ({why})")
            return
        for q in sorted(self.qualify(node)):
            self.check_qualified(node, q)

    def call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name):
            name = node.func.id
            if name in FORBIDDEN_CALLS:
                self.add(FORBIDDEN_CALLS[name], node.lineno, f"calls {name}()")
            elif name == "getattr" and len(node.args) >= 2:
                attr = node.args[1]
                if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                    self.add("harness-tamper", node.lineno, "getattr() with a computed name")
                elif attr.value in FORBIDDEN_ATTRS:
                    cls, why = FORBIDDEN_ATTRS[attr.value]
                    self.add(cls, node.lineno, f"getattr(..., {attr.value!r}) ({why})")
                elif _internal(attr.value):
                    self.add("harness-tamper", node.lineno, f"getattr(..., {attr.value!r}) ({_internal(attr.value)})")
                elif attr.value in FORBIDDEN_MODULES and attr.value not in AMBIGUOUS_MODULE_NAMES:
                    # as .sys is: getattr(logging, "sys") reached the interpreter (red team round 4, session 32)
                    cls, why = FORBIDDEN_MODULES[attr.value]
                    self.add(cls, node.lineno, f"reaches the module {attr.value!r} through getattr ({why})")
                else:
                    for q in sorted(self.qualify(node)):
                        self.check_qualified(node, q)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "format_map"):
            self._format(node)
        if isinstance(node.func, ast.Call) and isinstance(node.func.func, ast.Name) and node.func.func.id == "type":
            self.add("harness-tamper", node.lineno, "calls type(x)(...) (builds an object of another's class: a "
                     "function from a code object, a class from a metaclass)")
        if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) + len(node.keywords) > 1:
            self.add("harness-tamper", node.lineno, "calls type(name, bases, namespace) (a class built from a "
                     "dictionary the gate reads as data: its names and annotations; write a class statement)")
        for kw in node.keywords:
            if kw.arg in ("module", "qualname"):  # Enum("E", names, module="kernelcraft.runner.main"): its globals
                self.add("harness-tamper", node.lineno, f"passes {kw.arg}= (an enum's functional form writes the "
                         "module it names; honest kernels never name a module)")

    def _format(self, node: ast.Call) -> None:
        """``"{0.__globals__[sys]}".format(f)`` walks attributes and items by name, like getattr."""
        func = node.func
        template = func.value
        if isinstance(template, ast.Name) and template.id == "str" and node.args:
            template = node.args[0]  # str.format(template, ...)
        texts = self._constant_strings(template)
        if texts is None:
            if isinstance(template, ast.Name) and template.id in self.quals:
                return  # a library's own .format (not a string template)
            self.add("harness-tamper", node.lineno, f".{func.attr}() on a computed template (format fields "
                     "read attributes by name); use an f-string")
            return
        for text in texts:
            for field in _format_fields(text):
                parts = re.findall(r"\.([^.\[]+)", re.sub(r"\[[^\]]*\]", "", field))
                if any(_private(p) or p.startswith("__") or p in FORBIDDEN_ATTRS for p in parts):
                    self.add("harness-tamper", node.lineno, f"format field {{{field}}} reads attributes by name")

    def _constant_strings(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            values = []
            for n in ast.walk(self.tree):
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets):
                    if not (isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)):
                        return None
                    values.append(n.value.value)
            return values or None
        return None

    def name(self, node: ast.Name, bound: bool) -> None:
        if node.id in FORBIDDEN_NAMES:
            cls, why = FORBIDDEN_NAMES[node.id]
            self.add(cls, node.lineno, f"uses {node.id} ({why})")
            return
        if node.id.startswith("__") and node.id in INTERNAL_ATTRS:  # `__module__ = "..."` in a class body
            self.add("harness-tamper", node.lineno, f"uses {node.id} ({INTERNAL_ATTRS[node.id]})")
            return
        if not isinstance(node.ctx, ast.Load):
            return
        parent = self.parent.get(node)
        if node.id in DYNAMIC_BUILTINS and not bound:
            is_call = isinstance(parent, ast.Call) and parent.func is node
            if not is_call:
                self.add(DYNAMIC_BUILTINS[node.id], node.lineno, f"refers to {node.id} without calling it "
                         "(an alias would call it out of the gate's sight)")
            elif node.id not in FORBIDDEN_CALLS and node.id != "getattr":
                self.add(DYNAMIC_BUILTINS[node.id], node.lineno, f"calls {node.id}()")
        if node.id in self.imported and not bound and not _module_use_ok(node, parent):
            self.add("harness-tamper", node.lineno, f"passes the module {node.id!r} around as a value (the gate "
                     f"follows only names reached as {node.id}.NAME); use its attributes directly")

    def assignment(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for t in targets:
            root = t
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(t, ast.Attribute) and isinstance(root, ast.Name) and root.id in self.imported:
                self.add("harness-tamper", node.lineno, f"assigns {ast.unparse(t)} "
                         "(patches a library the harness relies on)")

    def _string_annotations(self) -> None:
        """An annotation written as a string is code that typing (and whatever calls get_type_hints) may
        evaluate: read as the expression it is, with this file's imports (red team round 5, session 32:
        ``def f(x: "[__import__('sys')][0]")`` through functools.singledispatch)."""
        spots: list[ast.AST] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.arg) and node.annotation is not None:
                spots.append(node.annotation)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
                spots.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                spots.append(node.annotation)
        for spot in spots:
            for c in ast.walk(spot):
                if not (isinstance(c, ast.Constant) and isinstance(c.value, str)):
                    continue
                try:
                    expr = ast.parse(c.value.strip(), mode="eval").body
                except (SyntaxError, ValueError):
                    continue  # not an expression: nothing typing could evaluate
                sub_tree = ast.Module(body=[ast.Expr(expr)], type_ignores=[])
                ast.fix_missing_locations(sub_tree)
                for n in ast.walk(sub_tree):
                    if hasattr(n, "lineno"):
                        n.lineno = c.lineno
                sub = _Checker(self.path, sub_tree, self.own)
                sub.quals, sub.imported = dict(self.quals), set(self.imported)
                for f in sub.run():
                    if f not in self._seen:
                        self._seen.add(f)
                        self.found.append(f.replace(f"{self.path}:{c.lineno}: ",
                                                    f"{self.path}:{c.lineno}: the annotation string ", 1))

    def dunder_def(self, node: ast.AST) -> None:
        """A dunder method defined outside DUNDER_ALLOWED (LATER_HOOKS have their own finding): the interpreter calls
        it implicitly, inside the harness's own steps (red team round 10, session 33: a `__setattr__` took attribute
        writes by computed names, an `__iter__` divided the clock's samples when the runner read them; a module's
        `def __getattr__` answers any missing name the harness asks the module for)."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [(node.name, node.lineno)]
        elif isinstance(node, ast.ClassDef):  # `__setattr__ = f` in a class body
            names = [(t.id, n.lineno) for n in node.body if isinstance(n, ast.Assign | ast.AnnAssign)
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
        else:
            return
        for name, line in names:
            if name.startswith("__") and name.endswith("__") and len(name) > 4 and name not in DUNDER_ALLOWED \
                    and name not in LATER_HOOKS and name != "__module__":
                self.add("harness-tamper", line, f"defines {name} (a method the interpreter calls implicitly, inside "
                         "the harness's own steps); kernels may define only "
                         f"{', '.join(sorted(n for n in DUNDER_ALLOWED if n not in ('__version__', '__name__', '__qualname__', '__doc__')))}")

    def classdef(self, node: ast.ClassDef) -> None:
        """A metaclass answers the harness's own questions about a class (round 6: its `__eq__` made a tensor
        subclass equal to `float` in the runner's plain-value test)."""
        if any(kw.arg == "metaclass" for kw in node.keywords):
            self.add("harness-tamper", node.lineno, f"class {node.name} names a metaclass (a metaclass's methods "
                     "answer the harness's questions about the class)")
        for b in node.bases:
            if (isinstance(b, ast.Name) and b.id == "type") or (isinstance(b, ast.Call) and isinstance(b.func, ast.Name)
                                                              and b.func.id == "type"):
                self.add("harness-tamper", node.lineno, f"class {node.name} subclasses a metaclass")

    def run(self) -> list[str]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.classdef(node)
            self.dunder_def(node)
        self._string_annotations()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.imports(node)
        for node, bound in _names_with_scope(self.tree):
            self.name(node, bound)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Attribute):
                self.attribute(node)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                self.assignment(node)
            elif isinstance(node, ast.MatchClass):
                # `case object(__self__=b)`, `case object(exec=ex)`: a class pattern reads the attributes it names
                # (its keywords, or __match_args__ for positional ones) as plain strings the attribute rules never
                # see; red team round 9, session 33: builtins' exec reached through `print.__self__`, then a runner
                # frame's locals rewritten by a trace hook (a forged CPU time, PASSED with the gate on)
                self.add("harness-tamper", node.lineno, "uses a class pattern in `match` (it reads attributes by name, "
                         "past the gate's attribute rules); write the test with isinstance() and plain attribute access")
            spelled = _dunder_string(node)
            if spelled and not _later_hook(node):
                self.add("harness-tamper", node.lineno, f"spells {spelled!r} in a string (a name the interpreter gives "
                         "meaning to, set or read as data past the gate's attribute rules)")
            hook = _later_hook(node)
            if hook:
                self.add("harness-tamper", node.lineno, f"binds {hook} ({LATER_HOOKS[hook]}: candidate code the "
                         "interpreter or the harness's own steps would run at a time of their choosing, after the "
                         "timer stops)")
        return self.found


def _later_hook(node: ast.AST) -> str:
    """The LATER_HOOKS name a node defines, assigns, reaches or spells (``def __del__``, ``__del__ = f`` in a
    class body, ``P.__del__ = f``, ``type("P", (), {"__del__": f})``), or ""."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        name = node.name
    elif isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value
    elif isinstance(node, ast.arg):
        name = node.arg
    elif isinstance(node, ast.keyword):
        name = node.arg or ""
    else:
        return ""
    return name if name in LATER_HOOKS else ""


def _dunder_string(node: ast.AST) -> str:
    """A string constant spelling a dunder name outside DUNDER_ALLOWED (``{"__annotations__": ...}`` as a class
    namespace handed to type() or dataclasses: red team round 7), or ""."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        if v.startswith("__") and v.endswith("__") and len(v) > 4 and v.isidentifier() \
                and v not in DUNDER_ALLOWED and v != "__main__":
            return v
    return ""


def _internal(attr: str) -> str:
    """Why an attribute name reaches the interpreter's internals, or ""."""
    if attr in INTERNAL_ATTRS:
        return INTERNAL_ATTRS[attr]
    if attr.startswith("co_"):
        return "reads a code object"
    if attr.startswith("__") and attr.endswith("__") and len(attr) > 4 and attr not in DUNDER_ALLOWED:
        return (f"the interpreter's internals; of the dunder attributes a kernel reads only "
                f"{', '.join(sorted(DUNDER_ALLOWED))}")
    return ""


def _format_fields(text: str) -> list[str]:
    """Field names of a format template, those nested in format specs included."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return []
    fields = []
    for _, field, spec, _ in parsed:
        if field:
            fields.append(field)
        if spec and "{" in spec:
            fields += _format_fields(spec)
    return fields


def _const_getattr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))


def _module_use_ok(node: ast.Name, parent: ast.AST | None) -> bool:
    """Where a module name may appear without the gate losing track of what is reached through it."""
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return True
    if isinstance(parent, ast.Assign) and parent.value is node and all(isinstance(t, ast.Name) for t in parent.targets):
        return True  # a plain alias: followed by _Checker.qualify
    if isinstance(parent, ast.Compare):
        return True
    if isinstance(parent, ast.If | ast.While | ast.IfExp | ast.Assert) and parent.test is node:
        return True
    return _const_getattr(parent) and parent.args[0] is node


# ------------------------------------------------------------------------------------------------
# which names a function binds itself (those never fall back to builtins)

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _bound_in(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = func.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} | {x.arg for x in (a.vararg, a.kwarg) if x}
    declared_global: set[str] = set()
    body = func.body if isinstance(func.body, list) else [func.body]
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Global):
            declared_global.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            names.update(n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            names.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names.update((x.asname or x.name).split(".")[0] for x in n.names)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
            stack.extend(n.decorator_list)  # evaluated in this scope; the body is another scope
            continue
        if isinstance(n, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            continue  # their own scopes (a comprehension target is not this function's name)
        stack.extend(ast.iter_child_nodes(n))
    return names - declared_global


def _names_with_scope(tree: ast.Module):
    """Every Name node, with whether an enclosing function binds it (then it is not a builtin)."""
    def visit(node: ast.AST, bound: frozenset[str]):
        if isinstance(node, ast.Name):
            yield node, node.id in bound
            return
        if isinstance(node, _FUNCS):
            # defaults, decorators and annotations are evaluated in the enclosing scope
            a = node.args
            outer = [*a.defaults, *[d for d in a.kw_defaults if d]]
            outer += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                      if x is not None and x.annotation is not None]
            if not isinstance(node, ast.Lambda):
                outer += [*node.decorator_list, *([node.returns] if node.returns else [])]
            for o in outer:
                yield from visit(o, bound)
            inner = bound | _bound_in(node)
            for part in ([node.body] if isinstance(node, ast.Lambda) else node.body):
                yield from visit(part, inner)
            return
        for child in ast.iter_child_nodes(node):
            yield from visit(child, bound)

    yield from visit(tree, frozenset())


def python_findings(path: str, tree: ast.Module, own: frozenset[str] = frozenset()) -> list[str]:
    """``own``: top-level names of the solution's own modules (its sources), which it may import."""
    return _Checker(path, tree, own).run()
