"""``files:DIR``: evaluate, in order, the solutions a person or another tool put in a folder
(``*.py``, ``*.json``, ``*/solution.json``, sorted by name). Already-evaluated ones (same source
hash in this run) are skipped, so a resumed run picks up where it stopped."""

from __future__ import annotations

from pathlib import Path

from kernelcraft.agent.base import AgentError, Context, Proposal
from kernelcraft.solution.model import load_solution


class FilesAgent:
    def __init__(self, folder: Path, definition: str):
        self.folder, self.definition = Path(folder), definition
        self.name = f"files:{folder}"
        if not self.folder.is_dir():
            raise AgentError(f"files:{folder}: not a folder; give the folder holding the solutions to evaluate")

    def _paths(self) -> list[Path]:
        out = []
        for p in sorted(self.folder.iterdir()):
            if (p.is_file() and p.suffix in (".py", ".json")) or (p.is_dir() and (p / "solution.json").is_file()):
                out.append(p)
        return out

    def propose(self, ctx: Context) -> Proposal | None:
        done = {c.solution.source_hash for c in ctx.history}
        for p in self._paths():
            sol = load_solution(p, self.definition)
            if sol.source_hash not in done:
                parent = ctx.frontier[0].id if ctx.frontier else None
                return Proposal(solution=sol, parent=parent, plan=sol.description or f"evaluate {p.name}",
                                strategy=f"file {p.name}")
        return None
