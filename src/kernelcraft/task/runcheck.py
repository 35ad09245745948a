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
- the baseline raises a CUDA error on a machine without a GPU: a warning.

The web app never calls this: nothing uploaded is executed by the web process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelcraft.errors import Problem
from kernelcraft.task.loader import Task

TIMEOUT_S = 300.0  # importing torch and one call on the smallest workload take seconds


def run_checks(task: Task, timeout_s: float = TIMEOUT_S) -> tuple[list[Problem], list[str]]:
    """(problems, warnings) from calling the reference and the baseline on the smallest workload."""
    with tempfile.TemporaryDirectory(prefix="kc_check_") as tmp:
        job = Path(tmp) / "job.json"
        result_path = Path(tmp) / "result.json"
        job.write_text(json.dumps({"task_root": str(task.root.resolve()), "result_path": str(result_path)}))
        cmd = [sys.executable, "-m", "kernelcraft.task._runcheck_target", str(job)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return [Problem(task.root, "", f"calling the reference and baseline.py on the smallest workload did "
                            f"not finish within {timeout_s:g} s", "make sure neither hangs")], []
        if not result_path.is_file():
            tail = (proc.stderr or proc.stdout)[-1500:].strip()
            return [Problem(task.root, "", f"the process that calls the reference and baseline.py ended with code "
                            f"{proc.returncode} and no result: {tail}")], []
        result = json.loads(result_path.read_text())
    if result.get("status") == "RUNTIME_ERROR":  # the harness's own side failed (load, inputs)
        return [Problem(task.root, "", "could not call the reference and baseline.py: " + result["reason"])], []
    return _judge(task, result)


def _judge(task: Task, result: dict) -> tuple[list[Problem], list[str]]:
    axes = ", ".join(f"{k}={v}" for k, v in result["axes"].items())
    where = f"on the smallest workload {result['workload']} ({axes})"
    problems, warnings = [], []
    ref = result["reference"]
    # A request that ships its own input generator (a KDA benchmark.py) but no contract naming it: a
    # reference that raises on kernelcraft's default draws is out of its domain, not broken (the
    # request's warnings say which [inputs] lines to add).
    own_inputs = (task.root / "benchmark.py").is_file() and task.contract.input_generator.generator is None
    if ref["status"] == "error" and ref["stage"] == "call" and own_inputs:
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
    if base["status"] == "error":
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
