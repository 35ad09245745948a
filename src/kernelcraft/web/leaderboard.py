"""Leaderboard rows, one per (device, solution), from the two places verdicts live:

- the ledger: every evaluated candidate of every ``optimize`` run of the task
  (``candidates.evaluation``, an EvalReport holding that one solution);
- imported EvalReport files (``eval_reports``, see :mod:`kernelcraft.web.results`).

Rows are grouped by the record's ``environment.hardware``; CPU records form their own group,
labelled as CPU wall-clock timings, never mixed with a GPU's. Within a group the same solution
(name and source hash) appears once, from its newest record. Candidates are ranked: passing rows
first, by x best peer (the fastest trusted row of their run, :mod:`kernelcraft.report.peers`) where
their record has one, then by x baseline. Trusted rows (baseline, torch.compile, peers) are what they
are compared with: a table of their own, never ranked or promotable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelcraft.ledger.store import Candidate, Run, TaskRow
from kernelcraft.report import peers
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
    role: str = "candidate"  # or a trusted row's: baseline, torch.compile, peer
    label: str = ""  # trusted rows with their implementation; the old harness's torch.compile as what it was
    speedup_vs_best_peer: float | None = None  # the headline; None when not headlined (``headline`` says why)
    headline: str = ""  # "0.94x", "no peer measured", "-" (not timed), "trusted row"
    best_peers: list[str] = field(default_factory=list)  # the rows that were fastest at some workload
    by_workload: list[dict] = field(default_factory=list)  # axes, peer, peer_ms, latency_ms, speedup
    peers_unavailable: list[str] = field(default_factory=list)  # as the candidate's record says
    why: str = ""  # a trusted row that gave no figure: why


@dataclass
class Board:
    hardware: str
    device: str
    rows: list[Row]  # the candidates, ranked
    trusted: list[Row] = field(default_factory=list)  # what they were compared with, newest of each
    peers_unavailable: list[str] = field(default_factory=list)  # "peer:x: why", from the newest records

    @property
    def headlined(self) -> bool:
        return any(r.speedup_vs_best_peer is not None for r in self.rows)

    @property
    def label(self) -> str:
        return f"{self.hardware} (CPU: wall-clock timings, not a GPU result)" if self.device == "cpu" else self.hardware


def _row(report: dict, sol: dict, provenance: str, origin: str, run_id: int | None = None,
         trusted: list[dict] | None = None) -> Row:
    """``trusted``: the trusted rows of the same record; None for a ledger candidate (the run keeps its
    candidates only, each naming the rows that were fastest)."""
    sols = [w.get("sol") for w in sol.get("workloads", []) if isinstance(w.get("sol"), int | float)]
    role = peers.role(sol)
    h = peers.headline(sol, trusted)
    lat = {w.get("uuid"): w.get("latency_ms") for w in sol.get("workloads", [])}
    return Row(
        solution=sol.get("name", "?"), status=sol.get("status", "?"), gate=sol.get("gate"),
        reason=(sol.get("reason") or "")[:300], speedup_vs_baseline=sol.get("speedup_vs_baseline"),
        speedup_vs_reference=sol.get("speedup_vs_reference"), sol=max(sols) if sols else None,
        promotable=can_promote(sol),
        date=str(report.get("timestamp", ""))[:19].replace("T", " "),
        author=sol.get("author", ""), language=sol.get("language", ""), source_hash=sol.get("source_hash", ""),
        provenance=provenance, origin=origin, run_id=run_id, workloads=sol.get("workloads", []),
        role=role, label=peers.label(sol), speedup_vs_best_peer=h.value, headline=h.text, best_peers=h.peers,
        by_workload=[{"axes": ", ".join(f"{k}={v}" for k, v in wp.axes.items()), "peer": wp.peer, "peer_ms": wp.peer_ms,
                      "latency_ms": lat.get(wp.uuid), "speedup": wp.speedup} for wp in h.workloads],
        peers_unavailable=list(sol.get("peers_unavailable") or []),
        why="" if sol.get("status") == "PASSED" or role == "candidate" else peers.why(sol),
    )


def _rank(r: Row) -> tuple:
    return (r.status != "PASSED", r.speedup_vs_best_peer is None, -(r.speedup_vs_best_peer or 0.0),
            -(r.speedup_vs_baseline or 0.0), r.solution)


def _newest(rows: list[Row], key) -> list[Row]:
    newest: dict = {}
    for r in rows:
        k = key(r)
        if k not in newest or r.date >= newest[k].date:
            newest[k] = r
    return list(newest.values())


def _device_kind(report: dict) -> str:
    return "cpu" if not str(report.get("device", "")).startswith("cuda") else "cuda"


def boards(s: Session, task: str) -> list[Board]:
    found: dict[tuple[str, str], list[Row]] = {}

    def add(report: dict, row: Row) -> None:
        kind = _device_kind(report)
        hw = str((report.get("environment") or {}).get("hardware") or report.get("device") or "unknown")
        found.setdefault((hw, kind), []).append(row)

    for rep in s.scalars(select(EvalReportRow).where(EvalReportRow.task == task).order_by(EvalReportRow.id)):
        sols = [x for x in rep.record.get("solutions", []) if isinstance(x, dict)]
        trusted = peers.trusted_rows(sols)
        for sol in sols:
            add(rep.record, _row(rep.record, sol, f"/records/report/{rep.id}#{sol.get('name', '')}", rep.source,
                                 trusted=trusted))
    q = (select(Candidate).join(Run, Candidate.run_id == Run.id).join(TaskRow, Run.task_id == TaskRow.id)
         .where(TaskRow.name == task, Candidate.evaluation.is_not(None)).order_by(Candidate.id))
    for c in s.scalars(q):
        report = c.evaluation or {}
        for sol in report.get("solutions", [])[:1]:
            add(report, _row(report, sol, f"/records/candidate/{c.id}", f"run {c.run_id}, candidate {c.id}", c.run_id))
    out = []
    for (hw, kind), rows in found.items():
        cands = sorted(_newest([r for r in rows if r.role == "candidate"], lambda r: (r.solution, r.source_hash)), key=_rank)
        # a trusted row once, from its newest record (the old harness's torch.compile is another row
        # than today's: its label differs)
        trusted = sorted(_newest([r for r in rows if r.role != "candidate"], lambda r: r.label),
                         key=lambda r: (peers.TRUSTED.index(r.role), r.solution))
        gone = {r.solution: f"{r.solution}: {r.why}" for r in trusted if r.role == "peer" and r.status != "PASSED"}
        for r in cands:  # a ledger candidate's record names the SKIPPED peers of its run
            for line in peers.unavailable(None, [r]):
                name = line.partition(": ")[0]
                if not any(t.solution == name for t in trusted):
                    gone.setdefault(name, line)
        out.append(Board(hw, kind, cands, trusted, list(gone.values())))
    return sorted(out, key=lambda b: (b.device == "cpu", b.hardware))


def best(board: Board) -> Row | None:
    """The top candidate that passed and was timed (against the best peer, or the baseline)."""
    passed = [r for r in board.rows if r.status == "PASSED" and (r.speedup_vs_best_peer or r.speedup_vs_baseline)]
    return passed[0] if passed else None
