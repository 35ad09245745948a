"""scripts/sweep_pick.py: which swept variants go on to a `kernelcraft eval` (session 17's device calls)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "results/h100/design/catalog_sweep-2026-12-06/sweep_softmax.json"


def pick(sweep: Path, variants: Path, n: int = 2) -> list[str]:
    out = subprocess.run([sys.executable, str(ROOT / "scripts/sweep_pick.py"), str(sweep), str(variants), "-n", str(n)],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if not line.startswith("#")]


def test_the_recorded_softmax_sweep_picks_what_the_device_call_evaluated(tmp_path):
    for name in ("triton_split", "triton_split_v3", "triton_split_v4"):
        (tmp_path / f"{name}.py").write_text("")
    picked = [Path(p).stem for p in pick(SWEEP, tmp_path)]
    # results/h100/design/catalog_sweep-2026-12-06/picks_softmax.txt: what the evals call took from this sweep
    assert picked == ["triton_split_v3", "triton_split_v4"]


def test_a_variant_that_failed_at_any_workload_is_never_picked(tmp_path):
    rows = {"fast_but_wrong": {"status": "INCORRECT_NUMERICAL"}, "honest": {"status": "PASSED", "ms": 2.0},
            "peer:x": {"status": "PASSED", "ms": 1.0}}
    sweep = {"workloads": [
        {"best_peer": [1.0, "peer:x"], "results": {"fast_but_wrong": {"status": "PASSED", "ms": 0.1},
                                                    "honest": {"status": "PASSED", "ms": 2.0},
                                                    "peer:x": {"status": "PASSED", "ms": 1.0}}},
        {"best_peer": [1.0, "peer:x"], "results": rows}]}
    f = tmp_path / "sweep.json"
    f.write_text(json.dumps(sweep))
    for name in ("fast_but_wrong", "honest"):
        (tmp_path / f"{name}.py").write_text("")
    assert [Path(p).stem for p in pick(f, tmp_path)] == ["honest"]


def test_a_sweep_without_peers_still_picks_against_the_baseline(tmp_path):
    """results/h100/design/catalog_sweep-2026-12-06/sweep_gelu_tanh_mul.json measured no peer (none was installed
    yet): before, nothing was picked; against the baseline row, triton_stream_v3 (FAST_MATH off) ranks first over its
    six workloads, ahead of the promoted triton_tiled (which has no file among the variants, so prints no path)."""
    for name in ("triton_stream", "triton_stream_v1", "triton_stream_v3"):
        (tmp_path / f"{name}.py").write_text("")
    sweep = ROOT / "results/h100/design/catalog_sweep-2026-12-06/sweep_gelu_tanh_mul.json"
    assert [Path(p).stem for p in pick(sweep, tmp_path, n=3)] == ["triton_stream_v3", "triton_stream_v1"]
