"""The ``kernelcraft`` command.

Exit codes: 0 when every solution was evaluated, whatever the verdicts; 2 for unusable input
(a bad task folder, a missing file, a malformed record), with a message naming the file and field;
1 from ``import`` when some problem was not converted (the converted ones are written all the same).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelcraft.errors import InputError, Problem

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Verify, measure and record GPU kernels against a task contract.")
task_app = typer.Typer(no_args_is_help=True, help="Task folders: check them.")
app.add_typer(task_app, name="task")
import_app = typer.Typer(no_args_is_help=True, help="Turn problems written for other tools into task folders.")
app.add_typer(import_app, name="import")
# Tables are the point of the output: do not squeeze them to 80 columns when piped to a file.
console = Console(width=None if Console().is_terminal else 160)
err = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160)


def _fail_input(e: InputError) -> None:
    err.print("[bold red]unusable input[/]:", highlight=False)
    for p in e.problems:
        # soft_wrap: a file path or a quoted field must stay on one line, for people and for grep
        err.print(f"  - {p}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)


@task_app.command("check")
def task_check(
    task_dir: Annotated[Path, typer.Argument(help="the task folder")],
    max_memory_mb: Annotated[int | None, typer.Option(
        help="memory (RLIMIT_DATA: heap and private mappings) of the process that calls the reference and "
             "baseline.py on the smallest workload (default: half this machine's memory, none on a machine with an NVIDIA GPU; 0: no limit)",
        show_default=False)] = None,
) -> None:
    """Validate a task folder; print what is wrong, or a summary."""
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    try:
        task = load_task(task_dir)
        solutions = [load_solution(p, task.definition.name) for p in task.solution_paths()]
    except InputError as e:
        _fail_input(e)
    d = task.definition
    console.print(f"[bold]{d.name}[/] ({d.op_type}) in {task.root}")
    axes = ", ".join(f"{n}={a.value}" if a.type == "const" else f"{n} (var)" for n, a in d.axes.items())
    console.print(f"  axes: {axes}")
    for kind, specs in (("inputs", d.inputs), ("outputs", d.outputs)):
        items = ", ".join(f"{n}: {s.dtype}{list(s.shape) if s.shape is not None else ' scalar'}" for n, s in specs.items())
        console.print(f"  {kind}: {items}", markup=False)
    if d.constraints:
        console.print(f"  constraints: {'; '.join(d.constraints)}", markup=False)
    console.print(f"  workloads: {len(task.workloads)}; contract: "
                  f"{'contract.toml' if (task.root / 'contract.toml').exists() else 'defaults (no contract.toml)'}")
    console.print(f"  solutions: {', '.join(s.name for s in solutions) or 'none'}")
    from kernelcraft.task.degenerate import degenerate_warnings
    from kernelcraft.task.request import request_warnings
    from kernelcraft.task.runcheck import run_checks

    problems, ran = run_checks(task, max_mb=max_memory_mb)
    for w in task.warnings + ran + ([] if problems else degenerate_warnings(task)) + request_warnings(task):
        console.print(f"  [yellow]warning[/]: {escape(w)}", highlight=False)
    if problems:
        _fail_input(InputError(problems))
    console.print("[green]ok[/]")


LEDGER_PREFIX = "ledger:"


def _pin_cpu_threads(workers: int | None, timing: bool) -> None:
    """One intra-op thread per CPU worker (kernelcraft.measure.cpu); with timing, a warning when the
    machine has no free core for each worker. ``workers``: None where they run elsewhere (Ray)."""
    from kernelcraft.measure import cpu

    try:
        per = cpu.pin_worker_threads()
    except ValueError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None
    busy = cpu.load_warning(workers, per) if timing and workers else ""
    if busy:
        err.print(f"[yellow]warning[/]: {escape(busy)}", highlight=False)


def _stop_workers() -> None:
    """End the warm spare workers before the command returns (they would outlive it otherwise)."""
    from kernelcraft.worker import template
    from kernelcraft.worker.pool import shutdown_spares

    shutdown_spares()
    template.shutdown()


def _device(device: str) -> str:
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            err.print("--device cuda: no CUDA device is visible here (torch.cuda.is_available() is False)")
            raise typer.Exit(2)
    elif device != "cpu":
        err.print(f"--device {device!r}: use cpu, cuda or cuda:N")
        raise typer.Exit(2)
    return device


DEVICES_HELP = "GPUs to use, as indices among the visible ones (e.g. 0,1); default: every visible GPU"
WORKERS_HELP = ("with --device cpu: CPU workers side by side (default 1: CPU timings of workers side by side "
                "disturb each other); with a Ray executor: this many CPU actors (default: one per CPU of the cluster), "
                "or at most this many GPUs")
EXECUTOR_HELP = "local (this machine), ray (a local Ray instance, or RAY_ADDRESS) or ray:ADDRESS (a Ray cluster)"
OVERLAP_HELP = "on a GPU, build the next candidate only once the current one has finished (default: overlapped)"


def _devices(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        err.print(f"--devices {text!r}: give GPU indices separated by commas, e.g. 0,1")
        raise typer.Exit(2) from None


@app.command("eval")
def eval_cmd(
    task_dir: Annotated[Path, typer.Argument(help="the task folder")],
    solutions: Annotated[list[Path] | None, typer.Argument(help="solution files or folders, or ledger:ID (a ledger candidate, as `review` prints it); default: the baseline and every solution in TASK_DIR/solutions/")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto (cuda when visible)")] = "auto",
    json_path: Annotated[Path | None, typer.Option("--json", help="write the evaluation record here")] = None,
    seed: Annotated[int | None, typer.Option(help="replay the inputs of an earlier run (its recorded seed)")] = None,
    with_compile: Annotated[bool, typer.Option("--with-compile", help="add a row: the reference under torch.compile, one graph per shape (on by default with peers)")] = False,
    compile_mode: Annotated[list[str] | None, typer.Option("--compile-mode", help="torch.compile rows to add, repeatable: default, max-autotune-no-cudagraphs, reduce-overhead, max-autotune, or dynamic (one graph with symbolic sizes: the weak old row)")] = None,
    confirm: Annotated[bool, typer.Option("--confirm/--no-confirm", help="GPU: confirm each candidate's timing with Nsight Compute from outside its process (without it no GPU candidate is promotable)")] = True,
    peer: Annotated[list[str] | None, typer.Option("--peer", help="with peers: only these (a PEER name, repeatable); default: every file of peers/")] = None,
    peers: Annotated[bool | None, typer.Option("--peers/--no-peers", help="time the task's peers (peers/*.py) and torch.compile in the same run; default: on for cuda, off for cpu")] = None,
    peers_beside: Annotated[bool, typer.Option("--peers-beside", help="with peers: also time each peer and torch.compile row beside every candidate, in its rotation, on the same kind of memory; x best peer then compares those (measure/stability.py says why)")] = False,
    trusted_timing: Annotated[str, typer.Option("--trusted-timing", help="where the baseline, torch.compile and peer rows time their calls: judge (in the judging process), runner (each in a runner process of its own, the path a candidate's timed calls take: the same process hop, arena and timer) or auto (runner when timing on a GPU without --peers-beside, else judge)")] = "auto",
    with_baseline: Annotated[bool, typer.Option("--with-baseline", help="add the baseline row also when SOLUTIONS are named")] = False,
    workload: Annotated[list[str] | None, typer.Option(help="only workloads whose uuid starts with this (repeatable)")] = None,
    timeout: Annotated[float | None, typer.Option(help="seconds allowed per workload phase (default: the contract's)")] = None,
    cpu_max_mb: Annotated[float, typer.Option(help="on cpu, skip workloads that move more than this many MB")] = 16.0,
    budget_ms: Annotated[float | None, typer.Option(help="measured time per timed function per workload (default: the contract's)")] = None,
    time_cpu: Annotated[bool, typer.Option("--time", help="on cpu, also time the solutions (default there: correctness only; CPU timings are interpreter figures that say nothing about a GPU)")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="check correctness only (the default on cpu)")] = False,
    db: Annotated[str | None, typer.Option(help="with SOLUTION ledger:ID, the ledger's SQLAlchemy URL (default: KERNELCRAFT_DB, else sqlite:///.kernelcraft/ledger.db)")] = None,
    traces: Annotated[Path | None, typer.Option(help="also append FlashInfer-Trace Trace records under this folder")] = None,
    no_calibrate: Annotated[bool, typer.Option("--no-calibrate", help="skip the speed-of-light fractions and the impossible-speed gate")] = False,
    sanitize: Annotated[bool, typer.Option("--sanitize", help="CUDA: run compute-sanitizer (memcheck, racecheck, initcheck) on every candidate that passes")] = False,
    lint: Annotated[bool | None, typer.Option("--lint/--no-lint", help="Triton candidates: compile their kernels for sm_90 without a run and read the TTGIR for the pipelined-loop race (a race: not promotable); default on with a GPU, off on cpu")] = None,
    sanitize_tools: Annotated[str, typer.Option(help="with --sanitize: which compute-sanitizer tools, comma-separated")] = "memcheck,racecheck,initcheck",
    devices: Annotated[str | None, typer.Option(help=DEVICES_HELP)] = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    no_overlap: Annotated[bool, typer.Option("--no-overlap", help=OVERLAP_HELP)] = False,
) -> None:
    """Run the gauntlet on solutions of a task and print (and optionally record) the verdicts."""
    from kernelcraft.gauntlet import Options, baseline_solution, evaluate
    from kernelcraft.gauntlet.evaluate import COMPILE_MODES, compile_entry, peer_entries
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    dev = _device(device)
    bad_modes = [m for m in compile_mode or [] if m not in COMPILE_MODES]
    if bad_modes:
        err.print(f"[red]error[/]: --compile-mode {escape(bad_modes[0])}: use one of {', '.join(COMPILE_MODES)}",
                  highlight=False)
        raise typer.Exit(2)
    with_peers = dev.startswith("cuda") if peers is None else peers
    try:
        task = load_task(task_dir)
        if workload:
            for prefix in workload:
                task.workload(prefix)
        # Trusted rows first: each candidate's record is compared with every one measured before it.
        entries: list[tuple] = []
        if not solutions or with_baseline:
            entries.append(("baseline", baseline_solution(task), str(task.baseline_path)))
        modes = list(dict.fromkeys(compile_mode or ([] if not (with_compile or with_peers) else ["default"])))
        entries += [compile_entry(task, m) for m in modes]
        if with_peers:
            entries += peer_entries(task, only=peer)
        paths = task.solution_paths() if not solutions else solutions
        for p in paths:
            if str(p).startswith(LEDGER_PREFIX):
                from kernelcraft.review.candidate import ledger_solution

                entries.append(("candidate", ledger_solution(str(p), task, db), str(p)))
            else:
                entries.append(("candidate", load_solution(p, task.definition.name), str(p)))
    except InputError as e:
        _fail_input(e)
    tools: tuple[str, ...] = ()
    if sanitize:
        from kernelcraft.gauntlet.sanitize import TOOLS, SanitizerUnavailable, find_sanitizer

        tools = tuple(t.strip() for t in sanitize_tools.split(",") if t.strip())
        bad = [t for t in tools if t not in TOOLS]
        if bad or not tools:
            err.print(f"[red]error[/]: --sanitize-tools {escape(sanitize_tools)}: unknown tool(s) {bad}; "
                      f"choose from {', '.join(TOOLS)}", highlight=False)
            raise typer.Exit(2)
        if not dev.startswith("cuda"):
            err.print(f"[red]error[/]: --sanitize checks GPU kernels, but the device is {dev}: run with "
                      "--device cuda on a machine with an NVIDIA GPU, or drop --sanitize", highlight=False)
            raise typer.Exit(2)
        try:
            find_sanitizer()
        except SanitizerUnavailable as e:
            err.print(f"[red]error[/]: --sanitize: {escape(str(e))}", highlight=False)
            raise typer.Exit(2) from None
    from kernelcraft.task.degenerate import degenerate_warnings

    for w in degenerate_warnings(task):
        err.print(f"[yellow]warning[/]: {escape(w)}", highlight=False)
    on_cpu = not dev.startswith("cuda")
    if time_cpu and no_timing:
        err.print("[red]error[/]: --time and --no-timing contradict each other: give one", highlight=False)
        raise typer.Exit(2)
    time_it = not no_timing and (time_cpu or not on_cpu)
    if trusted_timing not in ("judge", "runner", "auto"):
        err.print(f"[red]error[/]: --trusted-timing {trusted_timing!r}: give judge, runner or auto", highlight=False)
        raise typer.Exit(2)
    if trusted_timing == "runner" and peers_beside:
        err.print("[red]error[/]: --peers-beside times the peers again in the judge, beside each candidate, and x best "
                  "peer then reads those; --trusted-timing runner times them in runners of their own: give one",
                  highlight=False)
        raise typer.Exit(2)
    if on_cpu:
        _pin_cpu_threads((workers or 1) if executor == "local" else None, time_it)
    opts = Options(device=dev, seed=seed, workload_timeout_s=timeout, cpu_max_mb=cpu_max_mb,
                   time_it=time_it, timing={"budget_ms": budget_ms} if budget_ms else None,
                   workloads=workload, calibrate=not no_calibrate, executor=executor,
                   devices=_devices(devices), workers=workers, overlap=not no_overlap, sanitize=tools,
                   confirm=confirm, peers_beside=peers_beside, trusted_timing=trusted_timing,
                   lint=(not on_cpu) if lint is None else lint)

    names = [entry[1].name for entry in entries]

    def save(report) -> None:
        # Rewritten after every solution, atomically: an interrupted run keeps what it measured, and
        # names what it had not finished (`unfinished`, empty once every row has its result).
        if json_path:
            done = {s.name for s in report.solutions}
            report.unfinished = [n for n in names if n not in done]
            json_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = json_path.with_name(json_path.name + ".partial")
            tmp.write_text(report.model_dump_json(indent=2) + "\n")
            tmp.replace(json_path)

    from kernelcraft.progress import EvalProgress

    try:
        with EvalProgress(console, names, dev) as shown:
            report = evaluate(task, entries, opts, on_progress=shown.on_progress, on_result=save,
                              on_phase=shown.on_phase)
    except InputError as e:
        _fail_input(e)
    finally:
        _stop_workers()
    _print_report(report)
    if on_cpu and time_it:
        from kernelcraft.measure.cpu import timing_warnings

        for w in timing_warnings(report):
            err.print(f"[yellow]warning[/]: {escape(w)}", highlight=False)
    if json_path:
        console.print(f"wrote {json_path}", highlight=False)
    if traces:
        from kernelcraft.interop.fib import write_traces

        console.print(f"appended traces to {write_traces(report, task, traces)}")


ledger_app = typer.Typer(no_args_is_help=True, help="The ledger: runs, candidates, verdicts, promotions.")
app.add_typer(ledger_app, name="ledger")

from kernelcraft.knowledge.cli import knowledge_app, ledger_similar  # noqa: E402 - after the apps it joins

app.add_typer(knowledge_app, name="knowledge")
ledger_app.command("similar")(ledger_similar)
DB_HELP = "SQLAlchemy URL of the ledger (default: KERNELCRAFT_DB, else sqlite:///.kernelcraft/ledger.db)"


@app.command("optimize")
def optimize_cmd(
    task_dir: Annotated[Path, typer.Argument(help="the task folder")],
    agent: Annotated[str, typer.Option(help="tuner, tuner:FILE, files:DIR, openai:MODEL, anthropic:MODEL, claude-code or codex (the CLIs, run non-interactively)")],
    budget: Annotated[int, typer.Option(help="candidates to evaluate (the baseline not counted)")] = 8,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto")] = "auto",
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the run summary here")] = None,
    resume: Annotated[int | None, typer.Option(help="continue this run id")] = None,
    target: Annotated[float | None, typer.Option(help="stop once a candidate reaches this speedup over the baseline")] = None,
    timeout: Annotated[float | None, typer.Option(help="seconds allowed per workload phase")] = None,
    budget_ms: Annotated[float | None, typer.Option(help="measured time per timed function per workload")] = None,
    cpu_max_mb: Annotated[float, typer.Option(help="on cpu, skip workloads that move more than this many MB")] = 16.0,
    devices: Annotated[str | None, typer.Option(help=DEVICES_HELP)] = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    no_overlap: Annotated[bool, typer.Option("--no-overlap", help=OVERLAP_HELP)] = False,
    memory: Annotated[bool, typer.Option("--memory/--no-memory", help="offer the agent what worked on similar tasks in this ledger (same op type or stage tags, same hardware) as starting points; a tuner without TUNABLES of its own starts from such a candidate")] = True,
) -> None:
    """Let an agent propose kernels; the gauntlet judges each; the ledger remembers every one."""
    from kernelcraft.agent.base import AgentError
    from kernelcraft.agent.loop import OptimizeOptions, make_agent, optimize
    from kernelcraft.gauntlet import Options
    from kernelcraft.ledger import Ledger
    from kernelcraft.progress import OptimizeProgress
    from kernelcraft.task.loader import load_task

    try:
        task = load_task(task_dir)
    except InputError as e:
        _fail_input(e)
    dev = _device(device)
    try:
        proposer = make_agent(agent, task, from_memory=memory)
    except (AgentError, InputError) as e:
        err.print(f"[red]agent[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None
    if not dev.startswith("cuda"):
        # optimize selects by speed, so it times on a CPU too: interpreter figures, one thread per worker
        _pin_cpu_threads((workers or 1) if executor == "local" else None, True)
        from kernelcraft.measure.cpu import NOTE

        err.print(f"[yellow]note[/]: {escape(NOTE)}", highlight=False)
    ledger = Ledger(db)
    eval_opts = Options(device=dev, workload_timeout_s=timeout, cpu_max_mb=cpu_max_mb,
                        timing={"budget_ms": budget_ms} if budget_ms else None, warm_spare=True,
                        executor=executor, devices=_devices(devices), workers=workers, overlap=not no_overlap,
                        confirm=dev.startswith("cuda"),  # a GPU candidate promotes only with its timing confirmed
                        lint=dev.startswith("cuda"))  # ... and with no pipeline race in its Triton kernels
    try:
        with OptimizeProgress(console, f"{task.definition.name} with {proposer.name}", budget) as shown:
            result = optimize(task, proposer, ledger, OptimizeOptions(device=dev, budget=budget, target=target,
                                                                      eval=eval_opts, memory=memory),
                              resume=resume,
                              on_event=shown.on_event)
    except AgentError as e:
        err.print(f"[red]agent[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None
    except InputError as e:
        _fail_input(e)
    finally:
        _stop_workers()
    _print_run(result)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=2) + "\n")


@app.command("mcp")
def mcp_cmd(db: Annotated[str | None, typer.Option(help=DB_HELP)] = None) -> None:
    """Serve task info, the gauntlet and the ledger to coding agents as MCP tools over stdio."""
    from kernelcraft.agent.mcp_server import serve

    serve(db)


@app.command("profile")
def profile_cmd(
    task_dir: Annotated[Path, typer.Argument(help="the task folder")],
    solution: Annotated[Path, typer.Argument(help="the solution file or folder")],
    workload: Annotated[str | None, typer.Option(help="uuid prefix of the workload (default: the one moving the most bytes)")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto (cuda when visible)")] = "auto",
    out: Annotated[Path | None, typer.Option(help="output folder (default: .kernelcraft/profiles/<task>/<solution>-<hash>/)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary.json instead of the text")] = False,
    full: Annotated[bool, typer.Option("--full", help="collect ncu's full set (every section; slower)")] = False,
    timeout: Annotated[float, typer.Option(help="seconds allowed for the profiled run")] = 600.0,
) -> None:
    """Nsight Compute profile of one solution, and the compiler's report (nvcc's for CUDA; for Triton its kernels
    compiled for sm_90 without a run, with the pipeline-race lint): what limits it, on a machine without a GPU too."""
    from kernelcraft.measure.profile import ProfileError, profile, render

    try:
        prof = profile(task_dir, solution, workload=workload, device=device, out=out, full=full, timeout=timeout)
    except InputError as e:
        _fail_input(e)
    except ProfileError as e:
        err.print(f"[red]profile[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(e.exit_code) from None
    print(json.dumps(prof.to_dict(), indent=2) if as_json else render(prof), end="" if not as_json else "\n")


@app.command("serve")
def serve_cmd(
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    import_results: Annotated[list[Path] | None, typer.Option("--import-results", help="first import the `eval --json` records in this folder or file (repeatable; a record imported before is skipped)")] = None,
    maintainer: Annotated[list[str] | None, typer.Option(help="give this existing account the maintainer role (repeatable)")] = None,
    reports: Annotated[Path | None, typer.Option(help="folder of `kernelcraft report` HTML files, <task name>.html, linked from task pages")] = None,
    max_upload_mb: Annotated[float, typer.Option(help="largest task-folder zip accepted, in MiB")] = 2.0,
) -> None:
    """Serve the kernel wishlist and the leaderboards (web pages and a JSON API) on the ledger."""
    from kernelcraft.web import Settings, serve

    try:
        serve(Settings(db_url=db, max_upload_mb=max_upload_mb, maintainers=maintainer or [], reports_dir=reports),
              host=host, port=port, import_results=import_results or [])
    except InputError as e:
        _fail_input(e)


skill_app = typer.Typer(no_args_is_help=True, help="Skills that teach coding agents the kernelcraft workflow.")
app.add_typer(skill_app, name="skill")


@skill_app.command("install")
def skill_install(
    claude: Annotated[bool, typer.Option("--claude", help="for Claude Code (~/.claude/skills/kernelcraft)")] = False,
    codex: Annotated[bool, typer.Option("--codex", help="for Codex (~/.agents/skills/kernelcraft)")] = False,
    dest: Annotated[Path | None, typer.Option(help="write the skill folder here instead")] = None,
) -> None:
    """Write SKILL.md and its references for an agent CLI."""
    from kernelcraft.agent.skill import install

    if claude == codex:
        err.print("give exactly one of --claude or --codex")
        raise typer.Exit(2)
    path = install("claude" if claude else "codex", dest)
    console.print(f"wrote the kernelcraft skill to {escape(str(path))}", highlight=False)


def _print_run(result: dict) -> None:
    t = Table(title=f"run {result['run_id']}: {result['task']} with {result['agent']}")
    for col in ("id", "parent", "agent", "status", "x baseline", "strategy"):
        t.add_column(col)
    for c in result["candidates"]:
        mark = " *" if c["id"] == result["promoted"] else ""
        t.add_row(f"{c['id']}{mark}", str(c["parent"] or ""), c["agent"], c["status"],
                  _fmt(c["speedup_vs_baseline"], ".3f"), escape(c["strategy"][:80]))
    console.print(t)
    console.print(f"promoted: {result['promoted'] if result['promoted'] is not None else 'none'}")
    if result.get("awaiting_approval"):
        waiting = ", ".join(map(str, result["awaiting_approval"]))
        console.print(f"awaiting approval (contract): {waiting}; kernelcraft review ID, then kernelcraft approve ID --by NAME",
                      highlight=False)


@ledger_app.command("show")
def ledger_show(
    task_dir: Annotated[Path | None, typer.Argument(help="only runs of this task")] = None,
    run: Annotated[int | None, typer.Option(help="one run, with its candidate DAG")] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Runs, the candidate DAG, verdicts and the promoted solution."""
    from kernelcraft.agent.loop import summary
    from kernelcraft.ledger import Ledger

    ledger = Ledger(db)
    name = None
    if task_dir is not None:
        from kernelcraft.task.loader import load_task

        try:
            name = load_task(task_dir).definition.name
        except InputError as e:
            _fail_input(e)
    if run is not None:
        if ledger.run(run) is None:
            err.print(f"no run {run} in {ledger.url}")
            raise typer.Exit(2)
        result = summary(ledger, run)
        if as_json:
            print(json.dumps(result, indent=2))
            return
        _print_run(result)
        _print_dag(result)
        return
    runs = [summary(ledger, r.id) for r in ledger.runs(name)]
    if as_json:
        print(json.dumps(runs, indent=2))
        return
    t = Table(title=f"runs in {ledger.url}")
    for col in ("run", "task", "agent", "candidates", "best x baseline", "promoted"):
        t.add_column(col)
    for r in runs:
        speeds = [c["speedup_vs_baseline"] for c in r["candidates"] if c["agent"] != "baseline" and c["speedup_vs_baseline"]]
        t.add_row(str(r["run_id"]), r["task"], r["agent"], str(len(r["candidates"]) - 1),
                  _fmt(max(speeds) if speeds else None, ".3f"), str(r["promoted"] or "-"))
    console.print(t)


def _print_dag(result: dict) -> None:
    from rich.tree import Tree

    children: dict = {}
    ids = {c["id"] for c in result["candidates"]}
    for c in result["candidates"]:
        # a parent outside this run (a starting point from the ledger's memory) roots its child here
        children.setdefault(c["parent"] if c["parent"] in ids else None, []).append(c)
    tree = Tree(f"run {result['run_id']} DAG")

    def add(node, parent_id):
        for c in children.get(parent_id, []):
            sp = f" {c['speedup_vs_baseline']:.3f}x" if c["speedup_vs_baseline"] else ""
            star = " (promoted)" if c["id"] == result["promoted"] else ""
            origin = f" (from ledger candidate {c['parent']})" if c["parent"] is not None and c["parent"] not in ids else ""
            add(node.add(f"{c['id']} {c['status']}{sp}{star}{origin} {escape(c['strategy'][:60])}"), c["id"])

    add(tree, None)
    console.print(tree)


def _import_exit(report) -> None:
    """After everything is printed: a script or CI that imports a set learns that part of it is missing."""
    if report.failures:
        raise typer.Exit(1)


def _print_import(report, out: Path) -> None:
    for p in report.converted:
        console.print(f"  [green]converted[/] {escape(str(p))}", highlight=False)
    for what, why in report.failures:
        console.print(f"  [red]not converted[/] {escape(str(what))}: {escape(why)}", highlight=False, soft_wrap=True)
    for w in getattr(report, "warnings", []):
        console.print(f"  [yellow]warning[/] {escape(str(w))}", highlight=False, soft_wrap=True)
    console.print(f"{len(report.converted)} converted into {out}, {len(report.failures)} not converted")
    _import_exit(report)


@import_app.command("fib")
def import_fib(
    dataset: Annotated[Path, typer.Argument(help="a FlashInfer-Trace dataset (holding definitions/ and workloads/)")],
    out: Annotated[Path, typer.Option(help="folder to write one task folder per definition into")],
) -> None:
    """FlashInfer-Trace definitions, workloads and solutions -> task folders.

    Exit 0 when every definition was converted; 1 when any was not (each with its reason; the converted ones are written all the same); 2 for unusable arguments.
    """
    from kernelcraft.interop.fib import import_fib_dataset

    try:
        report = import_fib_dataset(dataset, out)
    except InputError as e:
        _fail_input(e)
    _print_import(report, out)


@import_app.command("kernelbench")
def import_kernelbench_cmd(
    paths: Annotated[list[Path], typer.Argument(help="KernelBench problem files, or folders of them")],
    out: Annotated[Path, typer.Option(help="folder to write one task folder per problem into")],
    seed: Annotated[int, typer.Option(help="seed for the problems' parameters (recorded in each README)")] = 0,
    device: Annotated[str, typer.Option(help="where each problem's check run (baseline vs float64 reference) runs: cpu or cuda")] = "cpu",
    workers: Annotated[int, typer.Option(help="problems converted side by side, each in its own process")] = 1,
    max_memory_mb: Annotated[int, typer.Option(help="memory (RLIMIT_DATA: heap and private mappings) per problem's process (0: no limit)")] = 8192,
    timeout: Annotated[float, typer.Option(help="seconds per problem")] = 900.0,
) -> None:
    """KernelBench problems (Model, get_inputs, get_init_inputs) -> task folders.

    Exit 0 when every problem was converted; 1 when any was not (each with its reason, also in the report; the converted ones are written all the same); 2 for unusable arguments.
    """
    from kernelcraft.interop.kernelbench import import_kernelbench

    missing = [p for p in paths if not p.exists()]
    if missing:
        _fail_input(InputError([Problem(p, "", "not found", "give KernelBench problem files or folders") for p in missing]))
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        _fail_input(InputError(Problem("--device", "", f"{device!r} is not a device", "use cpu or cuda")))

    def progress(o) -> None:
        if o.folder is not None:
            console.print(f"  [green]converted[/] {escape(str(o.folder))} ({o.seconds:.1f} s)", highlight=False)
        else:
            console.print(f"  [red]not converted[/] {escape(str(o.path))}: {escape(o.reason)}", highlight=False,
                          soft_wrap=True)

    report = import_kernelbench(paths, out, seed=seed, device=device, workers=workers, max_memory_mb=max_memory_mb,
                                timeout_s=timeout, on_result=progress)
    for w in report.warnings:
        console.print(f"  [yellow]warning[/] {escape(str(w))}", highlight=False, soft_wrap=True)
    console.print(f"{len(report.converted)} converted into {out}, {len(report.failures)} not converted "
                  f"(report: {report.report_path})")
    _import_exit(report)


@app.command("calibrate")
def calibrate_cmd(
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto (cuda when visible)")] = "auto",
    force: Annotated[bool, typer.Option("--force", help="measure again even if this device is cached")] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the calibration here")] = None,
) -> None:
    """Measure this device's ceilings (copy bandwidth, matrix throughput per dtype), cached per device."""
    from kernelcraft.measure.calibrate import cache_path, calibrate

    dev = _device(device)
    with console.status(f"calibrating {dev} ..."):
        cal = calibrate(dev, force=force)
    t = Table(title=f"{cal.hardware} ({dev}), fingerprint {cal.fingerprint}, {cal.timestamp}")
    t.add_column("ceiling")
    t.add_column("measured", justify="right")
    t.add_row("copy bandwidth (read + write)", f"{cal.copy_gbs:,.0f} GB/s")
    for dtype, v in cal.matmul_tflops.items():
        t.add_row(f"matmul {dtype}", f"{v:,.1f} TFLOP/s")
    for k, v in (("SMs", cal.sm_count), ("L2", f"{cal.l2_bytes / 2**20:.0f} MiB" if cal.l2_bytes else None),
                 ("memory", f"{cal.memory_bytes / 2**30:.0f} GiB" if cal.memory_bytes else None)):
        if v is not None:
            t.add_row(k, str(v))
    for k, v in cal.clocks_mhz.items():
        t.add_row(f"clock {k}", f"{v:.0f} MHz")
    console.print(t)
    console.print(f"cached at {cache_path(dev)}", highlight=False)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(cal.model_dump_json(indent=2) + "\n")  # the record (the cache file is signed)
        console.print(f"wrote {json_path}", highlight=False)


# --- report, review, approve, export, e2e (issue 8); the logic lives in report/, review/, export/, e2e/ ---
CANDIDATE_HELP = "a ledger candidate ID, or an evaluation record (.json) with --solution NAME"
SOLUTION_HELP = "the solution's name in the evaluation record (default: its only candidate)"
TASK_HELP = "the task folder, when the record's task_dir or the ledger's path has moved"


@app.command("report")
def report_cmd(
    target: Annotated[Path | None, typer.Argument(help="an evaluation record (.json), or a task folder (its latest ledger run)")] = None,
    run: Annotated[int | None, typer.Option(help="report this ledger run (best-so-far and DAG plots included)")] = None,
    record: Annotated[list[Path] | None, typer.Option(help="another record of the same task (repeatable)")] = None,
    task: Annotated[Path | None, typer.Option(help=TASK_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    html: Annotated[Path | None, typer.Option(help="write the HTML report here (default: <task name>.html)")] = None,
    md: Annotated[Path | None, typer.Option(help="write a Markdown report here (plots as PNG files beside it)")] = None,
) -> None:
    """A report to forward: contract, verdicts, latencies, plots, limits and provenance."""
    from kernelcraft.report.command import gather, write

    try:
        paths = write(gather(target, run, record or [], task, db), html, md)
    except InputError as e:
        _fail_input(e)
    for p in paths:
        console.print(f"wrote {p}", highlight=False)


@app.command("summary")
def summary_cmd(
    records: Annotated[list[Path], typer.Argument(help="evaluation records, or folders of them (results/<gpu>/)")],
    out: Annotated[Path | None, typer.Option(help="write here (e.g. results/h200/SUMMARY.md) instead of printing")] = None,
) -> None:
    """One Markdown page over a set of evaluation records."""
    import shlex
    import sys

    from kernelcraft.report.summary import summary_markdown

    command = "kernelcraft " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    try:
        text = summary_markdown(records, command)
    except InputError as e:
        _fail_input(e)
    if out is None:
        print(text, end="")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        console.print(f"wrote {out}", highlight=False)


@app.command("review")
def review_cmd(
    candidate: Annotated[str, typer.Argument(help=CANDIDATE_HELP)],
    solution: Annotated[str | None, typer.Option(help=SOLUTION_HELP)] = None,
    task: Annotated[Path | None, typer.Option(help=TASK_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    out: Annotated[Path | None, typer.Option(help="write the bundle (review.md, sources/, *.patch, evaluation.json) into this folder")] = None,
) -> None:
    """What to read before approving: source, diffs, verdicts, profile, limits."""
    from kernelcraft.ledger import Ledger
    from kernelcraft.review.bundle import render, write
    from kernelcraft.review.candidate import resolve

    try:
        r = resolve(candidate, solution, db, task)
    except InputError as e:
        _fail_input(e)
    ledger = Ledger(db)
    if out is None:
        print(render(r, ledger)[0], end="")
    else:
        console.print(f"wrote {write(r, ledger, out)}", highlight=False)


@app.command("approve")
def approve_cmd(
    candidate: Annotated[str, typer.Argument(help=CANDIDATE_HELP)],
    by: Annotated[str, typer.Option(help="who approves (recorded with the exact source hash)")],
    note: Annotated[str, typer.Option(help="why, in a sentence")] = "",
    solution: Annotated[str | None, typer.Option(help=SOLUTION_HELP)] = None,
    task: Annotated[Path | None, typer.Option(help=TASK_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
) -> None:
    """Record a person's approval of a candidate that PASSED (promotes it where the contract waits for one)."""
    from kernelcraft.ledger import Ledger
    from kernelcraft.review.approve import approve
    from kernelcraft.review.candidate import resolve
    from kernelcraft.review.cautions import cautions

    try:
        r = resolve(candidate, solution, db, task)
        ledger = Ledger(db)
        warnings = cautions(r, ledger)
        outcome = approve(r, ledger, by, note)
    except InputError as e:
        _fail_input(e)
    for w in warnings:
        err.print(f"[yellow]warning[/]: {escape(w)}", highlight=False)
    console.print(f"approval {outcome.approval_id}: {r.label} (source {r.solution.source_hash[:12]}) by {by}: "
                  f"{outcome.note}", highlight=False, markup=False)


@app.command("export")
def export_cmd(
    candidate: Annotated[str, typer.Argument(help=CANDIDATE_HELP)],
    dest: Annotated[Path, typer.Argument(help="a new folder for the export")],
    format: Annotated[str, typer.Option("--format", help="torch-op, hf-kernels or fib")],
    solution: Annotated[str | None, typer.Option(help=SOLUTION_HELP)] = None,
    task: Annotated[Path | None, typer.Option(help=TASK_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    name: Annotated[str | None, typer.Option(help="package (torch-op) or kernel (hf-kernels) name; default from the task")] = None,
    exact_shapes: Annotated[bool, typer.Option("--exact-shapes", help="dispatch only on the exact var-axis values that ran, not their range")] = False,
) -> None:
    """Package a validated candidate: a torch.library op package, a Hugging Face kernels repo, or FlashInfer-Trace."""
    from kernelcraft.export import export
    from kernelcraft.ledger import Ledger
    from kernelcraft.review.candidate import resolve
    from kernelcraft.review.cautions import cautions

    try:
        r = resolve(candidate, solution, db, task)
        warnings = cautions(r, Ledger(db) if r.candidate_id is not None else None)
        out = export(r, format, dest, db=db, name=name, exact_shapes=exact_shapes)
    except InputError as e:
        _fail_input(e)
    for w in warnings:
        err.print(f"[yellow]warning[/]: {escape(w)}; exported anyway", highlight=False)
    console.print(f"exported {r.label} (source {r.solution.source_hash[:12]}, {r.result.status}) as {format} "
                  f"into {dest}", highlight=False, markup=False)
    env = out.pop("envelope", None)
    for k, v in out.items():
        console.print(f"  {k}: {v}", highlight=False, markup=False)
    if env:
        var = ", ".join(f"{a} in [{x['min']}, {x['max']}]" for a, x in env["var_axes"].items())
        console.print(f"  dispatches to the kernel on {env['device_type']} ({env['hardware']}), "
                      f"{', '.join(f'{k} {v}' for k, v in env['dtypes'].items())}, {var or 'fixed shapes'}; "
                      "elsewhere the reference", highlight=False, markup=False)


@app.command("e2e")
def e2e_cmd(
    candidate: Annotated[list[str] | None, typer.Argument(help=CANDIDATE_HELP + " (repeatable; or give --package)")] = None,
    package: Annotated[list[str] | None, typer.Option(help="an exported torch-op package: installed module name or "
                                                           "export folder (repeatable: one per region kind)")] = None,
    solution: Annotated[str | None, typer.Option(help=SOLUTION_HELP)] = None,
    task: Annotated[Path | None, typer.Option(help=TASK_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=DB_HELP)] = None,
    model: Annotated[str, typer.Option(help="a capture MODEL_SPEC: llama-tiny, llama3-8b, hf:MODEL_TYPE[,key=value...]")] = "llama3-8b",
    layers: Annotated[int | None, typer.Option(help="decoder layers (trims the preset)")] = None,
    batch: Annotated[int, typer.Option(help="sequences per step")] = 1,
    seq: Annotated[int, typer.Option(help="prefill tokens per sequence (decode runs after a cache of this many)")] = 512,
    phase: Annotated[list[str] | None, typer.Option(help="prefill and/or decode (default both)")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto")] = "auto",
    dtype: Annotated[str, typer.Option(help="the model's dtype (the kernels' validated one)")] = "bfloat16",
    no_compile: Annotated[bool, typer.Option("--no-compile", help="skip the torch.compile rows")] = False,
    compile_backend: Annotated[str, typer.Option(help="inductor, or aot_eager (traced, no code generated)")] = "inductor",
    budget_ms: Annotated[float, typer.Option(help="measured time per timed function")] = 300.0,
    profile_iters: Annotated[int, typer.Option(help="profiled steps per phase (the regions' shares)")] = 5,
    reps: Annotated[int, typer.Option(help="minimum timed repetitions per function")] = 10,
    seed: Annotated[int, typer.Option(help="weights and token ids")] = 0,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the kc-e2e/2 record here")] = None,
    gdn_function: Annotated[str, typer.Option(help="what the stock model's gated delta rule calls: model (as "
                                                   "transformers resolved it: FLA's when fla imports) or torch "
                                                   "(transformers' torch fallback)")] = "model",
    peer: Annotated[list[str] | None, typer.Option(help="extra rows with a peer's gated delta rule: fla "
                                                        "(flash-linear-attention's functions)")] = None,
) -> None:
    """Exported kernels inside a transformers model: eager and compiled, prefill and decode, end-to-end
    latency next to the Amdahl prediction."""
    import tempfile

    from kernelcraft.e2e.run import PHASES, E2EError, E2EOptions, load_package, run_e2e

    candidates, package = candidate or [], package or []
    if not candidates and not package:
        err.print("give a CANDIDATE or --package (repeatable)")
        raise typer.Exit(2)
    opts = E2EOptions(model=model, layers=layers, batch=batch, seq=seq, device=_device(device), dtype=dtype,
                      phases=tuple(phase or PHASES), compile=not no_compile, compile_backend=compile_backend,
                      budget_ms=budget_ms, profile_iters=profile_iters, reps=reps, seed=seed,
                      gdn_function=gdn_function, peers=tuple(peer or ()))
    try:
        with tempfile.TemporaryDirectory(prefix="kc_e2e_") as tmp:
            for i, c in enumerate(candidates):
                from kernelcraft.export import export
                from kernelcraft.review.candidate import resolve

                r = resolve(c, solution, db, task)
                export(r, "torch-op", Path(tmp) / f"export{i}", db=db)
                package.append(str(Path(tmp) / f"export{i}"))
            opts.packages = list(package)
            with console.status("building the model and measuring ..."):
                record = run_e2e([load_package(p) for p in package], opts)
    except InputError as e:
        _fail_input(e)
    except E2EError as e:
        err.print(f"[red]e2e[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    _print_e2e(record)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(record, indent=2) + "\n")
        console.print(f"wrote {json_path}", highlight=False)


@app.command("capture")
def capture_cmd(
    model: Annotated[str, typer.Argument(help="a preset (llama-tiny, llama3-8b, qwen3-next, qwen3-next-tiny), "
                                              "hf:MODEL_TYPE[,key=value...] or module:factory")],
    out: Annotated[Path, typer.Option("--out", help="a new folder for the task folders and capture.json")],
    compile_: Annotated[bool, typer.Option("--compile", help="regions are Inductor's kernels (else eager operators)")] = False,
    top: Annotated[int, typer.Option(help="task folders (or catalog links) to write, by share of the step")] = 5,
    batch: Annotated[int, typer.Option(help="sequences per step")] = 1,
    seq: Annotated[int, typer.Option(help="prefill tokens per sequence (decode runs after a cache of this many)")] = 32,
    layers: Annotated[int | None, typer.Option(help="decoder layers (trims the preset)")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N, or auto")] = "auto",
    dtype: Annotated[str, typer.Option(help="the model's dtype")] = "bfloat16",
    iters: Annotated[int, typer.Option(help="profiled steps per phase")] = 5,
    phase: Annotated[list[str] | None, typer.Option(help="prefill and/or decode (default both)")] = None,
    catalog: Annotated[Path | None, typer.Option(help="catalog to link against (default: this repository's tasks/)")] = None,
    seed: Annotated[int, typer.Option(help="weights and token ids")] = 0,
) -> None:
    """Profile a model, rank its operators (or Inductor's fused kernels) by share of the step, and write
    the top ones as task folders (or link the catalog task that computes the same)."""
    import shlex
    import sys

    from kernelcraft.capture.models import CaptureError
    from kernelcraft.capture.run import PHASES, CaptureOptions, capture

    phases = tuple(phase or PHASES)
    bad = [p for p in phases if p not in PHASES]
    if bad:
        err.print(f"--phase {bad[0]}: use prefill and/or decode")
        raise typer.Exit(2)
    opts = CaptureOptions(spec=model, out=out, compile=compile_, top=top, batch=batch, seq=seq, device=_device(device),
                          dtype=dtype, layers=layers, iters=iters, seed=seed, catalog=catalog, phases=phases,
                          command="kernelcraft " + shlex.join(sys.argv[1:]))
    try:
        with console.status("capturing and profiling ..."):
            index = capture(opts)
    except CaptureError as e:
        err.print(f"[red]capture[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    console.print((out / "README.md").read_text(), markup=False, highlight=False)
    n = sum(1 for r in index["regions"] if r.get("task_dir"))
    links = sum(1 for r in index["regions"] if r.get("link"))
    console.print(f"wrote {n} task folder(s) and {links} catalog link(s) under {out} (capture.json)", highlight=False)


def _print_e2e(rec: dict) -> None:
    m = rec["model"]
    cfg = m.get("config", {})
    kinds = ", ".join(f"{k}: {n}" for k, n in m["patch"]["regions"].items())
    console.print(f"{m.get('arch')} ({m['spec']}, {cfg.get('num_hidden_layers')} layers, hidden {cfg.get('hidden_size')}, "
                  f"{m.get('params', 0) / 1e6:.1f}M params, {m['dtype']}, random weights) on "
                  f"{rec['environment']['hardware']}; regions replaced: {kinds}; layout: {m['patch']['layout']}",
                  highlight=False, markup=False)
    norms = m["patch"].get("norms", [])
    left: dict = {}
    for n in norms:
        if n["region"] is None:
            left.setdefault((n["class"], n["left"]), []).append(n["module"])
    if norms:
        off = m["patch"].get("offset_scale")
        console.print(f"  norms: {len(norms) - sum(map(len, left.values()))} replaced"
                      + (f" (1 + weight made in float32, rounded to {off['dtype']}: max relative rounding of the "
                         f"scale {off['max_rel_rounding']:.2g})" if off else "")
                      + "".join(f"; {len(v)} {cls} left: {why}" for (cls, why), v in left.items()),
                      highlight=False, markup=False)
    gdn = m["patch"].get("gdn")
    if gdn:
        console.print(f"  gated delta rule: {len(gdn['layers'])} layers; the model calls "
                      + ", ".join(f"{k}: {v}" for k, v in gdn.get("model_function", {}).items())
                      + f"; stock regions call the {gdn.get('stock_function')} function"
                      + ("; adapted to the op: " + " | ".join(gdn["adaptation"]) if gdn.get("adaptation") else ""),
                      highlight=False, markup=False)
    for phase, ph in rec["phases"].items():
        if ph.get("skipped"):
            console.print(f"{phase}: skipped ({ph['skipped']})", highlight=False, markup=False)
            continue
        c = ph["correctness"]
        if not c["kernels_ran"]:
            console.print(f"[bold red]{phase}: a kernel never ran[/] ({escape(json.dumps(c['dispatch']))}); "
                          "these numbers measure its reference", highlight=False)
        t = Table(title=f"{phase} ({ph['tokens']} tokens): step latency, ms ({rec['timing_version']}, medians)")
        for col in ("model", "median ms", "p25-p75", "x eager"):
            t.add_column(col)
        lat = ph["latency_ms"]
        for k, v in lat.items():
            t.add_row(k, f"{v['median_ms']:.4f}", f"{v['p25_ms']:.4f}-{v['p75_ms']:.4f}",
                      f"{lat['eager']['median_ms'] / v['median_ms']:.3f}")
        console.print(t)
        for k, iso in ph["isolated"].items():
            comp = (f"; compiled {iso['stock_compiled_ms']:.4f} vs {iso['kernel_compiled_ms']:.4f} ms: "
                    f"{iso['speedup_compiled']:.3f}x" if "speedup_compiled" in iso else "")
            share = ph["profile"]["kinds"].get(k, {}).get("share")
            console.print(f"  {k} alone on {iso['shape']}: stock {iso['stock_ms']:.4f} ms, kernel {iso['kernel_ms']:.4f} "
                          f"ms: {iso['speedup']:.3f}x{comp}; share {_fmt(share, '.1%')} ({ph['profile']['basis']})",
                          highlight=False, markup=False)
        p, meas = ph["prediction"], ph["measured"]
        console.print(f"  eager: Amdahl predicts {_fmt(p['eager']['amdahl_speedup'])}x (timed shares: "
                      f"{_fmt(p['eager'].get('amdahl_speedup_timed_shares'))}x), measured {meas['eager_speedup']:.3f}x",
                      highlight=False, markup=False)
        if "compiled_speedup" in meas:
            pc = p.get("compiled", {})
            console.print(f"  compiled: Amdahl predicts {_fmt(pc.get('amdahl_speedup'))}x, measured "
                          f"{meas['compiled_speedup']:.3f}x", highlight=False, markup=False)
        f = ph.get("fusion")
        if f:
            kept = {True: "kept", False: "LOST", None: "not measurable here"}[f["fusion_kept"]]
            console.print(f"  fusion {kept}: {f['exported_op_nodes']} exported node(s) for {f['kernels_placed']} regions, "
                          f"graph breaks {f['graph_breaks']}" + (f", extra kernels {f['extra_kernels']}" if "extra_kernels" in f
                                                                else f" ({f.get('note', '')})"), highlight=False, markup=False)
        if ph.get("why_slower"):
            why = "; ".join(f"{r['cause']} ({r['evidence']})" for r in ph["why_slower"]["reasons"])
            console.print(f"  compiled with the kernels is slower: {why}", highlight=False, markup=False)
        console.print(f"  logits: max |diff| {c['max_abs_logit_diff']:.4g} (max |logit| {c['max_abs_logit']:.4g}), "
                      f"argmax agreement {c['argmax_agreement']:.1%}", highlight=False, markup=False)
        for peer, pc in ph.get("peers", {}).items():
            console.print(f"  peer {peer}: logits max |diff| vs stock {pc['max_abs_logit_diff']:.4g}, vs the kernels "
                          f"{pc['vs_kernels_max_abs_logit_diff']:.4g}", highlight=False, markup=False)


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _print_report(report) -> None:
    from kernelcraft.report.terminal import print_report

    print_report(console, report)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
