"""The tuner: no model. A solution declares ``TUNABLES = {"NAME": [values, ...]}`` and reads its
chosen values from ``CONFIG = {...}`` (both module-level dict literals); the tuner writes children
that bind other configurations.

Search: the starting configuration first (so improvement is measured against it on the same
device); then coordinate moves from the best configuration so far (one tunable changed at a time,
the parent being the best candidate); when every neighbour of the best has been tried, random
configurations not yet tried; None when the space is exhausted. Everything it needs is re-read
from the run's history, so a resumed run continues the same search.

Where it starts: a solution of the task's own ``solutions/`` that declares TUNABLES (or the file of
``tuner:FILE``). A task without one can start from the ledger's memory (``from_memory``): the best
candidate of a similar task, evaluated on the same hardware, whose source declares TUNABLES and
whose entry point fits this task's inputs (:func:`kernelcraft.ledger.memory.entry_fits`). Its first
proposal is that candidate's own configuration, measured on this task, with the candidate as parent.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from pathlib import Path

from kernelcraft.agent.base import AgentError, Context, Proposal
from kernelcraft.solution.model import Solution, SourceFile, load_solution


def _key(config: dict) -> str:
    """A configuration as a dictionary key: values may be lists (e.g. ``"ROWS": [4096, 16]``)."""
    return repr(sorted(config.items()))


def _literal(tree: ast.Module, name: str) -> tuple[ast.Assign, dict] | None:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return (node, value) if isinstance(value, dict) else None
    return None


def config_of(text: str) -> dict | None:
    """A source's module-level CONFIG dict literal, or None (no such literal, or not parseable)."""
    try:
        found = _literal(ast.parse(text), "CONFIG")
    except SyntaxError:
        return None
    return found[1] if found else None


def tunables_of(text: str) -> tuple[dict[str, list], dict] | None:
    """(TUNABLES, CONFIG) of a source, or None when it declares no valid pair."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    tun, cfg = _literal(tree, "TUNABLES"), _literal(tree, "CONFIG")
    if not tun or not cfg:
        return None
    space = {k: list(v) for k, v in tun[1].items() if isinstance(v, list | tuple) and v}
    if not space or set(cfg[1]) - set(space):
        return None
    return space, cfg[1]


def with_config(text: str, config: dict) -> str:
    tree = ast.parse(text)
    node, _ = _literal(tree, "CONFIG")
    lines = text.splitlines(keepends=True)
    start = sum(len(ln) for ln in lines[: node.value.lineno - 1]) + node.value.col_offset
    end = sum(len(ln) for ln in lines[: node.value.end_lineno - 1]) + node.value.end_col_offset
    return text[:start] + repr(dict(config)) + text[end:]


NO_TUNABLES = ("no solution in the task's solutions/ declares TUNABLES and CONFIG as module-level "
               "dict literals; add them to a solution (see kernelcraft/agent/tuner.py)")


class TunerAgent:
    name = "tuner"

    def __init__(self, task_paths: list[Path], definition: str, seed: int = 0, from_memory: bool = False):
        self.base: Solution | None = None
        self.definition = definition
        self.seed_parent: int | None = None  # the ledger candidate the search started from, if any
        self.seed_note = ""
        for p in task_paths:
            sol = load_solution(p, definition)
            entry = next(s for s in sol.sources if s.path == sol.spec.entry_file)
            found = tunables_of(entry.content)
            if found:
                self._use(sol, entry, found)
                break
        if self.base is None and not from_memory:
            raise AgentError(NO_TUNABLES)
        self.rng = random.Random(seed)

    def _use(self, sol: Solution, entry: SourceFile, found: tuple[dict, dict]) -> None:
        self.base, (self.space, self.start) = sol, found
        self.entry = entry

    def offer(self, similar: list, definition: dict) -> None:
        """Without TUNABLES of its own, start from the first of ``similar`` (best first) that is
        tunable and whose entry point fits ``definition``; AgentError when none is."""
        if self.base is not None:
            return
        from kernelcraft.ledger.memory import entry_fits

        for w in similar:
            spec = w.solution.get("spec") or {}
            if spec.get("language") not in ("python", "triton") or not entry_fits(w, definition):
                continue
            found = tunables_of(w.entry_source())
            if not found:
                continue
            # a tuner child's name carries its configuration ("name[A=1]"); its own children get theirs
            name = re.sub(r"\[[^\[\]]*\]$", "", w.solution.get("name", "")) or "seed"
            sol = Solution.model_validate({**w.solution, "definition": self.definition, "name": name})
            entry = next(s for s in sol.sources if s.path == sol.spec.entry_file)
            self._use(sol, entry, found)
            self.seed_parent = w.candidate_id
            self.seed_note = (f"start from ledger candidate {w.candidate_id} of {w.task} "
                              f"({w.speedup_vs_baseline:.3f}x there, on {w.hardware})")
            return
        looked = f" (the ledger offered {len(similar)} candidates of similar tasks; none is tunable with a fitting entry point)" \
            if similar else " and the ledger has no tunable candidate of a similar task on this device"
        raise AgentError(NO_TUNABLES + looked)

    def _config_of(self, sol: Solution) -> dict | None:
        entry = next((s for s in sol.sources if s.path == self.entry.path), None)
        found = tunables_of(entry.content) if entry else None
        return found[1] if found else None

    def _child(self, config: dict, parent: int | None, why: str) -> Proposal:
        full = {**self.start, **config}
        sources = [SourceFile(path=s.path, content=with_config(s.content, full) if s.path == self.entry.path else s.content)
                   for s in self.base.sources]
        tag = ",".join(f"{k}={v}" for k, v in sorted(full.items()))
        sol = self.base.model_copy(update={"name": f"{self.base.name}[{tag}]", "author": "kernelcraft-tuner",
                                           "sources": sources})
        return Proposal(solution=sol, parent=parent, plan=f"{why}: bind CONFIG = {full!r}", strategy=f"tune {tag}")

    def propose(self, ctx: Context) -> Proposal | None:
        if self.base is None:
            raise AgentError(NO_TUNABLES)
        mine = [c for c in ctx.history if c.agent == self.name]
        tried = {}
        for c in mine:
            cfg = self._config_of(c.solution)
            if cfg is not None:
                tried[_key(cfg)] = c
        start_key = _key(self.start)
        if start_key not in tried:
            why = self.seed_note or "measure the starting configuration"
            return self._child(self.start, self.seed_parent, why)
        ok = [c for c in mine if c.status == "PASSED" and c.speedup_vs_baseline]
        best = max(ok, key=lambda c: c.speedup_vs_baseline) if ok else tried[start_key]
        best_cfg = self._config_of(best.solution)
        for name, values in self.space.items():
            for v in values:
                cfg = {**best_cfg, name: v}
                if _key(cfg) not in tried:
                    return self._child(cfg, best.id, f"coordinate move from candidate {best.id}: {name}={v}")
        untried = [dict(zip(self.space, combo, strict=True)) for combo in itertools.product(*self.space.values())]
        untried = [c for c in untried if _key({**self.start, **c}) not in tried]
        if not untried:
            return None
        return self._child(self.rng.choice(untried), best.id, "random restart: every neighbour of the best was tried")
