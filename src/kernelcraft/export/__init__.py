"""``kernelcraft export CANDIDATE --format torch-op|hf-kernels|fib DEST``.

Only a candidate that PASSED every gate is exported, and, when the task's contract sets
``[promotion] require_approval``, only one whose exact source a person approved. DEST must not
exist or be empty: an export never mixes with an older one.
"""

from __future__ import annotations

from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.review.candidate import Resolved

FORMATS = ("torch-op", "hf-kernels", "fib")

__all__ = ["FORMATS", "export"]


def check_exportable(r: Resolved, db: str | None) -> None:
    if r.result.status != "PASSED":
        gate = f" at gate {r.result.gate}" if r.result.gate else ""
        raise InputError(Problem("CANDIDATE", r.label, f"did not pass the gauntlet ({r.result.status}{gate})",
                                 "only a candidate that PASSED every gate can be exported"))
    spec = r.solution.spec
    if spec.language in ("cuda", "cpp") and (spec.binding or "tvm-ffi") != "torch":
        raise InputError(Problem("CANDIDATE", r.label, f"binds through {spec.binding or 'tvm-ffi'!r}; exported packages "
                                 "build CUDA/C++ sources as torch extensions only",
                                 "export a solution with \"binding\": \"torch\" (a PYBIND11_MODULE entry point)"))
    if r.task.contract.promotion.require_approval:
        from kernelcraft.ledger import Ledger

        ledger = Ledger(db)
        if not ledger.approvals(source_hash=r.solution.source_hash):
            ident = str(r.candidate_id) if r.candidate_id is not None else f"{r.evidence} --solution {r.solution.name}"
            raise InputError(Problem(r.task.root / "contract.toml", "promotion.require_approval",
                                     f"is true and nobody approved this source ({r.solution.source_hash[:12]}) in {ledger.url}",
                                     f"review it (kernelcraft review {ident}), then kernelcraft approve {ident} --by NAME"))


def export(r: Resolved, fmt: str, dest: Path, db: str | None = None, name: str | None = None,
           exact_shapes: bool = False) -> dict:
    if fmt not in FORMATS:
        raise InputError(Problem("--format", fmt, "unknown export format", f"use one of {', '.join(FORMATS)}"))
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(Problem(dest, "", "exists and is not an empty folder", "give a new folder for the export"))
    check_exportable(r, db)
    dest.mkdir(parents=True, exist_ok=True)
    if fmt == "torch-op":
        from kernelcraft.export.torch_op import export_torch_op

        return export_torch_op(r, dest, name, exact_shapes)
    if fmt == "hf-kernels":
        from kernelcraft.export.hf_kernels import export_hf_kernels

        return export_hf_kernels(r, dest, name, exact_shapes=exact_shapes)
    from kernelcraft.export.fib import export_fib

    return export_fib(r, dest)
