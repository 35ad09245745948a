"""One problem file -> one task folder, written to a temporary folder and renamed into place once checked."""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

from ._analyze import _analyze
from ._emit import _contract, _definition, _readme, _runner_source, _workload_lines
from ._errors import ConversionError, _stage
from ._names import _task_name
from ._problem import _Problem
from ._smoke import _smoke


def _convert_problem(path: Path, out_dir: Path, seed: int) -> tuple[Path, list[str]]:
    prob = _Problem(path, seed)
    plan = _analyze(prob)
    name = _task_name(path.stem)
    sha = hashlib.sha256(prob.raw).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{path.stem}.kc-import-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        (tmp / "workloads.jsonl").write_text("\n".join(_workload_lines(plan, name)) + "\n")
        if plan.state:
            from safetensors.torch import save_file

            with _stage("writing weights.safetensors"):
                save_file(plan.state, str(tmp / "weights.safetensors"))
                shutil.copymode(tmp / "workloads.jsonl", tmp / "weights.safetensors")
        if plan.dists:
            (tmp / "contract.toml").write_text(_contract(plan))
        clone: list[int] = []
        clone_outputs = False
        warnings: list[str] = []
        # Inputs the forward writes get cloned first; outputs that are views of inputs get copied
        # (only if they still are once written inputs are cloned).
        for attempt in range(3):
            reference = _runner_source("reference", plan, prob, name, sha, seed, clone, clone_outputs)
            (tmp / "definition.json").write_text(json.dumps(_definition(plan, prob, name, seed, reference), indent=2) + "\n")
            (tmp / "baseline.py").write_text(_runner_source("baseline", plan, prob, name, sha, seed, clone, clone_outputs))
            (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, ""))
            written, aliased, warnings = _smoke(tmp, seed)
            if not written and not aliased:
                break
            if attempt == 2:
                raise ConversionError("the generated baseline still writes its inputs or returns views of them")
            if written:
                clone = sorted(set(clone) | set(written))
            else:
                clone_outputs = True
        notes = []
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
        notes += [f"- {w}" for w in warnings]
        (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, "\n".join(notes)))
        final = out_dir / path.stem
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final, warnings
