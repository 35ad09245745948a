"""What ``kernelcraft report`` does with its arguments (cli.py only parses and prints).

``report TARGET``: TARGET is an evaluation record (``.json``, more with ``--record``) or a task folder,
which means the task's latest ledger run; ``--run ID`` names a run. Without ``--html``/``--md`` the
HTML goes to ``<task name>.html`` in the working folder (the name ``kernelcraft serve --reports``
links from a task's page).
"""

from __future__ import annotations

from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.report.data import ReportData, from_records, from_run, latest_run


def gather(target: Path | None, run: int | None, records: list[Path], task: Path | None, db: str | None) -> ReportData:
    if run is not None:
        if target is not None or records:
            raise InputError(Problem("--run", str(run), "given with a record or task folder", "give one of them"))
        return from_run(run, db, task)
    if target is None and not records:
        raise InputError(Problem("TARGET", "", "missing", "give an evaluation record (.json), a task folder, or --run ID"))
    if target is not None and target.is_dir():
        if records:
            return from_records(records, task or target)
        run_id = latest_run(target, db)
        if run_id is None:
            raise InputError(Problem(target, "", "the ledger has no run of this task",
                                     "give an evaluation record (kernelcraft eval --json) or run kernelcraft optimize"))
        return from_run(run_id, db, task or target)
    return from_records([p for p in [target, *records] if p is not None], task)


def write(data: ReportData, html: Path | None, md: Path | None) -> list[Path]:
    from kernelcraft.report.render import context, to_html, to_markdown

    if html is None and md is None:
        html = Path(f"{data.task_name}.html")
    ctx = context(data)
    written = []
    if md is not None:
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(to_markdown(ctx, md))
        written.append(md)
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(to_html(ctx))
        written.append(html)
    return written
