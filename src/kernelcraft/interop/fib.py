"""FlashInfer-Trace interop: datasets in (task folders), traces out (Trace JSONL records).

A FlashInfer-Trace dataset is ``definitions/**/<name>.json``, ``workloads/**/<name>.jsonl``,
``solutions/**/<solution>.json`` (each naming its definition) and ``blob/`` for safetensors inputs.
:func:`import_fib_dataset` makes one task folder per definition that has workloads:

- ``definition.json`` copied byte for byte; ``workloads.jsonl`` the definition's workload lines
  concatenated, unchanged except where a safetensors blob is missing from the dataset (the vendored
  copies in flashinfer-bench ship without ``blob/``): that input becomes ``random`` and is drawn by the
  contract's rule for it (offsets that end where the constraints say, page ids in range), and the
  README counts it. Every blob present is copied to the same relative path inside the task folder;
- ``contract.toml``: FlashInfer-Bench's judging rules for it (:mod:`kernelcraft.interop.fib_contract`);
- ``baseline.py``: a dataset carries no baseline, so the definition's own reference stands in;
- ``solutions/<solution>.json`` for each solution of the definition, unchanged;
- ``README.md`` saying where it all came from.

An import is atomic per definition: the folder is written under a temporary name in ``out_dir``,
loaded and its smallest workload's inputs drawn (constraints checked), and only then moved into
place; an existing folder of that name is replaced only by a folder that passed, and a refused
definition leaves nothing behind.

:func:`write_traces` turns an evaluation into Trace lines that FlashInfer-Bench parses. Statuses
outside FlashInfer-Trace's set are mapped: REJECTED -> RUNTIME_ERROR with the gate and reason in
``log``; SKIPPED and never-run workloads produce no trace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport
from kernelcraft.interop.fib_contract import contract_toml, index_rules, unsupported
from kernelcraft.task.loader import Task, load_task

FIB_STATUSES = {"PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR",
                "COMPILE_ERROR", "TIMEOUT"}
CHECK_BYTES = 256 << 20  # the import draws the smallest workload's inputs on the CPU when it is this small


@dataclass
class ImportReport:
    converted: list[Path] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    warnings: list[str] = field(default_factory=list)  # converted, but worth a look


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
    out_dir.mkdir(parents=True, exist_ok=True)
    for def_file in sorted((dataset / "definitions").rglob("*.json")):
        try:
            name = json.loads(def_file.read_text())["name"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            report.failures.append((str(def_file), f"definition not readable: {e}"))
            continue
        try:
            folder, warnings = _convert(dataset, def_file, name, workload_files.get(name, []),
                                        solutions.get(name, []), out_dir)
        except InputError as e:
            report.failures.append((name, "; ".join(str(p) for p in e.problems)))
            continue
        report.converted.append(folder)
        report.warnings += [f"{name}: {w}" for w in warnings]
    return report


def _workload_lines(dataset: Path, definition: dict, wl_files: list[Path], tmp: Path, index_dists: dict) -> tuple[
        list[str], dict[str, int]]:
    """The workload lines, with blobs copied into ``tmp``; inputs whose blob is absent become random
    when the contract draws them (else the definition is refused). Returns (lines, input -> times rewritten)."""
    lines: list[str] = []
    rewritten: dict[str, int] = {}
    for f in wl_files:
        for ln in (x for x in f.read_text().splitlines() if x.strip()):
            rec = json.loads(ln)
            changed = False
            for inp, spec in rec.get("workload", {}).get("inputs", {}).items():
                if not (isinstance(spec, dict) and spec.get("type") == "safetensors"):
                    continue
                rel = Path(spec["path"])
                if rel.is_absolute() or ".." in rel.parts:
                    raise InputError(Problem(f, "inputs.path", f"{rel} is outside the dataset", "use a path under the dataset root"))
                src = dataset / rel
                if src.is_file():
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, tmp / rel)
                    continue
                spec_dtype = str(definition.get("inputs", {}).get(inp, {}).get("dtype", ""))
                if inp not in index_dists and not spec_dtype.startswith(("float", "bfloat")):
                    raise InputError(Problem(f, f"workload.inputs.{inp}.path", f"{src} not found, and kernelcraft has no "
                                             f"rule to draw integer input {inp!r} in its place",
                                             "add the blob to the dataset"))
                rec["workload"]["inputs"][inp] = {"type": "random"}
                rewritten[inp] = rewritten.get(inp, 0) + 1
                changed = True
            lines.append(json.dumps(rec) if changed else ln)
    return lines, rewritten


def _convert(dataset: Path, def_file: Path, name: str, wl_files: list[Path], sols: list[tuple[Path, dict]],
             out_dir: Path) -> tuple[Path, list[str]]:
    if not wl_files:
        raise InputError(Problem(def_file, "name", f"no workloads/**/{name}.jsonl in the dataset", "add workloads for it"))
    definition = json.loads(def_file.read_text())
    why_not = unsupported(definition)
    if why_not:
        raise InputError(Problem(def_file, "name", why_not, "judge it with FlashInfer-Bench"))
    final = out_dir / _safe_name(name)
    tmp = out_dir / f".{final.name}.kc-import-{uuid.uuid4().hex[:8]}"
    old = None
    try:
        tmp.mkdir()
        shutil.copyfile(def_file, tmp / "definition.json")
        dists, dist_why = index_rules(definition)
        lines, rewritten = _workload_lines(dataset, definition, wl_files, tmp, dists)
        (tmp / "workloads.jsonl").write_text("\n".join(lines) + "\n")
        contract, notes = contract_toml(definition, dists)
        (tmp / "contract.toml").write_text(contract + "\n")
        (tmp / "baseline.py").write_text(_reference_baseline(name, definition.get("reference", "")))
        if sols:
            (tmp / "solutions").mkdir()
            for path, data in sols:
                shutil.copyfile(path, tmp / "solutions" / f"{_safe_name(data.get('name', path.stem))}.json")
        warnings = [f"{n} of {len(lines)} workloads name a blob for {inp!r} that the dataset does not carry; it is "
                    + (f"drawn instead (contract.toml [inputs.{inp}])" if inp in dists else
                       "drawn instead, as FlashInfer-Bench draws a random input of its dtype")
                    for inp, n in rewritten.items()]
        (tmp / "README.md").write_text(_readme(dataset, def_file, definition, wl_files, lines, sols, notes,
                                               dist_why, rewritten))
        task = load_task(tmp)  # the folder must load; raises InputError naming the problem
        kept, dropped = _drop_undrawable(task, lines)
        if dropped:
            total = len(lines)
            if not kept:
                raise InputError(Problem(def_file, "name", f"none of its {total} workloads can be drawn without the "
                                         f"blobs the dataset lacks ({dropped[0][1]})", "add the blobs to the dataset"))
            lines = kept
            (tmp / "workloads.jsonl").write_text("\n".join(lines) + "\n")
            (tmp / "README.md").write_text(_readme(dataset, def_file, definition, wl_files, lines, sols, notes,
                                                   dist_why, rewritten, dropped, total))
            warnings.append(f"{len(dropped)} of {total} workloads not imported: their index inputs' blobs are missing "
                            f"and no draw fits their axes (e.g. {dropped[0][1]})")
            task = load_task(tmp)
        _draw_smallest(task, tmp)
        if final.exists():
            # never delete a good folder before the new one is in place: move it aside, then swap
            old = out_dir / f".{final.name}.kc-old-{uuid.uuid4().hex[:8]}"
            os.replace(final, old)
        os.replace(tmp, final)
    except BaseException:
        if old is not None and old.exists() and not final.exists():
            os.replace(old, final)  # the swap failed half-way: the good folder goes back
        raise
    finally:
        for p in (tmp, old):
            if p is not None and p.exists() and p != final:
                shutil.rmtree(p, ignore_errors=True)
    return final, warnings


def _drop_undrawable(task: Task, lines: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """(the workload lines kept, (uuid, why) of each dropped): a workload whose offsets input is drawn
    (its blob is missing) at axes no draw satisfies, e.g. a causal prefill with more queries than keys
    (``total_q`` > ``num_kv_indices``), where some query has nothing to attend to: the reference gives
    NaN or -inf there, and FlashInfer-Bench's non-finite check fails any solution that matches it."""
    from kernelcraft.task.inputs import infeasible

    drawn = {n for n, d in task.contract.inputs.items() if d.dist == "offsets"}
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for ln in lines:
        w = json.loads(ln)["workload"]
        ins = w.get("inputs", {})
        why = infeasible(task, w["axes"]) if any(ins.get(n, {}).get("type") == "random" for n in drawn) else ""
        if why:
            dropped.append((w["uuid"], why))
        else:
            kept.append(ln)
    return kept, dropped


def _draw_smallest(task: Task, folder: Path) -> None:
    """Draw the smallest workload's inputs on the CPU (when small): blobs that do not fit and rules that
    cannot satisfy the constraints are found at import, not in the first evaluation."""
    from kernelcraft.task.inputs import make_inputs

    w = min(task.workloads, key=lambda w: task.io_bytes(w.axes))
    if task.io_bytes(w.axes) > CHECK_BYTES:
        return
    try:
        make_inputs(task, w, 0, "cpu")
    except ValueError as e:
        raise InputError(Problem(folder / "workloads.jsonl", f"workload {w.uuid}", f"its inputs cannot be made: {e}",
                                 "fix the blob or the definition's constraints")) from None


def _solution_line(data: dict) -> str:
    """A solution's calling convention as FlashInfer-Bench reads its spec: ``destination_passing_style``
    defaults to true (data/solution.py), so a spec that leaves it out gets the outputs after the inputs."""
    spec = data.get("spec") or {}
    given = "destination_passing_style" in spec
    dps = bool(spec.get("destination_passing_style", True))
    how = ("destination-passing style (the outputs passed after the inputs)" if dps
           else "value-returning (run returns its outputs)")
    note = "" if given else "; the spec does not say, so FlashInfer-Bench's default (true) applies"
    return (f"- `{data.get('name')}` ({spec.get('language', '?')}, entry `{spec.get('entry_point', '?')}`"
            f"{', binding ' + spec['binding'] if spec.get('binding') else ''}): {how}{note}\n")


def _readme(dataset: Path, def_file: Path, definition: dict, wl_files: list[Path], lines: list[str], sols: list,
            notes: list[str], dist_why: dict[str, str], rewritten: dict[str, int],
            dropped: list[tuple[str, str]] = (), total: int = 0) -> str:
    name = definition.get("name")
    digest = hashlib.sha256(def_file.read_bytes()).hexdigest()
    text = (
        f"# {name}\n\n"
        f"Imported from the FlashInfer-Trace dataset `{dataset}` on {dt.date.today().isoformat()} by "
        f"`kernelcraft import fib`.\n\n"
        f"- definition: `{def_file.relative_to(dataset)}` (sha256 {digest[:16]}), op_type "
        f"`{definition.get('op_type')}`: {definition.get('description') or 'no description'}\n"
        f"- workloads: {len(lines)} from {', '.join(str(f.relative_to(dataset)) for f in wl_files)}\n"
        f"- solutions: {len(sols)}\n"
        "- baseline: the dataset has none; `baseline.py` is the definition's reference, so "
        "`speedup_vs_baseline` equals the speedup over the reference until a real baseline replaces it.\n"
        "\n## The contract (FlashInfer-Bench's rules, `contract.toml`)\n\n" + "\n".join(notes) + "\n"
    )
    if sols:
        text += "\n## Solutions\n\n" + "".join(_solution_line(data) for _, data in sols)
    if dist_why:
        text += "\n## Index inputs\n\n" + "".join(f"- `{k}`: {v}\n" for k, v in dist_why.items())
        text += ("\nThese rules draw the inputs of holdout shapes and of workloads whose blob is missing; a workload "
                 "with its blob uses the blob's values. The definition's constraints over input values are checked "
                 "on every set of inputs drawn.\n")
    if rewritten:
        text += ("\n## Missing blobs\n\n" + "".join(
            f"- `{k}`: {n} of {total or len(lines)} workloads name a safetensors blob the dataset does not carry; the "
            + ("input is drawn by the rule above instead" if k in dist_why else
               "input is drawn instead as a random input of its dtype (FlashInfer-Bench's default, N(0, 1))")
            + " (the workload line says `random`).\n" for k, n in rewritten.items()))
    if dropped:
        text += (f"\n## Workloads not imported\n\n{len(dropped)} of the dataset's {total} workloads are left out: their "
                 "index inputs' blobs are missing and no draw fits their axes. In a causal prefill with more queries "
                 "than keys some query has nothing to attend to; the reference gives NaN or -inf there, and "
                 "FlashInfer-Bench's non-finite check fails any solution that matches it.\n\n"
                 + "".join(f"- `{u}`: {why}\n" for u, why in dropped))
    return text


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
