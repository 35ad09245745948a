"""The knowledge base: measured techniques and traps, one Markdown page each, and a ranked search.

Agents read it before they write (``kernelcraft knowledge search``, the MCP tool
``knowledge_search``, the pages the ``optimize`` prompt carries). Pages live in ``knowledge/`` of
the repository and ship in the wheel; :mod:`kernelcraft.knowledge._paths` says where they are found.
"""

from __future__ import annotations

from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.knowledge._pages import CONFIDENCE, SECTIONS, Page, load_pages, parse_page
from kernelcraft.knowledge._paths import pages_dir
from kernelcraft.knowledge._search import Hit, Index, family

__all__ = ["CONFIDENCE", "SECTIONS", "Hit", "Index", "Page", "family", "find", "for_task", "index",
           "load_pages", "pages", "pages_dir", "parse_page", "prompt_text", "search"]

_cache: dict[tuple, Index] = {}

# A task's dtypes as the pages write them.
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
           "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int64": "int64", "int32": "int32"}


def index(folder: Path | None = None) -> Index:
    """The index of ``folder`` (default: :func:`pages_dir`), rebuilt when a page file changes."""
    folder = Path(folder) if folder is not None else pages_dir()
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.glob("*.md")))
    key = (str(folder.resolve()), stamp)
    if key not in _cache:
        _cache.clear()
        _cache[key] = Index(load_pages(folder))
    return _cache[key]


def pages(folder: Path | None = None) -> list[Page]:
    return index(folder).pages


def search(query: str, tags: list[str] | None = None, op_type: str | None = None, device: str | None = None,
           limit: int | None = 10, folder: Path | None = None) -> list[Hit]:
    return index(folder).search(query, tags=tags, op_type=op_type, device=device, limit=limit)


def find(ref: str, folder: Path | None = None) -> Page:
    """A page by id, by a prefix of its id that only it has, or by the path of its file."""
    all_pages = pages(folder)
    by_id = {p.id: p for p in all_pages}
    stem = Path(ref).stem if ref.endswith(".md") else ref
    if stem in by_id:
        return by_id[stem]
    prefixed = [p for p in all_pages if p.id.startswith(stem)]
    if len(prefixed) == 1:
        return prefixed[0]
    hint = ("several pages start so: " + ", ".join(p.id for p in prefixed[:8])) if prefixed else \
        "no page has that id"
    raise InputError(Problem(ref, "page", hint, "give a page id from `kernelcraft knowledge search`"))


def _gpu(hardware: str | None) -> str | None:
    """The device filter for a task's prompt: a GPU's name; None on the CPU (the interpreter runs
    kernels meant for a GPU, so every page applies)."""
    if not hardware:
        return None
    fam = family(hardware)
    return hardware if fam not in (None, "cpu") else None


def for_task(definition, hardware: str | None = None, limit: int = 3) -> list[Page]:
    """The pages an agent writing ``definition``'s kernel should read first: pages naming its op
    type, then general ones, each group ranked against the task's op type, name, stage tags and dtypes."""
    op = (definition.op_type or "").lower()
    dtypes = {_DTYPES.get(s.dtype, s.dtype) for s in (*definition.inputs.values(), *definition.outputs.values())}
    stages = [t.split(":", 1)[1] for t in (definition.tags or []) if t.startswith("stage:")]
    flags = [t for t in (definition.tags or []) if ":" not in t]
    query = " ".join([op, definition.name.replace("_", " "), *stages, *flags, *sorted(dtypes)])
    hits = search(query, op_type=op or None, device=_gpu(hardware), limit=None)
    hits.sort(key=lambda h: (op not in h.page.op_types, -h.score, h.page.id))
    return [h.page for h in hits[:limit]]


def prompt_text(page: Page, limit: int = 1500) -> str:
    """A page condensed for a prompt: its title, confidence, claim and how to apply it."""
    text = (f"### {page.title}\n(page `{page.id}`, confidence: {page.confidence}; "
            f"`kernelcraft knowledge show {page.id}` has the evidence)\n"
            f"{page.sections['Claim']}\n\nHow to apply: {page.sections['How to apply']}")
    if len(text) > limit:
        text = text[: limit - 20].rstrip() + " ... (cut)"
    return text
