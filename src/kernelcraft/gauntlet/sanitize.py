"""``kernelcraft eval --sanitize``: NVIDIA compute-sanitizer on a candidate that passed every other gate.

What the numeric gates cannot see, compute-sanitizer sees in the kernels as they run:

- **memcheck**: out-of-bounds and misaligned reads and writes (global, shared, local), e.g. a
  "prefetch" one element past the last row that happens to land in memory the caching allocator
  owns, so the gauntlet's run neither faults nor computes a wrong number;
- **racecheck**: shared-memory hazards between threads (a missing ``__syncthreads``/``__syncwarp``)
  that hardware scheduling usually hides;
- **initcheck**: reads of device memory never written (an output buffer read before it is written,
  a scratch buffer assumed zero).

The candidate runs in :mod:`kernelcraft.gauntlet._sanitize_target` (its own process, one per tool)
under ``compute-sanitizer --tool T`` with PyTorch's caching allocator off, on small shapes: the
task's smallest workload and the two smallest holdout shapes drawn from the run's secret seed (odd
sizes, where bounds bugs live); a sanitizer slows kernels by 10-100x. Every error the tool reports
rejects the candidate, naming the tool as its class (``[memcheck]``, ``[racecheck]``,
``[initcheck]``) with the sanitizer's own first lines (kernel, access, address). CUDA API calls
that return an error are not counted (``--report-api-errors no``): torch and the CUDA loaders probe
driver entry points that may not exist (``cuGetProcAddress``: 34 such reports for an honest
solution on the H200), which says nothing about the candidate's kernels.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelcraft._target import kill_group
from kernelcraft.gauntlet.holdout import holdout_workloads
from kernelcraft.solution.model import Solution
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

TOOLS = ("memcheck", "racecheck", "initcheck")
TOOL_TIMEOUT_S = 300.0
HOLDOUT_BYTES = 64 << 20  # holdout shapes for the sanitizer stay small: it slows kernels 10-100x
FIX = ("compute-sanitizer ships with the CUDA toolkit (`<cuda>/bin/compute-sanitizer`): put it on PATH or "
       "point KERNELCRAFT_COMPUTE_SANITIZER at it")

_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+) error")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_NOISE = ("Saved host backtrace", "Host Frame", "Device Frame", "COMPUTE-SANITIZER", "ERROR SUMMARY",
          "RACECHECK SUMMARY", "LEAK SUMMARY")


class SanitizerUnavailable(Exception):
    """No compute-sanitizer on this machine, or no CUDA device: the message says what to do."""


@dataclass
class ToolResult:
    tool: str
    errors: int | None  # None: the tool's summary line never appeared (it crashed or timed out)
    exit_code: int | None
    seconds: float
    excerpt: str = ""  # the sanitizer's first report, backtraces left out
    target: dict = field(default_factory=dict)  # what the target process said (status, calls, reason)


@dataclass
class SanitizeResult:
    status: str  # PASSED, REJECTED, RUNTIME_ERROR, TIMEOUT
    reason: str
    sanitizer: str
    workloads: list[dict]
    tools: list[ToolResult]

    def to_dict(self) -> dict:
        return asdict(self)


def find_sanitizer() -> str:
    explicit = os.environ.get("KERNELCRAFT_COMPUTE_SANITIZER")
    if explicit:
        if not Path(explicit).is_file():
            raise SanitizerUnavailable(f"KERNELCRAFT_COMPUTE_SANITIZER={explicit} is not a file; {FIX}")
        return explicit
    found = shutil.which("compute-sanitizer")
    for candidate in (found, "/usr/local/cuda/bin/compute-sanitizer",
                      "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise SanitizerUnavailable(f"compute-sanitizer was not found; {FIX}")


def sanitize_workloads(task: Task, seed: int, runnable: list[Workload]) -> list[Workload]:
    """The smallest workload and the two smallest holdout shapes of this run."""
    smallest = min(runnable, key=lambda w: task.io_bytes(w.axes))
    holdouts = sorted(holdout_workloads(task, seed, HOLDOUT_BYTES), key=lambda w: task.io_bytes(w.axes))
    chosen = [smallest]
    for h in holdouts:
        if len(chosen) == 3:
            break
        if all(h.axes != c.axes for c in chosen):
            chosen.append(h)
    return chosen


def _excerpt(text: str, limit: int = 12) -> str:
    lines = []
    for raw in text.splitlines():
        if not raw.startswith("========="):
            continue
        line = raw.removeprefix("=========").strip()
        if not line or any(n in line for n in _NOISE):
            continue
        lines.append(line)
        if len(lines) >= limit:
            break
    return "\n".join(lines)


def _errors(tool: str, text: str) -> int | None:
    """Errors the tool reported: racecheck's hazards (errors and warnings alike), else the error summary."""
    counts = [int(m.group(1)) for m in _ERROR_SUMMARY.finditer(text)]
    if tool == "racecheck":
        counts += [int(m.group(1)) for m in _RACE_SUMMARY.finditer(text)]
    return max(counts) if counts else None


def run_tool(tool: str, sanitizer: str, task: Task, solution: Solution, workloads: list[Workload],
             device: str, seed: int, timeout_s: float = TOOL_TIMEOUT_S) -> ToolResult:
    with tempfile.TemporaryDirectory(prefix=f"kc_{tool}_") as d:
        sol_path = Path(d) / "solution.json"
        sol_path.write_text(solution.model_dump_json())
        job = {"task_root": str(task.root), "solution_path": str(sol_path), "device": device, "seed": seed,
               "workloads": [w.model_dump(mode="json") for w in workloads],
               "result_path": str(Path(d) / "result.json")}
        job_path = Path(d) / "job.json"
        job_path.write_text(json.dumps(job))
        cmd = [sanitizer, "--tool", tool, "--print-limit", "20", "--show-backtrace", "no", "--report-api-errors", "no",
               sys.executable, "-m", "kernelcraft.gauntlet._sanitize_target", str(job_path)]
        env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        try:
            text, _ = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            kill_group(proc)
            text, _ = proc.communicate()
            code = None
        seconds = time.monotonic() - t0
        result_file = Path(job["result_path"])
        target = json.loads(result_file.read_text()) if result_file.exists() else {}
    excerpt = _excerpt(text)
    if not excerpt and code not in (0, None):
        excerpt = "\n".join(text.splitlines()[-15:])
    return ToolResult(tool, _errors(tool, text), code, round(seconds, 2), excerpt, target)


def sanitize(task: Task, solution: Solution, device: str, seed: int, runnable: list[Workload],
             tools: tuple[str, ...] = TOOLS, timeout_s: float = TOOL_TIMEOUT_S) -> SanitizeResult:
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise ValueError(f"unknown sanitizer tool(s) {unknown}; choose from {list(TOOLS)}")
    sanitizer = find_sanitizer()
    workloads = sanitize_workloads(task, seed, runnable)
    shapes = [w.axes for w in workloads]
    results = []
    for tool in tools:
        r = run_tool(tool, sanitizer, task, solution, workloads, device, seed, timeout_s)
        results.append(r)
        if r.errors:
            return SanitizeResult("REJECTED", (
                f"[{tool}] compute-sanitizer --tool {tool} reported {r.errors} error(s) on shapes {shapes}:\n"
                + (r.excerpt or "(no report lines; see the record)")), sanitizer, shapes, results)
        if r.exit_code is None:
            return SanitizeResult("TIMEOUT", f"[{tool}] compute-sanitizer did not finish within {timeout_s:.0f} s "
                                  f"on shapes {shapes}", sanitizer, shapes, results)
        if r.target.get("status") != "RAN":
            why = r.target.get("reason") or r.excerpt or f"exit code {r.exit_code}, no result from the target"
            return SanitizeResult("RUNTIME_ERROR", f"[{tool}] under compute-sanitizer the solution did not run: "
                                  f"{why}", sanitizer, shapes, results)
        if r.errors is None:
            return SanitizeResult("RUNTIME_ERROR", f"[{tool}] compute-sanitizer printed no summary "
                                  f"(exit code {r.exit_code}): {r.excerpt[-2000:]}", sanitizer, shapes, results)
    return SanitizeResult("PASSED", "", sanitizer, shapes, results)
