"""`kernelcraft mcp`: the task, the gauntlet and the ledger as MCP tools over stdio.

A coding agent (Claude Code, Codex, any MCP client) reads a task's contract with ``task_info``,
submits candidates with ``evaluate`` or ``evaluate_source`` and reads past runs from the ledger.
The gauntlet, never the agent, judges: candidate code runs in the gauntlet's spawned worker
process, not in this server. Every failure the agent can fix (a missing folder, a bad field, an
unknown run) comes back as a tool error naming the file and field; the server keeps serving.

Built on the official ``mcp`` SDK's high-level server (``MCPServer``, called ``FastMCP`` before
mcp 2). Its stdio transport points fd 1 at stderr while it serves, so output of spawned workers
cannot reach the protocol stream.
"""

from __future__ import annotations

import functools
import logging
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kernelcraft.errors import InputError

INSTRUCTIONS = """\
kernelcraft verifies and measures GPU kernels against a task contract. Workflow: call task_info on the
task folder (contract, reference, baseline, workloads); research before writing: knowledge_search for
the team's measured techniques and traps (op type, device, words such as "fp8 conversion"; read a page
with knowledge_page) and ledger_similar for what worked on similar tasks (their best candidates,
strategies, speedups and sources); write a candidate (a .py with a value-returning `run` taking the
reference's inputs, usually launching a @triton.jit kernel); submit it with evaluate_source (or
evaluate for a file); read status, gate and reason, fix, submit again. Do not write your own timing or
correctness checks: the gauntlet's verdict (fresh random inputs, holdout shapes, integrity checks,
interleaved timing) is the only one that counts."""


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Every failure becomes a ToolError whose text the client sees; the server never dies of one."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except InputError as e:
            raise ToolError(f"unusable input:\n{e}") from e
        except Exception as e:  # noqa: BLE001 - a harness bug must reach the agent as text, not kill the server
            raise ToolError(f"{type(e).__name__}: {e}") from e

    return wrapper


def _load(task_dir: str):
    from kernelcraft.task.loader import load_task

    if not Path(task_dir).is_dir():
        raise ToolError(f"{task_dir}: no such task folder (give the folder holding definition.json)")
    return load_task(task_dir)


def _device(device: str) -> str:
    if device == "cpu":
        return device
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ToolError(f"device {device!r}: no CUDA device is visible to the server; use device='cpu'")
        return device
    raise ToolError(f"device {device!r}: use cpu, cuda or cuda:N")


def _evaluate(task_dir: str, path: Path, device: str, workload: str | list[str] | None, no_timing: bool,
              seed: int | None, shown_path: str | None = None) -> dict[str, Any]:
    from kernelcraft.agent.feedback import feedback_text
    from kernelcraft.gauntlet import Options, evaluate
    from kernelcraft.solution.model import load_solution

    task = _load(task_dir)
    prefixes = [workload] if isinstance(workload, str) else workload
    for prefix in prefixes or []:
        task.workload(prefix)  # InputError when a prefix matches no workload, or several
    sol = load_solution(path, task.definition.name)
    # The server lives on and its agent evaluates again: keep the next worker warm.
    opts = Options(device=_device(device), seed=seed, time_it=not no_timing, workloads=prefixes or None,
                   warm_spare=True)
    report = evaluate(task, [("candidate", sol, shown_path or str(path))], opts)
    res = report.solutions[0]
    return {"task": report.task, "device": report.device, "seed": report.seed,
            "hardware": report.environment.get("hardware"), "feedback": feedback_text(res),
            "solution": res.model_dump(mode="json")}


def build_server(db: str | None = None) -> MCPServer:
    """The server and its tools; ``db`` is the ledger URL used when a call names none."""
    from kernelcraft import __version__
    from kernelcraft.ledger import Ledger

    default_db = db
    # The SDK logs at INFO on stderr; opening a new ledger would add Alembic's INFO lines about each
    # migration, which an MCP client shows its user as server errors.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    server = MCPServer("kernelcraft", instructions=INSTRUCTIONS, version=__version__)

    @server.tool()
    @_tool_errors
    def task_info(task_dir: str, device: str = "cpu") -> dict[str, Any]:
        """A task's contract in words, its reference and baseline sources, its workloads and the
        solutions kept in its solutions/ folder. Call this first."""
        from kernelcraft.agent.loop import brief

        task = _load(task_dir)
        readme = task.readme_path.read_text() if task.readme_path and task.readme_path.is_file() else ""
        return {
            "task": task.definition.name, "task_dir": str(task.root),
            "brief": brief(task, device, None),
            "reference": task.definition.reference,
            "baseline": task.baseline_path.read_text(),
            "workloads": [{"uuid": w.uuid, "axes": w.axes} for w in task.workloads],
            "solutions": [{"name": p.stem if p.is_file() else p.name, "path": str(p)} for p in task.solution_paths()],
            "readme": readme, "warnings": list(task.warnings),
        }

    @server.tool()
    @_tool_errors
    def evaluate(task_dir: str, solution_path: str, device: str = "cpu", workload: str | list[str] | None = None,
                 no_timing: bool = False, seed: int | None = None) -> dict[str, Any]:
        """Run the gauntlet on one solution (.py, .json or solution folder; a relative path is also
        looked up inside task_dir). workload: uuid prefixes to run (default: all); no_timing: check
        correctness only; seed: replay the inputs of an earlier evaluation. Returns the verdict
        (status, gate, reason, speedups, per-workload results), a feedback text and the seed."""
        path = Path(solution_path)
        if not path.exists() and not path.is_absolute() and (Path(task_dir) / path).exists():
            path = Path(task_dir) / path
        if not path.exists():
            raise ToolError(f"{solution_path}: solution not found (give a .py, a .json or a solution folder)")
        return _evaluate(task_dir, path, device, workload, no_timing, seed)

    @server.tool()
    @_tool_errors
    def evaluate_source(task_dir: str, source: str, device: str = "cpu", workload: str | list[str] | None = None,
                        no_timing: bool = False, seed: int | None = None, name: str = "candidate") -> dict[str, Any]:
        """Like evaluate, for a complete Python solution file given as text (a value-returning `run`
        taking the reference's inputs; Triton kernels with @triton.jit). name: the solution's name."""
        stem = re.sub(r"\W", "_", name).strip("_") or "candidate"
        with tempfile.TemporaryDirectory(prefix="kc_mcp_") as tmp:
            path = Path(tmp) / f"{stem}.py"
            path.write_text(source)
            return _evaluate(task_dir, path, device, workload, no_timing, seed, shown_path=f"source:{stem}.py")

    @server.tool()
    @_tool_errors
    def ledger_runs(task_dir: str | None = None, db: str | None = None) -> dict[str, Any]:
        """Optimization runs recorded in the ledger (all, or only those of the task in task_dir), each
        with its candidates, verdicts and promoted candidate. db: a SQLAlchemy URL (default: the server's)."""
        from kernelcraft.agent.loop import summary

        ledger = Ledger(db or default_db)
        try:
            name = _load(task_dir).definition.name if task_dir else None
            return {"ledger": ledger.url, "runs": [summary(ledger, r.id) for r in ledger.runs(name)]}
        finally:
            ledger.engine.dispose()

    @server.tool()
    @_tool_errors
    def ledger_run(run_id: int, db: str | None = None) -> dict[str, Any]:
        """One run of the ledger: its candidates as a DAG (parent ids), their verdicts, reasons and
        feedback, and the promoted candidate."""
        from kernelcraft.agent.loop import summary

        ledger = Ledger(db or default_db)
        try:
            run = ledger.run(run_id)
            if run is None:
                raise ToolError(f"no run {run_id} in the ledger {ledger.url} (see ledger_runs)")
            result = summary(ledger, run_id)
            detail = {c.id: c for c in run.candidates}
            for c in result["candidates"]:
                row = detail[c["id"]]
                c.update(gate=row.gate, reason=row.reason, feedback=row.feedback)
            result.update(ledger=ledger.url, device=run.device, run_status=run.status, created_at=run.created_at)
            return result
        finally:
            ledger.engine.dispose()

    @server.tool()
    @_tool_errors
    def knowledge_search(query: str, tags: list[str] | None = None, op_type: str | None = None,
                         device: str | None = None, limit: int = 5) -> dict[str, Any]:
        """Search the knowledge base: pages of measured techniques and traps (claim, conditions,
        evidence, other GPUs, how to apply), ranked by BM25 over title, tags and text. tags: all must
        be on the page; op_type: e.g. rmsnorm, softmax, quantize, kmeans (pages for any op pass too);
        device: e.g. "NVIDIA H200", A100, hopper. Returns each hit's id, title, confidence and claim."""
        from kernelcraft import knowledge

        hits = knowledge.search(query, tags=tags, op_type=op_type, device=device, limit=limit)
        return {"query": query, "hits": [h.to_dict() for h in hits]}

    @server.tool()
    @_tool_errors
    def knowledge_page(page: str) -> dict[str, Any]:
        """One knowledge page by id (from knowledge_search): its front matter and all five sections,
        the evidence with the record paths and numbers it rests on."""
        from kernelcraft import knowledge

        return knowledge.find(page).to_dict()

    @server.tool()
    @_tool_errors
    def ledger_similar(task_dir: str, device: str | None = None, db: str | None = None, limit: int = 5,
                       with_source: bool = True) -> dict[str, Any]:
        """What worked on tasks similar to task_dir's (same op type or stage tags) in the ledger: the
        best PASSED candidates, their strategy notes, descriptions, speedups over their own baselines,
        the hardware they ran on, whether their `run` takes this task's inputs unchanged (entry_fits),
        and with_source their source files, to start from. device: a hardware name ("NVIDIA H200",
        H200) or cpu/cuda; default any."""
        from kernelcraft.ledger.memory import entry_fits, similar

        definition = _load(task_dir).definition.model_dump(mode="json")
        ledger = Ledger(db or default_db)
        try:
            found = similar(ledger, definition, hardware=device, limit=limit)
            return {"task": definition["name"], "ledger": ledger.url, "similar": [
                {**w.to_dict(with_source=with_source), "entry_fits": entry_fits(w, definition)} for w in found]}
        finally:
            ledger.engine.dispose()

    return server


def serve(db: str | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    build_server(db).run("stdio")
