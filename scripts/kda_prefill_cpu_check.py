"""kda_prefill candidates on CPU: max |error| against the definition's float64 reference, side by side, and
(--regs) ptxas registers of a candidate's kernels for sm_90 under CONFIG overrides. No GPU needed.

    TRITON_INTERPRET=1 PYTHONPATH=src python3 scripts/kda_prefill_cpu_check.py                 # every case
    TRITON_INTERPRET=1 PYTHONPATH=src python3 scripts/kda_prefill_cpu_check.py c e intra5       # some
    PYTHONPATH=/tmp/t36:src python3 scripts/kda_prefill_cpu_check.py --regs FILE '{"INV_WARPS": 2}' [_inv,_wu]
    PYTHONPATH=/tmp/t36:src python3 scripts/kda_prefill_cpu_check.py --regs FILE '{"RECUR_BV": 8}' _recur \
        total_seq_len=1,num_seqs=1,len_cu_seqlens=2                                       # other axes

Cases (lengths, heads): ordinary decays (dt_bias U(-6.9, -2.25)), `_s` ~exp(-49) per token and channel
(dt_bias 3), `e` beta ~1 (b = 8), no decay (dt_bias -40) and keys at cosine ~0.9 (a shared direction plus
0.33 N(0, 1)). Variants: triton_intra4 and triton_intra5 as shipped; intra5 with its GPU code paths on CPU
(INTRA_ / PREP_GPU_PATH_ON_CPU); with CPU_TF32 (every product the GPU forms in TF32 gets truncated operands),
with DIAG_PREC tf32x3 (diagonal blocks exact) and TB_BF16; candidates/triton_intra7.py as shipped (T <= 16 goes to
its token-by-token `_recur`, longer inputs to intra5's chunked path), with RECUR_MAX_T 0 (always chunked), and
`_recur` with the GPU's V-blocks on CPU (RECUR_BV_ON_CPU: the automatic BV; BV 16 without the prefetch); intra7
with WU_BF16 / TB_BF16 (its defaults: bf16 W / U products; also with CPU_TF32) and without them (= intra5);
candidates/triton_intra8.py (intra7 without `_gate`: `_intra` and `_wu` form the decay from `a`) as shipped, with
RECUR_MAX_T 0, with its GPU code paths on CPU, with intra7's `_gate` for both consumers (= intra7) and for
`_intra` alone.
Cases `f` and `h`-`k` have T <= 16 (the `_recur` path). Each row: max |error| of output / new_state, whether every
element meets the contract (atol / rtol), whether empty sequences keep their state bit for bit, and the largest
difference from the first variant's result on the same inputs (intra4's when every variant runs).
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
TASK = ROOT / "tasks" / "kda_prefill"

CASES = {
    "a": ([0, 3, 70], 2, {}), "a_s": ([0, 3, 70], 2, {"strong": True}),
    "b": ([130], 2, {}),
    "c": ([1, 63, 64, 65, 0, 130], 2, {}), "c_s": ([1, 63, 64, 65, 0, 130], 2, {"strong": True}),
    "d": ([0, 1, 5, 0, 17], 32, {}),
    "e": ([130, 70], 2, {"beta1": True}),
    "f": ([1], 32, {}),
    "g": ([3, 70, 0, 130], 2, {}), "g_s": ([3, 70, 0, 130], 2, {"strong": True}),
    # T <= 16: triton_intra7's _recur path
    "h": ([0, 1, 5, 0, 7], 2, {}), "h32": ([0, 1, 5, 0, 7], 32, {}), "h32_s": ([0, 1, 5, 0, 7], 32, {"strong": True}),
    "i": ([16], 2, {}), "i32": ([16], 32, {}),
    "j": ([3, 13], 2, {}), "j_s": ([3, 13], 2, {"strong": True}), "j_e": ([3, 13], 2, {"beta1": True}),
    "k32_s": ([1], 32, {"strong": True}),
}
VARIANTS = {
    "intra4": ("candidates/triton_intra4.py", {}),
    "intra5": ("solutions/triton_intra5.py", {}),
    "intra5_gpupath": ("solutions/triton_intra5.py", {"INTRA_GPU_PATH_ON_CPU": True, "PREP_GPU_PATH_ON_CPU": True}),
    "intra5_tf32emu": ("solutions/triton_intra5.py", {"CPU_TF32": True}),
    "intra5_tf32emu_x3": ("solutions/triton_intra5.py", {"CPU_TF32": True, "DIAG_PREC": "tf32x3"}),
    "intra5_tf32emu_tbbf16": ("solutions/triton_intra5.py", {"CPU_TF32": True, "TB_BF16": True}),
    "intra7": ("candidates/triton_intra7.py", {}),
    "intra7_chunked": ("candidates/triton_intra7.py", {"RECUR_MAX_T": 0}),
    "intra7_wubf16": ("candidates/triton_intra7.py", {"WU_BF16": True, "TB_BF16": True}),
    "intra7_tf32wu": ("candidates/triton_intra7.py", {"WU_BF16": False, "TB_BF16": False}),
    "intra7_wubf16_tf32emu": ("candidates/triton_intra7.py", {"WU_BF16": True, "TB_BF16": True, "CPU_TF32": True}),
    "intra7_gpubv": ("candidates/triton_intra7.py", {"RECUR_BV_ON_CPU": True}),
    "intra7_bv16_noprefetch": ("candidates/triton_intra7.py", {"RECUR_BV_ON_CPU": True, "RECUR_BV": 16,
                                                               "RECUR_PREFETCH": False}),
    "intra8": ("candidates/triton_intra8.py", {}),
    "intra8_chunked": ("candidates/triton_intra8.py", {"RECUR_MAX_T": 0}),
    "intra8_gpupath": ("candidates/triton_intra8.py", {"INTRA_GPU_PATH_ON_CPU": True, "PREP_GPU_PATH_ON_CPU": True}),
    "intra8_gate": ("candidates/triton_intra8.py", {"INTRA_FROM_A": False, "WU_FROM_A": False}),
    "intra8_wu_from_a": ("candidates/triton_intra8.py", {"INTRA_FROM_A": False}),
}


def _load(path: Path, tag: str, cfg: dict):
    spec = importlib.util.spec_from_file_location(f"kc_cpucheck_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.CONFIG.update(cfg)
    return mod


def _inputs(lens, H, seed, strong=False, beta1=False):
    gen = torch.Generator().manual_seed(seed)
    K, T, N = 128, sum(lens), len(lens)
    cu = torch.tensor([0] + torch.tensor(lens, dtype=torch.long).cumsum(0).tolist(), dtype=torch.int64)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    dt = torch.full((H, K), 3.0) if strong else -6.9 + 4.65 * torch.rand(H, K, generator=gen)
    q, k, b = r(T, H, K), r(T, H, K), 2 * r(T, H)
    if beta1:
        dt = torch.full((H, K), -40.0)
        k = r(1, H, K) + 0.333 * r(T, H, K)
        b = torch.full((T, H), 8.0)
    return [q.bfloat16(), k.bfloat16(), r(T, H, K).bfloat16(), r(N, H, K, K),
            math.log(16) * torch.rand(H, generator=gen), r(T, H, K).bfloat16(), dt, b.bfloat16(), cu,
            1 / math.sqrt(K)]


def errors(cases: list[str], variants: list[str]) -> None:
    ns: dict = {}
    exec(compile(json.loads((TASK / "definition.json").read_text())["reference"], "ref", "exec"), ns)  # noqa: S102
    ref = ns["run"]
    tol = tomllib.loads((TASK / "contract.toml").read_text())["tolerance"]["output"]
    mods = {v: _load(TASK / VARIANTS[v][0], v, VARIANTS[v][1]) for v in variants}
    for c in cases:
        lens, H, kw = CASES[c]
        args = _inputs(lens, H, seed=7, **kw)
        want = ref(*[a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])
        empty = [i for i, n in enumerate(lens) if n == 0]
        base, first = None, next(iter(mods))
        for v, m in mods.items():
            t0 = time.time()
            got = m.run(*args)
            if v == first:
                base = got
            errs, ok = [], True
            for name, g, w in zip(("output", "new_state"), got, want, strict=True):
                e = (g.double() - w).abs()
                bound = torch.maximum(torch.full_like(w, tol[name]["atol"]), tol[name]["rtol"] * w.abs())
                ok &= bool((e <= bound).all()) and bool(torch.isfinite(g).all())
                errs.append(float(e.max()) if e.numel() else 0.0)
            bit = all(torch.equal(got[1][i], args[3][i]) for i in empty)
            if v == first:
                dif = ""
            else:
                d = [float((g.double() - b.double()).abs().max()) if g.numel() else 0.0
                     for g, b in zip(got, base, strict=True)]
                dif = f" vs {first} {d[0]:.1e} / {d[1]:.1e}"
            print(f"{c:4s} lens={lens} H={H} {kw} {v:22s} out {errs[0]:.2e} state {errs[1]:.2e} "
                  f"contract={'ok' if ok else 'FAIL'} empty_bitexact={bit} {time.time() - t0:.1f}s{dif}", flush=True)


def regs(path: Path, cfg: dict, only: list[str] | None, axes_arg: str | None = None) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import triton_regs as tr

    definition = json.loads((TASK / "definition.json").read_text())
    mod = _load(path, "regs", cfg)
    axes = {"total_seq_len": 8192, "num_seqs": 1, "len_cu_seqlens": 2, "num_heads": 32, "head_size": 128}
    axes.update({kv.split("=")[0]: int(kv.split("=")[1]) for kv in (axes_arg.split(",") if axes_arg else [])})
    for fn, _grid, a, kw in tr._launches(mod, tr._inputs(definition, axes), 132):
        if only and fn.__name__ not in only:
            continue
        k, opts = tr._compile(fn, a, kw)
        r = tr._ptxas(k.asm["ptx"])
        warps, smem = opts.get("num_warps", 4), k.metadata.shared
        print(f"{cfg} {fn.__name__} grid={_grid} warps={warps} regs={r['regs']} spill={r['spill_st']}/{r['spill_ld']}B "
              f"smem={smem}B ctas/sm={tr._ctas_per_sm(r['regs'], warps, smem)}", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--regs"]:
        regs(Path(argv[1]).resolve(), json.loads(argv[2]) if len(argv) > 2 else {},
             argv[3].split(",") if len(argv) > 3 and argv[3] else None, argv[4] if len(argv) > 4 else None)
    else:
        errors([a for a in argv if a in CASES] or list(CASES), [a for a in argv if a in VARIANTS] or list(VARIANTS))
