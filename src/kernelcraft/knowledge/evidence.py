"""Evidence lines that a machine can check: every number a page takes from a record is re-read.

A bullet of a page's ``## Evidence`` section in one of these forms is checked against the file it
names (paths relative to the repository root; ``PATH@REV`` reads the file as of a git revision):

- ``- `results/h200/softmax.json` `solutions[triton_online].workloads[num_rows=4096,width=32768].latency_ms` = 0.1721``
  a JSON record: the field must round to the number as written (0.1721 accepts 0.17205..0.17215);
- ``- `results/h200/design/ledger.db` `candidates[id=19].speedup_vs_baseline` = 2.958``
  a SQLite ledger: ``table[column=value,...]`` must select one row, then a column (a JSON column may
  be followed by a path into it);
- ``- `AGENTS.md` says "an 80 MB `y = x + 1` timed 23.6 us"``: the text occurs in the file
  (whitespace and line breaks aside).

Selector steps: ``key``, ``['a.b']`` (a key holding dots), ``[3]`` (an index), ``[name]`` (the
element whose ``name`` or ``id`` is that), ``[k=v,k2=v2]`` (the element whose fields, or whose
``axes``, have those values). A filter must select exactly one element. Other bullets (a URL with its numbers, a prose pointer) are kept
as they are; :func:`check_pages` also counts which pages have checked or cited evidence at all.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from kernelcraft.knowledge._pages import Page

_PATH = r"`(?P<path>[^`@\s]+)(?:@(?P<rev>[0-9a-fA-F]{7,40}))?`"
VALUE_LINE = re.compile(
    r"^\s*[-*]\s+" + _PATH + r"\s+`(?P<sel>[^`]+)`\s*=\s*"
    r"(?P<value>\"[^\"]*\"|[-+]?\d[\d]*(?:\.\d+)?(?:[eE][-+]?\d+)?)")
# the quote ends at its first closing '"'; a "(comment)" may follow
QUOTE_LINE = re.compile(r"^\s*[-*]\s+" + _PATH + r"\s+says\s+\"(?P<quote>[^\"]+)\"(?:\s+\(.*\))?\s*$")
URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Check:
    page: str
    line: int  # 1-based, within the page's file
    ok: bool
    what: str  # the evidence as written
    detail: str  # what was found, or why it failed

    def __str__(self) -> str:
        mark = "ok" if self.ok else "FAILED"
        return f"{self.page}.md:{self.line}: {mark}: {self.what} ({self.detail})"


class EvidenceError(Exception):
    pass


def _split(selector: str) -> list[str]:
    """``a.b[k=v.w].c`` -> ["a", "b[k=v.w]", "c"]: dots inside brackets do not split."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    if depth != 0 or any(not p for p in parts):
        raise EvidenceError(f"malformed selector {selector!r}")
    return parts


def _step(segment: str) -> tuple[str, list[str]]:
    m = re.fullmatch(r"(?P<key>[^\[\]]*)(?P<filters>(?:\[[^\[\]]+\])*)", segment)
    if not m:
        raise EvidenceError(f"malformed selector step {segment!r}")
    return m.group("key"), re.findall(r"\[([^\[\]]+)\]", m.group("filters"))


def _scalar(x) -> str:
    if isinstance(x, bool):
        return str(x).lower()
    return str(x)


def _pick(items: list, flt: str, where: str):
    if flt.isdigit():
        i = int(flt)
        if i >= len(items):
            raise EvidenceError(f"{where}: index {i} out of range ({len(items)} elements)")
        return items[i]
    if "=" in flt:
        conds = [c.split("=", 1) for c in flt.split(",")]

        def ok(el) -> bool:
            if not isinstance(el, dict):
                return False
            axes = el.get("axes") if isinstance(el.get("axes"), dict) else {}
            return all(_scalar(el.get(k, axes.get(k))) == v for k, v in ((k.strip(), v.strip()) for k, v in conds))
    else:
        def ok(el) -> bool:
            return isinstance(el, dict) and (el.get("name") == flt or _scalar(el.get("id")) == flt)
    found = [el for el in items if ok(el)]
    if len(found) != 1:
        raise EvidenceError(f"{where}: [{flt}] selects {len(found)} elements, not one")
    return found[0]


def navigate(value, selector: str):
    """The value ``selector`` names inside decoded JSON ``value``."""
    where = ""
    for segment in _split(selector):
        key, filters = _step(segment)
        where = f"{where}.{segment}" if where else segment
        if key:
            if not isinstance(value, dict) or key not in value:
                have = ", ".join(list(value)[:12]) if isinstance(value, dict) else type(value).__name__
                raise EvidenceError(f"{where}: no key {key!r} (has: {have})")
            value = value[key]
        for flt in filters:
            if flt[0] in "'\"" and flt[-1] == flt[0]:  # ['torch.compile']: a key that holds dots
                name = flt[1:-1]
                if not isinstance(value, dict) or name not in value:
                    raise EvidenceError(f"{where}: no key {name!r}")
                value = value[name]
                continue
            if not isinstance(value, list):
                raise EvidenceError(f"{where}: [{flt}] applied to a {type(value).__name__}, not a list")
            value = _pick(value, flt, where)
    return value


def _sql_value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _from_sqlite(path: Path, selector: str):
    parts = _split(selector)
    if len(parts) < 2:
        raise EvidenceError("a ledger selector is table[column=value].column")
    table, filters = _step(parts[0])
    if not re.fullmatch(r"[A-Za-z_]\w*", table) or len(filters) != 1:
        raise EvidenceError(f"{parts[0]!r}: give one table and one [column=value,...] filter")
    conds = [c.split("=", 1) for c in filters[0].split(",")]
    column = parts[1]
    for name in [column, *(k for k, _ in conds)]:
        if not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
            raise EvidenceError(f"{name!r} is not a column name")
    where = " AND ".join(f"{k.strip()} = ?" for k, _ in conds)
    # immutable: read a WAL-mode ledger without creating -wal/-shm files beside a committed record
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as con:
        rows = con.execute(f"SELECT {column} FROM {table} WHERE {where}",  # noqa: S608 - names checked above
                           [_sql_value(v.strip()) for _, v in conds]).fetchall()
    if len(rows) != 1:
        raise EvidenceError(f"{parts[0]} selects {len(rows)} rows, not one")
    value = rows[0][0]
    if len(parts) > 2:
        value = navigate(json.loads(value), ".".join(parts[2:]))
    return value


def _read(root: Path, rel: str, rev: str | None) -> bytes:
    if rev:
        proc = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{rel}"], capture_output=True, timeout=60)
        if proc.returncode != 0:
            raise EvidenceError(f"git show {rev}:{rel}: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout
    path = root / rel
    if not path.is_file():
        raise EvidenceError(f"{rel}: no such file under {root}")
    return path.read_bytes()


def resolve(root: Path, rel: str, rev: str | None, selector: str):
    data = _read(root, rel, rev)
    if rel.endswith((".db", ".sqlite")):
        if rev:
            with tempfile.NamedTemporaryFile(suffix=".db") as tmp:
                tmp.write(data)
                tmp.flush()
                return _from_sqlite(Path(tmp.name), selector)
        return _from_sqlite(root / rel, selector)
    if rel.endswith(".json"):
        return navigate(json.loads(data), selector)
    raise EvidenceError(f"{rel}: only .json records and .db ledgers take a selector (use `says` for text)")


def _agrees(actual, written: str) -> tuple[bool, str]:
    if written.startswith('"'):
        return actual == written[1:-1], f"found {actual!r}"
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False, f"found {actual!r}, not a number"
    try:
        d = Decimal(written)
    except InvalidOperation:
        return False, f"{written!r} is not a number"
    tol = Decimal(5) * Decimal(10) ** (d.as_tuple().exponent - 1)  # half a unit of the last digit written
    ok = abs(Decimal(repr(float(actual))) - d) <= tol * Decimal("1.000001")
    return ok, f"found {actual!r}"


def _norm(text: str) -> str:
    return " ".join(text.split())


def check_page(page: Page, root: Path) -> list[Check]:
    """Every checkable evidence line of ``page``, checked against the files under ``root``."""
    out = []
    lines = page.text.split("\n")
    start = next(i for i, ln in enumerate(lines) if re.match(r"^##\s+Evidence\s*$", ln))
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("## "):
            break
        m = VALUE_LINE.match(line)
        q = None if m else QUOTE_LINE.match(line)
        if not (m or q):
            continue
        what = line.strip()[2:]
        try:
            if m:
                actual = resolve(root, m["path"], m["rev"], m["sel"])
                ok, detail = _agrees(actual, m["value"])
            else:
                text = _read(root, q["path"], q["rev"]).decode(errors="replace")
                ok = _norm(q["quote"]) in _norm(text)
                detail = "quoted text found" if ok else f"the text is not in {q['path']}"
        except (EvidenceError, OSError, ValueError, sqlite3.Error) as e:
            ok, detail = False, str(e)
        out.append(Check(page.id, i + 1, ok, what, detail))
    return out


def evidence_kinds(page: Page) -> dict[str, int]:
    """How many checkable lines and how many cited URLs the Evidence section has."""
    ev = page.sections["Evidence"].split("\n")
    checked = sum(1 for ln in ev if VALUE_LINE.match(ln) or QUOTE_LINE.match(ln))
    urls = sum(1 for ln in ev if URL.search(ln))
    return {"checked": checked, "urls": urls}


def check_pages(pages: list[Page], root: Path) -> tuple[list[Check], list[str]]:
    """(every check, pages whose evidence does not fit their confidence): a measured-here page needs
    at least one checked line, a cited one a URL, any page one or the other."""
    checks, unsupported = [], []
    for p in pages:
        checks += check_page(p, root)
        kinds = evidence_kinds(p)
        if p.confidence == "measured-here" and not kinds["checked"]:
            unsupported.append(f"{p.id}: confidence measured-here but no checked evidence line")
        elif p.confidence == "cited" and not kinds["urls"]:
            unsupported.append(f"{p.id}: confidence cited but no URL in its evidence")
        elif not (kinds["checked"] or kinds["urls"]):
            unsupported.append(f"{p.id}: no checked evidence line and no cited URL")
    return checks, unsupported
