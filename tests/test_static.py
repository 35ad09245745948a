"""The static gate: honest solutions pass; sources reaching for what they should not are rejected."""

from __future__ import annotations

import pytest

from kernelcraft.gauntlet.static import check_static
from kernelcraft.solution import BuildSpec, Solution, SourceFile, load_solution
from kernelcraft.task import load_task

from conftest import CATALOG, TASKS

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
