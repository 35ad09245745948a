"""Registers, spills, shared memory and CTAs per SM of a LeapQuant GDN decode-step candidate's kernels for the H200
(sm_90), without a GPU and without the request folder: the candidate's `run` is called on meta tensors of the
request's shapes (scripts/leapquant_step_sweep.py's `inputs`, H 32, HK 16, V K 128, L 16, R 4) with its kernels
swapped for recorders, and each recorded launch is compiled and assembled as scripts/triton_regs.py does
(kernelcraft.measure.triton_static). Run it with Triton 3.6 first on the path (compile-only copy):

    PYTHONPATH=/tmp/t36:src:scripts python3 scripts/leapquant_step_regs.py \\
        'split:tests/fixtures/kda_request_candidates/gdn_step_split.py:{"KEY_WARPS": 1}' --batch 256
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from leapquant_step_sweep import _module, inputs  # noqa: E402

from kernelcraft.measure.triton_static import _compile, _ctas_per_sm, _launches, _ptxas  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", nargs="+", help="NAME:FILE:JSON-CONFIG")
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    import triton

    x = {k: v.to("meta") for k, v in inputs(1, (32, 16, 128, 128, 16, 4), "cpu").items()}
    x = {k: v.expand(args.batch, *v.shape[1:]).contiguous() if v.dim() > 1 or k not in ("A_log", "dt_bias") else v
         for k, v in x.items()}
    print(f"triton {triton.__version__}, batch {args.batch}")
    for spec in args.variant:
        name, path, cfg = spec.split(":", 2)
        mod = _module(path, f"kc_regs_{name}", json.loads(cfg))
        for fn, grid, a, kw in _launches(mod, list(x.values()), 132):
            kernel, _ = _compile(fn, a, kw)
            r = _ptxas(kernel.asm["ptx"])
            warps, smem = kw.get("num_warps", 4), kernel.metadata.shared
            print(f"{name:12s} {fn.__name__:14s} grid {str(grid):14s} warps {warps} regs {r['regs']:4d} "
                  f"spill st/ld {r['spill_st']}/{r['spill_ld']} stack {r['stack']} smem {smem} "
                  f"ctas/SM {_ctas_per_sm(r['regs'], warps, smem)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
