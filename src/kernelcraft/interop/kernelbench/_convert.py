"""One problem file -> one task folder, written to a temporary folder and swapped into place once checked."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import uuid
from pathlib import Path

import torch

from . import _tolerance
from ._analyze import _analyze
from ._emit import (
    INPUTS_FILE,
    _contract,
    _definition,
    _inputs_source,
    _readme,
    _runner_source,
    _workload_lines,
)
from ._errors import ConversionError, _stage
from ._isolate import OLD_MARK, TEMP_MARK
from ._names import _task_name
from ._problem import _Problem
from ._smoke import _smoke
from ._validate import io_bytes
from .hub import offline_hub, uses_hub


def _write_sources(tmp: Path, plan, prob, name: str, sha: str, seed: int, clone: list[int], clone_outputs: bool,
                   tolerances: list) -> None:
    reference = _runner_source("reference", plan, prob, name, sha, seed, clone, clone_outputs)
    (tmp / "definition.json").write_text(json.dumps(_definition(plan, prob, name, seed, reference), indent=2) + "\n")
    (tmp / "baseline.py").write_text(_runner_source("baseline", plan, prob, name, sha, seed, clone, clone_outputs))
    (tmp / "contract.toml").write_text(_contract(tolerances, list(plan.var)))
    (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, "", tolerances))


def _tolerances(tmp: Path, smoke) -> list:
    definition = json.loads((tmp / "definition.json").read_text())
    out = []
    for (oname, spec), got, ref in zip(definition["outputs"].items(), smoke.got, smoke.expected, strict=True):
        if isinstance(got, torch.Tensor) and got.is_floating_point() and isinstance(ref, torch.Tensor):
            out.append(_tolerance.choose(oname, spec["dtype"], got, ref))
    return out


CHECK_FACTOR = 6  # the check holds the inputs twice, the baseline's outputs twice and float64 copies of both


def _room(device: str) -> tuple[int | None, str]:
    """Bytes the check may still take on ``device``, and what bounds it (None: unbounded)."""
    if device.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return free, "free GPU memory"
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if soft == resource.RLIM_INFINITY:
        return None, ""
    with open("/proc/self/status") as f:
        used = next(int(ln.split()[1]) << 10 for ln in f if ln.startswith("VmData:"))
    return soft - used, f"the import's memory limit ({soft >> 20} MB, --max-memory-mb)"


def _check_fits(prob, plan, device: str) -> None:
    var = plan.var
    base = {c: prob.consts[c] for c in var}
    points = [{c: w["axes"][c] for c in var} for w in plan.workloads]  # the module constants' values
    smallest = min(points, key=lambda a: io_bytes(prob, base, a))
    moved = io_bytes(prob, base, smallest)
    weights = sum(t.numel() * t.element_size() for t in plan.state.values())
    # the weights once as stored, once as read back, twice as float64 for the reference
    need = CHECK_FACTOR * moved + 4 * weights
    room, what = _room(device)
    if room is not None and need > room:
        hint = ("check it on a GPU (--device cuda)" if not device.startswith("cuda") else "use a larger GPU")
        raise ConversionError(f"too large to check on {device} even scaled down: its smallest workload {smallest or '(no var axes)'} "
                              f"moves {moved / 1e6:.4g} MB of inputs and outputs" + (
                                  f", its parameters and buffers take {weights / 1e6:.4g} MB" if weights else "")
                              + f", and the check needs about {need / 1e6:.4g} MB, more than {what} leaves "
                              f"({room / 1e6:.4g} MB); {hint}")


def _convert_problem(path: Path, out_dir: Path, seed: int, device: str = "cpu") -> tuple[Path, list[str]]:
    with _stage("reading the file"):
        text = path.read_text()
    with offline_hub() if uses_hub(text) else contextlib.nullcontext():
        return _convert(path, out_dir, seed, device)


def _convert(path: Path, out_dir: Path, seed: int, device: str) -> tuple[Path, list[str]]:
    prob = _Problem(path, seed)
    plan = _analyze(prob)
    _check_fits(prob, plan, device)
    name = _task_name(path.stem)
    sha = hashlib.sha256(prob.raw).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{path.stem}{TEMP_MARK}{uuid.uuid4().hex[:8]}"
    final = out_dir / path.stem
    old = None
    try:
        tmp.mkdir()
        (tmp / "workloads.jsonl").write_text("\n".join(_workload_lines(plan, name)) + "\n")
        (tmp / INPUTS_FILE).write_text(_inputs_source(plan, prob, sha, seed))
        if plan.state:
            from safetensors.torch import save_file

            with _stage("writing weights.safetensors"):
                save_file(plan.state, str(tmp / "weights.safetensors"))
                shutil.copymode(tmp / "workloads.jsonl", tmp / "weights.safetensors")
            plan.state.clear()  # the file holds them now; a large model should not be held twice
            prob.cpu_model = None  # the analysis is done; only the file is needed from here
        clone: list[int] = []
        clone_outputs = False
        # Inputs the forward writes get cloned first; outputs that are views of inputs get copied
        # (only if they still are once written inputs are cloned).
        for attempt in range(3):
            _write_sources(tmp, plan, prob, name, sha, seed, clone, clone_outputs, [])
            smoke = _smoke(tmp, seed, device)
            if not smoke.written and not smoke.aliased:
                break
            if attempt == 2:
                raise ConversionError("the generated baseline still writes its inputs or returns views of them")
            if smoke.written:
                clone = sorted(set(clone) | set(smoke.written))
            else:
                clone_outputs = True
        dropped = ""
        try:
            tolerances = _tolerances(tmp, smoke)
        except ConversionError as e:
            # the scaled-down workload can be the ill-conditioned one (BatchNorm over a batch of one with
            # 1 x 1 feature maps): without it, the check runs on the next smallest
            if "ill-conditioned" not in str(e) or not plan.workloads[0]["label"].startswith("scaled down") \
                    or len(plan.workloads) < 2:
                raise
            dropped = f"{plan.workloads[0]['axes']} ({e})"
            plan.workloads = plan.workloads[1:]
            (tmp / "workloads.jsonl").write_text("\n".join(_workload_lines(plan, name)) + "\n")
            _check_fits(prob, plan, device)
            smoke = _smoke(tmp, seed, device)
            tolerances = _tolerances(tmp, smoke)
        _write_sources(tmp, plan, prob, name, sha, seed, clone, clone_outputs, tolerances)
        notes = []
        if dropped:
            notes.append(f"- no scaled-down workload for CPU runs: at {dropped.split(' (')[0]} the problem's own "
                         "fp32 forward is too far from float64 to judge a kernel by (e.g. BatchNorm over a single "
                         "sample), so the check ran on the next smallest workload.")
        if clone:
            names = ", ".join(f"`{plan.inputs[i].name}`" for i in clone)
            notes.append(f"- forward() writes {names} in place (e.g. BatchNorm's running statistics in training "
                         "mode); the reference and the baseline clone them first, so inputs stay unmodified.")
        if clone_outputs:
            notes.append("- forward() returns views of its inputs; the reference and the baseline return copies.")
        if plan.build_device == "cpu":
            why = (f"it keeps tensors that are not parameters or buffers ({', '.join(plan.loose)}), made from the "
                   "seed" if plan.loose else "it cannot be built on the meta device")
            notes.append(f"- the model is built on the CPU because {why}.")
        notes.append(f"- checked on {device}: the baseline twice (equal results) and the float64 reference on the "
                     f"workload {smoke.workload or 'with no var axes'}.")
        notes += [f"- {w}" for w in smoke.warnings]
        (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, "\n".join(notes), tolerances))
        if final.exists():
            # never delete a good folder before its replacement is in place: move it aside, then swap
            old = out_dir / f".{path.stem}{OLD_MARK}{uuid.uuid4().hex[:8]}"
            os.replace(final, old)
        os.replace(tmp, final)
    except BaseException:
        if old is not None and old.exists() and not final.exists():
            os.replace(old, final)
        raise
    finally:
        for p in (tmp, old):
            if p is not None and p.exists():
                shutil.rmtree(p, ignore_errors=True)
    return final, smoke.warnings
