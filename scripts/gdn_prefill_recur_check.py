"""gdn_prefill's short-input path (solutions/triton_chunk10.py `_recur`) on CPU: max |error| against the definition's
float64 reference, the contract's tolerances, empty sequences bit for bit, and the long path's identity with chunk8.
No GPU needed.

    TRITON_INTERPRET=1 PYTHONPATH=src python3 scripts/gdn_prefill_recur_check.py            # every case
    TRITON_INTERPRET=1 PYTHONPATH=src python3 scripts/gdn_prefill_recur_check.py a c_s long  # some

Cases (lengths): ordinary decays (tests/test_linear_attention.py::_prefill_inputs' distributions: dt_bias
U(-6.9, -2.25), A = exp(A_log) in [1, 16], b ~ N(0, 4)); `_s` strong decays (dt_bias 3: ~exp(-3 A) per token, down
to ~exp(-49)); `_e` beta ~1 (b = 12, A_log -12 and dt_bias -40: no decay, keys 3 x a shared row + N(0, 1), as
chunk8's table). Variants: chunk10 as shipped (T <= RECUR_MAX_T: `_recur` alone, BV = V on CPU), chunk10 with
CPU_TILES (`_recur` at the GPU's BV, e.g. 4 at one sequence: 32 x N x HV programs), chunk10 without
RECUR_PREFETCH, and chunk8 (solutions/triton_chunk8.py, the chunked path) on the same inputs. Each row: max |error|
of output / new_state, whether every element meets the contract (|err| <= atol or <= rtol |ref|), whether empty
sequences keep their state bit for bit, and the largest difference from chunk10's default result (for T >
RECUR_MAX_T cases: chunk10 against chunk8, which must be 0: the same chunked path).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "tasks" / "gdn_prefill"

CASES = {
    "a": ([1], {}),
    "b": ([0, 1, 5, 0, 7], {}),
    "c": ([16], {}),
    "d": ([3, 13], {}),
    "a_s": ([1], {"strong": True}),
    "b_s": ([0, 1, 5, 0, 7], {"strong": True}),
    "c_s": ([16], {"strong": True}),
    "d_s": ([3, 13], {"strong": True}),
    "c_e": ([16], {"beta1": True}),
    "d_e": ([3, 13], {"beta1": True}),
    "long": ([5, 0, 70], {}),  # T 75 > RECUR_MAX_T: chunk8's chunked path, bit for bit
}
VARIANTS = {
    "chunk10": ("solutions/triton_chunk10.py", {}),
    "chunk10_tiles": ("solutions/triton_chunk10.py", {"CPU_TILES": True}),
    "chunk10_noprefetch": ("solutions/triton_chunk10.py", {"RECUR_PREFETCH": False}),
    "chunk8": ("solutions/triton_chunk8.py", {}),
}


def _load(path: Path, tag: str, cfg: dict):
    spec = importlib.util.spec_from_file_location(f"kc_recurcheck_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.CONFIG.update(cfg)
    return mod


def _inputs(lens, seed, strong=False, beta1=False):
    gen = torch.Generator().manual_seed(seed)
    H, HV, K = 4, 8, 128
    T, N = sum(lens), len(lens)
    cu = torch.tensor([0] + torch.tensor(lens, dtype=torch.long).cumsum(0).tolist(), dtype=torch.int64)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    q, k, v, s0 = r(T, H, K), r(T, H, K), r(T, HV, K), r(N, HV, K, K)
    a_log = math.log(16) * torch.rand(HV, generator=gen)
    a = r(T, HV)
    dt = torch.full((HV,), 3.0) if strong else -6.9 + 4.65 * torch.rand(HV, generator=gen)
    b = 2 * r(T, HV)
    if beta1:
        a_log = torch.full((HV,), -12.0)
        dt = torch.full((HV,), -40.0)
        k = 3 * r(1, H, K) + r(T, H, K)
        b = torch.full((T, HV), 12.0)
    return [q.bfloat16(), k.bfloat16(), v.bfloat16(), s0, a_log, a.bfloat16(), dt, b.bfloat16(), cu,
            1 / math.sqrt(K)]


def main(cases: list[str], variants: list[str]) -> int:
    ns: dict = {}
    exec(compile(json.loads((TASK / "definition.json").read_text())["reference"], "ref", "exec"), ns)  # noqa: S102
    ref = ns["run"]
    tol = tomllib.loads((TASK / "contract.toml").read_text())["tolerance"]["output"]
    mods = {v: _load(TASK / VARIANTS[v][0], v, VARIANTS[v][1]) for v in variants}
    bad = 0
    for c in cases:
        lens, kw = CASES[c]
        args = _inputs(lens, seed=7, **kw)
        want = ref(*[a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])
        empty = [i for i, n in enumerate(lens) if n == 0]
        base = None
        for v, m in mods.items():
            t0 = time.time()
            got = m.run(*args)
            errs, ok = [], True
            for name, g, w in zip(("output", "new_state"), got, want, strict=True):
                e = (g.double() - w).abs()
                bound = torch.maximum(torch.full_like(w, tol[name]["atol"]), tol[name]["rtol"] * w.abs())
                ok &= bool((e <= bound).all()) and bool(torch.isfinite(g).all())
                errs.append(float(e.max()) if e.numel() else 0.0)
            bit = all(torch.equal(got[1][i], args[3][i]) for i in empty)
            dif = ""
            if base is None:
                base = got
            else:
                d = [float((g.double() - b.double()).abs().max()) if g.numel() else 0.0
                     for g, b in zip(got, base, strict=True)]
                dif = f" vs chunk10 {d[0]:.1e} / {d[1]:.1e}"
                if c == "long" and v == "chunk8" and max(d) != 0.0:
                    dif += " NOT IDENTICAL"
                    bad += 1
            bad += (not ok) + (not bit)
            print(f"{c:5s} lens={lens} {kw} {v:19s} out {errs[0]:.2e} state {errs[1]:.2e} "
                  f"contract={'ok' if ok else 'FAIL'} empty_bitexact={bit} {time.time() - t0:.1f}s{dif}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(main([a for a in argv if a in CASES] or list(CASES), [a for a in argv if a in VARIANTS] or list(VARIANTS)))
