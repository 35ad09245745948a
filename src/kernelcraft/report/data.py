"""What a report is made of, gathered from evaluation records or from a ledger run.

Records are read as they are: a record older than a field (no ``holdouts``, no ``sol``, no
``calibration``, no ``torch.compile`` row, no peer rows) gives a report that says the thing was not
measured, never one that fails or invents it. Trusted rows (baseline, torch.compile, peers: see
:mod:`kernelcraft.report.peers`) are what the kernels are compared with, never kernels themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport, SolutionResult
from kernelcraft.report import peers
from kernelcraft.task.loader import Task, load_task

COMPILE = "torch.compile"


@dataclass
class Row:
    label: str  # what the tables and plots call it: the solution's name, "#ID name" in a ledger run
    result: SolutionResult
    report: EvalReport  # the evaluation it belongs to (environment, seed, device)
    candidate: dict | None = None  # ledger: id, parent, agent, strategy, status, speedup_vs_baseline
    # the trusted rows of the same evaluation; None where they were not kept (a ledger run records
    # its candidates only, each carrying the names of the rows that were fastest)
    trusted: list[SolutionResult] | None = None

    @property
    def is_trusted(self) -> bool:
        return peers.is_trusted(self.result)

    def headline(self) -> peers.Headline:
        return peers.headline(self.result, self.trusted)


@dataclass
class ReportData:
    task_name: str
    source: str  # where the numbers come from, in words
    rows: list[Row]
    task: Task | None = None
    task_problem: str = ""  # why the task folder is missing, when it is
    run: dict | None = None  # ledger run summary: run_id, agent, candidates, promoted
    notes: list[str] = field(default_factory=list)

    @property
    def first(self) -> EvalReport:
        return self.rows[0].report

    @property
    def kernels(self) -> list[Row]:
        return [r for r in self.rows if not r.is_trusted]

    @property
    def trusted(self) -> list[Row]:
        return [r for r in self.rows if r.is_trusted]

    @property
    def compile_row(self) -> Row | None:
        return next((r for r in self.rows if peers.role(r.result) == COMPILE), None)

    @property
    def baseline_row(self) -> Row | None:
        return next((r for r in self.rows if peers.role(r.result) == "baseline"), None)

    def unavailable(self) -> list[str]:
        """Peer rows that gave no figure, with why (SKIPPED: the library or device; or failed)."""
        kept = [r.result for r in self.trusted]
        return peers.unavailable(kept, [r.result for r in self.kernels])

    def workload_order(self) -> list[tuple[str, dict]]:
        """(uuid, axes) of every workload any row has, in first-seen order."""
        seen: dict[str, dict] = {}
        for r in self.rows:
            for w in r.result.workloads:
                seen.setdefault(w.uuid, w.axes)
        return list(seen.items())


def _task(root: str | Path | None, override: Path | None) -> tuple[Task | None, str]:
    path = Path(override or root or "")
    try:
        return load_task(path), ""
    except InputError as e:
        return None, f"task folder {path} does not load ({e.problems[0]}); the contract is not shown"


def from_records(paths: list[Path], task_dir: Path | None = None) -> ReportData:
    from kernelcraft.review.candidate import read_record

    reports = [(p, read_record(p)) for p in paths]
    names = {r.task for _, r in reports}
    if len(names) != 1:
        raise InputError(Problem(", ".join(str(p) for p, _ in reports), "task", f"records of several tasks {sorted(names)}",
                                 "report one task at a time (`kernelcraft summary` covers several)"))
    rows = []
    for p, rep in reports:
        trusted = peers.trusted_rows(rep.solutions)
        for s in rep.solutions:
            name = peers.label(s)
            rows.append(Row(name if len(reports) == 1 else f"{name} ({p.stem})", s, rep, trusted=trusted))
    if not rows:
        raise InputError(Problem(reports[0][0], "solutions", "empty", "evaluate at least one solution"))
    task, problem = _task(reports[0][1].task_dir, task_dir)
    return ReportData(task_name=reports[0][1].task, source="evaluation record " + ", ".join(str(p) for p, _ in reports),
                      rows=rows, task=task, task_problem=problem)


def from_run(run_id: int, db: str | None = None, task_dir: Path | None = None) -> ReportData:
    from kernelcraft.agent.loop import summary
    from kernelcraft.ledger import Ledger

    ledger = Ledger(db)
    run = ledger.run(run_id)
    if run is None:
        raise InputError(Problem("--run", str(run_id), f"no run {run_id} in {ledger.url}", "see `kernelcraft ledger show`"))
    task, problem = _task(run.task.root, task_dir)
    info = summary(ledger, run_id, task)
    rows = []
    for c in run.candidates:
        if not c.evaluation:
            continue  # PENDING: in flight when the run stopped
        rep = EvalReport.model_validate(c.evaluation)
        cand = next(x for x in info["candidates"] if x["id"] == c.id)
        rows.append(Row(f"#{c.id} {rep.solutions[0].name}", rep.solutions[0], rep, cand))
    if not rows:
        raise InputError(Problem("--run", str(run_id), "no evaluated candidate", "let the run evaluate something first"))
    return ReportData(task_name=run.task.name, source=f"ledger run {run_id} ({run.agent}) in {ledger.url}", rows=rows,
                      task=task, task_problem=problem, run=info)


def latest_run(task_dir: Path, db: str | None = None) -> int | None:
    from kernelcraft.ledger import Ledger

    name = load_task(task_dir).definition.name
    runs = Ledger(db).runs(name)
    return runs[-1].id if runs else None
