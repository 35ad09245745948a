"""CPU check (Triton interpreter) of tests/fixtures/kda_request_candidates/gdn_step_split2.py against
tests/test_leapquant_step.py's float64 statement of the step, with that test's inputs (seed 11, ab_scale 2.0) and
tolerances (bf16 outputs within two bf16 ulps of the row's magnitude, float32 ones to 1e-6), at more batch sizes
and CONFIGs than the test's batch 1: LEAD below the pair count (the OVERLAP kernel's interleaved ticket rounds), RB
64 (two value programs a pair), every LS, the two-launch path, and batch 0. Also compares the outputs with
gdn_step_split.py's default path bit for bit; first, the test's own `_check` on the new file (batch 1).

    TRITON_INTERPRET=1 PYTHONPATH=scripts:tests python3 scripts/leapquant_split2_check.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
assert os.environ.get("TRITON_INTERPRET") == "1", "run under TRITON_INTERPRET=1"

from leapquant_step_sweep import _module, inputs  # noqa: E402
from test_leapquant_step import HK, H, K, L, R, V, _check, _step64  # noqa: E402

C = ROOT / "tests" / "fixtures" / "kda_request_candidates"
CASES = [(1, {}), (1, {"OVERLAP": 0}), (3, {"LEAD": 8}), (3, {"LEAD": 5, "RB": 64, "LS": 4}),
         (3, {"LEAD": 1, "LS": 16, "RB": 32}), (2, {"OVERLAP": 0, "LS": 4, "RB": 64}), (0, {}), (0, {"OVERLAP": 0})]


def check(B: int, config: dict, old) -> str:
    x = inputs(B, (H, HK, V, K, L, R), "cpu", seed=11, ab_scale=2.0)
    got = _module(str(C / "gdn_step_split2.py"), "kc_lq_split2", config).run(**x)
    if B == 0:
        return "" if all(g.shape[0] == 0 for g in got) else "batch 0: non-empty output"
    for i, (g, ww) in enumerate(zip(got, _step64(x), strict=True)):
        if g.dtype == torch.bfloat16:
            tol = 2 * 2.0 ** -8 * ww.abs().amax(-1, keepdim=True) + 1e-6
        else:
            tol = torch.full_like(ww, 1e-6)
        err = (g.double() - ww).abs()
        if not bool((err <= tol).all()):
            return f"output {i}: max error {float(err.max()):.3e}, excess {float((err - tol).max()):.3e}"
    ref = old.run(**x)  # gdn_step_split.py's default (DOT + row loop): the same digits and sums
    diff = [i for i, (g, r) in enumerate(zip(got, ref, strict=True)) if not torch.equal(g, r)]
    return f"differs from gdn_step_split in outputs {diff}" if diff else ""


if __name__ == "__main__":
    old = _module(str(C / "gdn_step_split.py"), "kc_lq_split", {})
    out = {f"test's _check {json.dumps(c)}": _check("gdn_step_split2.py", c) for c in ({}, {"OVERLAP": 0})}
    out.update({f"B={B} {json.dumps(c)}": check(B, c, old) for B, c in CASES})
    print(json.dumps(out, indent=1))
    sys.exit(1 if any(out.values()) else 0)
