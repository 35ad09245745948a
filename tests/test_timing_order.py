"""The timer's turn order (measure/timing.py, kc-timing/7): a fresh order every repetition, so no row always
follows the same neighbour; the old cyclic rotation stays available for A/B runs (KERNELCRAFT_TIMING_ORDER)."""

from __future__ import annotations

import pytest

from kernelcraft.measure.timing import time_interleaved


def _turns(monkeypatch, order: str | None, reps: int = 60) -> list[list[str]]:
    if order is None:
        monkeypatch.delenv("KERNELCRAFT_TIMING_ORDER", raising=False)
    else:
        monkeypatch.setenv("KERNELCRAFT_TIMING_ORDER", order)
    calls: list[str] = []
    fns = {n: (lambda n=n: calls.append(n)) for n in "abcd"}
    time_interleaved(fns, "cpu", budget_ms=1e9, min_reps=reps, max_reps=reps, warmup=0, use_graphs=False)
    return [calls[i:i + 4] for i in range(0, len(calls), 4)]


def _predecessors(turns: list[list[str]], row: str) -> set[str]:
    """The rows that ran right before ``row`` within a repetition."""
    return {t[i - 1] for t in turns for i in range(1, len(t)) if t[i] == row}


def test_every_repetition_runs_every_row_once(monkeypatch):
    for turn in _turns(monkeypatch, None):
        assert sorted(turn) == list("abcd")


def test_shuffled_rows_meet_every_neighbour(monkeypatch):
    turns = _turns(monkeypatch, None)
    assert len({tuple(t) for t in turns}) > 8  # not a rotation of one cycle (4 distinct orders at most)
    assert _predecessors(turns, "a") == {"b", "c", "d"}
    assert turns == _turns(monkeypatch, "shuffled")  # the draws repeat run to run


def test_cyclic_keeps_the_old_rotation(monkeypatch):
    turns = _turns(monkeypatch, "cyclic")
    assert turns[:4] == [list("abcd"), list("bcda"), list("cdab"), list("dabc")]
    assert _predecessors(turns, "a") == {"d"}


def test_an_unknown_order_is_refused(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_TIMING_ORDER", "random")
    with pytest.raises(ValueError, match="KERNELCRAFT_TIMING_ORDER"):
        time_interleaved({"a": lambda: None}, "cpu", min_reps=1, max_reps=1, warmup=0)


def test_the_clock_clears_a_hook_a_timed_call_installs():
    """A trace or profile hook set inside a timed call would run the candidate's deferred work at the
    harness's next Python call, after the timer (red team, session 31): the clock clears both the moment
    the call returns, and the hook never runs."""
    import sys

    from kernelcraft.measure.timing import clock_for

    ran = []

    def hook(frame, event, arg):
        ran.append(event)
        return None

    def timed():
        sys.settrace(hook)
        sys.setprofile(hook)

    before = sys.gettrace(), sys.getprofile()
    try:
        clock = clock_for("cpu")
        clock.run("candidate", timed, 0)
        after = sys.gettrace(), sys.getprofile()
        (name, ms), = clock.collect()
    finally:
        sys.settrace(before[0])
        sys.setprofile(before[1])
    assert after == (None, None)
    assert name == "candidate" and ms >= 0
    assert [e for e in ran if e in ("call", "line")] == [], ran
