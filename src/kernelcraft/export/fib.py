"""``--format fib``: a FlashInfer-Trace dataset holding the solution and the traces of its evaluation.

Layout written to DEST (``flashinfer_bench.data.TraceSet.from_path(DEST)`` loads it)::

    definitions/<op_type>/<definition>.json
    workloads/<op_type>/<definition>.jsonl     the task's workloads, trace-shaped
    solutions/<op_type>/<definition>/<solution>.json
    traces/<op_type>/<definition>.jsonl        one Trace per evaluated workload (see interop.fib)
    blob/...                                   safetensors inputs the workloads name, if any

``target_hardware``, which FlashInfer-Trace requires non-empty, is the solution's own list, else the
device the evaluation ran on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelcraft.interop.fib import _safe_name, write_traces
from kernelcraft.review.candidate import Resolved


def export_fib(r: Resolved, dest: Path) -> dict:
    d = r.task.definition
    op, name = _safe_name(d.op_type), _safe_name(d.name)
    known = {w.uuid for w in r.task.workloads}
    missing = [w.uuid for w in r.result.workloads if w.status != "SKIPPED" and w.uuid not in known]
    if missing:
        from kernelcraft.errors import InputError, Problem

        raise InputError(Problem(r.task.root / "workloads.jsonl", "workload.uuid",
                                 f"lacks {len(missing)} workloads the evaluation ran (first {missing[0]}): "
                                 "a Trace needs its workload", "export with the task folder the evaluation used (--task)"))
    (dest / "definitions" / op).mkdir(parents=True)
    shutil.copyfile(r.task.root / "definition.json", dest / "definitions" / op / f"{name}.json")  # byte for byte
    (dest / "workloads" / op).mkdir(parents=True)
    lines = []
    for w in r.task.workloads:
        lines.append(json.dumps({"definition": d.name, "workload": w.model_dump(mode="json"),
                                 "solution": None, "evaluation": None}))
        for spec in w.inputs.values():
            if spec.type == "safetensors" and not Path(spec.path).is_absolute():
                target = dest / spec.path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(r.task.root / spec.path, target)
    (dest / "workloads" / op / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    sol = r.solution.to_json_dict()
    if not sol["spec"].get("target_hardware"):
        sol["spec"]["target_hardware"] = [r.report.environment.get("hardware") or r.report.device]
    sdir = dest / "solutions" / op / name
    sdir.mkdir(parents=True)
    sol_file = sdir / f"{_safe_name(r.solution.name)}.json"
    sol_file.write_text(json.dumps(sol, indent=2) + "\n")
    traces = write_traces(r.report, r.task, dest / "traces")
    n = sum(1 for ln in traces.read_text().splitlines() if ln.strip())
    return {"format": "fib", "dest": str(dest), "solution": str(sol_file), "traces": str(traces), "trace_count": n}
