"""The three exported Triton kernels the CPU e2e tests place into a tiny Llama: rmsnorm (hidden 64),
fused_add_rmsnorm and silu_mul (intermediate 128), exported from the CPU records in
tests/fixtures/e2e/ (scripts/make_e2e_fixtures.py regenerates them)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "e2e"
KERNELS = {"rmsnorm": "triton_rowwise", "fused_add_rmsnorm": "triton_rowwise", "silu_mul": "triton_tiled"}
_CACHE: dict = {}


def exported(tmp_path_factory) -> dict[str, Path]:
    """kind -> export folder (torch-op), made once per test session."""
    if "pkgs" not in _CACHE:
        from kernelcraft.export import export
        from kernelcraft.review.candidate import resolve

        base = tmp_path_factory.mktemp("e2e_exports")
        out = {}
        for task, sol in KERNELS.items():
            r = resolve(str(FIXTURES / f"{task}.json"), sol, None, FIXTURES / task)
            export(r, "torch-op", base / task)
            out[task] = base / task
        _CACHE["pkgs"] = out
    return _CACHE["pkgs"]
