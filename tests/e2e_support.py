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


# The exported kernels were validated through the Triton interpreter, which triton reads when it is
# first imported; in the whole suite an earlier test has imported triton without it, so the tests that
# run the kernels run in one pytest subprocess with TRITON_INTERPRET=1 and report back (run alone with
# it, they run inline).
def interpreted(test_file: str, names: tuple[str, ...], tmp_path_factory, extra_path: str | None = None):
    """None under TRITON_INTERPRET=1, else (junit cases by name, output tail) of ``names`` run in a subprocess
    (``extra_path``: a folder put first on the subprocess's PYTHONPATH, a library installed there alone)."""
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    from tests.conftest import ROOT

    if os.environ.get("TRITON_INTERPRET") == "1":
        return None
    base = tmp_path_factory.mktemp("interpreted")
    report = base / "report.xml"
    ids = [f"{Path(test_file).resolve()}::{name}" for name in names]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, os.environ.get("PYTHONPATH", "")) if p)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(base / "t"),
                          f"--junitxml={report}", *ids], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    cases = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            bad = [c for c in case if c.tag in ("failure", "error", "skipped")]
            cases[case.get("name")] = (bad[0].tag, (bad[0].get("message") or "") + "\n" + (bad[0].text or "")) if bad else None
    return cases, (run.stdout + run.stderr)[-3000:]


def ran_in_the_interpreter(request, under_interpreter) -> bool:
    """True when this test already ran in the interpreter subprocess (its failure raised here)."""
    import pytest

    if under_interpreter is None:
        return False
    cases, tail = under_interpreter
    name = request.node.name
    if name not in cases:
        pytest.fail(f"{name} did not run under TRITON_INTERPRET=1:\n{tail}")
    if cases[name] is not None:
        kind, text = cases[name]
        pytest.fail(f"{name} under TRITON_INTERPRET=1: {kind}\n{text[-3000:]}")
    return True


def logits(m, subject, phase):
    """The model's logits on the subject's inputs of ``phase``, without autograd."""
    import torch

    with torch.no_grad():
        return m(**subject.inputs(phase)).logits


def random_norm_weights(model, seed: int = 3) -> None:
    """Every norm's weight random, the gated (offset-free) norms' around 1 (transformers initialises the
    offset ones to zeros, which would hide a wrong offset)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if "Norm" in type(m).__name__:
                base = 1.0 if "Gated" in type(m).__name__ else 0.0
                m.weight.copy_(base + 0.3 * torch.randn(m.weight.shape, generator=g))
