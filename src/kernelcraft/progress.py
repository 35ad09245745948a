"""What ``eval`` and ``optimize`` show while they run.

On a terminal: a rich progress bar per solution, moving through its phases (build, the correctness
of each workload, the holdouts, the timing of each workload), and for ``optimize`` one bar over the
budget with the best candidate so far and what is left. Otherwise (a log file, CI, a pipe): one
plain line per phase, so a log says where a long evaluation is and a stuck one shows where it stuck.

The phases come from the worker's own announcements (:func:`kernelcraft.worker.pool.run_job`'s
``on_phase``). A worker runs candidate code, so what it announces is shown, never trusted: only the
harness's phase names are displayed, and nothing here feeds a verdict.
"""

from __future__ import annotations

import threading

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

PHASES = {"build": "build", "correctness": "correctness", "generalization": "holdouts", "timing": "timing"}


def _where(gate: str, uuid: str | None) -> str:
    label = PHASES[gate]
    if not uuid or gate == "build":
        return label
    # holdout ids say what they are ("holdout-3", "repeat-1a2b3c4d"); workload uuids are long
    return f"{label} {escape(uuid if gate == 'generalization' else uuid[:8])}"


class EvalProgress:
    """``eval``'s display; pass :meth:`on_progress` and :meth:`on_phase` to ``evaluate``."""

    def __init__(self, console: Console, names: list[str], device: str):
        self.console, self.device = console, device
        self.names = set(names)
        self.live = console.is_terminal
        self._rows: dict[str, int] = {}
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()
        self._said_start: set[str] = set()
        self._progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
            TextColumn("{task.fields[phase]}"), TimeElapsedColumn(), console=console) if self.live else None

    def __enter__(self) -> EvalProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _print(self, text: str) -> None:
        (self._progress.console if self._progress else self.console).print(text, highlight=False)

    def on_progress(self, name: str, state: str) -> None:
        if name not in self.names:  # the calibration, a compute-sanitizer pass: no phases of their own
            if state == "start":
                self._print(f"  {escape(name)} on {self.device} ...")
            return
        if state == "start":
            if self._progress is not None:
                with self._lock:
                    self._rows[name] = self._progress.add_task(escape(name), total=None, phase="starting its worker")
            else:
                self._started(name)
            return
        if self._progress is not None and name in self._rows:
            row = self._rows[name]
            total = self._progress.tasks[row].total or 1
            self._progress.update(row, total=total, completed=total, phase=escape(state))
        else:
            self._started(name)
        self._print(f"  {escape(name)}: {escape(state)}")

    def on_phase(self, name: str, gate: str, uuid: str | None, step: int, steps: int) -> None:
        if gate not in PHASES:
            return
        if self._progress is not None:
            row = self._rows.get(name)
            if row is not None:
                self._progress.update(row, total=steps, completed=step - 1, phase=f"{_where(gate, uuid)} ({step}/{steps})")
            return
        self._started(name)  # a worker's first phase can arrive before the pool's start event
        with self._lock:
            if self._last.get(name) == gate:
                return
            self._last[name] = gate
            self._print(f"  {escape(name)}: {PHASES[gate]}")

    def _started(self, name: str) -> None:
        """The plain 'started' line, once per solution and before any of its phases."""
        with self._lock:
            if name in self._said_start:
                return
            self._said_start.add(name)
            self._print(f"  {escape(name)}: started on {self.device}")


class OptimizeProgress:
    """``optimize``'s display; pass :meth:`on_event` to ``optimize``."""

    def __init__(self, console: Console, title: str, budget: int):
        self.console, self.title, self.budget = console, title, budget
        self.done = 0  # candidates evaluated, the baseline not counted (earlier sessions' included)
        self.best: tuple[float, int] | None = None  # (speedup, candidate id) of the best PASSED so far
        self.now = ""  # the phase the latest candidate is in
        self._last: dict[int, str] = {}
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console) if console.is_terminal else None
        self._bar = None

    def __enter__(self) -> OptimizeProgress:
        if self._progress is not None:
            self._progress.start()
            self._bar = self._progress.add_task(escape(self.title), total=self.budget, status=self._status())
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _status(self) -> str:
        best = f"best {self.best[0]:.3g}x (candidate {self.best[1]})" if self.best else "no candidate has PASSED yet"
        left = max(0, self.budget - self.done)
        return f"{best} · {left} of {self.budget} left" + (f" · {self.now}" if self.now else "")

    def _print(self, text: str) -> None:
        (self._progress.console if self._progress else self.console).print(text, highlight=False)

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._bar, completed=min(self.done, self.budget), status=self._status())

    def on_event(self, kind: str, data: dict) -> None:
        if kind == "run":
            self.done = data.get("evaluated", 0)
            if data.get("best"):
                self.best = tuple(data["best"])
            self.title = f"run {data['run_id']}: {self.title}"
            if self._progress is not None:
                self._progress.update(self._bar, description=escape(self.title))
            self._refresh()
        elif kind == "trusted":
            why = f": {escape(data['reason'])}" if data["status"] == "SKIPPED" and data.get("reason") else ""
            self._print(f"  {escape(data['name'])} (what candidates are compared with): {data['status']}{why}")
        elif kind == "memory":
            start = f"; starting point: candidate {data['start']}" if data.get("start") is not None else ""
            self._print(f"  ledger memory: similar candidates {data['similar']}{start}")
        elif kind == "evaluating":
            self._print(f"  candidate {data['id']}: {escape(data['name'])} ...")
        elif kind == "phase":
            if data.get("gate") not in PHASES or not isinstance(data.get("id"), int):
                return
            self.now = f"candidate {data['id']}: {_where(data['gate'], data.get('uuid'))}"
            if self._progress is not None:
                self._refresh()
            elif self._last.get(data["id"]) != data["gate"]:
                self._last[data["id"]] = data["gate"]
                self._print(f"  candidate {data['id']}: {PHASES[data['gate']]}")
        elif kind == "evaluated":
            speed = data.get("speedup")
            if data["name"] != "baseline":
                self.done += 1
                if data["status"] == "PASSED" and speed and (self.best is None or speed > self.best[0]):
                    self.best = (speed, data["id"])
            self.now = ""
            sp = f" {speed:.3g}x" if speed else ""
            self._print(f"  candidate {data['id']}: {data['status']}{sp}; {self._status()}")
            self._refresh()
        elif kind == "agent_error":  # no candidate: the budget is not spent
            self._print(f"  [yellow]agent error[/]: {escape(data['error'])}")
            self._refresh()
        elif kind == "exhausted":
            self._print("  the agent has nothing more to propose")
