"""The Python package every export format carries: the runtime, the op's metadata, the reference,
the kernel's sources and the evaluation record (see ``_runtime.py`` for what each file is)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

from kernelcraft import HARNESS_VERSION, __version__
from kernelcraft.review.candidate import Resolved
from kernelcraft.review.limits import envelope

_HERE = Path(__file__).resolve().parent


def identifier(text: str) -> str:
    s = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower()
    return s if s and not s[0].isdigit() else f"k_{s}"


def export_meta(r: Resolved, namespace: str, exact_shapes: bool) -> dict:
    d = r.task.definition
    sol = r.solution
    tol = {n: r.task.contract.tolerance.for_output(n, s.dtype).model_dump() for n, s in d.outputs.items()}
    return {
        "format": "kernelcraft-export/1",
        "namespace": namespace,
        "op_name": identifier(d.name),
        "definition": d.model_dump(mode="json"),  # keeps "shape": null of scalars
        "envelope": envelope(r.task, r.full, r.result),
        "exact_shapes": exact_shapes,
        "tolerance": tol,
        "solution": {"name": sol.name, "author": sol.author, "language": sol.spec.language,
                     "entry_point": sol.spec.entry_point, "destination_passing_style": sol.spec.destination_passing_style,
                     "source_hash": sol.source_hash, "binding": sol.spec.binding},
        "verdict": {"status": r.result.status, "speedup_vs_baseline": r.result.speedup_vs_baseline,
                    "speedup_vs_reference": r.result.speedup_vs_reference, "promotable": r.result.promotable},
        "provenance": {"evidence": r.evidence, "task_dir": str(r.task.root), "seed": r.report.seed,
                       "evaluated_at": r.report.timestamp, "harness_version": r.report.harness_version,
                       "timing_version": r.report.timing_version, "environment": r.report.environment,
                       "exported_by": f"kernelcraft {__version__} ({HARNESS_VERSION})",
                       "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
    }


INIT = '''"""{module}: {solution} for {task}, exported by kernelcraft (see README.md and evaluation.json).

``op`` is the torch.library custom op ``torch.ops.{namespace}.{op_name}``: the kernel inside the
validated envelope (``validated``), the definition's reference anywhere else (``stats()`` counts both).
"""

import json as _json
from pathlib import Path as _Path

from ._runtime import load as _load

_exported = _load(__file__, __name__)
op = _exported.op
{op_name} = op
reference = _exported.reference
validated = _exported.validated
export_info = _exported.meta
stats = _exported.stats
reset_stats = _exported.reset_stats
kernel_error = _exported.kernel_error
evaluation = _json.loads((_Path(__file__).parent / "evaluation.json").read_text())

__all__ = ["op", "{op_name}", "reference", "validated", "export_info", "stats", "reset_stats", "kernel_error",
           "evaluation"]
'''


def write_package(r: Resolved, pkg_dir: Path, namespace: str, exact_shapes: bool, with_tests: bool) -> dict:
    """Write the importable package into ``pkg_dir`` (created; must not exist). Returns its metadata."""
    meta = export_meta(r, namespace, exact_shapes)
    pkg_dir.mkdir(parents=True)
    shutil.copyfile(_HERE / "_runtime.py", pkg_dir / "_runtime.py")
    (pkg_dir / "__init__.py").write_text(INIT.format(module=pkg_dir.name, solution=r.solution.name,
                                                     task=r.task.definition.name, namespace=namespace,
                                                     op_name=meta["op_name"]))
    (pkg_dir / "_reference.py").write_text(r.task.definition.reference.rstrip() + "\n")
    (pkg_dir / "kernelcraft_export.json").write_text(json.dumps(meta, indent=2) + "\n")
    (pkg_dir / "evaluation.json").write_text(r.report.model_dump_json(indent=2) + "\n")
    src = pkg_dir / "_solution"
    src.mkdir()
    (src / "__init__.py").write_text("")
    for s in r.solution.sources:
        f = src / s.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(s.content)
        for parent in f.relative_to(src).parents:
            init = src / parent / "__init__.py"
            if not init.exists():
                init.write_text("")
    if with_tests:
        (pkg_dir / "tests").mkdir()
        (pkg_dir / "tests" / "__init__.py").write_text("")
        shutil.copyfile(_HERE / "_shipped_test.py", pkg_dir / "tests" / "test_exported_op.py")
    return meta
