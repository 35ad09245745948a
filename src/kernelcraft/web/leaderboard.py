"""Leaderboard rows, one per (device, solution), from the two places verdicts live:

- the ledger: every evaluated candidate of every ``optimize`` run of the task
  (``candidates.evaluation``, an EvalReport holding that one solution);
- imported EvalReport files (``eval_reports``, see :mod:`kernelcraft.web.results`).

Rows are grouped by the record's ``environment.hardware``; CPU records form their own group,
labelled as CPU wall-clock timings, never mixed with a GPU's. Within a group the same solution
(name and source hash) appears once, from its newest record; passing rows come first, fastest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelcraft.ledger.store import Candidate, Run, TaskRow
from kernelcraft.review.candidate import can_promote
from kernelcraft.web.models import EvalReportRow


@dataclass
class Row:
    solution: str
    status: str
    gate: str | None
    reason: str
    speedup_vs_baseline: float | None
    speedup_vs_reference: float | None
    sol: float | None  # best fraction of the device's speed of light over the workloads, if calibrated
    promotable: bool
    date: str
    author: str
    language: str
    source_hash: str
    provenance: str  # URL of the full record
    origin: str  # "run 3, candidate 17" or "results/h200/rmsnorm.json"
    run_id: int | None = None
    workloads: list[dict] = field(default_factory=list)


@dataclass
class Board:
    hardware: str
    device: str
    rows: list[Row]

    @property
    def label(self) -> str:
        return f"{self.hardware} (CPU: wall-clock timings, not a GPU result)" if self.device == "cpu" else self.hardware


def _row(report: dict, sol: dict, provenance: str, origin: str, run_id: int | None = None) -> Row:
    sols = [w.get("sol") for w in sol.get("workloads", []) if isinstance(w.get("sol"), int | float)]
    return Row(
        solution=sol.get("name", "?"), status=sol.get("status", "?"), gate=sol.get("gate"),
        reason=(sol.get("reason") or "")[:300], speedup_vs_baseline=sol.get("speedup_vs_baseline"),
        speedup_vs_reference=sol.get("speedup_vs_reference"), sol=max(sols) if sols else None,
        promotable=can_promote(sol), date=str(report.get("timestamp", ""))[:19].replace("T", " "),
        author=sol.get("author", ""), language=sol.get("language", ""), source_hash=sol.get("source_hash", ""),
        provenance=provenance, origin=origin, run_id=run_id, workloads=sol.get("workloads", []),
    )


def _device_kind(report: dict) -> str:
    return "cpu" if not str(report.get("device", "")).startswith("cuda") else "cuda"


def boards(s: Session, task: str) -> list[Board]:
    found: dict[tuple[str, str], list[Row]] = {}

    def add(report: dict, row: Row) -> None:
        kind = _device_kind(report)
        hw = str((report.get("environment") or {}).get("hardware") or report.get("device") or "unknown")
        found.setdefault((hw, kind), []).append(row)

    for rep in s.scalars(select(EvalReportRow).where(EvalReportRow.task == task).order_by(EvalReportRow.id)):
        for sol in rep.record.get("solutions", []):
            add(rep.record, _row(rep.record, sol, f"/records/report/{rep.id}#{sol.get('name', '')}", rep.source))
    q = (select(Candidate).join(Run, Candidate.run_id == Run.id).join(TaskRow, Run.task_id == TaskRow.id)
         .where(TaskRow.name == task, Candidate.evaluation.is_not(None)).order_by(Candidate.id))
    for c in s.scalars(q):
        report = c.evaluation or {}
        for sol in report.get("solutions", [])[:1]:
            add(report, _row(report, sol, f"/records/candidate/{c.id}", f"run {c.run_id}, candidate {c.id}", c.run_id))
    out = []
    for (hw, kind), rows in found.items():
        newest: dict[tuple[str, str], Row] = {}
        for r in rows:
            key = (r.solution, r.source_hash)
            if key not in newest or r.date >= newest[key].date:
                newest[key] = r
        ordered = sorted(newest.values(), key=lambda r: (r.status != "PASSED", -(r.speedup_vs_baseline or 0.0), r.solution))
        out.append(Board(hw, kind, ordered))
    return sorted(out, key=lambda b: (b.device == "cpu", b.hardware))


def best(board: Board) -> Row | None:
    passed = [r for r in board.rows if r.status == "PASSED" and r.speedup_vs_baseline]
    return passed[0] if passed else None
