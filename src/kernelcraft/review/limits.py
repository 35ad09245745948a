"""What an evaluation validated, and what it did not: the envelope a kernel may be trusted in.

The envelope is read from the record, never assumed:

- device: the record's device type (``cuda`` or ``cpu``); on CUDA also the device name and compute
  capability it ran on (``environment.hardware``, ``environment.device_info``);
- dtypes: the definition's, which the gauntlet checked exactly (INCORRECT_DTYPE otherwise);
- shapes: const axes at their definition value; each var axis between the smallest and largest value
  of a workload or holdout that PASSED. Interpolating inside that range is what the generalization
  gate backs (its holdouts fall between and above the workloads, odd and even sizes); values
  outside it were never run. ``exact`` keeps the list of the values that ran, for a user who wants
  the kernel only on exactly those;
- layout: contiguous tensors, which is all the gauntlet feeds a candidate;
- scalar inputs: the values the workloads used (recorded, not enforced: the kernel takes them as
  arguments).
"""

from __future__ import annotations

from kernelcraft.gauntlet.records import EvalReport, SolutionResult
from kernelcraft.task.loader import Task


def envelope(task: Task, report: EvalReport, result: SolutionResult) -> dict:
    d = task.definition
    ran = [w for w in [*result.workloads, *result.holdouts] if w.status == "PASSED"]
    var: dict[str, dict] = {}
    for axis in d.var_axes:
        vals = sorted({w.axes[axis] for w in ran if axis in w.axes})
        if vals:
            var[axis] = {"min": vals[0], "max": vals[-1], "values": vals}
    info = report.environment.get("device_info", {}) or {}
    scalars: dict[str, list] = {}
    passed_uuids = {w.uuid for w in ran}
    for w in task.workloads:
        if w.uuid not in passed_uuids:
            continue
        for name, spec in w.inputs.items():
            if spec.type == "scalar":
                vals = scalars.setdefault(name, [])
                if spec.value not in vals:
                    vals.append(spec.value)
    device_type = "cuda" if report.device.startswith("cuda") else "cpu"
    return {
        "device_type": device_type,
        "hardware": report.environment.get("hardware", ""),
        "compute_capability": info.get("compute_capability"),
        "dtypes": {n: s.dtype for n, s in d.inputs.items() if s.shape is not None},
        "output_dtypes": {n: s.dtype for n, s in d.outputs.items()},
        "const_axes": {n: a.value for n, a in d.axes.items() if a.type == "const"},
        "var_axes": var,
        "contiguous": True,
        "scalars_tested": scalars,
        "shapes_run": [w.axes for w in ran],
    }


def not_tested(task: Task, report: EvalReport, result: SolutionResult, env: dict) -> list[str]:
    """Plain sentences a reviewer must read before trusting the kernel anywhere else."""
    out = []
    if result.status != "PASSED":
        out.append(f"the candidate did not pass ({result.status}, gate {result.gate}): nothing is validated")
        return out
    where = env["hardware"] or env["device_type"]
    if env["device_type"] == "cuda":
        cc = f" (compute capability {env['compute_capability']})" if env["compute_capability"] else ""
        out.append(f"validated on {where}{cc} only; other GPUs, drivers and torch versions were not run")
    else:
        out.append("validated on the CPU (Triton interpreter or Python) only: no GPU ran this kernel, "
                   "and CPU timings say nothing about GPU speed")
    for axis, r in env["var_axes"].items():
        out.append(f"{axis}: run at {len(r['values'])} values in [{r['min']}, {r['max']}]; "
                   "values outside that range were never run")
    if env["const_axes"]:
        out.append("fixed by the definition: " + ", ".join(f"{k}={v}" for k, v in env["const_axes"].items()))
    out.append("dtypes: " + ", ".join(f"{k} {v}" for k, v in env["dtypes"].items()) + "; no other dtype was run")
    out.append("inputs were contiguous; strided or non-contiguous inputs were not run")
    for name, vals in env["scalars_tested"].items():
        out.append(f"scalar {name}: run only with {', '.join(repr(v) for v in vals)}")
    skipped = [w for w in result.workloads if w.status == "SKIPPED"]
    for w in skipped:
        axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
        out.append(f"workload {w.uuid[:8]} ({axes}) was skipped: {w.reason}")
    if not result.holdouts:
        out.append("no holdout shapes in this record (it predates the generalization gate, or the contract "
                   "set holdouts = 0): only the workloads' own shapes were run")
    if not any(w.latency_ms for w in result.workloads):
        out.append("no timing in this record (evaluated with --no-timing)")
    elif report.timing_version:
        method = next((w.timing.get("method") for w in result.workloads if w.timing), None)
        if method == "cpu-wall":
            out.append("timings are CPU wall clock (cpu-wall): not comparable with GPU numbers")
    return out
