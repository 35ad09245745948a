"""eval's plain progress lines (stdout not a terminal): one 'started' line per solution, before its
phases, whichever thread reports first (seen under load in CI: a worker's 'build' phase arrived
before the pool's start event and printed first)."""

from __future__ import annotations

import io

from rich.console import Console

from kernelcraft.progress import EvalProgress


def _lines(drive) -> list[str]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    with EvalProgress(console, ["cand"], "cpu") as p:
        drive(p)
    return [ln.strip() for ln in buf.getvalue().splitlines()]


def test_a_phase_before_the_start_event_still_follows_the_started_line():
    def drive(p):
        p.on_phase("cand", "build", None, 1, 1)
        p.on_progress("cand", "start")
        p.on_phase("cand", "correctness", "abc", 1, 3)
        p.on_phase("cand", "correctness", "def", 2, 3)
        p.on_progress("cand", "PASSED")

    assert _lines(drive) == ["cand: started on cpu", "cand: build", "cand: correctness", "cand: PASSED"]


def test_the_usual_order_is_unchanged():
    def drive(p):
        p.on_progress("cand", "start")
        p.on_phase("cand", "build", None, 1, 1)
        p.on_progress("cand", "REJECTED")

    assert _lines(drive) == ["cand: started on cpu", "cand: build", "cand: REJECTED"]
