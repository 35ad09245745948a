"""SQLAlchemy storage of the ledger. A SQLite file by default; any SQLAlchemy URL works
(``--db URL`` or ``KERNELCRAFT_DB``).

Every write is its own transaction, committed before the next step of the loop: a run killed with
SIGKILL loses at most the candidate in flight, which stays ``PENDING`` and is evaluated again by
``optimize --resume``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, Text, create_engine, event, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker


def default_url() -> str:
    """``KERNELCRAFT_DB``, else a SQLite file at ``.kernelcraft/ledger.db`` under the working directory."""
    env = os.environ.get("KERNELCRAFT_DB")
    if env:
        return env
    path = Path.cwd() / ".kernelcraft" / "ledger.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def wal_mode(cur, wait_s: float = 60.0) -> None:
    """``PRAGMA journal_mode=WAL`` on a DB-API cursor, retried while the file is locked.

    Switching a rollback-journal file to WAL needs its exclusive lock. While another process
    holds the write lock (the first process migrating a new ledger does), SQLite answers
    "database is locked" at once without calling the busy handler (deadlock avoidance), so the
    connect timeout does not help; three processes opening one new ledger together met it in
    CI. Retry for ``wait_s``, then raise SQLite's own error."""
    import sqlite3
    import time

    deadline = time.monotonic() + wait_s
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Base(DeclarativeBase):
    pass


class TaskRow(Base):
    __tablename__ = "tasks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)  # the definition's name
    root: Mapped[str] = mapped_column(Text)  # the task folder when first seen
    definition: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[str] = mapped_column(String(40), default=_now)


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id"))
    agent: Mapped[str] = mapped_column(String(200))
    device: Mapped[str] = mapped_column(String(40))
    budget: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), default="running")  # running, finished
    options: Mapped[dict] = mapped_column(JSON, default=dict)
    promoted_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[str] = mapped_column(String(40), default=_now)
    finished_at: Mapped[str | None] = mapped_column(String(40), nullable=True)
    task: Mapped[TaskRow] = relationship()
    candidates: Mapped[list[Candidate]] = relationship(back_populates="run", order_by="Candidate.id")


class Candidate(Base):
    __tablename__ = "candidates"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("candidates.id"), nullable=True)
    agent: Mapped[str] = mapped_column(String(200))
    strategy: Mapped[str] = mapped_column(Text, default="")
    plan: Mapped[str] = mapped_column(Text, default="")
    solution: Mapped[dict] = mapped_column(JSON)  # the FlashInfer-Trace Solution record
    source_hash: Mapped[str] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(30), default="PENDING")
    gate: Mapped[str | None] = mapped_column(String(30), nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    speedup_vs_baseline: Mapped[float | None] = mapped_column(Float, nullable=True)
    feedback: Mapped[str] = mapped_column(Text, default="")
    evaluation: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # SolutionResult + provenance
    created_at: Mapped[str] = mapped_column(String(40), default=_now)
    evaluated_at: Mapped[str | None] = mapped_column(String(40), nullable=True)
    run: Mapped[Run] = relationship(back_populates="candidates")


class Promotion(Base):
    __tablename__ = "promotions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"))
    rule: Mapped[str] = mapped_column(Text)
    created_at: Mapped[str] = mapped_column(String(40), default=_now)


class Ledger:
    def __init__(self, url: str | None = None):
        self.url = url or default_url()
        sqlite = self.url.startswith("sqlite")
        # timeout: SQLite's busy handler waits up to 60 s for another process's write lock (a
        # migration of the same new ledger, a loop committing) instead of pysqlite's 5 s.
        self.engine = create_engine(self.url, connect_args={"timeout": 60} if sqlite else {})
        if self.engine.dialect.name == "sqlite":
            # WAL: a reader (ledger show) never blocks the writer; synchronous=FULL makes each
            # commit durable before the loop moves on, which is what --resume relies on.
            @event.listens_for(self.engine, "connect")
            def _pragmas(conn, _):
                cur = conn.cursor()
                wal_mode(cur)
                cur.execute("PRAGMA synchronous=FULL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()
        # The schema comes from the Alembic migrations (ledger/migrations): a new database is
        # created, one made by create_all before migrations is adopted, an older one upgraded.
        from kernelcraft.ledger.migrations import migrate

        migrate(self.engine)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self.sessions()

    def task_row(self, s: Session, name: str, root: str, definition: dict) -> TaskRow:
        row = s.scalars(select(TaskRow).where(TaskRow.name == name)).first()
        if row is None:
            row = TaskRow(name=name, root=root, definition=definition)
            s.add(row)
            s.flush()
        return row

    def new_run(self, name: str, root: str, definition: dict, agent: str, device: str, budget: int,
                options: dict) -> int:
        with self.session() as s, s.begin():
            task = self.task_row(s, name, root, definition)
            run = Run(task_id=task.id, agent=agent, device=device, budget=budget, options=options)
            s.add(run)
            s.flush()
            return run.id

    def run(self, run_id: int) -> Run | None:
        with self.session() as s:
            run = s.get(Run, run_id)
            if run is not None:
                _ = run.task, list(run.candidates)  # load before the session closes
            return run

    def runs(self, task_name: str | None = None) -> list[Run]:
        with self.session() as s:
            q = select(Run).order_by(Run.id)
            if task_name:
                q = q.join(TaskRow).where(TaskRow.name == task_name)
            runs = list(s.scalars(q))
            for r in runs:
                _ = r.task, list(r.candidates)
            return runs

    def add_candidate(self, run_id: int, parent: int | None, agent: str, strategy: str, plan: str,
                      solution: dict, source_hash: str) -> int:
        with self.session() as s, s.begin():
            c = Candidate(run_id=run_id, parent_id=parent, agent=agent, strategy=strategy, plan=plan,
                          solution=solution, source_hash=source_hash)
            s.add(c)
            s.flush()
            return c.id

    def record(self, cand_id: int, status: str, gate: str | None, reason: str, speedup: float | None,
               feedback: str, evaluation: dict) -> None:
        with self.session() as s, s.begin():
            c = s.get(Candidate, cand_id)
            c.status, c.gate, c.reason = status, gate, reason
            c.speedup_vs_baseline, c.feedback = speedup, feedback
            c.evaluation = json.loads(json.dumps(evaluation, default=str))
            c.evaluated_at = _now()

    def promote(self, run_id: int, cand_id: int | None, rule: str) -> None:
        with self.session() as s, s.begin():
            run = s.get(Run, run_id)
            run.promoted_id = cand_id
            if cand_id is not None:
                s.add(Promotion(run_id=run_id, candidate_id=cand_id, rule=rule))

    def finish(self, run_id: int) -> None:
        with self.session() as s, s.begin():
            run = s.get(Run, run_id)
            run.status, run.finished_at = "finished", _now()

    def reopen(self, run_id: int) -> None:
        with self.session() as s, s.begin():
            s.get(Run, run_id).status = "running"

    # --- approvals (kernelcraft review / approve; see Approval below) ---

    def approve(self, source_hash: str, task_name: str, solution_name: str, by: str, note: str = "",
                candidate_id: int | None = None, evidence: str = "") -> int:
        with self.session() as s, s.begin():
            a = Approval(candidate_id=candidate_id, source_hash=source_hash, task_name=task_name,
                         solution_name=solution_name, by=by, note=note, evidence=evidence)
            s.add(a)
            s.flush()
            return a.id

    def approvals(self, source_hash: str | None = None, task_name: str | None = None) -> list[Approval]:
        with self.session() as s:
            q = select(Approval).order_by(Approval.id)
            if source_hash is not None:
                q = q.where(Approval.source_hash == source_hash)
            if task_name is not None:
                q = q.where(Approval.task_name == task_name)
            return list(s.scalars(q))

    def candidate(self, cand_id: int) -> Candidate | None:
        with self.session() as s:
            c = s.get(Candidate, cand_id)
            if c is not None:
                _ = c.run.task  # load before the session closes
            return c

    def promoted_candidates(self, task_name: str) -> list[Candidate]:
        """The candidates promoted for a task, oldest promotion first."""
        with self.session() as s:
            q = (select(Candidate).join(Promotion, Promotion.candidate_id == Candidate.id)
                 .join(Run, Run.id == Promotion.run_id).join(TaskRow, TaskRow.id == Run.task_id)
                 .where(TaskRow.name == task_name).order_by(Promotion.id))
            found = list(s.scalars(q))
            for c in found:
                _ = c.run.task
            return found


class Approval(Base):
    """A person's approval of the exact source that was judged (its source_hash), so an edited
    candidate is never promoted on an approval given to an earlier version. ``candidate_id`` is set
    when the candidate lives in the ledger; one approved from an evaluation record has its hash and
    the record's path (``evidence``)."""

    __tablename__ = "approvals"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    candidate_id: Mapped[int | None] = mapped_column(ForeignKey("candidates.id"), nullable=True, index=True)
    source_hash: Mapped[str] = mapped_column(String(64), index=True)
    task_name: Mapped[str] = mapped_column(String(200), index=True)
    solution_name: Mapped[str] = mapped_column(String(200), default="")
    by: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    evidence: Mapped[str] = mapped_column(Text, default="")  # "ledger:ID" or the evaluation record's path
    created_at: Mapped[str] = mapped_column(String(40), default=_now)
