"""The design loop: research -> plan -> propose -> gauntlet -> feedback -> select, within a budget.

The baseline is evaluated first and kept in the ledger as the run's first candidate (agent
``baseline``), so every later speedup has a measured reference point in the same run. Each
proposal is written to the ledger (``PENDING``) before it is evaluated and updated in its own
transaction after, so ``--resume`` re-evaluates at most the candidates that were in flight.

Candidates are evaluated on every device of the executor at once: the agent proposes while a worker
is free (its history shows in-flight candidates as ``PENDING``), and results are recorded in the
order the candidates were proposed, whatever order they finish in.
"""

from __future__ import annotations

import collections
import datetime as dt
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelcraft.agent.base import Agent, AgentError, CandidateView, Context
from kernelcraft.agent.feedback import feedback_text
from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet import Options, baseline_solution
from kernelcraft.gauntlet.evaluate import (
    TRUSTED_ROLES,
    Prepared,
    compare_with_peers,
    compile_entry,
    executor_for,
    new_report,
    peer_entries,
    prepare,
)
from kernelcraft.gauntlet.records import SolutionResult
from kernelcraft.ledger.memory import Worked, entry_fits, similar
from kernelcraft.ledger.store import Ledger
from kernelcraft.solution.model import Solution
from kernelcraft.task.loader import Task
from kernelcraft.worker.executor import Started

AGENTS = "tuner, tuner:FILE, files:DIR, openai:MODEL, anthropic:MODEL, claude-code, codex"


@dataclass
class OptimizeOptions:
    device: str = "cpu"
    budget: int = 8  # candidates to evaluate, the baseline not counted
    target: float | None = None  # stop once a candidate reaches this speedup over the baseline
    eval: Options | None = None
    memory: bool = True  # offer what worked on similar tasks (the ledger) as starting points
    memory_limit: int = 5  # similar candidates shown to the agent
    # time torch.compile (per shape) and the task's peers first, and judge every candidate against the
    # fastest of them too (speedup_vs_best_peer); None: on a GPU
    peers: bool | None = None


def make_agent(spec: str, task: Task, from_memory: bool = False) -> Agent:
    """The agent ``spec`` names. ``from_memory``: a tuner may start from the ledger's memory when the
    task has no tunable solution of its own (it is offered one before the run starts)."""
    kind, _, arg = spec.partition(":")
    if kind == "tuner":
        from kernelcraft.agent.tuner import TunerAgent

        if arg:  # tuner:FILE: that solution's TUNABLES, e.g. a candidate not (yet) in solutions/
            path = Path(arg)
            if not path.exists():
                raise AgentError(f"tuner:{arg}: no such file; give the solution whose TUNABLES to search")
            return TunerAgent([path], task.definition.name)
        return TunerAgent(task.solution_paths(), task.definition.name, from_memory=from_memory)
    if kind == "files" and arg:
        from kernelcraft.agent.files import FilesAgent

        return FilesAgent(Path(arg), task.definition.name)
    if kind in ("openai", "anthropic") and arg:
        from kernelcraft.agent.llm import AnthropicAgent, OpenAIAgent

        return OpenAIAgent(arg) if kind == "openai" else AnthropicAgent(arg)
    if kind in ("claude-code", "codex") and not arg:
        from kernelcraft.agent.cli_agents import ClaudeCodeAgent, CodexAgent

        return ClaudeCodeAgent() if kind == "claude-code" else CodexAgent()
    raise AgentError(f"unknown agent {spec!r}; use one of: {AGENTS}")


def brief(task: Task, device: str, baseline: SolutionResult | None) -> str:
    d = task.definition
    lines = [f"task {d.name} ({d.op_type}) on {device}: {d.description or ''}".strip()]
    lines.append("axes: " + ", ".join(f"{n}={a.value}" if a.type == "const" else f"{n} (var)" for n, a in d.axes.items()))
    for kind, specs in (("inputs", d.inputs), ("outputs", d.outputs)):
        lines.append(f"{kind} (in call order): " + ", ".join(
            f"{n}: {s.dtype}{list(s.shape) if s.shape is not None else ' scalar'}" for n, s in specs.items()))
    if d.constraints:
        lines.append("constraints: " + "; ".join(d.constraints))
    from kernelcraft.gauntlet.checkers import describe_checks

    lines += [f"check {line}" for line in describe_checks(d, task.contract)]
    lines.append("workloads: " + "; ".join(", ".join(f"{k}={v}" for k, v in w.axes.items()) for w in task.workloads))
    lines.append("the gauntlet also runs unseen holdout shapes within the constraints, checks bit-exact repeatability, "
                 "and rejects torch compute ops inside run()")
    if baseline is not None:
        timed = [w for w in baseline.workloads if w.latency_ms is not None]
        if timed:
            lines.append("baseline latency (ms): " + "; ".join(
                f"{', '.join(f'{k}={v}' for k, v in w.axes.items())}: {w.latency_ms:.4f}" for w in timed))
    return "\n".join(lines)


def _view(c) -> CandidateView:
    return CandidateView(id=c.id, parent=c.parent_id, agent=c.agent, strategy=c.strategy, status=c.status,
                         speedup_vs_baseline=c.speedup_vs_baseline, feedback=c.feedback,
                         solution=Solution.model_validate(c.solution))


def recall(ledger: Ledger, task: Task, hardware: str | None, limit: int = 5,
           exclude_run: int | None = None) -> tuple[list[Worked], Worked | None]:
    """What worked on tasks like this one on ``hardware``, and the starting point among them: the
    first whose entry point takes this task's inputs unchanged, else the best."""
    definition = task.definition.model_dump(mode="json")
    found = similar(ledger, definition, hardware=hardware, limit=limit, exclude_run=exclude_run)
    start = next((w for w in found if entry_fits(w, definition)), found[0] if found else None)
    return found, start


def optimize(task: Task, agent: Agent, ledger: Ledger, opts: OptimizeOptions, resume: int | None = None,
             on_event: Callable[[str, dict], None] | None = None) -> dict:
    emit = on_event or (lambda kind, data: None)
    # a GPU candidate is promotable only with its timing confirmed out of process (gauntlet/confirm.py)
    eval_opts = opts.eval or Options(device=opts.device, confirm=opts.device.startswith("cuda"),
                                     lint=opts.device.startswith("cuda"))  # and no pipeline race (eval --lint)
    if resume is not None:
        run = ledger.run(resume)
        if run is None:
            raise InputError(Problem("--resume", str(resume), "no such run in the ledger", "see `kernelcraft ledger show`"))
        if run.task.name != task.definition.name:
            raise InputError(Problem("--resume", str(resume), f"run {resume} is for task {run.task.name!r}",
                                     f"pass that task's folder, not {task.root}"))

    header, cal = new_report(task, eval_opts, 0)  # each candidate's record gets a seed of its own
    hardware = header.environment.get("hardware") or opts.device
    # Before anything is spent: what worked on similar tasks here (the run itself left out on resume).
    worked, start = recall(ledger, task, hardware, opts.memory_limit, resume) if opts.memory else ([], None)
    offer = getattr(agent, "offer", None)
    if offer is not None:
        offer(worked, task.definition.model_dump(mode="json"))  # AgentError: a misconfiguration, nothing spent
    if resume is None:
        run_id = ledger.new_run(task.definition.name, str(task.root), task.definition.to_json_dict(), agent.name,
                                opts.device, opts.budget,
                                {"target": opts.target, "memory": [w.candidate_id for w in worked],
                                 "starting_point": start.candidate_id if start else None})
    else:
        run_id = resume
        ledger.reopen(run_id)
    earlier = [c for c in ledger.run(run_id).candidates if c.agent != "baseline" and c.status != "PENDING"]
    passed = [c for c in earlier if c.status == "PASSED" and c.speedup_vs_baseline]
    top = max(passed, key=lambda c: c.speedup_vs_baseline, default=None)
    emit("run", {"run_id": run_id, "evaluated": len(earlier),
                 "best": [top.speedup_vs_baseline, top.id] if top else None})
    if worked:
        emit("memory", {"similar": [w.candidate_id for w in worked], "start": start.candidate_id if start else None})
    ex = executor_for(eval_opts)
    ex.expect_more = True  # the next candidate's worker starts warm
    ex.on_phase = lambda cid, gate, uuid: emit("phase", {"id": cid, "gate": gate, "uuid": uuid})
    header.executor = ex.describe()
    order: collections.deque[int] = collections.deque()  # candidates submitted, not yet recorded
    preps: dict[int, Prepared] = {}  # in the executor
    results: dict[int, SolutionResult] = {}  # done, waiting for an earlier candidate to be recorded
    seeds: dict[int, int] = {}

    trusted: list[SolutionResult] = []  # this run's baseline, torch.compile and peer rows, as recorded

    def submit(cid, sol: Solution, role: str, options: dict | None = None) -> None:
        emit("evaluating", {"id": cid, "name": sol.name})
        seeds[cid] = eval_opts.seed if eval_opts.seed is not None else secrets.randbits(63)
        path = f"ledger:{cid}" if isinstance(cid, int) else str(cid[1])
        prep = prepare(task, role, sol, path, seeds[cid], eval_opts, options)
        order.append(cid)
        if prep.job is None:
            results[cid] = prep.res
        else:
            preps[cid] = prep
            ex.submit(cid, prep.job, *prep.timeouts)

    def record_ready() -> None:
        """Record finished candidates in the order they were submitted, whatever order they finished in."""
        while order and order[0] in results:
            cid = order.popleft()
            res = results.pop(cid)
            if res.role in TRUSTED_ROLES:
                trusted.append(res)
            else:
                compare_with_peers(res, trusted, task)
            if not isinstance(cid, int):  # a peer or torch.compile row: no candidate of the ledger
                seeds.pop(cid, None)
                emit("trusted", {"name": res.name, "status": res.status, "reason": res.reason[:300]})
                continue
            report = header.model_copy(update={
                "seed": seeds.pop(cid), "solutions": [res],
                "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
            ledger.record(cid, res.status, res.gate, res.reason, res.speedup_vs_baseline, feedback_text(res),
                          report.model_dump(mode="json"))
            emit("evaluated", {"id": cid, "name": res.name, "status": res.status, "speedup": res.speedup_vs_baseline})

    def wait_one() -> None:
        ev = ex.next_event()
        if isinstance(ev, Started):
            preps[ev.key].started = time.monotonic()
        else:
            results[ev.key] = preps.pop(ev.key).finish(ev, task, cal)
        record_ready()

    def drain() -> None:
        while preps:
            wait_one()
        record_ready()

    try:
        run = ledger.run(run_id)
        # Candidates left PENDING were in flight when the process died: evaluate them now.
        for c in run.candidates:
            if c.status == "PENDING":
                submit(c.id, Solution.model_validate(c.solution), "baseline" if c.agent == "baseline" else "candidate")
        run = ledger.run(run_id)
        base_row = next((c for c in run.candidates if c.agent == "baseline"), None)
        if base_row is None:
            base = baseline_solution(task)
            cid = ledger.add_candidate(run_id, None, "baseline", "the task's baseline.py", "", base.to_json_dict(),
                                       base.source_hash)
            submit(cid, base, "baseline")
        elif base_row.evaluation:
            trusted.append(SolutionResult.model_validate(base_row.evaluation["solutions"][0]))
        if opts.peers if opts.peers is not None else opts.device.startswith("cuda"):
            for role, sol, _path, options in [compile_entry(task), *peer_entries(task)]:
                submit(("trusted", sol.name), sol, role, options)
        drain()  # the baseline's and the peers' timings go into every proposal's brief
        failures_in_a_row = 0
        while True:
            run = ledger.run(run_id)
            views = [_view(c) for c in run.candidates if c.agent != "baseline"]
            if len(views) >= opts.budget:
                break
            if opts.target and any((v.speedup_vs_baseline or 0) >= opts.target and v.status == "PASSED" for v in views):
                break
            if len(preps) >= ex.capacity():
                wait_one()  # every worker is busy: propose once one is free
                continue
            base_row = next(c for c in run.candidates if c.agent == "baseline")
            base_res = SolutionResult.model_validate(base_row.evaluation["solutions"][0]) if base_row.evaluation else None
            ctx = Context(task=task, device=opts.device, brief=brief(task, opts.device, base_res), history=views,
                          hardware=hardware, similar=worked, starting_point=start)
            try:
                proposal = agent.propose(ctx)
            except AgentError as e:
                if not views:
                    raise  # a configuration problem (no key, no CLI, no tunables): nothing was spent yet
                failures_in_a_row += 1
                emit("agent_error", {"error": str(e)})
                if failures_in_a_row >= 3:
                    break
                continue
            failures_in_a_row = 0
            if proposal is None:
                emit("exhausted", {})
                break
            cid = ledger.add_candidate(run_id, proposal.parent, agent.name, proposal.strategy, proposal.plan,
                                       proposal.solution.to_json_dict(), proposal.solution.source_hash)
            submit(cid, proposal.solution, "candidate")
        drain()
    finally:
        ex.close()
        for prep in preps.values():
            if prep.logdir is not None:
                prep.logdir.cleanup()
    return select(ledger, run_id, task)


def select(ledger: Ledger, run_id: int, task: Task, finish: bool = True) -> dict:
    """Promote the run's best promotable candidate. With the contract's ``require_approval``, only a
    candidate whose exact source a person approved (``kernelcraft approve``) can be promoted; better
    unapproved ones are listed in the summary as ``awaiting_approval``."""
    run = ledger.run(run_id)
    promotion = task.contract.promotion
    rule = f"PASSED every gate and speedup_vs_baseline >= {promotion.min_speedup_vs_baseline:g} (contract)"
    approved: set[str] = set()
    if promotion.require_approval:
        rule += " and approved by a person (contract: require_approval)"
        approved = {a.source_hash for a in ledger.approvals(task_name=task.definition.name)}
    best = None
    for c in run.candidates:
        if c.agent == "baseline" or c.status != "PASSED" or not c.evaluation:
            continue
        if not c.evaluation["solutions"][0].get("promotable"):
            continue
        if promotion.require_approval and c.source_hash not in approved:
            continue
        if best is None or (c.speedup_vs_baseline or 0) > (best.speedup_vs_baseline or 0):
            best = c
    ledger.promote(run_id, best.id if best else None, rule)
    if finish:
        ledger.finish(run_id)
    return summary(ledger, run_id, task)


def summary(ledger: Ledger, run_id: int, task: Task | None = None) -> dict:
    run = ledger.run(run_id)
    out = {
        "run_id": run.id,
        "task": run.task.name,
        "agent": run.agent,
        "candidates": [{"id": c.id, "parent": c.parent_id, "agent": c.agent, "strategy": c.strategy,
                        "status": c.status, "speedup_vs_baseline": c.speedup_vs_baseline} for c in run.candidates],
        "promoted": run.promoted_id,
    }
    if task is not None and task.contract.promotion.require_approval:
        # Promotable candidates better than the promoted one that wait for a person's approval.
        approved = {a.source_hash for a in ledger.approvals(task_name=run.task.name)}
        floor = next((c.speedup_vs_baseline or 0 for c in run.candidates if c.id == run.promoted_id), 0)
        out["awaiting_approval"] = [
            c.id for c in run.candidates
            if c.agent != "baseline" and c.status == "PASSED" and c.evaluation
            and c.evaluation["solutions"][0].get("promotable") and c.source_hash not in approved
            and (c.speedup_vs_baseline or 0) > floor]
    return out
