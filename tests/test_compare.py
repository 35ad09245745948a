"""The element-wise check: both bounds, NaN/Inf agreement, exact shape and dtype, clear messages."""

from __future__ import annotations

import math

import pytest
import torch

from kernelcraft.gauntlet.compare import compare, normalize_outputs
from kernelcraft.task import load_task

from conftest import TASKS

TASK = load_task(TASKS / "softmax")
D, C = TASK.definition, TASK.contract
TOL = C.tolerance.for_output("y", "bfloat16")


def _cmp(got, ref):
    axes = {"num_rows": got.shape[0], "width": got.shape[1]}
    return compare([got], [ref], D, C, axes, "cpu")


def test_exact_passes():
    ref = torch.softmax(torch.randn(4, 33, dtype=torch.float64), -1)
    c = _cmp(ref.to(torch.bfloat16), ref)
    assert c.status == "PASSED"
    assert 0 < c.max_rel_error < 2 ** -8  # rounding to bf16 costs at most half a unit in the last place


def test_element_fails_only_when_both_bounds_exceeded():
    ref = torch.full((1, 4), 1.0, dtype=torch.float64)
    got = ref.clone()
    got[0, 1] += 0.9 * TOL.rtol  # inside rtol, outside atol: passes
    assert _cmp(got.to(torch.bfloat16), ref).status == "PASSED"
    got[0, 2] = 1.0 + 2 * TOL.rtol  # outside both
    c = _cmp(got.to(torch.bfloat16), ref)
    assert c.status == "INCORRECT_NUMERICAL"
    assert "1 of 4 elements" in c.reason and "worst at index (0, 2)" in c.reason
    assert "expected 1" in c.reason


def test_tiny_values_judged_by_rtol_not_swallowed_by_atol():
    # softmax's contract has atol=1e-6: an all-zero output over a wide row must fail
    ref = torch.softmax(torch.randn(2, 32768, dtype=torch.float64), -1)
    c = _cmp(torch.zeros(2, 32768, dtype=torch.bfloat16), ref)
    assert c.status == "INCORRECT_NUMERICAL"
    assert "65536 of 65536" in c.reason or "of 65536 elements" in c.reason


def test_nan_must_agree():
    ref = torch.ones(1, 3, dtype=torch.float64)
    got = torch.ones(1, 3, dtype=torch.bfloat16)
    got[0, 1] = float("nan")
    c = _cmp(got, ref)
    assert c.status == "INCORRECT_NUMERICAL" and "NaN/Inf" in c.reason and "(0, 1)" in c.reason
    ref[0, 1] = float("nan")
    assert _cmp(got, ref).status == "PASSED"


def test_inf_sign_must_agree():
    ref = torch.tensor([[math.inf, 1.0]], dtype=torch.float64)
    got = torch.tensor([[-math.inf, 1.0]], dtype=torch.bfloat16)
    assert _cmp(got, ref).status == "INCORRECT_NUMERICAL"
    got[0, 0] = math.inf
    assert _cmp(got, ref).status == "PASSED"


def test_shape_and_dtype_are_exact():
    ref = torch.zeros(2, 3, dtype=torch.float64)
    c = compare([torch.zeros(3, 2, dtype=torch.bfloat16)], [ref], D, C, {"num_rows": 2, "width": 3}, "cpu")
    assert c.status == "INCORRECT_SHAPE" and "shape (3, 2), expected (2, 3)" in c.reason
    c = compare([torch.zeros(2, 3, dtype=torch.float32)], [ref], D, C, {"num_rows": 2, "width": 3}, "cpu")
    assert c.status == "INCORRECT_DTYPE" and "dtype float32, expected bfloat16" in c.reason


def test_normalize_outputs_forms():
    t = torch.zeros(1)
    assert normalize_outputs(t, D) == [t]
    assert normalize_outputs((t,), D) == [t]
    assert normalize_outputs({"y": t}, D) == [t]
    for bad in ((t, t), {"z": t}):
        try:
            normalize_outputs(bad, D)
        except TypeError as e:
            assert "output" in str(e)
        else:
            raise AssertionError("accepted a wrong output form")


@pytest.mark.parametrize("case", ["pass", "numeric", "special", "ratio"])
def test_compare_in_chunks_says_what_one_pass_says(monkeypatch, case):
    # compare_values works COMPARE_CHUNK elements at a time (the int32-overflow holdout's 2**31-element
    # outputs ran an H200 out of memory in one pass): any chunk size gives the same verdict and figures
    from kernelcraft.gauntlet import compare as cmp

    g = torch.Generator().manual_seed(7)
    ref = torch.randn(1000, generator=g, dtype=torch.float64)
    got = ref + 1e-9 * torch.randn(1000, generator=g, dtype=torch.float64)
    if case in ("numeric", "ratio"):
        got[[13, 640, 999]] += torch.tensor([0.5, 3.0, 1.0], dtype=torch.float64)  # the worst: 640
    if case == "special":
        got[[517, 901]] = float("nan")
    ratio = 0.99 if case == "ratio" else 1.0
    results = []
    for chunk in (1 << 24, 7, 100, 999):
        monkeypatch.setattr(cmp, "COMPARE_CHUNK", chunk)
        c = cmp.compare_values("y", got, ref, 1e-3, 1e-3, (10, 100), ratio)
        results.append((c.status, c.reason, c.max_abs_error, c.max_rel_error))
    assert all(r == results[0] for r in results), results
    status, reason = results[0][:2]
    if case == "pass" or case == "ratio":
        assert status == "PASSED"
    elif case == "numeric":
        assert status == "INCORRECT_NUMERICAL" and "3 of 1000 elements" in reason and "index (6, 40)" in reason
    else:
        assert status == "INCORRECT_NUMERICAL" and "2 of 1000 elements disagree on NaN/Inf" in reason
        assert "(5, 17)" in reason
