"""``kernelcraft review CANDIDATE``: what a person reads before approving a kernel.

The bundle holds the source, its diff against the DAG parent and against the task's last promoted
solution (the task's ``baseline.py`` when nothing was promoted yet), every gate's verdict, the
per-workload numbers, the profile summary when the evaluation carries one, the limits (what was
validated and what was not) and the commands to replay the evaluation and to approve. Printed as
Markdown, or written as a folder (``--out DIR``): ``review.md``, ``sources/``, ``*.patch`` and
``evaluation.json``.
"""

from __future__ import annotations

import difflib
import json
import shlex
from pathlib import Path

from kernelcraft.ledger.store import Ledger
from kernelcraft.review.candidate import Resolved
from kernelcraft.review.limits import envelope, not_tested
from kernelcraft.solution.model import Solution

_FENCE = {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".cc": "cpp", ".h": "cpp", ".hpp": "cpp"}


def diff(old: Solution | None, new: Solution, old_label: str, new_label: str) -> str:
    """Unified diff over every source file of two solutions (added and removed files included)."""
    a = {s.path: s.content for s in old.sources} if old else {}
    b = {s.path: s.content for s in new.sources}
    out: list[str] = []
    for path in sorted(set(a) | set(b)):
        out += difflib.unified_diff(a.get(path, "").splitlines(keepends=True), b.get(path, "").splitlines(keepends=True),
                                    f"{old_label}/{path}" if path in a else "/dev/null",
                                    f"{new_label}/{path}" if path in b else "/dev/null")
    text = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in out)
    return text


def _previous_promoted(r: Resolved, ledger: Ledger | None) -> tuple[Solution | None, str]:
    if ledger is not None:
        earlier = [c for c in ledger.promoted_candidates(r.task.definition.name)
                   if c.source_hash != r.solution.source_hash and (r.candidate_id is None or c.id < r.candidate_id)]
        if earlier:
            c = earlier[-1]
            return Solution.model_validate(c.solution), f"promoted candidate {c.id} (run {c.run_id})"
    from kernelcraft.gauntlet import baseline_solution

    return baseline_solution(r.task), "baseline.py (no solution of this task was promoted yet)"


def _num(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


def _profile_summary(r: Resolved) -> list[str]:
    """The evaluation's own profile, else the one `kernelcraft profile` left for this exact source."""
    prof = r.raw_result.get("profile")
    saved = (Path(".kernelcraft") / "profiles" / r.task.definition.name
             / f"{r.solution.name}-{r.solution.source_hash[:12]}" / "summary.txt")
    if not prof and saved.is_file():
        return [f"From `{saved}` (kernelcraft profile):", "", "```text", saved.read_text().strip()[:6000], "```"]
    if not prof:
        return [f"No profile in this evaluation record, and none at {saved} "
                f"(`kernelcraft profile {r.task.root} SOLUTION` writes one on a CUDA machine)."]
    if isinstance(prof, dict):
        lines = []
        for k, v in prof.items():
            if isinstance(v, dict | list):
                v = json.dumps(v)[:300]
            lines.append(f"- {k}: {v}")
        return lines
    return [str(prof)[:2000]]


def render(r: Resolved, ledger: Ledger | None) -> tuple[str, dict[str, str]]:
    """The review as Markdown, and the patches by file name."""
    res, rep, task = r.result, r.full, r.task
    d = task.definition
    env = envelope(task, rep, res)
    promo = task.contract.promotion
    compile_row = next((s for s in rep.solutions if s.name == "torch.compile"), None)
    compile_ms = {w.uuid: w.latency_ms for w in compile_row.workloads} if compile_row else {}
    L: list[str] = [f"# Review: {r.label}", ""]
    L += [f"- task: `{d.name}` ({d.op_type}) in `{task.root}`",
          f"- solution: `{r.solution.name}` by {r.solution.author}, {r.solution.spec.language}, entry "
          f"`{r.solution.spec.entry_point}`, source sha256 `{r.solution.source_hash}`",
          f"- evidence: {r.evidence}; evaluated on {rep.environment.get('hardware')} ({rep.device}) at {rep.timestamp}, "
          f"seed {rep.seed}, {rep.harness_version}, {rep.timing_version}"
          + (f"; task sources sha256 `{rep.task_sources['sha256']}`" if rep.task_sources else "")]
    if r.candidate_id is not None:
        L.append(f"- ledger: run {r.run_id}, parent {r.parent_id if r.parent_id is not None else 'none'}")
    L += ["", "## Verdict", ""]
    L.append(f"**{res.status}**" + (f" at gate `{res.gate}`" if res.gate else " (every gate)") +
             f"; x baseline {_num(res.speedup_vs_baseline, '.3f')}, x reference {_num(res.speedup_vs_reference, '.3f')}; "
             f"promotable by the contract's rule: {'yes' if res.promotable else 'no'}")
    if res.reason:
        L += ["", "```text", res.reason.strip(), "```"]
    rule = f"PASSED and x baseline >= {promo.min_speedup_vs_baseline:g}"
    L += ["", f"Promotion rule: {rule}" + ("; **a person's approval is required** (contract)" if promo.require_approval
                                           else "; no approval required by the contract")]
    approvals = ledger.approvals(source_hash=r.solution.source_hash) if ledger is not None else []
    if approvals:
        L += ["", "Approvals of this exact source:"]
        L += [f"- {a.by} at {a.created_at}" + (f": {a.note}" if a.note else "") for a in approvals]
    else:
        L += ["", "No approval of this exact source yet."]
    L += ["", "## Workloads", "",
          "| workload | status | latency ms | baseline ms | torch.compile ms | reference ms | x baseline | sol | max abs err | max rel err |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for w in [*res.workloads, *res.holdouts]:
        axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
        name = w.uuid if w in res.holdouts else w.uuid[:8]  # holdout ids say what they are
        sol = getattr(w, "sol", None)
        L.append(f"| {name} {axes} | {w.status} | {_num(w.latency_ms)} | {_num(w.baseline_latency_ms)} | "
                 f"{_num(compile_ms.get(w.uuid))} | {_num(w.reference_latency_ms)} | {_num(w.speedup_vs_baseline, '.2f')} | "
                 f"{'-' if sol is None else format(sol, '.1%')} | {_num(w.max_abs_error, '.3g')} | {_num(w.max_rel_error, '.3g')} |")
    failing = [w for w in [*res.workloads, *res.holdouts] if w.status not in ("PASSED", "SKIPPED") and w.reason]
    for w in failing[:3]:
        L += ["", f"{w.uuid[:8]}: {w.reason.strip()[:1500]}"]
    L += ["", "## Profile", "", *_profile_summary(r)]
    L += ["", "## Limits: what was validated, and what was not", ""]
    L += [f"- {x}" for x in not_tested(task, rep, res, env)]
    L += ["", "## Source", ""]
    for s in r.solution.sources:
        L += [f"`{s.path}`", "", "```" + _FENCE.get(Path(s.path).suffix, ""), s.content.rstrip("\n"), "```", ""]
    patches: dict[str, str] = {}
    if r.parent is not None:
        patches["diff_parent.patch"] = diff(r.parent, r.solution, f"candidate-{r.parent_id}", "this")
        L += [f"## Diff against the parent (candidate {r.parent_id})", ""]
    else:
        L += ["## Diff against the parent", "", "No parent: the candidate is a root of its DAG (or came from a record).", ""]
    if r.parent is not None:
        L += ["```diff", patches["diff_parent.patch"].rstrip("\n") or "(identical sources)", "```", ""]
    prev, prev_label = _previous_promoted(r, ledger)
    patches["diff_promoted.patch"] = diff(prev, r.solution, "previous", "this")
    L += [f"## Diff against {prev_label}", "", "```diff", patches["diff_promoted.patch"].rstrip("\n") or "(identical sources)",
          "```", ""]
    ident = str(r.candidate_id) if r.candidate_id is not None else f"{r.evidence} --solution {r.solution.name}"
    L += ["## Commands", "", "```bash", replay_command(r, ledger) + "   # replay these inputs",
          f"kernelcraft approve {ident} --by NAME --note 'why'",
          f"kernelcraft export {ident} --format torch-op DEST",
          "```", ""]
    return "\n".join(L), patches


def replay_command(r: Resolved, ledger: Ledger | None) -> str:
    """``kernelcraft eval`` on the same solution, device and seed. A ledger candidate is named
    ``ledger:ID`` with the ledger's URL (eval reads it from there); a record's solution by its path."""
    rep = r.full
    if r.candidate_id is not None:
        sol_arg = f"ledger:{r.candidate_id}"
        if ledger is not None:
            sol_arg += f" --db {shlex.quote(ledger.url)}"
    else:
        sol_arg = shlex.quote(r.result.path) if r.result.path else "SOLUTION"
    timed = not rep.device.startswith("cuda") and any(w.latency_ms for w in r.result.workloads)
    return (f"kernelcraft eval {shlex.quote(str(r.task.root))} {sol_arg} --device {rep.device} --seed {rep.seed}"
            + (" --time" if timed else ""))


def write(r: Resolved, ledger: Ledger | None, out: Path) -> Path:
    text, patches = render(r, ledger)
    out.mkdir(parents=True, exist_ok=True)
    (out / "review.md").write_text(text)
    for name, patch in patches.items():
        (out / name).write_text(patch)
    src = out / "sources"
    for s in r.solution.sources:
        f = src / s.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(s.content)
    (out / "evaluation.json").write_text(r.full.model_dump_json(indent=2) + "\n")
    return out / "review.md"
