"""--peers-beside: every peer and torch.compile row timed a second time in each candidate's rotation, on an arena
of the judge's, and x best peer read from those (kernelcraft/measure/stability.py: the asymmetry it removes).
A real CPU eval of the rmsnorm task (its torch peer runs here, its FLA peer cannot), and compare_with_peers on
rows built with known figures. No GPU."""

from __future__ import annotations

import json

from kernelcraft.gauntlet.evaluate import compare_with_peers
from kernelcraft.gauntlet.records import SolutionResult, WorkloadResult
from kernelcraft.task import load_task

from conftest import ROOT, kc, small_task

TASK = load_task(ROOT / "tasks" / "rmsnorm")


def test_peers_are_timed_beside_each_candidate_on_cpu(tmp_path):
    t = small_task("rmsnorm", tmp_path, [{"batch_size": 3}])
    out = tmp_path / "r.json"
    proc = kc("eval", t, t / "solutions" / "triton_rowwise.py", "--device", "cpu", "--peers", "--peer", "torch",
              "--peer", "fla", "--with-baseline", "--time", "--peers-beside", "--no-calibrate", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads(out.read_text())
    rows = {s["name"]: s for s in rec["solutions"]}
    cand = rows["triton_rowwise"]
    assert cand["status"] == "PASSED", cand["reason"]
    assert rows["peer:fla"]["status"] == "SKIPPED"  # no fla here: its own row says so ...
    assert "peer:fla" in (cand["beside_unavailable"] or {})  # ... and the candidate's says it was not timed beside
    for w in cand["workloads"]:
        assert set(w["beside_ms"]) == {"peer:torch", "torch.compile"}, w["beside_ms"]
        assert all(ms > 0 for ms in w["beside_ms"].values())
        near = dict(w["beside_ms"], baseline=w["baseline_latency_ms"])
        assert w["best_peer_beside"] is True
        assert (w["best_peer"], w["best_peer_latency_ms"]) == min(near.items(), key=lambda kv: kv[1])
        assert w["speedup_vs_best_peer"] == w["best_peer_latency_ms"] / w["latency_ms"]
    for name in ("peer:torch", "torch.compile", "baseline"):  # trusted rows are timed once, alone
        assert all(w.get("beside_ms") is None for w in rows[name]["workloads"])
        # ... by the judge itself (the default --trusted-timing judge; tests/test_trusted_timing.py: in runners)
        assert rows[name]["timing_process"] == "judge", rows[name]["timing_process_reason"]
    assert cand["timing_process"] == "runner"


def _trusted(name: str, role: str, ms: dict[str, float | None]) -> SolutionResult:
    return SolutionResult(name=name, status="PASSED", role=role, workloads=[
        WorkloadResult(uuid=u, axes={}, status="PASSED" if v else "INCORRECT_NUMERICAL", latency_ms=v)
        for u, v in ms.items()])


def test_rows_timed_beside_decide_and_only_those_that_passed_on_their_own():
    u1, u2, u3, u4 = (w.uuid for w in TASK.workloads[:4])
    timing = {"median_ms": 0.005, "p25_ms": 0.0049, "p75_ms": 0.0051, "method": "cuda-graph+events+l2flush"}
    trusted = [_trusted("baseline", "baseline", {u1: 0.0115, u2: 0.0120, u3: 0.0118, u4: 0.0119}),
               _trusted("peer:liger", "peer", {u1: 0.0043, u2: 0.0044, u3: 0.0042, u4: 0.0041}),
               _trusted("peer:quack", "peer", {u1: 0.0060, u2: None, u3: 0.0061, u4: 0.0062})]
    cand = SolutionResult(name="cand", status="PASSED", role="candidate", workloads=[
        # beside it, liger took 4.9 us where it took 4.3 alone: the candidate's 5.0 us is 0.98x, not 0.86x
        WorkloadResult(uuid=u1, axes={}, status="PASSED", latency_ms=0.005, timing=timing, baseline_latency_ms=0.0121,
                       beside_ms={"peer:liger": 0.0049, "peer:quack": 0.0066}),
        # quack failed its own check at u2: its fast time beside the candidate is not a peer's time
        WorkloadResult(uuid=u2, axes={}, status="PASSED", latency_ms=0.005, timing=timing, baseline_latency_ms=0.0125,
                       beside_ms={"peer:liger": 0.0051, "peer:quack": 0.0010}),
        # no row beside it: the rows timed alone decide, as without --peers-beside
        WorkloadResult(uuid=u3, axes={}, status="PASSED", latency_ms=0.005, timing=timing, baseline_latency_ms=0.0122),
        # liger passed here but was not timed beside (it failed to run there): the rows alone decide, not quack's
        WorkloadResult(uuid=u4, axes={}, status="PASSED", latency_ms=0.005, timing=timing, baseline_latency_ms=0.0121,
                       beside_ms={"peer:quack": 0.0066}),
    ])
    compare_with_peers(cand, trusted, TASK)
    w1, w2, w3, w4 = cand.workloads
    assert (w1.best_peer, w1.best_peer_latency_ms, w1.best_peer_beside) == ("peer:liger", 0.0049, True)
    assert abs(w1.speedup_vs_best_peer - 0.98) < 1e-9
    assert (w2.best_peer, w2.best_peer_latency_ms) == ("peer:liger", 0.0051)
    assert (w3.best_peer, w3.best_peer_latency_ms, w3.best_peer_beside) == ("peer:liger", 0.0042, False)
    assert (w4.best_peer, w4.best_peer_latency_ms, w4.best_peer_beside) == ("peer:liger", 0.0041, False)
    # 0.1 us apart beside it: inside the placement noise, as any two short rows
    assert w1.unsettled.startswith("within placement noise") and w2.unsettled.startswith("within placement noise")
