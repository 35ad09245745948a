"""benchmarks/peer_targets.py: issue 21's targets from records, on a small record built here (known
latencies at three rmsnorm workloads) and on the frozen fixture record with peers. No GPU."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import peer_targets as pt  # noqa: E402

COPY_GBS = 4000.0
# rmsnorm_bf16_h4096: 4096 bf16 in and out per row, the weight once: batch * 16384 + 8192 bytes
AXES = {"a": {"batch_size": 1}, "b": {"batch_size": 1024}, "c": {"batch_size": 16384}}


def _nbytes(batch: int) -> int:
    return batch * 4096 * 4 + 4096 * 2


def _row(name: str, role: str | None, ms: dict, status: str = "PASSED", implementation=None, **extra) -> dict:
    wls = []
    for uuid, latency in ms.items():
        b = AXES[uuid]["batch_size"]
        floor = _nbytes(b) / (COPY_GBS * 1e9) * 1e3
        wls.append({"uuid": uuid, "axes": AXES[uuid], "status": "PASSED" if latency else "INCORRECT_NUMERICAL",
                    "latency_ms": latency, "floor_ms": floor if latency else None,
                    "sol": floor / latency if latency else None})
    row = {"name": name, "status": status, "workloads": wls, "implementation": implementation, "reason": ""}
    if role is not None:
        row["role"] = role
    return row | extra


def _record(rows: list[dict], task_dir: str | None = "tasks/rmsnorm") -> dict:
    return {"task": "rmsnorm_bf16_h4096", "task_dir": task_dir, "timestamp": "t", "seed": 1,
            "calibration": {"copy_gbs": COPY_GBS, "matmul_tflops": {}, "fingerprint": "f"}, "solutions": rows}


def _rows() -> list[dict]:
    static = {"library": "torch", "version": "2.11", "dynamic": False}
    return [
        _row("baseline", "baseline", {"a": 0.010, "b": 0.020, "c": 0.200}),
        # the dynamic-shape compile is fastest at c: it must not count (the weakest compile a user runs)
        _row("torch.compile(dynamic)", "torch.compile", {"a": 0.009, "b": 0.019, "c": 0.050},
             implementation=static | {"dynamic": True}),
        _row("torch.compile", "torch.compile", {"a": 0.008, "b": 0.010, "c": 0.100}, implementation=static),
        _row("peer:liger", "peer", {"a": 0.005, "b": 0.012, "c": 0.090},
             implementation={"library": "liger-kernel", "version": "0.8.5"}),
        _row("peer:flashinfer", "peer", {}, status="SKIPPED",
             reason="peer:flashinfer: module 'flashinfer' is not installed here (pip install flashinfer-python)"),
        # a peer that failed at c: only its PASSED workloads count
        _row("peer:broken", "peer", {"a": 0.004, "b": None, "c": None}, status="INCORRECT_NUMERICAL"),
        # the best candidate: ahead at decode, 1% behind at the large workload (within 2%)
        _row("fast", "candidate", {"a": 0.0039, "b": 0.009, "c": 0.0909}),
        # slower: 10% behind at c, behind at decode
        _row("slow", "candidate", {"a": 0.006, "b": 0.008, "c": 0.099}),
    ]


def test_bytes_best_peer_ratio_and_targets_per_workload():
    res = pt.analyse(_record(_rows()), ROOT / "x.json")
    assert res["candidate"] == "fast" and res["rows_axis"] == "batch_size" and res["peer_measured"]
    w = {x["uuid"]: x for x in res["workloads"]}
    assert w["c"]["bytes"] == _nbytes(16384) == 268443648 and w["c"]["bytes_source"] == "inputs + outputs once"
    assert "note" not in w["c"]  # the task's bytes give the record's floor back
    # best peer: the dynamic compile (0.050 at c) is left out, a failed workload too, the baseline counts
    assert (w["a"]["best_peer"], w["a"]["best_peer_ms"]) == ("peer:broken", 0.004)
    assert (w["b"]["best_peer"], w["c"]["best_peer"]) == ("torch.compile", "peer:liger")
    assert w["c"]["ratio"] == pytest.approx(0.090 / 0.0909)
    assert w["c"]["best_peer_sol"] == pytest.approx(_nbytes(16384) / 4e12 * 1e3 / 0.090)
    # targets: a is decode (1 row), c is large (268 MB), b neither (16.8 MB, 1024 rows)
    assert (w["a"]["decode"], w["a"]["large"], w["b"]["decode"], w["b"]["large"], w["c"]["large"]) == (
        True, False, False, False, True)
    assert w["a"]["targets"]["decode"]["holds"] and w["a"]["targets"]["large"] is None
    assert w["b"]["targets"] == {"large": None, "decode": None}
    assert w["c"]["targets"]["large"]["holds"]  # 0.990x >= 0.98x
    assert w["b"]["fastest_candidate"] == "slow" and w["b"]["fastest_candidate_ms"] == 0.008
    assert res["targets_missed"] == []
    assert res["peers_unavailable"] == [
        "peer:flashinfer: module 'flashinfer' is not installed here (pip install flashinfer-python)",
        "peer:broken: INCORRECT_NUMERICAL: no reason recorded"]
    assert res["geomean"] == pytest.approx((0.004 / 0.0039 * 0.010 / 0.009 * 0.090 / 0.0909) ** (1 / 3))


def test_missed_targets_say_by_how_much_and_the_catalog_mean():
    slow = pt.analyse(_record(_rows()), ROOT / "x.json", candidate="slow")
    missed = {m["target"]: m for m in slow["targets_missed"]}
    assert set(missed) == {"decode", "large"}
    assert missed["decode"]["cut_needed_pct"] == pytest.approx((1 - 0.004 / 0.006) * 100)  # must be < 0.004 ms
    assert missed["large"]["cut_needed_pct"] == pytest.approx((1 - (0.090 / 0.099) / 0.98) * 100)
    # a tie at decode is not "ahead"
    tie = _rows()
    tie[6]["workloads"][0]["latency_ms"] = 0.004
    assert pt.analyse(_record(tie), ROOT / "x.json")["workloads"][0]["targets"]["decode"]["holds"] is False
    fast = pt.analyse(_record(_rows()), ROOT / "x.json")
    cat = pt.catalog([fast, slow])
    assert cat["geomean"] == pytest.approx((fast["geomean"] * slow["geomean"]) ** 0.5)
    assert cat["holds"] is (cat["geomean"] >= 1.10) and cat["workload_targets_missed"] == 2
    md = pt.markdown(slow).splitlines()
    assert md[2].startswith("| batch_size=1 | 0.0246 | 0.0060 (") and "**missed** (needs > 33.3% less time)" in md[2]
    assert "peer:liger (liger-kernel 0.8.5) | 0.0900 (" in md[4] and "**missed** (needs >= 7.2% less time)" in md[4]
    with pytest.raises(SystemExit, match="no candidate named 'nope'"):
        pt.analyse(_record(_rows()), ROOT / "x.json", candidate="nope")


def _quartiles(row: dict, uuid: str, p25: float, p75: float) -> None:
    w = next(w for w in row["workloads"] if w["uuid"] == uuid)
    w["timing"] = {"median_ms": w["latency_ms"], "p25_ms": p25, "p75_ms": p75, "method": "cuda-graph+events+l2flush"}


def test_bimodal_samples_give_no_verdict_and_are_counted_apart():
    # session 18 on an H100: a row's samples in two populations (p75/p25 2.6), its median on either
    rows = _rows()
    liger, fast, slow = rows[3], rows[6], rows[7]
    _quartiles(fast, "a", 0.0038, 0.0041)  # tight: not what decides
    _quartiles(liger, "c", 0.089, 0.091)
    base = pt.analyse(_record(rows), ROOT / "x.json")
    assert base["targets_unstable"] == [] and "unstable" not in base["workloads"][0]
    # the best peer at a (peer:broken, 0.004) is tight; a bimodal trusted row whose p25 is below the
    # candidate's median could be the real best: no verdict at a, whichever way the medians fall
    _quartiles(liger, "a", 0.0035, 0.0091)
    res = pt.analyse(_record(rows), ROOT / "x.json")
    a = res["workloads"][0]
    assert a["targets"]["decode"]["holds"] is None and a["targets"]["decode"]["unstable"]
    assert "peer:liger p75/p25 2.60 > 1.3" in a["unstable"] and res["targets_missed"] == []
    assert [u["target"] for u in res["targets_unstable"]] == ["decode"]
    # a bimodal trusted row that is slower than the candidate even in its fast population decides nothing
    _quartiles(liger, "a", 0.0045, 0.0117)
    assert pt.analyse(_record(rows), ROOT / "x.json")["workloads"][0]["targets"]["decode"]["holds"] is True
    # the candidate's own samples bimodal: no verdict on a miss either (slow is behind at decode); at a
    # Liger's fast population (p25 0.0045) is below slow's 0.006 there: no verdict until its samples are tight
    assert pt.analyse(_record(rows), ROOT / "x.json", candidate="slow")["workloads"][0]["targets"]["decode"]["holds"] is None
    _quartiles(liger, "a", 0.0049, 0.0051)
    _quartiles(slow, "a", 0.0040, 0.0075)
    # a long row's spread (0.099 ms, over measure/stability.py's SHORT_MS) is its own work varying: still judged
    _quartiles(slow, "c", 0.080, 0.130)
    s = pt.analyse(_record(rows), ROOT / "x.json", candidate="slow")
    assert {m["target"] for m in s["targets_missed"]} == {"large"}
    assert [u["target"] for u in s["targets_unstable"]] == ["decode"] and "slow p75/p25 1.88" in s["workloads"][0]["unstable"]
    cat = pt.catalog([s])
    assert (cat["workload_targets_missed"], cat["workload_targets_unstable"]) == (1, 1)
    assert "no verdict (unsettled timing)" in pt.markdown(s) and "NO-VERDICT(unsettled)" in pt.table([s], cat)


def test_old_record_without_peers_checks_nothing_and_is_left_out_of_the_mean():
    # harness 0.4.0: no roles; its torch.compile row (no implementation) compiled one dynamic graph
    rows = [_row("baseline", None, {"a": 0.010, "c": 0.2}), _row("torch.compile", None, {"a": 0.009, "c": 0.1}),
            _row("fast", None, {"a": 0.0039, "c": 0.0909})]
    res = pt.analyse(_record(rows), ROOT / "x.json")
    assert not res["peer_measured"] and res["geomean"] is None and "no peer measured" in res["why"]
    assert all(t is None for w in res["workloads"] for t in w["targets"].values())
    assert res["workloads"][0]["best_peer"] == "baseline"  # still shown, never judged against
    cat = pt.catalog([res])
    assert cat["geomean"] is None and cat["left_out"][0]["task"] == "rmsnorm_bf16_h4096"


def test_bytes_without_the_task_folder_and_a_changed_task():
    rows = _rows()
    res = pt.analyse(_record(rows, task_dir="tasks/no_such_task"), ROOT / "x.json")
    w = res["workloads"][2]
    assert w["bytes"] == pytest.approx(_nbytes(16384)) and w["bytes_source"].startswith("record floor_ms")
    assert res["rows_axis"] is None and w["targets"]["decode"] is None and w["targets"]["large"]["holds"]
    rows[6]["workloads"][2]["bytes"] = 123.0  # a record that states its bytes is believed
    assert pt.analyse(_record(rows), ROOT / "x.json")["workloads"][2]["bytes_source"] == "record"
    rows = _rows()
    rows[6]["workloads"][2]["floor_ms"] *= 2  # the floor of another bytes model
    assert "the task changed since the record" in pt.analyse(_record(rows), ROOT / "x.json")["workloads"][2]["note"]


def test_main_on_the_fixture_record_prints_and_writes(tmp_path, capsys):
    rec = ROOT / "tests/fixtures/records/derived/rmsnorm_with_peers.DERIVED.json"
    out = tmp_path / "t.json"
    assert pt.main([str(rec), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    r = doc["records"][0]
    assert doc["generated_by"].startswith("PYTHONPATH=src python3 benchmarks/peer_targets.py tests/fixtures/")
    assert r["task"] == "rmsnorm_bf16_h4096" and r["candidate"] in text and "catalog geomean" in text
    data = json.loads(rec.read_text())
    cand = next(s for s in data["solutions"] if s["name"] == r["candidate"])
    # the best peer per workload and the x best peer agree with what the harness recorded
    for w, mine in zip(cand["workloads"], r["workloads"], strict=True):
        assert mine["best_peer"] == w["best_peer"] and mine["best_peer_ms"] == w["best_peer_latency_ms"]
    assert r["geomean"] == pytest.approx(cand["speedup_vs_best_peer"])
