"""Which candidate a command means, and everything recorded about it.

``review``, ``approve``, ``export`` and ``e2e`` name a candidate in one of two ways:

- ``ID``: a candidate in the ledger (``kernelcraft ledger show --run RUN``): its solution, its
  evaluation (the record the gauntlet wrote for it) and its place in the DAG;
- ``RECORD.json`` with ``--solution NAME``: a solution of an evaluation record written by
  ``kernelcraft eval --json`` (``results/<gpu>/*.json``). The solution is read again from the path
  the record names and must hash to the record's ``source_hash``: a record never vouches for a
  source it did not judge.

Either way the task folder must load (the record's ``task_dir``, or ``--task``), because the
contract and the definition decide what "validated" means.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport, SolutionResult
from kernelcraft.solution.model import Solution
from kernelcraft.task.contract import pydantic_problems
from kernelcraft.task.loader import Task, load_task

NOT_A_KERNEL = {"torch.compile"}  # rows of a record that are no solution of anyone's
# Rows a record holds to compare against, never to promote: older records (and the worker before
# issue 24) marked them promotable by the speedup rule alone, so readers check the name too.
REFERENCE_ROWS = frozenset({"baseline", "torch.compile"})


def can_promote(result: dict | object) -> bool:
    """A record's solution row is promotable only when it is a candidate and the record says so (old
    records marked their baseline and torch.compile rows promotable; newer ones name a trusted row's role)."""
    get = result.get if isinstance(result, dict) else lambda k: getattr(result, k, None)
    return bool(get("promotable")) and get("name") not in REFERENCE_ROWS and (get("role") or "candidate") == "candidate"


@dataclass
class Resolved:
    task: Task
    solution: Solution
    report: EvalReport  # the evaluation, holding exactly this solution's result
    result: SolutionResult
    full: EvalReport  # the whole record (its baseline and torch.compile rows too)
    raw_result: dict  # the solution's record as stored, fields newer than this code included
    evidence: str  # "ledger:ID" or the record's path
    candidate_id: int | None = None
    run_id: int | None = None
    parent: Solution | None = None  # the DAG parent's solution (ledger candidates)
    parent_id: int | None = None

    @property
    def label(self) -> str:
        return f"candidate {self.candidate_id} ({self.solution.name})" if self.candidate_id else self.solution.name


def read_record(path: Path) -> EvalReport:
    """An evaluation record from disk, or InputError naming the file and the field."""
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(path, "", "not found", "give an evaluation record written by `kernelcraft eval --json`"))
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InputError(Problem(path, "", f"not valid JSON: line {e.lineno}: {e.msg}")) from None
    try:
        return EvalReport.model_validate(data)
    except ValidationError as e:
        raise InputError(pydantic_problems(path, e)) from None


def resolve(candidate: str, solution: str | None = None, db: str | None = None, task_dir: Path | None = None) -> Resolved:
    if candidate.isdigit():
        if solution:
            raise InputError(Problem("--solution", solution, "only with an evaluation record",
                                     "a ledger candidate ID already names one solution"))
        return _from_ledger(int(candidate), db, task_dir)
    return _from_record(Path(candidate), solution, task_dir)


def _from_ledger(cand_id: int, db: str | None, task_dir: Path | None) -> Resolved:
    from kernelcraft.ledger import Ledger

    ledger = Ledger(db)
    c = ledger.candidate(cand_id)
    if c is None:
        raise InputError(Problem("CANDIDATE", str(cand_id), f"no candidate {cand_id} in {ledger.url}",
                                 "see `kernelcraft ledger show --run RUN`, or pass --db"))
    if c.status == "PENDING" or not c.evaluation:
        raise InputError(Problem("CANDIDATE", str(cand_id), "was never evaluated (PENDING)",
                                 f"finish its run: `kernelcraft optimize TASK --resume {c.run_id}`"))
    task = _load_task(task_dir or Path(c.run.task.root), f"ledger run {c.run_id}")
    if task.definition.name != c.run.task.name:
        raise InputError(Problem("--task", str(task.root), f"is task {task.definition.name!r}, the candidate's is "
                                 f"{c.run.task.name!r}", "give that task's folder"))
    report = EvalReport.model_validate(c.evaluation)
    sol = Solution.model_validate(c.solution)
    if sol.source_hash != report.solutions[0].source_hash:
        raise InputError(Problem("CANDIDATE", str(cand_id), f"its evaluation judged source {report.solutions[0].source_hash[:12]}, "
                                 f"the ledger holds {sol.source_hash[:12]}", "evaluate the candidate again"))
    parent = None
    if c.parent_id is not None:
        p = ledger.candidate(c.parent_id)
        parent = Solution.model_validate(p.solution) if p is not None else None
    return Resolved(task=task, solution=sol, report=report, result=report.solutions[0],
                    full=report, raw_result=c.evaluation["solutions"][0], evidence=f"ledger:{cand_id}", candidate_id=cand_id, run_id=c.run_id, parent=parent,
                    parent_id=c.parent_id)


def _load_task(root: Path, whence: str) -> Task:
    try:
        return load_task(root)
    except InputError as e:
        raise InputError([Problem("task", str(root), f"the task folder of {whence} does not load",
                                  "pass --task TASK_DIR"), *e.problems]) from None


def _from_record(path: Path, name: str | None, task_dir: Path | None) -> Resolved:
    from kernelcraft.gauntlet import baseline_solution
    from kernelcraft.solution.model import load_solution

    if path.suffix != ".json":
        raise InputError(Problem("CANDIDATE", str(path), "neither a ledger candidate ID nor an evaluation record (.json)",
                                 "give an ID from `kernelcraft ledger show`, or RECORD.json --solution NAME"))
    report = read_record(path)
    raw = json.loads(path.read_text())
    names = [s.name for s in report.solutions]
    if name is None:
        kernels = [s.name for s in report.solutions if s.name not in NOT_A_KERNEL | {"baseline"}]
        if len(kernels) != 1:
            raise InputError(Problem(path, "solutions", f"holds {len(kernels)} candidate solutions: {kernels}",
                                     "choose one with --solution NAME"))
        name = kernels[0]
    matches = [s for s in report.solutions if s.name == name]
    if not matches:
        raise InputError(Problem(path, "solutions", f"no solution named {name!r}; the record has {names}",
                                 "use one of those names with --solution"))
    if name in NOT_A_KERNEL:
        raise InputError(Problem(path, f"solutions.{name}", "is the reference under torch.compile, not a kernel",
                                 "choose a candidate solution"))
    result = matches[0]
    task = _load_task(task_dir or Path(report.task_dir), str(path))
    if task.definition.name != report.task:
        raise InputError(Problem(path, "task", f"is {report.task!r}, the task folder {task.root} is "
                                 f"{task.definition.name!r}", "pass the record's task folder with --task"))
    if name == "baseline":
        sol = baseline_solution(task)
    else:
        src = _find_source(Path(result.path), Path(report.task_dir), task)
        if src is None:
            raise InputError(Problem(path, f"solutions.{name}.path", f"{result.path} not found (nor under {task.root})",
                                     "run from the folder the record was written in, or pass --task"))
        sol = load_solution(src, task.definition.name)
    if sol.source_hash != result.source_hash:
        raise InputError(Problem(path, f"solutions.{name}.source_hash",
                                 f"the record judged source {result.source_hash[:12]}, {result.path} is now "
                                 f"{sol.source_hash[:12]}", "evaluate the current source again (kernelcraft eval)"))
    one = report.model_copy(update={"solutions": [result]})
    raw_result = next(s for s in raw.get("solutions", []) if s.get("name") == name)
    return Resolved(task=task, solution=sol, report=one, result=result, full=report, raw_result=raw_result,
                    evidence=str(path))


def _find_source(p: Path, recorded_task: Path, task: Task) -> Path | None:
    """The solution where the record says, moved along with its task folder when --task moved it."""
    candidates = [p]
    try:
        candidates.insert(0, task.root / p.relative_to(recorded_task))
    except ValueError:
        candidates.append(task.root / "solutions" / p.name)
    for cand in candidates:
        if cand.exists():
            return cand
    return None


def ledger_solution(ref: str, task: Task, db: str | None = None) -> Solution:
    """``ledger:ID`` as a SOLUTION of ``eval``: that candidate's exact solution, read from the ledger
    (what ``review`` prints in its replay command, and the ``path`` optimize records for it)."""
    from kernelcraft.ledger import Ledger

    ident = ref.partition(":")[2]
    if not ident.isdigit():
        raise InputError(Problem("SOLUTION", ref, "is not a ledger candidate",
                                 "write ledger:ID, with an ID from `kernelcraft ledger show --run RUN`"))
    if db is None and not os.environ.get("KERNELCRAFT_DB") and not (Path.cwd() / ".kernelcraft" / "ledger.db").is_file():
        raise InputError(Problem("SOLUTION", ref, f"there is no ledger here ({Path.cwd() / '.kernelcraft' / 'ledger.db'})",
                                 "run from the folder `optimize` ran in, or pass --db URL"))
    ledger = Ledger(db)
    c = ledger.candidate(int(ident))
    if c is None:
        raise InputError(Problem("SOLUTION", ref, f"no candidate {ident} in {ledger.url}",
                                 "see `kernelcraft ledger show --run RUN`, or pass --db"))
    if c.run.task.name != task.definition.name:
        raise InputError(Problem("SOLUTION", ref, f"is a candidate of task {c.run.task.name!r}, not of "
                                 f"{task.definition.name!r}", f"evaluate it with that task's folder ({c.run.task.root})"))
    return Solution.model_validate(c.solution)
