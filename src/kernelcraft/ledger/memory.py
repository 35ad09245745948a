"""The ledger as memory: what worked on similar tasks, on the same device.

A task is *similar* to another when it has the same ``op_type`` or shares a non-model tag
(``stage:norm``, ``fused``, ``fp8``; ``model:...`` tags are shared by unrelated ops of one model and
do not count). For each similar task the best PASSED candidates (not baselines) evaluated on the
given hardware are returned, most similar task first, then by speedup over that task's baseline:
their strategy notes, descriptions, speedups and solutions, to show an agent and to start from.

The schema already holds everything this needs: the task's definition (op type, tags) and each
candidate's evaluation record (hardware) are JSON columns, read through SQLAlchemy's JSON path
operators (SQLite and PostgreSQL alike); a starting point becomes a new candidate's ``parent_id``,
which may name a candidate of any run.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field

from sqlalchemy import select

from kernelcraft.ledger.store import Candidate, Ledger, Run, TaskRow


@dataclass
class Worked:
    """One candidate that passed on a similar task."""

    candidate_id: int
    run_id: int
    task: str
    op_type: str
    same_task: bool
    shared: list[str]  # what makes the task similar: "op_type:rmsnorm", "stage:norm", ...
    similarity: float
    agent: str
    strategy: str  # the proposer's note
    description: str  # the solution's own description (its docstring's first line when it has none)
    speedup_vs_baseline: float
    hardware: str
    promoted: bool
    solution: dict = field(repr=False)  # the FlashInfer-Trace Solution record
    definition: dict = field(repr=False)  # that task's definition, to judge whether its entry point fits

    def to_dict(self, with_source: bool = False) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("solution", "definition")}
        out["solution_name"] = self.solution.get("name", "")
        out["language"] = (self.solution.get("spec") or {}).get("language", "")
        out["entry_point"] = (self.solution.get("spec") or {}).get("entry_point", "")
        if with_source:
            out["sources"] = self.solution.get("sources", [])
        return out

    def entry_source(self) -> str:
        spec = self.solution.get("spec") or {}
        entry = spec.get("entry_point", "").split("::")[0]
        for s in self.solution.get("sources", []):
            if s.get("path") == entry:
                return s.get("content") or ""
        return ""


def _key_tags(definition: dict) -> set[str]:
    return {t for t in (definition.get("tags") or []) if not t.startswith("model:")}


def similarity(a: dict, b: dict) -> tuple[float, list[str]]:
    """How alike two definitions are, and why: 4 for the same op type, 1 per shared stage tag,
    0.5 per other shared non-model tag. 0 means unrelated."""
    score, why = 0.0, []
    if a.get("op_type") and a.get("op_type") == b.get("op_type"):
        score += 4
        why.append(f"op_type:{a['op_type']}")
    for tag in sorted(_key_tags(a) & _key_tags(b)):
        score += 1 if tag.startswith("stage:") else 0.5
        why.append(tag)
    return score, why


def _description(solution: dict) -> str:
    if solution.get("description"):
        return solution["description"]
    spec = solution.get("spec") or {}
    entry = spec.get("entry_point", "").split("::")[0]
    for s in solution.get("sources", []):
        if s.get("path") == entry and entry.endswith(".py"):
            try:
                doc = ast.get_docstring(ast.parse(s.get("content") or ""))
            except SyntaxError:
                return ""
            return (doc or "").strip().split("\n")[0]
    return ""


def _hardware_matches(found: str | None, device: str | None, wanted: str | None) -> bool:
    """``wanted`` is a hardware name as records write it ("NVIDIA H200": exact, case aside), a
    part of one ("H200"), or a device kind ("cuda", "cpu") matched against the run's device."""
    if not wanted:
        return True
    w = wanted.lower().strip()
    if w in ("cuda", "cpu"):
        return (device or "").lower().startswith(w)
    f = (found or "").lower()
    return f == w or (len(w) >= 3 and w in f)


def similar(ledger: Ledger, definition: dict, hardware: str | None = None, limit: int = 5,
            per_task: int = 2, exclude_run: int | None = None, min_similarity: float = 1.0) -> list[Worked]:
    """What worked on tasks like ``definition`` (a definition as JSON), best first. ``hardware``
    filters by the device the candidates were evaluated on (see :func:`_hardware_matches`);
    ``exclude_run`` leaves out a run (the one in progress)."""
    with ledger.session() as s:
        related: dict[int, tuple[TaskRow, float, list[str]]] = {}
        for row in s.scalars(select(TaskRow)):
            score, why = similarity(definition, row.definition or {})
            same = row.name == definition.get("name")
            if same:
                score, why = score + 10, ["same task", *why]
            if score >= min_similarity:
                related[row.id] = (row, score, why)
        if not related:
            return []
        hw = Candidate.evaluation["environment"]["hardware"].as_string()
        q = (select(Candidate.id, Candidate.run_id, Candidate.speedup_vs_baseline, Candidate.source_hash, hw,
                    Run.device, Run.task_id, Run.promoted_id)
             .join(Run, Run.id == Candidate.run_id)
             .where(Run.task_id.in_(related), Candidate.status == "PASSED", Candidate.agent != "baseline",
                    Candidate.speedup_vs_baseline.is_not(None))
             .order_by(Candidate.speedup_vs_baseline.desc(), Candidate.id))
        if exclude_run is not None:
            q = q.where(Candidate.run_id != exclude_run)
        chosen: list[tuple[int, int, bool, float]] = []  # (candidate id, task id, promoted, speedup)
        taken: dict[int, int] = {}
        seen: set[tuple[int, str]] = set()
        for cid, _run, speed, src_hash, found_hw, device, task_id, promoted_id in s.execute(q):
            if not _hardware_matches(found_hw, device, hardware):
                continue
            if (task_id, src_hash) in seen or taken.get(task_id, 0) >= per_task:
                continue  # the same source evaluated again, or enough from this task
            seen.add((task_id, src_hash))
            taken[task_id] = taken.get(task_id, 0) + 1
            chosen.append((cid, task_id, promoted_id == cid, speed))
        chosen.sort(key=lambda c: (-related[c[1]][1], -c[3], c[0]))
        out = []
        for cid, task_id, promoted, speed in chosen[:limit]:
            c = s.get(Candidate, cid)
            row, score, why = related[task_id]
            env = (c.evaluation or {}).get("environment") or {}
            out.append(Worked(
                candidate_id=c.id, run_id=c.run_id, task=row.name, op_type=(row.definition or {}).get("op_type", ""),
                same_task=row.name == definition.get("name"), shared=why, similarity=score, agent=c.agent,
                strategy=c.strategy, description=_description(c.solution), speedup_vs_baseline=speed,
                hardware=env.get("hardware") or c.run.device, promoted=promoted, solution=c.solution,
                definition=row.definition or {}))
        return out


def _signature(spec: dict) -> list[tuple]:
    return [(name, s.get("dtype"), None if s.get("shape") is None else len(s["shape"]))
            for name, s in (spec or {}).items()]


def _entry_params(worked: Worked) -> list[str] | None:
    fn = (worked.solution.get("spec") or {}).get("entry_point", "").partition("::")[2]
    try:
        tree = ast.parse(worked.entry_source())
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            return [a.arg for a in node.args.args]
    return None


def entry_fits(worked: Worked, definition: dict) -> bool:
    """Whether ``worked``'s entry point can be called for ``definition`` unchanged: its task had the
    same inputs and outputs (names, dtypes, ranks, order) and its ``run`` takes that many
    positional arguments (inputs, plus outputs in destination-passing style)."""
    if _signature(worked.definition.get("inputs")) != _signature(definition.get("inputs")):
        return False
    if _signature(worked.definition.get("outputs")) != _signature(definition.get("outputs")):
        return False
    params = _entry_params(worked)
    if params is None:
        return False
    dps = (worked.solution.get("spec") or {}).get("destination_passing_style", True)
    want = len(definition.get("inputs") or {}) + (len(definition.get("outputs") or {}) if dps else 0)
    return len(params) == want
