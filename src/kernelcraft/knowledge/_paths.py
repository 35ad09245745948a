"""Where the pages are: one folder, found the same way by the CLI, the MCP server and the prompts.

The pages are written in ``knowledge/`` at the repository root (beside AGENTS.md, whose facts
they grew from) and copied into the wheel as ``kernelcraft/knowledge/pages/`` by ``setup.py``'s
build step, so a pip-installed kernelcraft carries them. Looked up in this order:

1. ``KERNELCRAFT_KNOWLEDGE``: a folder of pages (a team's own, or a checkout under review);
2. ``knowledge/`` of the source checkout this kernelcraft is imported from (``src/`` layout:
   an editable install or ``PYTHONPATH=src`` reads the pages being edited, never a stale copy);
3. ``pages/`` beside this module: the copy inside an installed wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelcraft.errors import InputError, Problem

ENV = "KERNELCRAFT_KNOWLEDGE"
_HERE = Path(__file__).resolve().parent


def candidates() -> list[tuple[str, Path]]:
    """(how it was found, folder) in lookup order, whether or not each exists."""
    out = []
    if os.environ.get(ENV):
        out.append((f"${ENV}", Path(os.environ[ENV]).expanduser()))
    out.append(("source checkout", _HERE.parents[2] / "knowledge"))  # src/kernelcraft/knowledge -> repo root
    out.append(("installed package", _HERE / "pages"))
    return out


def pages_dir() -> Path:
    """The first folder of :func:`candidates` holding pages. A set but empty or missing
    ``KERNELCRAFT_KNOWLEDGE`` is an error rather than a silent fall-back to other pages."""
    for how, folder in candidates():
        has_pages = folder.is_dir() and any(p.name.lower() != "readme.md" for p in folder.glob("*.md"))
        if has_pages:
            return folder
        if how.startswith("$"):
            raise InputError(Problem(folder, ENV, "no knowledge pages (*.md) in this folder",
                                     f"point {ENV} at a folder of pages, or unset it"))
    looked = "; ".join(f"{how}: {folder}" for how, folder in candidates())
    raise InputError(Problem("knowledge", "", f"no knowledge pages found (looked in {looked})",
                             f"reinstall kernelcraft, or set {ENV} to the repository's knowledge/ folder"))
