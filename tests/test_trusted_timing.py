"""--trusted-timing runner: the baseline, torch.compile and peer rows time their calls in a runner process of their
own, the path a candidate's timed calls take (inputs the judge writes to a shared arena, a sync, the hop to another
process, its timer), while their checks stay in the judge. Session 23's A/A on the H200 (results/h200/README.md):
the same code read +0.26-0.32 us slower as a candidate than as the judge's own row, and two runner copies agreed
within 0.06 us. Real CPU evals of the rmsnorm task; no GPU."""

from __future__ import annotations

import json

from kernelcraft.gauntlet.evaluate import Options, compare_with_peers, resolved_trusted_timing
from kernelcraft.gauntlet.records import SolutionResult, WorkloadResult
from kernelcraft.measure.stability import asymmetry_ms
from kernelcraft.task import load_task

from conftest import ROOT, kc, small_task

# A peer with a prepare (run once per placement, outside timing: here the weight as float32) that, like FlashInfer's
# and quack's, hands run arguments of its own making.
PREP_PEER = '''"""rms_norm with a prepared float32 weight (a test peer)."""
import torch

PEER = {"name": "prep", "library": "torch", "modules": ["torch"], "devices": ["cuda", "cpu"],
        "install": "pip install torch"}


def prepare(hidden_states, weight, eps):
    return hidden_states, weight.float(), eps


def run(hidden_states, weight, eps):
    x = hidden_states.float()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    return y.to(hidden_states.dtype)
'''

# A peer that loads in the judge and not in a runner: the runner's environment is an allowlist (no KERNELCRAFT_*
# variable reaches it), so this one stands for any peer whose library cannot start there.
JUDGE_ONLY_PEER = '''"""A peer that needs a variable of the judge's environment (a test peer)."""
import os

import torch.nn.functional as F

PEER = {"name": "judgeonly", "library": "torch", "modules": ["torch"], "devices": ["cuda", "cpu"],
        "install": "pip install torch"}

if "KERNELCRAFT_TEST_JUDGE_ONLY" not in os.environ:
    raise RuntimeError("KERNELCRAFT_TEST_JUDGE_ONLY is not set in this process")


def run(hidden_states, weight, eps):
    return F.rms_norm(hidden_states, (hidden_states.shape[-1],), weight, eps)
'''


# A peer wrong at one shape (zeros at 5 rows), right at the others: quack's cross_entropy at vocabulary 151936.
HALF_WRONG_PEER = '''"""rms_norm, except zeros at 5 rows (a test peer)."""
import torch
import torch.nn.functional as F

PEER = {"name": "halfwrong", "library": "torch", "modules": ["torch"], "devices": ["cuda", "cpu"],
        "install": "pip install torch"}


def run(hidden_states, weight, eps):
    y = F.rms_norm(hidden_states, (hidden_states.shape[-1],), weight, eps)
    return torch.zeros_like(y) if hidden_states.shape[0] == 5 else y
'''


def test_trusted_rows_are_timed_in_runners_and_a_row_that_cannot_load_there_is_timed_by_the_judge(tmp_path,
                                                                                                   monkeypatch):
    t = small_task("rmsnorm", tmp_path, [{"batch_size": 3}, {"batch_size": 5}])
    (t / "peers" / "prep.py").write_text(PREP_PEER)
    (t / "peers" / "judgeonly.py").write_text(JUDGE_ONLY_PEER)
    (t / "peers" / "halfwrong.py").write_text(HALF_WRONG_PEER)
    monkeypatch.setenv("KERNELCRAFT_TEST_JUDGE_ONLY", "1")
    out = tmp_path / "r.json"
    proc = kc("eval", t, t / "solutions" / "triton_rowwise.py", "--device", "cpu", "--peers", "--peer", "torch",
              "--peer", "prep", "--peer", "judgeonly", "--peer", "halfwrong", "--peer", "fla", "--with-baseline", "--time",
              "--budget-ms", "20", "--trusted-timing", "runner", "--no-calibrate", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {s["name"]: s for s in json.loads(out.read_text())["solutions"]}
    for name in ("baseline", "torch.compile", "peer:torch", "peer:prep", "triton_rowwise"):
        r = rows[name]
        assert r["status"] == "PASSED", (name, r["reason"])
        assert r["timing_process"] == "runner", (name, r["timing_process_reason"])
        assert all(w["latency_ms"] > 0 for w in r["workloads"]), name
    # the judge-only peer PASSED its checks here and was timed by the judge, saying why
    only = rows["peer:judgeonly"]
    assert only["status"] == "PASSED", only["reason"]
    assert only["timing_process"] == "judge"
    assert "could not load" in only["timing_process_reason"] and "KERNELCRAFT_TEST_JUDGE_ONLY" in \
        only["timing_process_reason"]
    assert rows["peer:fla"]["status"] == "SKIPPED" and rows["peer:fla"]["timing_process"] is None
    # a peer wrong at one workload is still checked and timed at the others (a candidate stops at its first)
    half = rows["peer:halfwrong"]
    assert half["status"] == "INCORRECT_NUMERICAL" and "batch_size=5" in half["reason"]
    by_rows = {w["axes"]["batch_size"]: w for w in half["workloads"]}
    assert by_rows[5]["status"] == "INCORRECT_NUMERICAL" and not by_rows[5].get("latency_ms")
    assert by_rows[3]["status"] == "PASSED" and by_rows[3]["latency_ms"] > 0
    # a trusted row in a runner is not audited as a candidate is: no timed-output checks counted
    assert all("checked_reps" not in (w["timing"] or {}) for w in rows["peer:torch"]["workloads"])
    assert all((w["timing"] or {}).get("checked_reps", 0) >= 1 for w in rows["triton_rowwise"]["workloads"])
    # the baseline took the candidate's path: no asymmetry is measured against it
    assert rows["triton_rowwise"]["timing_asymmetry_ms"] is None
    # and the console says where each trusted row was timed, and why one was not where it was asked to be
    shown = " ".join(proc.stdout.split())
    assert "trusted rows timed in runners of their own: baseline, torch.compile, peer:" in shown
    assert "by the judge: peer:judgeonly" in shown and "peer:judgeonly: the runner could not load this row" in shown


def test_a_bad_trusted_timing_value_is_refused(small_tasks):
    proc = kc("eval", small_tasks["rmsnorm"], "--device", "cpu", "--trusted-timing", "elsewhere")
    assert proc.returncode == 2
    assert "--trusted-timing 'elsewhere'" in proc.stdout + proc.stderr and "give judge, runner or auto" in proc.stdout + proc.stderr
    proc = kc("eval", small_tasks["rmsnorm"], "--device", "cpu", "--peers", "--peers-beside", "--trusted-timing", "runner")
    assert proc.returncode == 2
    assert "give one" in proc.stdout + proc.stderr


def test_auto_times_trusted_rows_in_runners_only_where_a_gpu_times_them_and_not_beside():
    # the default since the H100 A/B of 2026-12-07 (results/h100/catalog-2026-12-07-s24/): runner on a timing GPU
    assert Options().trusted_timing == "auto"
    assert resolved_trusted_timing(Options(device="cuda", time_it=True)) == "runner"
    assert resolved_trusted_timing(Options(device="cuda:1", time_it=True)) == "runner"
    # --peers-beside times the peers in the judge beside each candidate: auto gives way to it instead of refusing
    assert resolved_trusted_timing(Options(device="cuda", time_it=True, peers_beside=True)) == "judge"
    # nothing timed, or timed on a CPU (where no GPU hand-off handicaps a candidate): the judge
    assert resolved_trusted_timing(Options(device="cuda", time_it=False)) == "judge"
    assert resolved_trusted_timing(Options(device="cpu", time_it=True)) == "judge"
    # an explicit choice is kept as given
    assert resolved_trusted_timing(Options(device="cpu", time_it=True, trusted_timing="runner")) == "runner"
    assert resolved_trusted_timing(Options(device="cuda", time_it=True, trusted_timing="judge")) == "judge"


def test_the_asymmetry_is_measured_only_against_a_baseline_the_judge_timed():
    task = load_task(ROOT / "tasks" / "rmsnorm")
    uuids = [w.uuid for w in task.workloads[:4]]
    timing = {"median_ms": 0.005, "p25_ms": 0.0049, "p75_ms": 0.0051, "method": "cuda-graph+events+l2flush"}

    def base(process):
        return SolutionResult(name="baseline", status="PASSED", role="baseline", timing_process=process, workloads=[
            WorkloadResult(uuid=u, axes={}, status="PASSED", latency_ms=0.0050, timing=timing) for u in uuids])

    def cand():
        return SolutionResult(name="c", status="PASSED", role="candidate", workloads=[
            WorkloadResult(uuid=u, axes={}, status="PASSED", latency_ms=0.0052, timing=timing,
                           baseline_latency_ms=0.0047) for u in uuids])

    assert abs(asymmetry_ms(cand().workloads, [base("judge")]) + 0.0003) < 1e-12  # beside it 0.3 us faster
    assert asymmetry_ms(cand().workloads, [base("runner")]) is None
    c = cand()
    compare_with_peers(c, [base("runner")], task)
    assert c.timing_asymmetry_ms is None
    assert all(w.best_peer == "baseline" and abs(w.speedup_vs_best_peer - 0.005 / 0.0052) < 1e-12
               for w in c.workloads)
