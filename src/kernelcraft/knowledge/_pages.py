"""One knowledge page: a Markdown file with a front matter block and five fixed sections.

The front matter is a deliberately small subset of YAML, parsed here rather than with a YAML
library (no new dependency for six keys): one ``key: value`` per line, a value being a string or
a ``[a, b, c]`` list. The page id is the file name without ``.md``.

```
---
title: A written L2 flush costs the timed kernel; flush with a read
tags: [timing, l2, trap]
op_types: [any]
devices: [H200]
dtypes: [any]
confidence: measured-here
---
## Claim
## Conditions
## Evidence
## Other GPUs
## How to apply
```

``confidence`` says where the claim comes from: ``measured-here`` (a record, ledger row or commit of
this project), ``cited`` (a public source, named with its numbers), ``hypothesis`` (reasoned, not
yet measured).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.errors import InputError, Problem

CONFIDENCE = ("measured-here", "cited", "hypothesis")
LIST_KEYS = ("tags", "op_types", "devices", "dtypes")
REQUIRED_KEYS = ("title", *LIST_KEYS, "confidence")
SECTIONS = ("Claim", "Conditions", "Evidence", "Other GPUs", "How to apply")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Page:
    id: str
    path: Path
    title: str
    tags: tuple[str, ...]
    op_types: tuple[str, ...]
    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    confidence: str
    sections: dict[str, str] = field(hash=False, compare=False)  # section title -> its Markdown
    text: str = field(hash=False, compare=False, repr=False)  # the whole file

    @property
    def body(self) -> str:
        return "\n\n".join(self.sections.values())

    def summary(self) -> dict:
        return {"id": self.id, "title": self.title, "confidence": self.confidence, "tags": list(self.tags),
                "op_types": list(self.op_types), "devices": list(self.devices), "dtypes": list(self.dtypes)}

    def to_dict(self) -> dict:
        return {**self.summary(), "path": str(self.path), "sections": dict(self.sections)}


def _value(raw: str) -> str | list[str]:
    raw = raw.strip()
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise ValueError("a list must close with ']' on the same line")
        return [item.strip().strip("'\"") for item in raw[1:-1].split(",") if item.strip()]
    return raw.strip("'\"")


def _front_matter(text: str, path: Path) -> tuple[dict, str, list[Problem]]:
    problems: list[Problem] = []
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, [Problem(path, "", "the page does not start with a '---' front matter block",
                                  "begin the file with '---', the keys, then '---'")]
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return {}, text, [Problem(path, "", "the front matter block is not closed", "add a '---' line after the keys")]
    meta: dict = {}
    for n, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, raw = line.partition(":")
        if not sep:
            problems.append(Problem(path, f"line {n}", f"not a 'key: value' line: {line!r}", "write key: value"))
            continue
        try:
            meta[key.strip()] = _value(raw)
        except ValueError as e:
            problems.append(Problem(path, key.strip(), str(e), "write the list as [a, b, c] on one line"))
    return meta, "\n".join(lines[end + 1:]), problems


def _sections(body: str) -> dict[str, str]:
    found: dict[str, str] = {}
    current, chunk = None, []
    for line in body.split("\n"):
        m = re.match(r"^##\s+(.+?)\s*$", line)
        if m:
            if current is not None:
                found[current] = "\n".join(chunk).strip()
            current, chunk = m.group(1), []
        elif current is not None:
            chunk.append(line)
    if current is not None:
        found[current] = "\n".join(chunk).strip()
    return found


def parse_page(path: Path, text: str | None = None) -> Page:
    """The page in ``path``; InputError naming the file and field of everything wrong with it."""
    path = Path(path)
    text = path.read_text() if text is None else text
    meta, body, problems = _front_matter(text, path)
    if not _ID.match(path.stem):
        problems.append(Problem(path, "", f"page id {path.stem!r} is not kebab-case",
                                "rename the file to lowercase words joined by '-', e.g. l2-flush-read.md"))
    for key in REQUIRED_KEYS:
        if key not in meta and not any(p.field == key for p in problems):
            problems.append(Problem(path, key, "missing from the front matter", f"add '{key}: ...'"))
    for key in LIST_KEYS:
        if key in meta and not (isinstance(meta[key], list) and meta[key]):
            problems.append(Problem(path, key, "must be a non-empty list", f"write '{key}: [a, b]' (or [any])"))
    if "title" in meta and (not isinstance(meta["title"], str) or not meta["title"]):
        problems.append(Problem(path, "title", "must be a non-empty string", "write 'title: what the page claims'"))
    if "confidence" in meta and meta["confidence"] not in CONFIDENCE:
        problems.append(Problem(path, "confidence", f"{meta['confidence']!r} is not one of {', '.join(CONFIDENCE)}",
                                "measured-here (a record of this project), cited (a public source) or hypothesis"))
    sections = _sections(body)
    for name in SECTIONS:
        if not sections.get(name):
            problems.append(Problem(path, f"## {name}", "section missing or empty",
                                    f"add a '## {name}' section ({', '.join(SECTIONS)}, in this order)"))
    extra = [s for s in sections if s not in SECTIONS]
    if extra:
        problems.append(Problem(path, f"## {extra[0]}", "not one of the page's sections",
                                f"use only {', '.join(SECTIONS)}; put sub-headings at ### level"))
    if problems:
        raise InputError(problems)
    return Page(id=path.stem, path=path, title=meta["title"], tags=tuple(t.lower() for t in meta["tags"]),
                op_types=tuple(o.lower() for o in meta["op_types"]), devices=tuple(meta["devices"]),
                dtypes=tuple(d.lower() for d in meta["dtypes"]), confidence=meta["confidence"],
                sections={name: sections[name] for name in SECTIONS}, text=text)


def load_pages(folder: Path) -> list[Page]:
    """Every ``*.md`` page of ``folder`` except README.md, sorted by id; one InputError for all problems."""
    problems: list[Problem] = []
    pages: list[Page] = []
    for path in sorted(Path(folder).glob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        try:
            pages.append(parse_page(path))
        except InputError as e:
            problems += e.problems
    if problems:
        raise InputError(problems)
    return pages
