"""The files that define a task, hashed: a record names the version of the contract its verdicts were
computed against (the definition and its reference, the workloads, the contract, the baseline, the peers,
a request's own judge and benchmark), so a verdict read later can be matched to the task folder it came from.

Left out: ``solutions/`` and ``candidates/`` (each solution carries its own source hash), READMEs, caches
(``__pycache__``, hidden files and folders).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

SKIPPED_DIRS = frozenset({"solutions", "candidates"})  # top-level; __pycache__ at any depth


def _defining(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if rel.parts[0] in SKIPPED_DIRS or "__pycache__" in rel.parts or p.name.upper().startswith("README"):
            continue
        out.append(p)
    return out


def _file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def task_sources(root: str | Path) -> dict:
    """{"sha256": of the sorted (path, file hash) list, "files": {relative path: sha256}}."""
    root = Path(root)
    files = {p.relative_to(root).as_posix(): _file_sha256(p) for p in _defining(root)}
    whole = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(files.items())).encode()).hexdigest()
    return {"sha256": whole, "files": files}
