"""``kernelcraft knowledge search|show|check`` and ``kernelcraft ledger similar``: kept out of
``cli.py``, which registers them. Output helpers come from ``kernelcraft.cli`` at call time (it
imports this module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kernelcraft.errors import InputError

knowledge_app = typer.Typer(no_args_is_help=True,
                            help="The knowledge base: measured techniques and traps, searchable. Read before writing.")


def _out():
    from kernelcraft import cli

    return cli


@knowledge_app.command("search")
def knowledge_search(
    query: Annotated[str, typer.Argument(help="words to look for (an empty string lists every page that passes the filters)")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="only pages with this tag (repeatable: all must match)")] = None,
    op_type: Annotated[str | None, typer.Option("--op-type", help="only pages for this op type (or for any)")] = None,
    device: Annotated[str | None, typer.Option(help="only pages for this device or its architecture, e.g. 'NVIDIA H200', A100, hopper")] = None,
    limit: Annotated[int, typer.Option(help="at most this many pages")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (each hit with its claim)")] = False,
) -> None:
    """Ranked search (BM25 over title, tags and text) of the knowledge pages."""
    from rich.markup import escape
    from rich.table import Table

    from kernelcraft import knowledge

    cli = _out()
    try:
        hits = knowledge.search(query, tags=tag, op_type=op_type, device=device, limit=limit)
    except InputError as e:
        cli._fail_input(e)
    if as_json:
        print(json.dumps({"query": query, "pages_dir": str(knowledge.pages_dir()),
                          "hits": [h.to_dict() for h in hits]}, indent=2))
        return
    if not hits:
        cli.console.print("no page matches; try fewer words or no filters", highlight=False)
        return
    t = Table(title=f"knowledge: {escape(query) or '(all)'}")
    for col in ("page", "title", "confidence", "score"):
        t.add_column(col)
    for h in hits:
        t.add_row(h.page.id, escape(h.page.title), h.page.confidence, f"{h.score:.2f}")
    cli.console.print(t)
    cli.console.print("read one: kernelcraft knowledge show PAGE", highlight=False)


@knowledge_app.command("show")
def knowledge_show(
    page: Annotated[str, typer.Argument(help="a page id (or a prefix only it has, or its .md path)")],
    as_json: Annotated[bool, typer.Option("--json", help="print the page's fields and sections as JSON")] = False,
) -> None:
    """Print one page: its front matter and its five sections."""
    from kernelcraft import knowledge

    cli = _out()
    try:
        p = knowledge.parse_page(Path(page)) if page.endswith(".md") and Path(page).is_file() else knowledge.find(page)
    except InputError as e:
        cli._fail_input(e)
    if as_json:
        print(json.dumps(p.to_dict(), indent=2))
        return
    print(p.text, end="" if p.text.endswith("\n") else "\n")


@knowledge_app.command("check")
def knowledge_check(
    root: Annotated[Path | None, typer.Option(help="the repository the evidence paths are relative to (default: the folder above the pages)")] = None,
    folder: Annotated[Path | None, typer.Option(help="the pages to check (default: the pages kernelcraft finds)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print every check as JSON")] = False,
) -> None:
    """Parse every page and re-read every number and quote its Evidence section cites from the
    record it names. Exit 1 when one disagrees, a file is missing, or a page lacks evidence."""
    from kernelcraft import knowledge
    from kernelcraft.knowledge.evidence import check_pages

    cli = _out()
    try:
        folder = folder or knowledge.pages_dir()
        pages = knowledge.load_pages(folder)
    except InputError as e:
        cli._fail_input(e)
    root = root or folder.resolve().parent
    checks, unsupported = check_pages(pages, root)
    failed = [c for c in checks if not c.ok]
    if as_json:
        print(json.dumps({"pages": len(pages), "checks": [c.__dict__ for c in checks], "unsupported": unsupported},
                         indent=2))
    else:
        for c in failed:
            cli.err.print(str(c), highlight=False, markup=False, soft_wrap=True)
        for u in unsupported:
            cli.err.print(f"unsupported: {u}", highlight=False, markup=False, soft_wrap=True)
        by = {c: sum(1 for p in pages if p.confidence == c) for c in knowledge.CONFIDENCE}
        cli.console.print(f"{len(pages)} pages ({', '.join(f'{n} {c}' for c, n in by.items())}); "
                          f"{len(checks)} evidence lines checked against {root}, {len(failed)} failed",
                          highlight=False)
    if failed or unsupported:
        raise typer.Exit(1)


def ledger_similar(
    task_dir: Annotated[Path, typer.Argument(help="the task folder to find similar work for")],
    device: Annotated[str | None, typer.Option(help="only candidates evaluated on this hardware ('NVIDIA H200', H200) or device kind (cuda, cpu); default: any")] = None,
    db: Annotated[str | None, typer.Option(help="SQLAlchemy URL of the ledger (default: KERNELCRAFT_DB, else sqlite:///.kernelcraft/ledger.db)")] = None,
    limit: Annotated[int, typer.Option(help="at most this many candidates")] = 5,
    per_task: Annotated[int, typer.Option(help="at most this many candidates per similar task")] = 2,
    source: Annotated[bool, typer.Option("--source", help="with --json: include each candidate's source files")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """What worked on similar tasks (same op type or stage tags): the best candidates, their
    strategies and speedups. The starting points `optimize` offers its agents."""
    from rich.markup import escape
    from rich.table import Table

    from kernelcraft.ledger import Ledger
    from kernelcraft.ledger.memory import entry_fits, similar
    from kernelcraft.task.loader import load_task

    cli = _out()
    try:
        definition = load_task(task_dir).definition.model_dump(mode="json")
    except InputError as e:
        cli._fail_input(e)
    ledger = Ledger(db)
    worked = similar(ledger, definition, hardware=device, limit=limit, per_task=per_task)
    if as_json:
        print(json.dumps({"task": definition["name"], "op_type": definition.get("op_type"), "ledger": ledger.url,
                          "device": device, "similar": [{**w.to_dict(with_source=source), "entry_fits": entry_fits(w, definition)}
                                                        for w in worked]}, indent=2))
        return
    if not worked:
        cli.console.print(f"nothing similar to {definition['name']} in {ledger.url}"
                          + (f" on {device}" if device else ""), highlight=False)
        return
    t = Table(title=f"what worked on tasks like {definition['name']} ({definition.get('op_type')})")
    for col in ("candidate", "task", "why similar", "x baseline", "hardware", "fits", "strategy / description"):
        t.add_column(col)
    for w in worked:
        note = w.description or w.strategy
        t.add_row(f"{w.candidate_id}{' *' if w.promoted else ''}", w.task, ", ".join(w.shared),
                  f"{w.speedup_vs_baseline:.3f}", w.hardware, "yes" if entry_fits(w, definition) else "no",
                  escape(note[:90]))
    cli.console.print(t)
    cli.console.print("* promoted in its run; fits: its run() takes this task's inputs unchanged", highlight=False)
