"""FlashInfer-Trace interop: datasets in (task folders), traces out (Trace JSONL records).

A FlashInfer-Trace dataset is ``definitions/**/<name>.json``, ``workloads/**/<name>.jsonl``,
``solutions/**/<solution>.json`` (each naming its definition) and ``blob/`` for safetensors inputs.
:func:`import_fib_dataset` makes one task folder per definition:

- ``definition.json`` copied byte for byte; ``workloads.jsonl`` the definition's workload lines
  concatenated unchanged; every safetensors file they name copied to the same relative path inside
  the task folder (workload paths are relative to the dataset root there, to the task folder here);
- ``baseline.py``: a dataset carries no baseline, so the definition's own reference stands in, and
  the README says so;
- ``solutions/<solution>.json`` for each solution of the definition, unchanged;
- ``README.md`` saying where it all came from.

:func:`write_traces` turns an evaluation into Trace lines that FlashInfer-Bench parses. Statuses
outside FlashInfer-Trace's set are mapped: REJECTED -> RUNTIME_ERROR with the gate and reason in
``log``; SKIPPED and never-run workloads produce no trace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport
from kernelcraft.task.loader import Task, load_task

FIB_STATUSES = {"PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR",
                "COMPILE_ERROR", "TIMEOUT"}


@dataclass
class ImportReport:
    converted: list[Path] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (what, why)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "unnamed"


def _reference_baseline(definition_name: str, reference: str) -> str:
    return (
        f'"""Baseline for {definition_name}: the definition\'s own reference.\n\n'
        "Imported from a FlashInfer-Trace dataset, which carries no best-known implementation;\n"
        'replace this with the fastest implementation you know so speedups mean something.\n"""\n\n'
        + reference.rstrip() + "\n"
    )


def import_fib_dataset(dataset: Path, out_dir: Path) -> ImportReport:
    dataset, out_dir = Path(dataset), Path(out_dir)
    if not (dataset / "definitions").is_dir():
        raise InputError(Problem(dataset, "definitions/", "not a FlashInfer-Trace dataset (no definitions/ folder)",
                                 "give the dataset root, the folder holding definitions/ and workloads/"))
    report = ImportReport()
    workload_files: dict[str, list[Path]] = {}
    for f in sorted((dataset / "workloads").rglob("*.jsonl")) if (dataset / "workloads").is_dir() else []:
        workload_files.setdefault(f.stem, []).append(f)
    solutions: dict[str, list[tuple[Path, dict]]] = {}
    for f in sorted((dataset / "solutions").rglob("*.json")) if (dataset / "solutions").is_dir() else []:
        try:
            data = json.loads(f.read_text())
            solutions.setdefault(data["definition"], []).append((f, data))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            report.failures.append((str(f), f"solution not readable: {e}"))
    for def_file in sorted((dataset / "definitions").rglob("*.json")):
        try:
            name = json.loads(def_file.read_text())["name"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            report.failures.append((str(def_file), f"definition not readable: {e}"))
            continue
        try:
            report.converted.append(_convert(dataset, def_file, name, workload_files.get(name, []),
                                             solutions.get(name, []), out_dir))
        except InputError as e:
            report.failures.append((name, "; ".join(str(p) for p in e.problems)))
    return report


def _convert(dataset: Path, def_file: Path, name: str, wl_files: list[Path], sols: list[tuple[Path, dict]],
             out_dir: Path) -> Path:
    if not wl_files:
        raise InputError(Problem(def_file, "name", f"no workloads/**/{name}.jsonl in the dataset", "add workloads for it"))
    task_dir = out_dir / _safe_name(name)
    if task_dir.exists():
        shutil.rmtree(task_dir)
    task_dir.mkdir(parents=True)
    shutil.copyfile(def_file, task_dir / "definition.json")
    lines: list[str] = []
    for f in wl_files:
        lines += [ln for ln in f.read_text().splitlines() if ln.strip()]
    for ln in lines:
        for spec in json.loads(ln).get("workload", {}).get("inputs", {}).values():
            if isinstance(spec, dict) and spec.get("type") == "safetensors":
                rel = Path(spec["path"])
                if rel.is_absolute() or ".." in rel.parts:
                    raise InputError(Problem(f, "inputs.path", f"{rel} is outside the dataset", "use a path under the dataset root"))
                src = dataset / rel
                if not src.is_file():
                    raise InputError(Problem(f, "inputs.path", f"{src} not found", "add the blob to the dataset"))
                (task_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, task_dir / rel)
    (task_dir / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    definition = json.loads(def_file.read_text())
    (task_dir / "baseline.py").write_text(_reference_baseline(name, definition.get("reference", "")))
    if sols:
        (task_dir / "solutions").mkdir()
        for path, data in sols:
            shutil.copyfile(path, task_dir / "solutions" / f"{_safe_name(data.get('name', path.stem))}.json")
    digest = hashlib.sha256(def_file.read_bytes()).hexdigest()
    (task_dir / "README.md").write_text(
        f"# {name}\n\n"
        f"Imported from the FlashInfer-Trace dataset `{dataset}` on {dt.date.today().isoformat()} by "
        f"`kernelcraft import fib`.\n\n"
        f"- definition: `{def_file.relative_to(dataset)}` (sha256 {digest[:16]}), op_type "
        f"`{definition.get('op_type')}`: {definition.get('description') or 'no description'}\n"
        f"- workloads: {len(lines)} from {', '.join(str(f.relative_to(dataset)) for f in wl_files)}\n"
        f"- solutions: {len(sols)}\n"
        "- baseline: the dataset has none; `baseline.py` is the definition's reference, so "
        "`speedup_vs_baseline` equals the speedup over the reference until a real baseline replaces it.\n"
        "- contract: kernelcraft's documented defaults (no `contract.toml`).\n"
    )
    load_task(task_dir)  # the converted folder must load; raises InputError naming the problem
    return task_dir


def write_traces(report: EvalReport, task: Task, traces_dir: Path) -> Path:
    """Append one FlashInfer-Trace Trace per evaluated (solution, workload) to
    ``traces_dir/<op_type>/<definition>.jsonl``; return that file."""
    d = task.definition
    out = Path(traces_dir) / _safe_name(d.op_type) / f"{_safe_name(d.name)}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    workloads = {w.uuid: w for w in task.workloads}
    env = {"hardware": report.environment["hardware"],
           "libs": {k: str(v) for k, v in report.environment.get("libs", {}).items()}}
    lines = []
    for s in report.solutions:
        for w in s.workloads:
            if w.status == "SKIPPED" or w.uuid not in workloads:
                continue
            status = w.status if w.status in FIB_STATUSES else "RUNTIME_ERROR"
            log = w.reason or ""
            if w.status not in FIB_STATUSES:
                log = f"kernelcraft {w.status} (gate {s.gate}): {log or s.reason}"
            evaluation: dict = {"status": status, "log": log, "environment": env, "timestamp": report.timestamp}
            if status in ("PASSED", "INCORRECT_NUMERICAL"):
                evaluation["correctness"] = {"max_relative_error": _finite(w.max_rel_error),
                                             "max_absolute_error": _finite(w.max_abs_error)}
            if status == "PASSED":
                if w.latency_ms is None:
                    continue  # checked but not timed: FlashInfer-Trace's PASSED needs a performance record
                evaluation["performance"] = {
                    "latency_ms": w.latency_ms,
                    "reference_latency_ms": w.reference_latency_ms or 0.0,
                    "speedup_factor": w.speedup_vs_reference or 0.0,
                }
            lines.append(json.dumps({
                "definition": d.name,
                "workload": workloads[w.uuid].model_dump(mode="json"),
                "solution": s.name,
                "evaluation": evaluation,
            }))
    with out.open("a") as f:
        for ln in lines:
            f.write(ln + "\n")
    return out


def _finite(x: float | None) -> float:
    if x is None:
        return 0.0
    return x if x == x and abs(x) != float("inf") else float("inf")
