"""Integrity classes that need a task of their own rather than a fixture in tasks/*/solutions/wrong
(those run in test_gauntlet_cpu.py and test_gpu.py, each reason naming its class)."""

from __future__ import annotations

import shutil

from kernelcraft.task import load_task
from kernelcraft.task.degenerate import degenerate_warnings

from conftest import FIXTURES, TASKS, eval_json, kc


def test_degenerate_tolerance_is_flagged(tmp_path):
    """[degenerate-output]: softmax rows of width 32000 under bf16's default atol (1e-2) would let an
    all-zero output pass; the catalog's contract (atol 1e-6) does not."""
    assert degenerate_warnings(load_task(TASKS / "softmax")) == []
    loose = tmp_path / "softmax"
    shutil.copytree(TASKS / "softmax", loose)
    (loose / "contract.toml").write_text("[tolerance.bfloat16]\natol = 1e-2\nrtol = 1.6e-2\n")
    [warning] = degenerate_warnings(load_task(loose))
    assert "[degenerate-output]" in warning and "all zeros would pass" in warning
    proc = kc("task", "check", loose)
    assert proc.returncode == 0 and "[degenerate-output]" in proc.stdout


def test_catalog_and_fixtures_have_no_degenerate_outputs():
    for d in [TASKS / "rmsnorm", TASKS / "silu_mul", FIXTURES / "kda_gelu_request",
              FIXTURES / "foreign_fused_add_rmsnorm"]:
        assert degenerate_warnings(load_task(d)) == [], d


def test_lowered_precision_is_caught(tmp_path):
    """[precision-lowered]: an fp16 task computed in bf16 arithmetic fails fp16's tolerance."""
    rep = eval_json(FIXTURES / "kda_gelu_request", FIXTURES / "fib_solutions" / "gelu_bf16_math.json",
                    extra=("--no-timing",), tmp=tmp_path)
    [s] = rep["solutions"]
    assert s["status"] == "INCORRECT_NUMERICAL", s["reason"]
    assert "rtol=0.002" in s["reason"]
