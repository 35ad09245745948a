"""Importing ``kernelcraft eval --json`` records (EvalReport files such as ``results/h200/*.json``).

Each file is validated as an :class:`~kernelcraft.gauntlet.records.EvalReport` and stored whole in
``eval_reports``; the sha256 of its canonical JSON makes a second import of the same record a no-op.
When the record's ``task_dir`` can be found (absolute, or relative to the working directory or to
any folder above the file, as ``results/h200/x.json`` names ``tasks/x``), the task is registered
in the ledger's ``tasks`` table with that folder, so its page shows the contract and workloads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import select

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport
from kernelcraft.ledger.store import Ledger, TaskRow
from kernelcraft.web.models import EvalReportRow


@dataclass
class Imported:
    source: str
    report_id: int | None  # None when the file could not be used
    new: bool  # False: the same record was already imported
    error: str = ""


def _find_task_dir(task_dir: str, near: Path | None) -> Path | None:
    if not task_dir:
        return None
    p = Path(task_dir)
    places = [p] if p.is_absolute() else [Path.cwd() / p, *((a / p) for a in (near.resolve().parents if near else []))]
    return next((q.resolve() for q in places if (q / "definition.json").is_file()), None)


def import_record(ledger: Ledger, data: dict, source: str, near: Path | None = None) -> Imported:
    """Store one EvalReport (a dict as read from JSON); raise InputError if it is not one."""
    try:
        report = EvalReport.model_validate(data)
    except ValidationError as e:
        from kernelcraft.task.contract import pydantic_problems

        raise InputError(pydantic_problems(source, e)) from None
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    with ledger.session() as s, s.begin():
        row = s.scalars(select(EvalReportRow).where(EvalReportRow.sha256 == digest)).first()
        if row is not None:
            return Imported(source, row.id, False)
        row = EvalReportRow(sha256=digest, task=report.task, task_dir=report.task_dir,
                            hardware=str(report.environment.get("hardware") or report.device), device=report.device,
                            timestamp=report.timestamp, source=source, record=json.loads(canonical))
        s.add(row)
        folder = _find_task_dir(report.task_dir, near)
        if folder is not None and s.scalars(select(TaskRow).where(TaskRow.name == report.task)).first() is None:
            from kernelcraft.task.loader import load_task

            try:
                task = load_task(folder)
            except InputError:
                task = None
            if task is not None and task.definition.name == report.task:
                ledger.task_row(s, report.task, str(folder), task.definition.model_dump(mode="json"))
        s.flush()
        return Imported(source, row.id, True)


def import_paths(ledger: Ledger, paths: list[Path]) -> list[Imported]:
    """Import every evaluation record among the given files and the ``*.json`` under the given
    folders; report each file's outcome. In a folder, JSON files that are not evaluation records
    (a calibration, an optimize summary, a ledger dump) are passed over; a file named explicitly
    must be one."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            for q in sorted(q for q in p.rglob("*.json") if q.is_file()):
                try:
                    data = json.loads(q.read_text())
                except (ValueError, OSError):
                    files.append(q)  # unreadable: reported below
                    continue
                if isinstance(data, dict) and "solutions" in data:
                    files.append(q)
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(Problem(p, "", "not found", "give a folder of `kernelcraft eval --json` records"))
    out = []
    for f in files:
        try:
            data = json.loads(f.read_text())
            if not isinstance(data, dict) or "solutions" not in data:
                raise InputError(Problem(f, "", "not an evaluation record (no 'solutions')", "give `eval --json` output"))
            out.append(import_record(ledger, data, str(f), near=f))
        except (InputError, ValueError, OSError) as e:
            out.append(Imported(str(f), None, False, str(e)))
    return out
