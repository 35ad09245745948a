"""The static gate: honest solutions pass; sources reaching for what they should not are rejected."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
import tomllib

import pytest

from kernelcraft.gauntlet import static_cxx
from kernelcraft.gauntlet.static import check_static
from kernelcraft.solution import BuildSpec, Solution, SourceFile, load_solution, pack_python_file
from kernelcraft.solution.cubin import find_nvcc
from kernelcraft.task import load_task

from conftest import CATALOG, FIXTURES, ROOT, TASKS

KERNEL = '''
import triton
import triton.language as tl

@triton.jit
def k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
'''


def _sol(body: str, language: str = "triton") -> Solution:
    return Solution(name="s", definition="d", author="a",
                    spec=BuildSpec(language=language, entry_point="main.py::run"),
                    sources=[SourceFile(path="main.py", content=body)])


@pytest.mark.parametrize("name", CATALOG)
def test_catalog_solutions_pass(name):
    task = load_task(TASKS / name)
    for p in task.solution_paths():
        v = check_static(load_solution(p, task.definition.name))
        assert v.passed, (p, v.reason)


def test_launched_kernel_passes():
    assert check_static(_sol(KERNEL + "\ndef run(x, y):\n    k[(1,)](x, y, 1, B=16)\n")).passed


def test_kernel_never_launched_is_rejected():
    v = check_static(_sol(KERNEL + "\ndef run(x, y):\n    y.copy_(x)\n"))
    assert not v.passed and "never launched" in v.reason


def test_no_kernel_at_all_is_rejected():
    v = check_static(_sol("def run(x):\n    return x * 2\n"))
    assert not v.passed and "no source defines a @triton.jit kernel" in v.reason


@pytest.mark.parametrize("line, why", [
    ("import threading", "threads"),
    ("from subprocess import run as r", "processes"),
    ("import kernelcraft.gauntlet", "the harness"),
    ("import time", "timers"),
    ("x = open('/etc/passwd')", "open()"),
    ("s = __import__('os')", "__import__()"),
    ("import torch\ns = torch.cuda.Stream()", "creates a CUDA stream"),
])
def test_forbidden_reach_is_rejected(line, why):
    v = check_static(_sol(line + "\n" + KERNEL + "\ndef run(x, y):\n    k[(1,)](x, y, 1, B=16)\n"))
    assert not v.passed and why in v.reason and "main.py:" in v.reason


def test_cuda_needs_a_launched_global_kernel():
    src = "__global__ void k(float* x) { x[0] = 1; }\nvoid go(float* x) { k<<<1, 1>>>(x); }\n"
    sol = Solution(name="c", definition="d", author="a",
                   spec=BuildSpec(language="cuda", entry_point="k.cu::go", binding="torch"),
                   sources=[SourceFile(path="k.cu", content=src)])
    assert check_static(sol).passed
    sol.sources[0].content = src.replace("k<<<1, 1>>>(x);", "") + "void z() { cudaDeviceSynchronize(); }"
    v = check_static(sol)
    assert not v.passed and "never launched" in v.reason and "synchronizes the device" in v.reason


# --- issue 20: what passed the old gate --------------------------------------------------------

RUN = "\ndef run(x, y):\n    k[(1,)](x, y, 1, B=16)\n"


def _check(extra: str, head: str = "import torch\n") -> str:
    v = check_static(_sol(head + KERNEL + RUN + extra))
    return "" if v.passed else v.reason


@pytest.mark.parametrize("code, expected", [
    # references, not only calls, of the dynamic builtins
    ("ex = exec\n", "[harness-tamper] main.py:13: refers to exec"),
    ("ga = getattr\n", "refers to getattr"),
    ("import functools\nf = functools.partial(getattr, torch.cuda)\n", "refers to getattr"),
    ("z = input\n", "refers to input"),
    ("class C:\n    e = eval\n", "refers to eval"),
    ("def f():\n    global compile\n    return compile\n", "refers to compile"),
    ("f = lambda x=open: x\n", "refers to open"),
    ("b = len.__self__\n", "uses .__self__"),
    # imported names, checked like attributes and resolved where torch holds a module
    ("from torch import sys\n", "[harness-tamper] main.py:13: imports 'sys' from 'torch'"),
    ("from torch import os as o\n", "imports 'os' from 'torch'"),
    ("from torch.cuda import Stream\n", "[escaped-timer] main.py:13: imports 'Stream' from 'torch.cuda'"),
    ("from torch._C import _cuda_getCurrentRawStream\n", "imports from 'torch._C'"),
    ("from torch.utils import cpp_extension\n", "imports 'cpp_extension' from 'torch.utils'"),
    ("import torch.utils.cpp_extension\n", "imports 'torch.utils.cpp_extension'"),
    ("from os import path\n", "imports from 'os'"),
    ("from torch.cuda import *\n", "imports * from 'torch.cuda'"),
    ("import torch._dynamo\n", "a private module"),
    # attribute chains qualified through imports and aliases
    ("p = torch.os.getpid()\n", "reaches the module 'os' through .os"),
    ("lib = torch\nf = lib.load\n", "uses torch.load"),
    ("f = getattr(torch, 'load')\n", "uses torch.load"),
    ("p = torch.serialization.pickle\n", "reaches the module 'pickle'"),
    ("d = torch._dynamo\n", "uses torch._dynamo, a private name of torch"),
    ("m = [torch][0]\n", "passes the module 'torch' around as a value"),
    ("f = torch.compile\n", "[torch-compute] main.py:13: uses torch.compile"),
    ("import logging.config\n", "imports 'logging.config', a standard-library module the gate does not allow"),
    ("r = torch.cuda.cudart()\n", "uses .cudart"),
    ("g = torch.cuda.CUDAGraph\n", "[escaped-timer]"),
    # modules that run files, strings or bytes as code
    ("import runpy\n", "imports 'runpy'"), ("import code\n", "imports 'code'"), ("import types\n", "imports 'types'"),
    ("import marshal\n", "imports 'marshal'"), ("import pydoc\n", "imports 'pydoc'"),
    ("import cupy\n", "imports 'cupy'"), ("from cuda.bindings import runtime\n", "imports from 'cuda.bindings'"),
    # red team round 4 (session 32): modules other than torch/triton/numpy re-export the interpreter, a clock,
    # the operating system (tests/fixtures/adversarial/audit_hook_defers.py, patches_clock_class.py)
    ("import json\ns = getattr(json, 'sys')\n", "reaches the module 'sys' through getattr"),
    ("import collections\nt = collections.sys.modules\n", "reaches the module 'sys' through .sys"),
    ("import functools\nt = getattr(functools, 'sys')\n", "reaches the module 'sys' through getattr"),
    ("import typing\nm = typing.sys.modules\n", "reaches the module 'sys' through .sys"),
    ("import json\nc = json.codecs\n", "json.codecs is the module 'codecs', a standard-library module the gate "
     "does not allow"),
    ("import codecs\n", "imports 'codecs', a standard-library module the gate does not allow"),
    ("from torch.library import custom_op\n", "uses torch.library (registers or overrides torch operators"),
    ("f = torch.library.custom_op\n", "uses torch.library"),
    # red team round 5 (session 32): strings evaluated as code by allowed modules, another module's globals written
    ("import functools\n@functools.singledispatch\ndef p(x):\n    return x\n", "uses .singledispatch"),
    ("def g(x: \"[__import__('sys'), int][1]\"):\n    return x\n", "the annotation string calls __import__()"),
    ("def g(x: 'torch.load'):\n    return x\n", "the annotation string uses torch.load"),
    ("import typing\nr = typing.ForwardRef('1')\n", "uses .ForwardRef"),
    ("from typing import ForwardRef\n", "imports 'ForwardRef' from 'typing'"),
    ("import enum\nclass E(enum.IntEnum):\n    __module__ = 'kernelcraft.runner.main'\n    A = 1\n", "uses __module__"),
    ("import enum\nE = enum.Enum('E', 'A', module='x')\n", "passes module="),
    ("import enum\nd = enum.global_enum\n", "uses .global_enum"),
    ("t = type(run).__mro__\n", "uses .__mro__"),
    ("import pydantic\n", "imports 'pydantic', a module the gate does not allow"),
    ("import mako.template\n", "imports 'mako.template', a module the gate does not allow"),
    # red team round 6 (session 32): ForwardRefs never named, code objects, the stack, metaclasses
    ("import typing\nr = typing.List['1'].__args__[0]\n", "uses .__args__ (the interpreter's internals"),
    ("import typing\nr = typing.Optional['1']\nv = r._evaluate({}, {}, frozenset())\n", "uses ._evaluate"),
    ("def g():\n    yield\nc = g().gi_code\n", "uses .gi_code"),
    ("def g():\n    yield\nf = type(g)(None, {})\n", "calls type(x)(...)"),
    ("n = run.co_names\n", "uses .co_names (reads a code object)"),
    ("import logging\nw = logging.getLogger().findCaller(False, 3)\n", "imports 'logging', a standard-library module"),
    # red team round 9 (session 33): class patterns read attributes by name; logging and warnings write files, start
    # threads and read the stack
    ("def f(x):\n    match x:\n        case object(__self__=b):\n            return b\n", "uses a class pattern in `match`"),
    ("def f(x):\n    match x:\n        case int(exec=e):\n            return e\n", "uses a class pattern in `match`"),
    ("import logging.handlers\n", "imports 'logging.handlers', a standard-library module the gate does not allow"),
    ("import warnings\n", "imports 'warnings', a standard-library module the gate does not allow"),
    ("from logging import FileHandler\n", "'logging', a standard-library module the gate does not allow"),
    # red team round 10 (session 33): attributes read and set by names given as data; implicit dunder methods
    ("import functools\nf = functools.update_wrapper\n", "uses functools.update_wrapper"),
    ("from functools import wraps\n", "functools.wraps"),
    ("import copy\n", "imports 'copy', a standard-library module the gate does not allow"),
    ("class W:\n    def __setattr__(self, k, v):\n        pass\n", "defines __setattr__"),
    ("class W:\n    def __reduce_ex__(self, p):\n        return None\n", "defines __reduce_ex__"),
    ("def __getattr__(name):\n    return name\n", "defines __getattr__"),
    ("class W:\n    __setattr__ = dict.__setitem__\n", "defines __setattr__"),
    ("class M(type):\n    pass\n", "class M subclasses a metaclass"),
    ("class M(type(torch.Tensor)):\n    pass\n", "class M subclasses a metaclass"),
    ("class A(torch.Tensor, metaclass=type):\n    pass\n", "class A names a metaclass"),
    # red team round 7 (session 32): dataclasses exec text built from field names; a class namespace as data
    ("import dataclasses\n", "imports 'dataclasses', a standard-library module the gate does not allow"),
    ("C = type('C', (), {})\n", "calls type(name, bases, namespace)"),
    ("ns = {'__annotations__': {}}\n", "spells '__annotations__' in a string"),
    # red team round 8 (session 32): torch's code generators
    ("g = torch.fx.Graph()\n", "uses torch.fx (generates Python from the caller's strings"),
    ("from torch.fx import GraphModule\n", "uses torch.fx"),
    ("f = torch.jit.CompilationUnit\n", "uses torch.jit"),
    # format templates that walk attributes
    ("s = '{0.__globals__}'.format(run)\n", "format field {0.__globals__}"),
    ("t = 'a' + '{0.__globals__}'\ns = t.format(run)\n", "on a computed template"),
])
def test_issue20_python_routes_are_rejected(code, expected):
    reason = _check(code)
    assert expected in reason, reason


@pytest.mark.parametrize("code", [
    "def g(input):\n    return input + 1\n",  # FlashInfer-Trace names a parameter `input`
    "def outer(exec):\n    def inner():\n        return exec\n    return inner\n",
    "ok = hasattr(torch, 'float8_e4m3fn')\n",
    "ok = torch is not None\n",
    "libdevice = triton.language.extra.cuda.libdevice\n",
    "from torch import random as trandom\n",  # torch's own module, not the stdlib's random
    "s = 'row {} of {}'.format(1, 2)\n",
    "def f(x):\n    match x:\n        case 1 | 2:\n            return 0\n        case [a, b]:\n            return a\n"
    "        case {'k': v}:\n            return v\n        case _:\n            return 1\n",  # patterns but classes
    # the allowed standard library, read through as torch is
    "import math, functools, itertools, typing, contextlib, collections, enum, queue\n"
    "from typing import Optional\nx = math.sqrt(2.0) + len(list(itertools.chain([1], [2])))\n"
    "c = collections.OrderedDict()\nlogger = __name__\n",
    "def g(x: 'torch.Tensor') -> 'torch.Tensor':\n    return x\n",  # a forward reference: code the gate reads
    "if __name__ == '__main__':\n    pass\n",
    "class Cfg:\n    def __init__(self, n):\n        self.n = n\n    def __call__(self):\n        return self.n\n"
    "    def __len__(self):\n        return 1\n",  # the dunder methods a helper class may define
    "import functools\n@functools.lru_cache(maxsize=None)\ndef cfg(n):\n    return n\n",
])
def test_honest_forms_near_the_new_rules_pass(code):
    assert _check(code, head="import torch\nimport triton\n") == ""


def test_a_solution_imports_its_own_modules_by_name():
    """Only torch, triton, numpy, the allowed standard library and the solution's own sources may be imported
    (round 5): `helpers.py` beside `main.py` is its own; a name no source of it defines is not."""
    sol = Solution(name="s", definition="d", author="a", spec=BuildSpec(language="triton", entry_point="main.py::run"),
                   sources=[SourceFile(path="main.py", content="import helpers\n" + KERNEL + RUN),
                            SourceFile(path="helpers.py", content="import math\nX = math.pi\n")])
    assert check_static(sol).passed, check_static(sol).reason
    sol.sources[0] = SourceFile(path="main.py", content="import helperz\n" + KERNEL + RUN)
    assert "imports 'helperz', a module the gate does not allow" in check_static(sol).reason


COOKIE_KERNEL = KERNEL + RUN

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="the .cu expansion runs nvcc -E")
CU_OK = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\nvoid go(float* x) { k<<<1, 1>>>(x); }\n"
# the catalog bindings' includes: their macro dump is shared with tasks/*/solutions/cuda_vec8
BIND_HEAD = ("#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\n#include <c10/cuda/CUDAGuard.h>\n"
             "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n")
BIND_TAIL = "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"run\", &run); }\n"


@pytest.mark.parametrize("first_lines, verdict", [
    ("# coding: raw_unicode_escape\n", "[encoding] main.py:1: declares the source encoding 'raw_unicode_escape'"),
    ("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n", "[encoding] main.py:2: declares the source encoding"),
    ("\ufeff# coding: latin-1\n", "[encoding] main.py:1: encoding problem"),
    ("# coding: no-such-codec\n", "[encoding] main.py:1: unknown encoding"),
    ("# -*- coding: utf-8 -*-\n", ""), ("# vim: set fileencoding=utf8 :\n", ""), ("\ufeff", ""),
])
def test_coding_cookies_other_than_utf8_are_rejected(first_lines, verdict):
    v = check_static(_sol(first_lines + "import torch\n" + COOKIE_KERNEL))
    assert (v.reason if not v.passed else "").startswith(verdict) if verdict else v.passed, v.reason


def test_cookie_fixture_hides_code_from_a_text_parse():
    """The mechanism: the importer's tree (from the bytes) holds a side stream the text's tree lacks."""
    data = (TASKS / "rmsnorm/solutions/wrong/coding_cookie.py").read_bytes()
    attrs = lambda tree: {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # noqa: E731
    assert {"Stream", "stream"} <= attrs(ast.parse(data)) - attrs(ast.parse(data.decode()))


def test_text_that_is_not_utf8_encodable_is_rejected():
    v = check_static(_sol("import torch\nx = '\ud800'\n" + COOKIE_KERNEL))
    assert not v.passed and v.reason.startswith("[encoding] main.py:2: is not valid Unicode text")


def test_python_solutions_hold_only_python_sources():
    sol = _sol("import torch\n" + COOKIE_KERNEL)
    sol.sources.append(SourceFile(path="payload.txt", content="import threading\n"))
    v = check_static(sol)
    assert not v.passed and "[harness-tamper] payload.txt: a triton solution's sources must all be Python" in v.reason
    cu = Solution(name="c", definition="d", author="a",
                  spec=BuildSpec(language="cuda", entry_point="k.cu::go", binding="torch"),
                  sources=[SourceFile(path="k.cu", content=CU_OK), SourceFile(path="k.cuh", content="#pragma once\n"),
                           SourceFile(path="evil.abi3.so", content="\x7fELF")])
    v = check_static(cu)
    assert not v.passed and "evil.abi3.so: not a source the static gate reads" in v.reason and "k.cuh" not in v.reason


# --- C/C++/CUDA: raw text and the preprocessor's expansion -----------------------------------

def _cuda(kernel_extra: str = "", binding: str = "torch::Tensor run(torch::Tensor x) { return x; }\n",
          head: str = BIND_HEAD) -> Solution:
    return Solution(name="c", definition="d", author="a",
                    spec=BuildSpec(language="cuda", entry_point="binding.cpp::run", binding="torch"),
                    sources=[SourceFile(path="kernel.cu", content=CU_OK + kernel_extra),
                             SourceFile(path="binding.cpp", content=head + binding + BIND_TAIL)])


PASTE = "#define CAT(a, b) a##b\n"


@needs_nvcc
@pytest.mark.parametrize("kernel_extra, binding, expected", [
    (PASTE + "void side() { cudaStream_t s; CAT(cudaStream, Create)(&s); }\n", None,
     "[escaped-timer] kernel.cu:5: creates a CUDA stream (cudaStreamCreate, after macro expansion)"),
    # only the host pass sees this branch, only the device pass the next one
    (PASTE + "#ifndef __CUDA_ARCH__\nvoid side() { cudaStream_t s; CAT(cudaStream, Create)(&s); }\n#endif\n", None,
     "kernel.cu:6: creates a CUDA stream (cudaStreamCreate, after macro expansion)"),
    (PASTE + "#ifdef __CUDA_ARCH__\n__device__ void z() { CAT(cudaDevice, Synchronize)(); }\n#endif\n", None,
     "kernel.cu:6: synchronizes the device (cudaDeviceSynchronize, after macro expansion)"),
    ("void side() { cudaStream_t s; cudaStream\\\nCreate(&s); }\n", None, "kernel.cu:4: creates a CUDA stream"),
    ("", "torch::Tensor run(torch::Tensor x) { PyRun_SimpleString(\"import os\"); return x; }\n",
     "[harness-tamper] binding.cpp:6: calls the Python C-API (reaches the interpreter past the Python rules) "
     "(PyRun_SimpleString)"),
    ("", "#define P(a, b) a##b\ntorch::Tensor run(torch::Tensor x) { P(PyRun_, SimpleString)(\"x\"); return x; }\n",
     "binding.cpp:7: calls the Python C-API (reaches the interpreter past the Python rules) "
     "(PyRun_SimpleStringFlags, after macro expansion)"),
    ("", "#define HDR <Python.h>\n#include HDR\ntorch::Tensor run(torch::Tensor x) { return x; }\n",
     "[harness-tamper] binding.cpp:7: includes <Python.h> (the Python C-API) (found by the preprocessor)"),
    ("", "torch::Tensor run(torch::Tensor x) { pybind11::module_::import(\"sys\"); return x; }\n",
     "runs Python from C++ (pybind11's interpreter API)"),
    ("", "#define NS std\ntorch::Tensor run(torch::Tensor x) { NS::thread t([] {}); t.detach(); return x; }\n",
     "[threads] binding.cpp:7: starts threads (std::thread, after macro expansion)"),
    ("#include <cuda_profiler_api.h>\nvoid p() { cudaProfilerStop(); }\n", None, "drives the profiler"),
    # a header this machine lacks is stubbed; the rest still expands
    ("#include <cutlass/cutlass.h>\n" + PASTE + "void s() { cudaStream_t t; CAT(cudaStream, Create)(&t); }\n", None,
     "kernel.cu:6: creates a CUDA stream (cudaStreamCreate, after macro expansion)"),
])
def test_cuda_routes_are_rejected_raw_or_expanded(kernel_extra, binding, expected):
    sol = _cuda(kernel_extra) if binding is None else _cuda(kernel_extra, binding)
    v = check_static(sol)
    assert not v.passed and expected in v.reason, v.reason


@needs_nvcc
def test_a_macro_smuggled_into_a_system_header_is_expanded_where_it_is_defined():
    """Defined before the include, `cudaGetLastError()` would expand inside torch's headers, out of
    the solution's lines: the probe after each #define expands it among them."""
    head = PASTE + "#define cudaGetLastError() CAT(cudaDevice, Synchronize)()\n" + BIND_HEAD
    v = check_static(_cuda(head=head))
    assert not v.passed and "[escaped-timer] binding.cpp:2: synchronizes the device" in v.reason, v.reason


@needs_nvcc
def test_honest_binding_passes_and_its_pybind_expansion_is_not_the_c_api():
    sol = _cuda()
    assert check_static(sol).passed
    exp = static_cxx.expand(sol)
    text = " ".join(t for _, t in exp.lines["binding.cpp"])
    assert "PyInit_kc_" in text and "PyModuleDef" in text  # PYBIND11_MODULE did expand
    # no #define of its own: no probe pass
    assert sorted(exp.passes) == ["binding.cpp", "kernel.cu (device pass)", "kernel.cu (host pass)"], exp.failed


@needs_nvcc
def test_the_expansion_is_cached_and_a_changed_source_is_expanded_again(monkeypatch):
    """The judge keeps each expansion (keyed by sources, commands, compilers): the same solution checked
    again runs no preprocessor and gets the same verdict; one changed byte is preprocessed afresh."""
    sol = _cuda(PASTE + "void side() { cudaStream_t s; CAT(cudaStream, Create)(&s); }\n")
    first = static_cxx.expand(sol)

    def no_process(*args, **kwargs):
        raise AssertionError("the preprocessor ran again")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    assert static_cxx.expand(sol) == first
    v = check_static(sol)
    assert not v.passed and "cudaStreamCreate, after macro expansion" in v.reason, v.reason
    changed = _cuda(PASTE + "void side() { cudaStream_t s; CAT(cudaStream, Create)(&s); } \n")
    with pytest.raises(AssertionError, match="ran again"):
        static_cxx.expand(changed)


@needs_nvcc
def test_sync_rules_are_a_group_a_contract_can_allow_later():
    sol = _cuda(PASTE + "void z() { CAT(cudaDevice, Synchronize)(); }\n")
    assert any("synchronizes the device" in f for f in static_cxx.cxx_findings(sol))
    assert not static_cxx.cxx_findings(sol, allow=frozenset({static_cxx.DEVICE_SYNC}))


# --- zero false rejections ---------------------------------------------------------------------


def _honest_solutions(tmp_path) -> list[tuple[str, Solution]]:
    found = []
    for task_dir in sorted(TASKS.iterdir()):
        task = load_task(task_dir)
        paths = task.solution_paths()
        cand = task_dir / "candidates"
        if cand.is_dir():
            paths += sorted(p for p in cand.iterdir() if p.suffix in (".py", ".json") or (p / "solution.json").is_file())
        # the known-wrong fixtures of every gate after this one must reach their gate
        wrong = task_dir / "solutions" / "wrong"
        for name, exp in tomllib.loads((wrong / "expected.toml").read_text()).items():
            if exp.get("gate", "static" if exp["status"] == "REJECTED" else None) != "static":
                paths.append(wrong / f"{name}.py" if (wrong / f"{name}.py").exists() else wrong / name)
        found += [(str(p), load_solution(p, task.definition.name)) for p in paths]
        # baselines are trusted and never gated, but they are honest torch code: a rule that rejects
        # one would reject an honest candidate written the same way
        found.append((str(task_dir / "baseline.py"), pack_python_file(task_dir / "baseline.py", task.definition.name)))
    records = [*(FIXTURES / "fib_solutions").glob("*.json"), *(FIXTURES / "fib_dataset" / "solutions").rglob("*.json")]
    found += [(str(p), Solution.model_validate(json.loads(p.read_text()))) for p in records]
    found += [(str(p), load_solution(p, "rmsnorm_bf16_h4096")) for p in sorted((FIXTURES / "sanitize").iterdir())]
    # the importers' output: FlashInfer-Trace tasks with their solutions. (KernelBench tasks add nothing here:
    # the importer writes no solutions, and their generated baseline.py is harness code the gate refuses by
    # design, a trusted row; importing tests/fixtures/kernelbench again cost ~20 s for an empty list. The
    # solutions of the tasks it writes are checked where it runs: tests/test_import_kernelbench.py.)
    out = tmp_path / "fib"
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "import", "fib", str(FIXTURES / "fib_dataset"),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    # exit 1: the dataset's orphan definition is not converted (tests/test_interop_fib.py); the rest are
    assert proc.returncode == 1 and "5 converted" in proc.stdout, proc.stdout + proc.stderr
    for task_dir in sorted(out.iterdir()):
        task = load_task(task_dir)
        found += [(str(p), load_solution(p, task.definition.name)) for p in task.solution_paths()]
    for d in ("foreign_fused_add_rmsnorm", "kda_gelu_request", *[p.name for p in sorted(out.iterdir())]):
        base = (FIXTURES / d if (FIXTURES / d).is_dir() else out / d) / "baseline.py"
        found.append((str(base), pack_python_file(base, "d")))
    return found


def test_every_honest_solution_passes(tmp_path):
    found = _honest_solutions(tmp_path)
    t0 = time.monotonic()
    rejected = [(p, v.reason) for p, s in found if not (v := check_static(s)).passed]
    took = time.monotonic() - t0
    assert not rejected, rejected
    assert len(found) >= 80 and any(s.spec.language == "cuda" for _, s in found)
    print(f"static gate: {len(found)} honest solutions in {took:.1f} s")


def test_wrong_static_fixtures_are_rejected_with_their_class():
    """The fast half of tests/test_gauntlet_cpu.py for gate-static fixtures (no worker, no eval)."""
    checked = 0
    for task_dir in sorted(TASKS.iterdir()):
        task = load_task(task_dir)
        wrong = task_dir / "solutions" / "wrong"
        for name, exp in tomllib.loads((wrong / "expected.toml").read_text()).items():
            if exp.get("gate") != "static":
                continue
            p = wrong / f"{name}.py" if (wrong / f"{name}.py").exists() else wrong / name
            v = check_static(load_solution(p, task.definition.name))
            assert not v.passed, name
            for fragment in exp.get("reason_contains", []):
                assert fragment in v.reason, (name, v.reason)
            checked += 1
    assert checked >= 10


# --- the torch/triton/numpy modules a kernel may reach: an allowlist (after red team rounds 4-8) ---------------

@pytest.mark.parametrize("code, expected", [
    # modules the denylist never named: each reaches files, processes, a compiler or strings run as code
    ("import torch.utils.hooks\n", "reaches the module 'torch.utils.hooks' (imports 'torch.utils.hooks')"),
    ("h = torch.utils.hooks.RemovableHandle\n", "reaches the module 'torch.utils.hooks' (through torch.utils.hooks)"),
    ("import torch.onnx\n", "reaches the module 'torch.onnx'"),
    ("e = torch.onnx.export\n", "reaches the module 'torch.onnx' (through torch.onnx)"),  # loaded lazily
    ("from torch import testing\n", "reaches the module 'torch.testing'"),
    ("from torch.utils import checkpoint\n", "reaches the module 'torch.utils.checkpoint'"),
    ("import torch.nn.modules.module\n", "reaches the module 'torch.nn.modules.module'"),
    ("f = getattr(torch.cuda, 'jiterator')\n", "reaches the module 'torch.cuda.jiterator'"),
    ("t = torch.cuda.tunable.write_file\n", "reaches the module 'torch.cuda.tunable'"),
    ("m = torch.ops.aten.mm\n", "reaches the module 'torch.ops.aten'"),
    ("import numpy.f2py\n", "reaches the module 'numpy.f2py'"),
    ("import numpy\nc = numpy.f2py.compile\n", "reaches the module 'numpy.f2py' (through numpy.f2py)"),
    ("import numpy.distutils\n", "reaches the module 'numpy.distutils'"),  # not even installed here
    ("import numpy as np\nt = np.testing.assert_equal\n", "reaches the module 'numpy.testing'"),
    ("import triton.testing\n", "reaches the module 'triton.testing'"),
    ("from triton.testing import do_bench\n", "reaches the module 'triton.testing'"),
    ("import triton\nd = triton.runtime.driver\n", "reaches the module 'triton.runtime'"),
    ("import triton.tools.disasm\n", "reaches the module 'triton.tools.disasm'"),
    ("lib = torch.utils\nh = lib.hooks\n", "reaches the module 'torch.utils.hooks'"),
    # objects re-exported under an allowed name are judged by the module that defines them, where the gate refuses
    # that module by name (torch.save is torch.serialization's; triton.language.extra re-exports importlib's)
    ("s = torch.save\n", "torch.save is defined in torch.serialization"),
    ("import triton.language as tl\nm = tl.extra.module_from_spec\n", "is defined in the module '_frozen_importlib'"),
    ("import triton.language as tl\ns = tl.extra.spec\n", "is defined in the module '_frozen_importlib'"),
    ("m = torch.cuda.make_graphed_callables\n", "[escaped-timer] main.py:14: torch.cuda.make_graphed_callables is "
     "defined in torch.cuda.graphs"),
])
def test_modules_outside_the_allowlist_are_rejected(code, expected):
    reason = _check(code, head="import torch\nimport triton\n")
    assert expected in reason, reason
    if "reaches the module" in expected:
        assert "[harness-tamper] main.py:" in reason and "kernels may use" in reason and "torch.nn.functional" in reason


def test_the_denylist_still_gives_its_own_reason_inside_allowed_modules():
    assert "uses torch.fx (generates Python" in _check("g = torch.fx.Graph\n")
    assert "reaches the module" not in _check("g = torch.fx.Graph\n")
    assert "[escaped-timer]" in _check("s = torch.cuda.Stream()\n")
    assert "imports 'torch.utils.cpp_extension' (compiles C++" in _check("import torch.utils.cpp_extension\n")


@pytest.mark.parametrize("code", [
    "import torch.nn.functional as F\ny = F.softplus\n",
    "from torch.nn import functional as F\n",
    "from torch.nn import Module\n",
    "import triton.language as tl\nf = tl.math.rsqrt\ng = tl.extra.cuda.libdevice.exp\n",
    "from triton.language.extra import libdevice\n",
    "from triton.language.extra.cuda import libdevice\n",
    "from triton.tools.tensor_descriptor import TensorDescriptor\n",
    "import numpy as np\na = np.lib.stride_tricks.as_strided\nz = np.zeros(1, dtype=np.float32)\n",
    "s = torch.linalg.solve_triangular\nf = torch.fft.rfftn\ne = torch.special.erf\nv = torch.version.cuda\n",
    "p = torch.cuda.get_device_properties(0).multi_processor_count\nc = torch.cuda.current_device()\n",
    "import triton\nc = triton.Config({'B': 64}, num_warps=4)\nn = triton.cdiv(7, 2)\n",
    "import triton\ntry:\n    pass\nexcept triton.CompilationError:\n    pass\n",
    "ok = hasattr(torch, 'float8_e4m3fn_new_name')\nd = torch.cuda.Device\n",
])
def test_honest_namespaces_pass(code):
    assert _check(code, head="import torch\nimport triton\n") == ""


def test_honest_sources_of_the_repository_pass_the_allowlist():
    """scripts/gate_namespaces.py over a representative subset (the whole repository: run the script, ~30 s)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gate_namespaces as gn
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    units = [u for u in gn.honest_units() if u[0].startswith(gn.QUICK)]
    assert len(units) >= 15
    bad = [(label, reason) for label, _, reason in gn.findings(units, gn.snippets()) if not gn._not_candidate(label)]
    assert not bad, bad
