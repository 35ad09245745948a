"""The scale benchmark's own arithmetic (benchmarks/scale.py), on outcomes with known times: the
figures that decide issue 11's target come from these functions."""

from __future__ import annotations

import sys

from kernelcraft.worker.pool import JobOutcome

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import scale  # noqa: E402


def _job(taken, shared, held, done):
    return JobOutcome(taken_at=taken, slot_shared=shared, slot_held=held, done_at=done)


def test_lane_timeline_counts_holds_once_and_the_unheld_rest():
    outs = [("cuda:0", _job(10.0, [(11, 12), (12.5, 13)], (13, 14), 13.9)),
            ("cuda:0", _job(10.5, [(11.5, 12.2)], (14, 15), 14.8))]
    lane = scale.gpu_timeline(outs, t0=10.0, wall=5.0)["cuda:0"]
    assert lane["jobs"] == 2 and lane["timing_held_s"] == 2.0 and lane["timing_share_of_wall"] == 0.4
    assert lane["checks_held_s"] == 2.2  # the sum of the holds
    assert lane["checks_union_s"] == 1.7  # 11-12.2 and 12.5-13: overlapping holds counted once
    assert lane["unheld_s"] == 1.3  # 5 s from first taken to last done, less checks and timings
    assert lane["mean_exit_after_done_s"] == 0.15


def test_throughput_while_queued_leaves_the_drain_out():
    # ten jobs, one per second; the last was taken at 7 s, the batch ended at 12 s
    outs = [("g", _job(float(i) - 2 if i >= 2 else 0.0, [], (i, i + 0.5), i + 0.4)) for i in range(1, 10)]
    outs.append(("g", _job(7.0, [], (11.5, 12.0), 11.9)))
    q = scale.throughput_while_queued(outs, t0=0.0)
    assert q["last_taken_s"] == 7.0 and q["drain_s"] == 5.0
    assert q["done_while_queued"] == 6  # ends at 1.5, 2.5, ... 6.5
    assert q["candidates_per_minute"] == 60.0  # five more completions in five seconds
