"""``task check``'s run of the task's own code: the definition's reference and ``baseline.py``,
each called once on the smallest workload, in a process of its own
(:mod:`kernelcraft.task._runcheck_target`).

Parsing alone passed tasks that could never be evaluated: a reference that raises (every
candidate then ends RUNTIME_ERROR, and ``eval`` still exits 0), a baseline whose ``run`` takes
the wrong number of inputs, or one that raises. What each outcome means here:

- the reference raises, or returns the wrong number or shape of outputs: an error (exit 2);
- the baseline fails to import, cannot take the definition's inputs, raises or returns the
  wrong outputs: an error;
- the baseline imports a module this machine lacks (``ModuleNotFoundError``): a warning naming
  the module (a GPU library on a CPU machine is a normal sight);
- the baseline raises a CUDA error on a machine without a GPU: a warning;
- the process runs out of memory (an allocation past its limit, ``--max-memory-mb``, or SIGKILL, as
  the kernel's out-of-memory killer sends) or dies of another signal: an error naming the function
  it was in, the workload, what its inputs take and what to do.

The process runs under a memory limit (:mod:`kernelcraft._memlimit`, half the machine's memory by
default): a FlashInfer-Trace MoE task's reference, fed float64 copies of 1.4 GB of fp8 weights, took
the whole 24 GB machine and was SIGKILLed with nothing to say (2026-12).

The web app never calls this: nothing uploaded is executed by the web process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from kernelcraft._memlimit import half_of_ram_mb, limit_data, out_of_memory, signal_name
from kernelcraft.errors import Problem
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

TIMEOUT_S = 300.0  # importing torch and one call on the smallest workload take seconds


def smallest_workload(task: Task) -> Workload:
    """The workload check calls the reference and baseline on: the fewest bytes of inputs and outputs."""
    return min(task.workloads, key=lambda w: task.io_bytes(w.axes))


def run_checks(task: Task, timeout_s: float = TIMEOUT_S,
               max_mb: int | None = None) -> tuple[list[Problem], list[str]]:
    """(problems, warnings) from calling the reference and the baseline on the smallest workload, in a
    process whose data is capped at ``max_mb`` MB (None: half this machine's memory, or no limit where
    an NVIDIA device node exists: the process may start CUDA there, whose driver maps private memory of
    its own, and no GPU run has checked it under the cap yet; 0: no limit)."""
    if max_mb is None:
        max_mb = 0 if os.path.exists("/dev/nvidiactl") else half_of_ram_mb()
    with tempfile.TemporaryDirectory(prefix="kc_check_") as tmp:
        job = Path(tmp) / "job.json"
        result_path = Path(tmp) / "result.json"
        stage_path = Path(tmp) / "stage"  # the function the process is in: what a killed one was doing
        job.write_text(json.dumps({"task_root": str(task.root.resolve()), "result_path": str(result_path),
                                   "stage_path": str(stage_path)}))
        cmd = [sys.executable, "-m", "kernelcraft.task._runcheck_target", str(job)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                  preexec_fn=partial(limit_data, max_mb))
        except subprocess.TimeoutExpired:
            return [Problem(task.root, "", f"calling the reference and baseline.py on the smallest workload did "
                            f"not finish within {timeout_s:g} s", "make sure neither hangs")], []
        stage = stage_path.read_text().strip() if stage_path.is_file() else ""
        if not result_path.is_file():
            return [_died(task, proc, stage, max_mb)], []
        result = json.loads(result_path.read_text())
    if result.get("status") == "RUNTIME_ERROR":  # the harness's own side failed (load, inputs)
        if out_of_memory(result["reason"]):
            return [_memory_problem(task, stage, max_mb, result["reason"])], []
        return [Problem(task.root, "", "could not call the reference and baseline.py: " + result["reason"])], []
    return _judge(task, result, max_mb)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} kB"


def _sizes(task: Task, w: Workload, stage: str) -> str:
    """What the workload's inputs take as stored and, but for the baseline, as the reference gets them
    (floating ones in float64), and what its outputs take."""
    from kernelcraft.task.dtypes import torch_dtype

    d = task.definition
    axes = d.axis_values(w.axes)
    stored = as_float64 = outputs = 0
    for specs, is_input in ((d.inputs, True), (d.outputs, False)):
        for spec in specs.values():
            shape = d.shape(spec, axes)
            if shape is None:
                continue
            n = 1
            for size in shape:
                n *= size
            dt = torch_dtype(spec.dtype)
            if is_input:
                stored += n * dt.itemsize
                as_float64 += n * (8 if dt.is_floating_point else dt.itemsize)
            else:
                outputs += n * dt.itemsize
    copies = "" if stage == "baseline" else f" ({_mb(as_float64)} as the float64 copies the reference is called with)"
    return f"its inputs take {_mb(stored)}{copies} and its outputs {_mb(outputs)}"


def _where(task: Task, stage: str) -> str:
    w = smallest_workload(task)
    axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
    doing = {"reference": "while calling the reference ", "baseline": "while calling baseline.py "}.get(stage, "")
    return f"{doing}on the smallest workload {w.uuid} ({axes}); {_sizes(task, w, stage)}"


def _memory_fix(stage: str, max_mb: int, killed: bool = False) -> str:
    """What to do when the process ran out of memory: past its limit (a larger one, on a machine that
    has it), or killed before it (``killed``: the machine itself ran short)."""
    more = ("more free memory" if killed else
            "more memory and a larger --max-memory-mb" + (f" (now {max_mb} MB)" if max_mb else ""))
    fix = {"reference": f"run check on a machine with {more}: the reference runs on the CPU in float64 wherever "
                        f"check runs",
           "baseline": f"run check on a machine with a GPU (the baseline runs there), or with {more}"}.get(
        stage, f"run check on a machine with {more}, or with a GPU for the baseline")
    if killed:
        fix += "; a --max-memory-mb below what this machine has free turns the same shortage into an error naming the allocation"
    return fix


def _memory_problem(task: Task, stage: str, max_mb: int, reason: str) -> Problem:
    limit = f"its memory limit of {max_mb} MB (--max-memory-mb)" if max_mb else "this machine's memory (no limit set)"
    last = reason.strip().splitlines()[-1][-300:] if reason.strip() else ""
    return Problem(task.root, "", f"the process that calls the reference and baseline.py ran out of memory "
                   f"{_where(task, stage)}: an allocation failed under {limit} ({last})", _memory_fix(stage, max_mb))


def _died(task: Task, proc: subprocess.CompletedProcess, stage: str, max_mb: int) -> Problem:
    """The process ended without writing its result: killed by a signal, or its result could not be written."""
    tail = (proc.stderr or proc.stdout or "")[-1500:].strip()
    if proc.returncode >= 0:
        if out_of_memory(tail):
            return _memory_problem(task, stage, max_mb, tail)
        return Problem(task.root, "", f"the process that calls the reference and baseline.py ended with code "
                       f"{proc.returncode} and no result {_where(task, stage)}: {tail or '(it printed nothing)'}")
    how = f"was killed by {signal_name(proc.returncode)} {_where(task, stage)}"
    if proc.returncode == -signal.SIGKILL:
        limit = (f"the machine ran out before the process reached its {max_mb} MB limit (--max-memory-mb)" if max_mb
                 else "no memory limit was set (--max-memory-mb 0)")
        return Problem(task.root, "", f"the process that calls the reference and baseline.py {how}: likely out of "
                       f"memory (SIGKILL is what the kernel's out-of-memory killer sends; {limit})"
                       + (f": {tail}" if tail else ""),
                       _memory_fix(stage, max_mb, killed=True))
    return Problem(task.root, "", f"the process that calls the reference and baseline.py {how}"
                   + (f": {tail}" if tail else " and printed nothing"),
                   "run the function it was in by hand on that workload's shapes to find the crash")


def _judge(task: Task, result: dict, max_mb: int) -> tuple[list[Problem], list[str]]:
    axes = ", ".join(f"{k}={v}" for k, v in result["axes"].items())
    where = f"on the smallest workload {result['workload']} ({axes})"
    problems, warnings = [], []
    ref = result["reference"]
    # A request that ships its own input generator (a KDA benchmark.py) but no contract naming it: a
    # reference that raises on kernelcraft's default draws is out of its domain, not broken (the
    # request's warnings say which [inputs] lines to add).
    own_inputs = (task.root / "benchmark.py").is_file() and task.contract.input_generator.generator is None
    if ref.get("stage") == "memory":  # past the process's memory: the machine is too small, not the reference wrong
        problems.append(_memory_problem(task, "reference", max_mb, ref["reason"]))
    elif ref["status"] == "error" and ref["stage"] == "call" and own_inputs:
        warnings.append(f"{task.root / 'definition.json'}: the reference raised {where} on kernelcraft's default "
                        f"inputs, which may lie outside the request's domain: add the contract's [inputs] generator "
                        f"for its benchmark.py (see the suggestion below) and check again ({ref['reason'][-300:]})")
    elif ref["status"] == "error":
        what = {"import": "does not load", "signature": "has the wrong signature",
                "call": f"raised {where}", "outputs": f"returned the wrong outputs {where}"}[ref["stage"]]
        problems.append(Problem(task.root / "definition.json", "reference", f"{what}: {ref['reason']}",
                                "fix the reference: every candidate is judged against it"))
    base = result["baseline"]
    path = task.baseline_path
    if base.get("stage") == "memory":
        problems.append(_memory_problem(task, "baseline", max_mb, base["reason"]))
    elif base["status"] == "error":
        what = {"import": "does not import", "signature": "has the wrong signature",
                "call": f"raised {where}", "outputs": f"returned the wrong outputs {where}"}[base["stage"]]
        problems.append(Problem(path, "run", f"{what}: {base['reason']}",
                                "baseline.py's run takes the reference's inputs and returns its outputs"))
    elif base["status"] == "unavailable":
        warnings.append(f"{path}: imports module {base['module']!r}, which is not installed here ({base['reason']}); "
                        "the baseline was not run: `eval` will report it RUNTIME_ERROR on this machine")
    elif base["status"] == "needs_gpu":
        warnings.append(f"{path}: needs a GPU ({base['reason']}); not run on this machine")
    return problems, warnings
