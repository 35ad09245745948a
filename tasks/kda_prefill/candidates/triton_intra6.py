"""Chunked Kimi Delta Attention prefill: solutions/triton_intra5.py with `_inv` folded into `_intra` (the last of
a chunk-head's seven programs to finish inverts its A), so five launches instead of six, and four at <= 64 tokens
(the fused recurrence + output). `_gate`, `_diag`, `_offd_row`, `_wu`, `_hstate`, `_out`, `_scan` and the
inverse's code are intra5's (the inverse now `_tinv`, a noinline device function, its diagonal blocks formed one
after another); so are the buffers, their layouts and dtypes, every formula and bf16 rounding point, the entry
point, outputs and state convention. On CPU intra6's outputs are intra5's bit for bit wherever the split
recurrence runs (> 64 tokens). intra5's description (and intra4's before it) is in its own docstring.

Why (session 24, an H100, torch.profiler, warm L2, device us per call at 8192 x 1): intra5 1,190 in all =
`_intra` 447, `_wu` 245, `_hstate` 184, `_out` 133, `_gate` 95, `_inv` 86; FLA 0.6.0 1,199 = intra_token_parallel
219 + inter_solve_fused 215 (together what `_intra` + `_inv` do), h 207, recompute_w_u 181, o 177, l2norm 2 x 88,
gate cumsum 76. Judged 0.964x FLA (geometric mean of 7 workloads; 1 x 1 0.78x, launch-bound, six launches
against FLA's five). The issue's 1.3x is ~920 us at 8192 x 1: the preparation (873 us) would have to lose ~270.
This candidate gets only part of that (estimate below); what was tried for the rest, and why it was not kept, is
at the end.

What changed
1. `_inv` folded into `_intra`. Every program of a (chunk, head), past-the-end sub-chunks included, ends with a
   barrier and one atomic add (acq_rel, gpu scope, thread 0; Triton broadcasts the old value through shared
   memory behind a second barrier) on the chunk-head's int32 counter. The one that reads 6 is the last: its
   acquire orders the siblings' A stores (released after their barrier) before its loads, which read A with
   cache_modifier ".cg" (L2, never a stale L1 line). It zeroes the counter and runs `_tinv` (intra5's `_inv`
   body: T diag(beta) into the float32 tb scratch for `_wu`). Counters: one int32 per (chunk slot, head), a
   zeroed buffer cached per device (grown on demand) that every call leaves at zero, so no memset launch;
   CONFIG["COUNTERS_PER_CALL"] takes fresh zeros each call instead (one memset launch). Graph capture: the
   eval's warm call on its side stream allocates it before the capture, the replays reuse it.
   Registers: `_tinv` inlined made `_intra` 255 (both Tritons), or 168 with 56-136 B spilled under maxnreg;
   noinline gives it its own allocation (180 [183]); forming the four diagonal blocks one by one (a barrier after
   each, so ptxas cannot interleave them) brings it to 168, unspilled, 12 blocks per SM with the device's Triton
   3.6. Triton 3.9's ptxas spills 8 B there, so CONFIG["INTRA_MAXNREG"] -1 (default) leaves 3.6 uncapped and
   caps 3.7+ at 176 (174, unspilled, 11 blocks).
2. At most SCAN_FUSED_MAX_T = 64 tokens (every sequence one chunk at most: the 1-token workload) run() takes
   intra5's fused `_scan` (SCAN_SPLIT_O False: the same bf16 operands `_hstate` / `_out` round) in place of
   `_hstate` + `_out`, BV 32 (128 programs for 32 heads: one wave of one 189 KiB block per SM). Launches at
   1 x 1: `_gate`, `_intra`, `_wu`, `_scan` = 4 (intra5 6, FLA 5).
3. CONFIG["WU_FROM_GATE"] (default False, a variant to time): `_wu` forms gamma2 from the gate input (bf16) by
   a cumulative sum over the chunk's rows instead of reading the float32 gam (-67 MB at 8192 x 1); gamma2_C as
   the column minimum (flat past the end), so gamma2_C - gamma2 <= 0 exactly. 128 registers (both Tritons),
   4 blocks per SM, but 3,128 SASS instructions per program against 1,096.

Bytes and products per kernel at 8192 x 1 (T x H = 262,144 rows; a bf16 [T, 32, 128] tensor is 67.1 MB, float32
134.2 MB; A / tb float32 [T, 32, 64] 67.1 MB; S bf16 33.6 MB; 4,128 chunk-heads), each tensor counted once:
    _gate    reads a 67.1, writes gam 134.2: 201 MB. 8,192 softplus per chunk-head.
    _intra   reads q, k 134.2, gam 134.2 (own rows; reference / J rows from L1 / L2), b 0.5; writes A 67.1, S 33.6,
             1/||q||, 1/||k|| 2.1, tb 67.1; A read back from L2 by the last program (+67 MB if it misses):
             439 MB (intra5: `_intra` 371 + `_inv` 135 = 506). Products per chunk-head (TF32 tensor cores):
             diagonal 32 x (16x16x128), left blocks 12 x (16x16x128), inverse 16 x (16x16x16): 3.0 MFLOP, 12.5
             GFLOP in all; 51 K exp2 per chunk-head. SASS (3.6): `_diag` loop 671 instructions per 16-channel
             slice (intra5 658), `_offd_row` 526 (518), `_tinv` ~6.2 K per chunk-head (intra5's `_inv` 6,248).
    _wu      reads gam 134.2, q, k, v 201.3, tb 67.1 (the second column block's from L2), 1/||.|| 2.1; writes w, u,
             qg, kd 268.4, exp(gamma_C) 2.1: 675 MB (WU_FROM_GATE: 608). W, U: 2 x (64x64x128) per chunk-head,
             8.7 GFLOP.
    _hstate  reads w, u, kd 201.3, gl, state 4.2; writes hs 135.3, dn 67.1, new_state 2.1: 410 MB.
    _out     reads qg 67.1, S 33.6, hs 135.3, dn 67.1; writes o 67.1: 370 MB.

ESTIMATE, NOT MEASURED (nothing here has run on a GPU), us at 8192 x 1; bandwidth floors at 3.35 TB/s (H100) /
4.8 TB/s (H200, 132 SMs, the same SM count and clocks as the H100 SXM, so the latency-bound kernels barely move):
    kernel         floor H100 / H200   H100 estimate   H200 estimate   basis
    _gate          60 / 42             95              85-95           unchanged (ALU-bound: SM 77% in intra3's profile)
    _intra + inv   131 / 91            470-520         460-510         intra5 447 + 86; the inverse's 6.2 K warp-
                                                                       instructions per chunk-head now fill _intra's
                                                                       latency-bound waves, A not re-read from DRAM,
                                                                       occupancy unchanged (12 blocks, 3.6)
    _wu            202 / 141           245             ~175            unchanged (memory-bound, ~82% of its floor)
    _hstate        122 / 85            184             ~165            unchanged (latency-bound)
    _out           110 / 77            133             ~95             unchanged (DRAM 65%)
    in all                             1,127-1,177     ~980-1,030      intra5 1,190 on the H100 (FLA 1,199)
So ~1.02-1.06x FLA at 8192 x 1 on the H100, if it holds; 1 x 1 (launch-bound, 6 -> 4 launches): ~40-46 us against
intra5's 52.8 and FLA's 41.3. Geometric mean ~1.0-1.07x: the 1.3x target is NOT reached by this candidate.
Variants to time beside it: INTRA_MAXNREG 0 / 176, WU_FROM_GATE True, COUNTERS_PER_CALL True, SCAN_FUSED_MAX_T 0.
First GPU check: outputs against triton_intra5's on every workload, which should agree bit for bit (same
arithmetic; a broken release / acquire would show as garbage in W, U), and compute-sanitizer
(scripts/gdn_prefill_fault.py).

Registers for sm_90, no GPU (`PYTHONPATH=/tmp/t36:src python3 scripts/triton_regs.py tasks/kda_prefill <file>
--axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_heads=32,head_size=128`, the device's Triton 3.6; in
brackets Triton 3.9's, `PYTHONPATH=src`; blocks per SM by registers, shared memory and threads):
    kernel    grid (8192 x 1)   warps  registers   spills  shared         blocks/SM   intra5
    _gate     (129, 32, 2)      2      80 [64]     0       4 KiB          12 [16]     the same kernel
    _intra    (903, 32)         1      168 [174]   0 [0]   3.1 [2.5] KiB  12 [11]     168 [184], 12 [11]
    _wu       (2, 129, 32)      4      124 [126]   0       32 KiB         4           the same kernel
    _hstate   (8, 32)           4      85          0       107 KiB        2           the same kernel
    _out      (2, 129, 32)      4      75 [74]     0       48 KiB         4           the same kernel
    _scan     (4, 32) at 1 x 1  4      136 [137]   0       189 KiB        1           (not launched by intra5)
(`_inv`, intra5's sixth launch, is gone; its code at 1 warp was 168 [141] with 8 B spilled on 3.6.)

CPU check (Triton 3.9 interpreter, 2026-12-07; scripts/kda_prefill_cpu_check.py's cases and inputs, seed 7, with
this file added as a variant): max |error| against the definition's float64 reference, output / new_state, every
element within the contract (output atol 5e-3, state 5e-2, rtol 1.6e-2), empty sequences bit for bit in every row:
    case lengths (heads)          decay  intra5         intra6         vs intra5      GPU paths      TF32 emulated  WU_FROM_GATE
    a    0, 3, 70 (2)              ord    8.0e-4/5.6e-3  8.0e-4/5.6e-3  0.0e0/0.0e0    8.0e-4/5.6e-3  8.0e-4/5.6e-3  8.0e-4/5.6e-3
    a_s  0, 3, 70 (2)              e^-49  2.6e-4/2.0e-3  2.6e-4/2.0e-3  0.0e0/0.0e0    2.6e-4/2.0e-3  2.6e-4/2.2e-3  2.6e-4/2.0e-3
    b    130 (2)                   ord    7.7e-4/5.5e-3  7.7e-4/5.5e-3  0.0e0/0.0e0    7.7e-4/5.5e-3  7.7e-4/5.0e-3  7.7e-4/5.5e-3
    c    1, 63, 64, 65, 0, 130 (2) ord    1.2e-3/6.3e-3  1.2e-3/6.3e-3  0.0e0/0.0e0    1.2e-3/6.3e-3  1.2e-3/6.7e-3  1.2e-3/6.3e-3
    c_s  1, 63, 64, 65, 0, 130 (2) e^-49  3.0e-4/2.9e-3  3.0e-4/2.9e-3  0.0e0/0.0e0    3.0e-4/2.9e-3  3.6e-4/2.7e-3  3.0e-4/2.9e-3
    d    0, 1, 5, 0, 17 (32)       ord    1.5e-3/6.7e-3  1.1e-3/4.4e-3  2.0e-3/3.8e-3  1.1e-3/4.4e-3  1.1e-3/4.7e-3  1.1e-3/4.4e-3
    e    130, 70 (2), beta ~1      none   2.0e-3/2.4e-2  2.0e-3/2.4e-2  0.0e0/0.0e0    2.0e-3/2.4e-2  2.4e-3/2.4e-2  2.0e-3/2.4e-2
    f    1 (32)                    ord    1.0e-3/5.2e-3  9.6e-4/3.8e-3  9.8e-4/4.7e-3  9.6e-4/3.8e-3  9.6e-4/3.4e-3  9.6e-4/3.8e-3
    g    3, 70, 0, 130 (2)         ord    1.1e-3/4.5e-3  1.1e-3/4.5e-3  0.0e0/0.0e0    1.1e-3/4.5e-3  1.1e-3/4.7e-3  1.1e-3/4.5e-3
    g_s  3, 70, 0, 130 (2)         e^-49  3.3e-4/1.2e-3  3.3e-4/1.2e-3  0.0e0/0.0e0    3.3e-4/1.2e-3  3.3e-4/1.2e-3  3.3e-4/1.2e-3
    (decay: ord = dt_bias U(-6.9, -2.25); e^-49 = ~exp(-49) per token and channel; none = dt_bias -40, beta ~1,
    keys at cosine ~0.9)
"vs intra5": max |intra6 - intra5| on the same inputs. Rows a-c, e, g (> 64 tokens): intra6 is intra5 bit for
bit. Rows d, f (<= 64 tokens) take the fused `_scan`, whose CPU branch keeps the state and delta in float32 (the
GPU branch rounds them to bf16 as `_hstate` / `_out` do), hence the smaller CPU error there; with
SCAN_FUSED_MAX_T 0 those rows are intra5's. GPU paths: INTRA_ / PREP_GPU_PATH_ON_CPU (tl.dot on float32 tiles,
the inverse included); TF32: CPU_TF32 (every TF32 operand truncated); WU_FROM_GATE ran with COUNTERS_PER_CALL.
The gauntlet on a small copy of the task (lengths 0 and 40, 32 heads, tests/test_linear_attention.py::_small_copy;
`TRITON_INTERPRET=1 PYTHONPATH=src python3 -m kernelcraft eval <copy> <this file> --device cpu --no-timing`):
PASSED (41 s; this workload has 40 tokens, so the fused `_scan`), worst |error| 4.9e-3 (holdout); with
SCAN_FUSED_MAX_T 0 (the split `_hstate` + `_out`, as at > 64 tokens) PASSED, worst 7.7e-3 (holdout; intra5's
docstring reports 6.1e-3 from its own run: the holdout inputs are drawn per run).

Tried in this session and not kept
- gamma recomputed where it is consumed (no `_gate`, no gam buffer: -201 MB of `_gate` traffic and -67 MB from each
  of `_intra`'s and `_wu`'s reads). `_diag` took each sub-chunk's inclusive cumulative sum from the gate input and
  its reference rows by tl.gather (no clamp needed: the sum is flat past the end); `_offd_row` the sums from I's
  first row and, per J, a reverse exclusive sum plus the decay carried between J and I. CPU errors the same digits
  as intra5's on every row; but ptxas (3.6): `_diag` loop 1,029 instructions per slice (658), `_offd_row` 2,557
  (518: softplus and a reverse scan per J tile, 453 SHFL): ~77 K warp-instructions per chunk-head against ~37 K,
  i.e. some +400-500 us at `_intra`'s measured rate to save ~95 + ~40. `_gate` is ALU-bound for the same reason.
- the inverse in `_wu` (one 4-warp program per chunk-head; T through the scratch and a barrier; W, U over the
  column blocks in a loop): 190 [183] registers, 2 blocks per SM, 10,928 SASS instructions with 527 BAR and 1,057
  SHFL: a 16 x 16 forward substitution at 4 warps runs its whole instruction stream in every warp and reduces
  through shared memory, ~4x `_inv`'s issue slots. WU_BK 32: 128 registers, the same inverse.
- `_tinv` inlined: 255 registers (see 1.).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "GATE_BK": [32, 64, 128], "GATE_BC": [16, 32, 64], "GATE_STAGES": [1, 2, 3],
            "GATE_WARPS": [1, 2, 4], "INTRA_WARPS": [1, 2, 4], "INTRA_MAXNREG": [-1, 0, 168, 176],
            "INTRA_BK": [16, 32, 64], "INTRA_STAGES": [1, 2], "DIAG_PREC": ["tf32", "tf32x3"],
            "TB_BF16": [False, True], "WU_BK": [32, 64, 128], "WU_WARPS": [4, 8], "WU_FROM_GATE": [False, True],
            "SCAN_WARPS": [4, 8], "SCAN_STAGES": [2, 3], "SCAN_SPLIT_O": [True, False], "SCAN_FUSED_MAX_T": [0, 64],
            "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8]}
CONFIG = {"BV": 0, "GATE_BK": 64, "GATE_BC": 16, "GATE_STAGES": 2, "GATE_WARPS": 2,
          "INTRA_WARPS": 1, "INTRA_MAXNREG": -1, "INTRA_BK": 16, "INTRA_STAGES": 1, "DIAG_PREC": "tf32",
          "TB_BF16": False, "WU_BK": 64, "WU_WARPS": 4, "WU_FROM_GATE": False,
          "SCAN_WARPS": 4, "SCAN_STAGES": 3, "SCAN_SPLIT_O": True, "SCAN_FUSED_MAX_T": 64, "OUT_BV": 64, "OUT_WARPS": 4,
          # tests only: run _intra's GPU code path (reference-point levels, tl.dot on fp32) on CPU tensors too
          "INTRA_GPU_PATH_ON_CPU": False,
          # _intra's arrival counters: a zeroed buffer per call (one memset launch) instead of the cached one
          "COUNTERS_PER_CALL": False,
          # tests only: run the inverse's and _wu's GPU code path (tl.dot on fp32 tiles) on CPU tensors too
          "PREP_GPU_PATH_ON_CPU": False,
          # tests only: on CPU, truncate the operands of every product the GPU forms in TF32 (off the CPU tl.dot
          # paths above): an estimate of the GPU's rounding, which the interpreter's float32 products do not have
          "CPU_TF32": False}

BT = 64  # chunk
BC = 16  # sub-chunk


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even (the interpreter's .to(tl.bfloat16) truncates)
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _tf32(x, EMU: tl.constexpr):
    # tests only (CONFIG["CPU_TF32"]): an operand as a TF32 product sees it on the GPU, low 13 mantissa bits
    # dropped (truncation, the pessimistic reading of the hardware's conversion); else x itself
    if EMU:
        x = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return x


@triton.jit
def _softplus(x):
    # torch's softplus (threshold 20) as max(x, 0) + log1p(e^-|x|), log1p by its series when tiny
    e = tl.exp(-tl.abs(x))
    lp = tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e))
    return tl.where(x > 20.0, x, tl.maximum(x, 0.0) + lp)


@triton.jit
def _chunk(cu_ptr, N, c, BT: tl.constexpr, BN: tl.constexpr):
    # global chunk c -> (sequence, first token, end of the sequence); n == N when c is past the last
    on = tl.arange(0, BN)
    lo = tl.load(cu_ptr + on, mask=on < N, other=0)
    hi = tl.load(cu_ptr + on + 1, mask=on < N, other=0)
    nck = (hi - lo + BT - 1) // BT
    incl = tl.cumsum(nck, 0)
    n = tl.sum((incl <= c).to(tl.int32), 0)
    pick = on == n
    j = c - tl.sum(tl.where(pick, incl - nck, 0), 0)
    start = tl.sum(tl.where(pick, lo, 0), 0) + j * BT
    end = tl.sum(tl.where(pick, hi, 0), 0)
    return n, start, end


@triton.jit
def _gate(alog_ptr, a_ptr, dtb_ptr, cu_ptr, gam_ptr, N,
          H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BCG: tl.constexpr, BK: tl.constexpr,
          BN: tl.constexpr, STAGES: tl.constexpr):
    # per (chunk, head, K-block of BK channels): gamma2, the chunk-local inclusive cumulative log2
    # decay, BCG rows per step of a loop that is not unrolled, the cumulative sum carried across steps
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    rr = tl.arange(0, BCG)
    ok = tl.program_id(2) * BK + tl.arange(0, BK)
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    dtb = tl.load(dtb_ptr + h * K + ok)
    carry = tl.zeros([BK], dtype=tl.float32)  # gamma2 at the last row of the steps before
    last = (rr == BCG - 1)[:, None]
    for s in tl.range(0, tl.minimum(end - start, BT), BCG, num_stages=STAGES):  # padded steps skipped
        rows = start + s + rr
        m2 = (rows < end)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        x = tl.load(a_ptr + tk, mask=m2, other=0.0).to(tl.float32) + dtb[None, :]
        g = tl.where(m2, neg_a * _softplus(x), 0.0)  # padding rows: no decay
        gam = carry[None, :] + tl.cumsum(g, 0) * 1.4426950408889634  # log2 units: exp(gamma) = exp2(gam)
        tl.store(gam_ptr + tk, gam, mask=m2)
        carry = tl.sum(tl.where(last, gam, 0.0), axis=0)


@triton.jit
def _g2(a_ptr, dtb_ptr, neg_a2, rows, end, h, oc, H: tl.constexpr, K: tl.constexpr):
    # the per-token log2 decay of rows x channels oc, -exp(A_log) softplus(a + dt_bias) log2(e) <= 0, and 0 on
    # rows past the end (no decay: a cumulative sum stays flat there)
    m2 = (rows < end)[:, None]
    x = tl.load(a_ptr + (rows[:, None] * H + h) * K + oc[None, :], mask=m2, other=0.0).to(tl.float32)
    x = x + tl.load(dtb_ptr + h * K + oc)[None, :]
    return tl.where(m2, neg_a2 * _softplus(x), 0.0)


@triton.jit
def _rn(ss):
    # 1 / ||x|| from the row's sum of squares, eps 1e-6 inside the root (FLA's use_qk_l2norm_in_kernel)
    return 1.0 / tl.sqrt(ss + 1e-6)



@triton.jit
def _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, col0, scale, H: tl.constexpr, BT: tl.constexpr,
         BC: tl.constexpr, CPU: tl.constexpr):
    # a 16 x 16 block at the sub-chunk's rows, chunk columns col0 .. col0 + 15: A float32, S bf16
    offs = (rows[:, None] * H + h) * BT + col0 + tl.arange(0, BC)[None, :]
    m = valid[:, None]
    tl.store(akk_ptr + offs, kk, mask=m)
    sc = qk * scale
    if CPU:
        sc = _rne_bf16(sc)
    tl.store(sc_ptr + offs, sc.to(tl.bfloat16), mask=m)


@triton.jit
def _dot_t(x, y, CPU: tl.constexpr, PREC: tl.constexpr, EMU: tl.constexpr):
    # x @ y^T for [BC, BKI] float32 tiles: a broadcast sum on CPU (the interpreter), tl.dot at PREC on the GPU
    if CPU:
        x = _tf32(x, EMU and PREC == "tf32")
        y = _tf32(y, EMU and PREC == "tf32")
        r = tl.sum(x[:, None, :] * y[None, :, :], axis=2)
    else:
        r = tl.dot(x, tl.trans(y), input_precision=PREC)
    return r


@triton.jit
def _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, L: tl.constexpr, H: tl.constexpr, K: tl.constexpr,
           BC: tl.constexpr, CPU: tl.constexpr, PREC: tl.constexpr, EMU: tl.constexpr):
    # Channels oc of the diagonal block's pairs (i, j), j < i, whose indices first differ at bit L
    # (i // L odd, j // L = i // L - 1), through the reference row m = (i // L) L between them (j < m <= i):
    # exp2(g_i - g_j) = exp2(g_i - g_m) exp2(g_m - g_j), both factors <= 1. Row r's reference: the first row
    # of its own L-block if that block is odd (r as a row i), else of the next one (r as a column j); so one
    # tile of exponentials per level serves both sides, and one product gives the level's pairs (the other
    # entries are masked off). Every exponent <= 0 (clamped: rows past the end, rounding)
    rr = tl.arange(0, BC)
    blk = rr // L
    odd = (blk % 2) == 1
    ref = tl.minimum(first + tl.where(odd, blk * L, blk * L + L), end - 1)  # clamped into the sequence
    gref = tl.load(gam_ptr + (ref[:, None] * H + h) * K + oc[None, :])
    e = tl.exp2(tl.minimum(tl.where(odd[:, None], gs - gref, gref - gs), 0.0))
    ke = ks * e
    keep = odd[:, None] & ((rr[None, :] // L) == (blk[:, None] - 1))
    kk = kk + tl.where(keep, _dot_t(ke, ke, CPU, PREC, EMU), 0.0)
    qk = qk + tl.where(keep, _dot_t(qs * e, ke, CPU, PREC, EMU), 0.0)
    return kk, qk


@triton.jit
def _offd(kk, qk, ss, lk, lq, r, k_ptr, gam_ptr, start, h, oc, d: tl.constexpr, H: tl.constexpr,
          K: tl.constexpr, BC: tl.constexpr, CPU: tl.constexpr, EMU: tl.constexpr):
    # channels oc of block (I, J = d < I) through r = gamma2 at I's first row (triton_intra4's scheme):
    # lk, lq = I's raw rows times exp2(g_i - r) <= 1; J's raw rows times exp2(r - g_j) <= 1 here. Unnormalised:
    # the accumulated squares ss give J's 1 / ||k|| after the channel loop
    rr = tl.arange(0, BC)
    toff = ((start + d * BC + rr)[:, None] * H + h) * K + oc[None, :]  # all of J's rows are valid
    kj = tl.load(k_ptr + toff).to(tl.float32)
    ss = ss + tl.sum(kj * kj, axis=1)
    rj = kj * tl.exp2(r[None, :] - tl.load(gam_ptr + toff))
    if CPU:
        lk, lq, rj = _tf32(lk, EMU), _tf32(lq, EMU), _tf32(rj, EMU)
        kk = kk + tl.sum(lk[:, None, :] * rj[None, :, :], axis=2)
        qk = qk + tl.sum(lq[:, None, :] * rj[None, :, :], axis=2)
    else:
        kk = tl.dot(lk, tl.trans(rj), kk)
        qk = tl.dot(lq, tl.trans(rj), qk)
    return kk, qk, ss


@triton.jit
def _diag(q_ptr, k_ptr, gam_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, scale, sub, first, end, h,
          H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr, DIAG_PREC: tl.constexpr,
          EMU: tl.constexpr):
    # sub-chunk I's diagonal block of A and S by four levels of reference-point products (_level), S's zeros
    # right of it, and 1 / ||q||, 1 / ||k|| of its rows (for _wu). Products on raw rows, the norms applied
    # once at the end (they factor out of the channel sums)
    rr = tl.arange(0, BC)
    rows = first + rr
    valid = rows < end
    m2 = valid[:, None]
    # S's columns right of the diagonal block: zeros (_scan / _out read whole rows of S)
    ot = tl.arange(0, BT)
    tl.store(sc_ptr + (rows[:, None] * H + h) * BT + ot[None, :], tl.zeros([BC, BT], dtype=tl.bfloat16),
             mask=m2 & (ot[None, :] >= (sub + 1) * BC))
    kk = tl.zeros([BC, BC], dtype=tl.float32)
    qk = tl.zeros([BC, BC], dtype=tl.float32)
    ssk = tl.zeros([BC], dtype=tl.float32)
    ssq = tl.zeros([BC], dtype=tl.float32)
    dqk = tl.zeros([BC], dtype=tl.float32)  # q_i . k_i: S's diagonal (exponent 0)
    for c0 in tl.range(0, K, BKI, num_stages=STAGES):
        oc = c0 + tl.arange(0, BKI)
        tk = (rows[:, None] * H + h) * K + oc[None, :]
        gs = tl.load(gam_ptr + tk, mask=m2, other=0.0)
        ks = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        qs = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        ssk += tl.sum(ks * ks, axis=1)
        ssq += tl.sum(qs * qs, axis=1)
        dqk += tl.sum(qs * ks, axis=1)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 8, H, K, BC, CPU, DIAG_PREC, EMU)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 4, H, K, BC, CPU, DIAG_PREC, EMU)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 2, H, K, BC, CPU, DIAG_PREC, EMU)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 1, H, K, BC, CPU, DIAG_PREC, EMU)
    rki = _rn(ssk)  # padded rows: 1 / sqrt(1e-6), times zeros
    rqi = _rn(ssq)
    tl.store(rk_ptr + rows * H + h, rki, mask=valid)
    tl.store(rq_ptr + rows * H + h, rqi, mask=valid)
    # A's diagonal and upper entries stay 0 (_tinv reads A's strictly lower part only)
    qk = tl.where(rr[:, None] == rr[None, :], dqk[:, None], qk)
    rkc = rki[None, :]
    _put(akk_ptr, sc_ptr, kk * rki[:, None] * rkc, qk * rqi[:, None] * rkc, rows, valid, h, sub * BC, scale,
         H, BT, BC, CPU_STORE)


@triton.jit
def _offd_row(q_ptr, k_ptr, gam_ptr, akk_ptr, sc_ptr, scale, sub, start, first, end, h,
              H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
              STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr):
    # sub-chunk I's blocks (I, J) for J < I (sub >= 1) through r = gamma2 at I's first row (triton_intra4's
    # scheme): raw rows, I's and J's norms from squares accumulated alongside, applied at the end
    rr = tl.arange(0, BC)
    rows = first + rr
    valid = rows < end
    m2 = valid[:, None]
    zb = tl.zeros([BC, BC], dtype=tl.float32)
    zr = tl.zeros([BC], dtype=tl.float32)
    ssk, ssq = zr, zr
    kk0, qk0, ss0 = zb, zb, zr  # blocks (I, 0), (I, 1), (I, 2) and the squares of J's keys
    kk1, qk1, ss1 = zb, zb, zr
    kk2, qk2, ss2 = zb, zb, zr
    for c0 in tl.range(0, K, BKI, num_stages=STAGES):
        oc = c0 + tl.arange(0, BKI)
        tk = (rows[:, None] * H + h) * K + oc[None, :]
        gs = tl.load(gam_ptr + tk, mask=m2, other=0.0)
        ks = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        qs = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        ssk += tl.sum(ks * ks, axis=1)
        ssq += tl.sum(qs * qs, axis=1)
        r = tl.load(gam_ptr + (first * H + h) * K + oc)
        li = tl.where(m2, tl.exp2(tl.where(m2, gs - r[None, :], 0.0)), 0.0)  # <= 1
        lk = ks * li
        lq = qs * li
        kk0, qk0, ss0 = _offd(kk0, qk0, ss0, lk, lq, r, k_ptr, gam_ptr, start, h, oc, 0, H, K, BC, CPU, EMU)
        if sub > 1:
            kk1, qk1, ss1 = _offd(kk1, qk1, ss1, lk, lq, r, k_ptr, gam_ptr, start, h, oc, 1, H, K, BC, CPU, EMU)
            if sub > 2:
                kk2, qk2, ss2 = _offd(kk2, qk2, ss2, lk, lq, r, k_ptr, gam_ptr, start, h, oc, 2, H, K, BC, CPU, EMU)
    rki = _rn(ssk)[:, None]
    rqi = _rn(ssq)[:, None]
    _put(akk_ptr, sc_ptr, kk0 * rki * _rn(ss0)[None, :], qk0 * rqi * _rn(ss0)[None, :], rows, valid, h, 0, scale,
         H, BT, BC, CPU_STORE)
    if sub > 1:
        _put(akk_ptr, sc_ptr, kk1 * rki * _rn(ss1)[None, :], qk1 * rqi * _rn(ss1)[None, :], rows, valid, h, BC,
             scale, H, BT, BC, CPU_STORE)
        if sub > 2:
            _put(akk_ptr, sc_ptr, kk2 * rki * _rn(ss2)[None, :], qk2 * rqi * _rn(ss2)[None, :], rows, valid, h,
                 2 * BC, scale, H, BT, BC, CPU_STORE)


@triton.jit
def _mm(x, y, acc, DOT: tl.constexpr, EMU: tl.constexpr = False):
    # acc + x @ y (acc None: x @ y); off the dot path a broadcast sum (the interpreter's tl.dot skips BLAS)
    if DOT:
        r = tl.dot(x, y, acc)
    else:
        x = _tf32(x, EMU)
        y = _tf32(y, EMU)
        r = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
        if acc is not None:
            r = acc + r
    return r


@triton.jit
def _beta(b_ptr, rows, end, h, H: tl.constexpr):
    # sigmoid(b) of one sub-chunk's rows, 0 on padding
    valid = rows < end
    return tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * H + h, mask=valid, other=0.0).to(tl.float32)), 0.0)


@triton.jit
def _ablk(akk_ptr, rows, end, beta, h, J: tl.constexpr, DIAG: tl.constexpr, H: tl.constexpr,
          BT: tl.constexpr, BC: tl.constexpr):
    # block (I, J) of A = beta_i A_kk[i, j] (rows: sub-chunk I's), strictly lower on the diagonal; the
    # entries _intra did not write (J > I, j >= i in the diagonal block, padded rows) are masked off
    rc = tl.arange(0, BC)
    m = (rows < end)[:, None]
    if DIAG:
        m = m & (rc[:, None] > rc[None, :])
    kk = tl.load(akk_ptr + (rows[:, None] * H + h) * BT + J * BC + rc[None, :], mask=m, other=0.0,
                 cache_modifier=".cg")  # written by other programs of _intra: from L2, not L1
    return beta[:, None] * kk


@triton.jit
def _inv_diag(a, BC: tl.constexpr):
    # (I + a)^-1 for strictly lower a by forward substitution (gdn_prefill's triton_split2): row i of
    # T - I is -a_i - sum_{j<i} a_ij (T - I)_j; rows not yet reached hold -a (rows 0 and 1 already final)
    r = tl.arange(0, BC)
    rc = r[:, None]
    t = -a
    for i in tl.static_range(2, BC):
        sel = rc == i
        row = tl.sum(tl.where(sel, t, 0.0), 0)  # -a_i
        row = row + tl.sum(row[:, None] * t, 0)
        t = tl.where(sel, row[None, :], t)
    return t + (rc == r[None, :]).to(tl.float32)


@triton.jit
def _tst(tb_ptr, t, beta_j, rows, end, h, J: tl.constexpr, H: tl.constexpr, BT: tl.constexpr,
         BC: tl.constexpr, CPU_STORE: tl.constexpr):
    # block (I, J) of T diag(beta) (rows: sub-chunk I's, beta_j: sub-chunk J's) into tb, [T, H, BT], float32
    # (or bf16: CONFIG["TB_BF16"], the buffer's dtype)
    rc = tl.arange(0, BC)
    x = t * beta_j[None, :]
    if tb_ptr.dtype.element_ty == tl.bfloat16:
        if CPU_STORE:
            x = _rne_bf16(x)
    tl.store(tb_ptr + (rows[:, None] * H + h) * BT + J * BC + rc[None, :], x.to(tb_ptr.dtype.element_ty),
             mask=(rows < end)[:, None])


@triton.jit(noinline=True)  # its own register allocation: inlined, _intra took 255 (see the docstring)
def _tinv(akk_ptr, b_ptr, tb_ptr, start, end, h, H: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
          DOT: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr):
    # one chunk-head's T = (I + A)^-1 by 16 x 16 blocks (triton_intra5's _inv, its code unchanged: diagonal
    # blocks by forward substitution, merged 16 -> 32 -> 64), stored as T diag(beta) (float32, its ten lower
    # blocks; _wu masks the rest). Run by the last of _intra's seven programs of the chunk-head to finish
    tl.static_assert(BT == 4 * BC)
    rc = tl.arange(0, BC)
    r0 = start + rc
    r1 = start + BC + rc
    r2 = start + 2 * BC + rc
    r3 = start + 3 * BC + rc
    b0 = _beta(b_ptr, r0, end, h, H)
    b1 = _beta(b_ptr, r1, end, h, H)
    b2 = _beta(b_ptr, r2, end, h, H)
    b3 = _beta(b_ptr, r3, end, h, H)
    # diagonal blocks, inverted by forward substitution, each stored before the next is formed
    t00 = _inv_diag(_ablk(akk_ptr, r0, end, b0, h, 0, True, H, BT, BC), BC)
    _tst(tb_ptr, t00, b0, r0, end, h, 0, H, BT, BC, CPU_STORE)
    tl.debug_barrier()
    t11 = _inv_diag(_ablk(akk_ptr, r1, end, b1, h, 1, True, H, BT, BC), BC)
    _tst(tb_ptr, t11, b1, r1, end, h, 1, H, BT, BC, CPU_STORE)
    tl.debug_barrier()
    t22 = _inv_diag(_ablk(akk_ptr, r2, end, b2, h, 2, True, H, BT, BC), BC)
    _tst(tb_ptr, t22, b2, r2, end, h, 2, H, BT, BC, CPU_STORE)
    tl.debug_barrier()
    t33 = _inv_diag(_ablk(akk_ptr, r3, end, b3, h, 3, True, H, BT, BC), BC)
    _tst(tb_ptr, t33, b3, r3, end, h, 3, H, BT, BC, CPU_STORE)
    tl.debug_barrier()
    # merged 16 -> 32: T10 = -T11 A10 T00, T32 = -T33 A32 T22 (left factors negated)
    n11 = -t11
    n22 = -t22
    n33 = -t33
    t10 = _mm(n11, _mm(_ablk(akk_ptr, r1, end, b1, h, 0, False, H, BT, BC), t00, None, DOT, EMU), None, DOT, EMU)
    t32 = _mm(n33, _mm(_ablk(akk_ptr, r3, end, b3, h, 2, False, H, BT, BC), t22, None, DOT, EMU), None, DOT, EMU)
    _tst(tb_ptr, t10, b0, r1, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, t32, b2, r3, end, h, 2, H, BT, BC, CPU_STORE)
    # 32 -> 64: the lower 32 x 32 block is -T_b X T_a, X = [[A20, A21], [A30, A31]],
    # T_a = [[T00, 0], [T10, T11]], T_b = [[T22, 0], [T32, T33]]; P = X T_a first
    a21 = _ablk(akk_ptr, r2, end, b2, h, 1, False, H, BT, BC)
    a31 = _ablk(akk_ptr, r3, end, b3, h, 1, False, H, BT, BC)
    p20 = _mm(a21, t10, _mm(_ablk(akk_ptr, r2, end, b2, h, 0, False, H, BT, BC), t00, None, DOT, EMU), DOT, EMU)
    p30 = _mm(a31, t10, _mm(_ablk(akk_ptr, r3, end, b3, h, 0, False, H, BT, BC), t00, None, DOT, EMU), DOT, EMU)
    p21 = _mm(a21, t11, None, DOT, EMU)
    p31 = _mm(a31, t11, None, DOT, EMU)
    n32 = -t32
    _tst(tb_ptr, _mm(n22, p20, None, DOT, EMU), b0, r2, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n22, p21, None, DOT, EMU), b1, r2, end, h, 1, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n33, p30, _mm(n32, p20, None, DOT, EMU), DOT, EMU), b0, r3, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n33, p31, _mm(n32, p21, None, DOT, EMU), DOT, EMU), b1, r3, end, h, 1, H, BT, BC, CPU_STORE)


@triton.jit
def _intra(q_ptr, k_ptr, gam_ptr, cu_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, b_ptr, tb_ptr, cnt_ptr, scale, N,
           H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
           BN: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr,
           DIAG_PREC: tl.constexpr, EMU: tl.constexpr, DOT: tl.constexpr):
    # A's and S's 16 x 16 blocks (I, J <= I): seven programs per (chunk, head), neighbours: four diagonal-
    # block programs (sub-chunk I = 0..3, _diag) and three of the blocks left of the diagonal (I = 1..3,
    # _offd_row), so that neither kind holds the other's accumulators (registers). The K = 128 contraction
    # in slices of BKI channels, a loop that is not unrolled. Then each program counts itself done on the
    # chunk-head's counter (release: its stores first); the seventh to arrive (acquire: it sees the others'
    # blocks) forms T diag(beta) from A (_tinv, triton_intra5's _inv) and puts the counter back to 0
    tl.static_assert(BC == 16)
    tl.static_assert(BT == 4 * BC)
    NSUB: tl.constexpr = BT // BC
    h = tl.program_id(1)
    c = tl.program_id(0) // (2 * NSUB - 1)
    task = tl.program_id(0) % (2 * NSUB - 1)
    n, start, end = _chunk(cu_ptr, N, c, BT, BN)
    if n >= N:  # past the last chunk: none of this chunk's programs counts
        return
    sub = tl.where(task < NSUB, task, task - (NSUB - 1))
    first = start + sub * BC
    if first < end:  # else a sub-chunk past its sequence's end: nothing to form, but it counts
        if task < NSUB:
            _diag(q_ptr, k_ptr, gam_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, scale, sub, first, end, h,
                  H, K, BT, BC, BKI, STAGES, CPU, CPU_STORE, DIAG_PREC, EMU)
        else:
            _offd_row(q_ptr, k_ptr, gam_ptr, akk_ptr, sc_ptr, scale, sub, start, first, end, h,
                      H, K, BT, BC, BKI, STAGES, CPU, CPU_STORE, EMU)
    tl.debug_barrier()  # every thread's stores before the release below
    done = tl.atomic_add(cnt_ptr + c * H + h, 1, sem="acq_rel", scope="gpu")
    if done == 2 * NSUB - 2:  # the last of the seven
        tl.store(cnt_ptr + c * H + h, 0)  # ready for the next call (no program of this call touches it again)
        _tinv(akk_ptr, b_ptr, tb_ptr, start, end, h, H, BT, BC, DOT, CPU_STORE, EMU)


@triton.jit
def _stc(ptr, x, rows, end, h, col0, H: tl.constexpr, D: tl.constexpr, CPU_STORE: tl.constexpr):
    # a [rows, n] tile into columns col0 .. col0 + n of a [T, H, D] bf16 buffer, rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU_STORE:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * H + h) * D + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])


@triton.jit
def _wu(q_ptr, k_ptr, v_ptr, a_ptr, alog_ptr, dtb_ptr, cu_ptr, gam_ptr, rq_ptr, rk_ptr, tb_ptr, w_ptr, u_ptr,
        qg_ptr, kd_ptr, gl_ptr, scale, N, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
        BK: tl.constexpr, BN: tl.constexpr, DOT: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr,
        FROM_GATE: tl.constexpr):
    # columns kc .. kc + BK of W = T diag(beta) (exp(gamma) k^) and U = T diag(beta) v (K == V), of
    # kd = k^ exp(gamma_C - gamma), qg = scale q^ exp(gamma) (the exp(gamma) tile W's keys take) and
    # exp(gamma_C): one program per (column block, chunk, head), a chunk-head's blocks neighbouring programs;
    # [BT, BT] x [BT, BK] products (float32 operands at Triton's default precision, as triton_intra4's W and
    # U). 1 / ||q||, 1 / ||k|| from _intra. FROM_GATE (CONFIG["WU_FROM_GATE"]): gamma2 formed here from the
    # gate input (bf16, half gamma2's bytes) by a cumulative sum over the chunk's rows instead of read
    kc = tl.program_id(0) * BK
    h = tl.program_id(2)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(1), BT, BN)
    if n >= N:
        return
    r = tl.arange(0, BT)
    rows = start + r
    valid = rows < end
    m2 = valid[:, None]
    ok = kc + tl.arange(0, BK)
    tk = (rows[:, None] * H + h) * K + ok[None, :]
    if FROM_GATE:  # flat past the end; its minimum is the last row's, so gamma2_C - gamma2 <= 0 exactly
        neg_a2 = -tl.exp(tl.load(alog_ptr + h)) * 1.4426950408889634
        gam = tl.cumsum(_g2(a_ptr, dtb_ptr, neg_a2, rows, end, h, ok, H, K), 0)
        gam_last = tl.min(gam, 0)
    else:
        gam_last = tl.load(gam_ptr + ((tl.minimum(end, start + BT) - 1) * H + h) * K + ok)  # at the last row
        gam = tl.load(gam_ptr + tk, mask=m2, other=0.0)
    tl.store(gl_ptr + (start * H + h) * K + ok, tl.exp2(gam_last))  # exp(gamma_C), at the chunk's first token
    kn = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    kn = kn * tl.load(rk_ptr + rows * H + h, mask=valid, other=0.0)[:, None]
    _stc(kd_ptr, kn * tl.exp2(gam_last[None, :] - gam), rows, end, h, kc, H, K, CPU_STORE)  # exponents <= 0
    eg = tl.exp2(gam)  # <= 1
    qs = tl.load(rq_ptr + rows * H + h, mask=valid, other=0.0) * scale
    _stc(qg_ptr, tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32) * qs[:, None] * eg, rows, end, h, kc, H, K,
         CPU_STORE)
    kb = kn * eg
    # T diag(beta): its lower blocks (_tinv wrote J <= I; the diagonal blocks' upper parts are 0)
    tb = tl.load(tb_ptr + (rows[:, None] * H + h) * BT + r[None, :],
                 mask=m2 & ((r[None, :] // BC) <= (r[:, None] // BC)), other=0.0).to(tl.float32)
    _stc(w_ptr, _mm(tb, kb, None, DOT, EMU), rows, end, h, kc, H, K, CPU_STORE)
    vb = tl.load(v_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    _stc(u_ptr, _mm(tb, vb, None, DOT, EMU), rows, end, h, kc, H, K, CPU_STORE)


@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O False: triton_intra2's fused recurrence + output
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // H
    h = pid_nh % H
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, h]^T on these V columns: [K, BV], float32 throughout
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        tv = (rows[:, None] * H + h) * V + ov[None, :]
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        qg = tl.load(qg_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        sc = tl.load(sc_ptr + (rows[:, None] * H + h) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + (cs * H + h) * K + ok)  # exp(gamma_C) per key channel
        if CPU:
            # bf16 values in fp32 (the interpreter's tl.dot multiplies bf16 storage bits), products
            # as broadcast sums; the state and the new values stay fp32 here
            w, qg, kd, sc = w.to(tl.float32), qg.to(tl.float32), kd.to(tl.float32), sc.to(tl.float32)
            delta = u - tl.sum(w[:, :, None] * m[None, :, :], axis=1)
            o = tl.sum(qg[:, :, None] * m[None, :, :], axis=1) + tl.sum(sc[:, :, None] * delta[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl[:, None] * m + tl.sum(kd[:, :, None] * delta[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            delta = u - tl.dot(w, mb)
            db = delta.to(tl.bfloat16)
            o = tl.dot(sc, db, tl.dot(qg, mb))
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = tl.dot(tl.trans(kd), db, gl[:, None] * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _hstate(s_ptr, cu_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, hs_ptr, dn_ptr, ns_ptr,
            H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
            STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O True: the recurrence alone, two products per chunk. Stores, per chunk c, the state
    # before the chunk (bf16, [C, H, K, V], the operand the output's q-product takes) and
    # delta = U - W S (bf16, [T, H, V]) for _out. Scratch chunk index of a sequence's j-th chunk:
    # bos // BT + n + j, unique and < cdiv(T, BT) + N (the chunk grid's size)
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // H
    h = pid_nh % H
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, h]^T on these V columns: [K, BV], float32 throughout
    hoff = ok[:, None] * V + ov[None, :]  # within one (chunk, head) [K, V] block
    c0 = bos // BT + n
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        tv = (rows[:, None] * H + h) * V + ov[None, :]
        hb = ((c0 + (cs - bos) // BT) * H + h).to(tl.int64) * (K * V)
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + (cs * H + h) * K + ok)  # exp(gamma_C) per key channel
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds
            w, kd = w.to(tl.float32), kd.to(tl.float32)
            mb = _rne_bf16(m)
            tl.store(hs_ptr + hb + hoff, mb.to(tl.bfloat16))
            db = _rne_bf16(u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1))
            tl.store(dn_ptr + tv, db.to(tl.bfloat16), mask=valid)
            m = gl[:, None] * m + tl.sum(kd[:, :, None] * db[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            tl.store(hs_ptr + hb + hoff, mb)
            db = (u - tl.dot(w, mb)).to(tl.bfloat16)
            tl.store(dn_ptr + tv, db, mask=valid)
            m = tl.dot(tl.trans(kd), db, gl[:, None] * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _out(cu_ptr, qg_ptr, sc_ptr, hs_ptr, dn_ptr, o_ptr, N,
         H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, CPU: tl.constexpr):
    # o = qg S_c + S_intra delta per (V-block, chunk, head), every chunk in parallel; V-blocks of one
    # chunk are neighbouring programs (qg and S from L2 for the second)
    h = tl.program_id(2)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(1), BT, BN)
    if n >= N:
        return
    ok = tl.arange(0, K)
    ov = tl.program_id(0) * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = (rows < end)[:, None]
    hb = ((start // BT + n) * H + h).to(tl.int64) * (K * V)
    tv = (rows[:, None] * H + h) * V + ov[None, :]
    qg = tl.load(qg_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid, other=0.0)
    sc = tl.load(sc_ptr + (rows[:, None] * H + h) * BT + ri[None, :], mask=valid, other=0.0)
    mb = tl.load(hs_ptr + hb + ok[:, None] * V + ov[None, :])
    db = tl.load(dn_ptr + tv, mask=valid, other=0.0)
    if CPU:
        qg, sc, mb, db = qg.to(tl.float32), sc.to(tl.float32), mb.to(tl.float32), db.to(tl.float32)
        o = tl.sum(qg[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
        o = _rne_bf16(o)
    else:
        o = tl.dot(sc, db, tl.dot(qg, mb))
    tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)


_COUNTERS: dict = {}


def _counters(n, dev):
    # _intra's per-(chunk, head) arrival counters, int32 zeros: allocated (zeroed) once per device and grown
    # as needed; every call leaves them at 0 (the last program of each chunk-head resets its own), so no
    # memset launch per call. CONFIG["COUNTERS_PER_CALL"]: fresh zeros each call instead (one memset)
    if CONFIG["COUNTERS_PER_CALL"]:
        return torch.zeros(n, dtype=torch.int32, device=dev)
    key = (dev.type, dev.index)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 1 << 16), dtype=torch.int32, device=dev)
        _COUNTERS[key] = buf
    return buf


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    assert K == V, "_wu forms W and U in one program per column block"
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    gam = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    akk = torch.empty((T, H, BT), dtype=torch.float32, device=dev)
    tb = torch.empty((T, H, BT), dtype=torch.bfloat16 if CONFIG["TB_BF16"] else torch.float32,
                     device=dev)  # T diag(beta), _intra's last programs -> _wu
    rk = torch.empty((T, H), dtype=torch.float32, device=dev)  # 1 / ||k||, _intra -> _wu
    rq = torch.empty((T, H), dtype=torch.float32, device=dev)  # 1 / ||q||, _intra -> _wu
    w = torch.empty((T, H, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, H, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    bk = min(CONFIG["GATE_BK"], K)
    _gate[(nc, H, triton.cdiv(K, bk))](A_log, a, dt_bias, cu_seqlens, gam, N, H=H, K=K, BT=BT,
                                        BCG=min(CONFIG["GATE_BC"], BT), BK=bk, BN=bn,
                                        STAGES=CONFIG["GATE_STAGES"], num_warps=CONFIG["GATE_WARPS"])
    intra_cpu = cpu and not CONFIG["INTRA_GPU_PATH_ON_CPU"]
    intra_grid = (nc * (2 * (BT // BC) - 1), H)  # seven programs per (chunk, head): four diagonal, three left
    cap = CONFIG["INTRA_MAXNREG"]
    if cap < 0:  # -1: ptxas's own choice with the device's Triton 3.6 (168, unspilled); Triton 3.7+ spills there: 176
        cap = 0 if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 7) else 176
    cap = {"maxnreg": cap} if cap and not cpu else {}
    bki = K if intra_cpu else min(CONFIG["INTRA_BK"], K)  # the interpreter: one whole-row step
    dot = not cpu or CONFIG["PREP_GPU_PATH_ON_CPU"]
    _intra[intra_grid](q, k, gam, cu_seqlens, akk, sc, rq, rk, b, tb, _counters(nc * H, dev), float(scale), N, H=H,
                       K=K, BT=BT, BC=BC, BKI=bki, BN=bn, STAGES=CONFIG["INTRA_STAGES"], CPU=intra_cpu,
                       CPU_STORE=cpu, DIAG_PREC=CONFIG["DIAG_PREC"], EMU=cpu and CONFIG["CPU_TF32"], DOT=dot,
                       num_warps=CONFIG["INTRA_WARPS"], **cap)
    wbk = min(CONFIG["WU_BK"], K)
    _wu[(triton.cdiv(K, wbk), nc, H)](q, k, v, a, A_log, dt_bias, cu_seqlens, gam, rq, rk, tb, w, u, qg, kd, gl,
                                       float(scale), N, H=H, K=K, BT=BT, BC=BC, BK=wbk, BN=bn, DOT=dot,
                                       CPU_STORE=cpu, EMU=cpu and CONFIG["CPU_TF32"],
                                       FROM_GATE=CONFIG["WU_FROM_GATE"], num_warps=CONFIG["WU_WARPS"])
    bv = CONFIG["BV"]
    # at most SCAN_FUSED_MAX_T tokens (every sequence one chunk at most): the fused recurrence + output, one launch
    # fewer (launch-bound there); the split pays off with chunks to spread _out over
    split = CONFIG["SCAN_SPLIT_O"] and T > CONFIG["SCAN_FUSED_MAX_T"]
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        if split:  # _hstate fits 2-3 blocks per SM (72-97 KiB shared): the widest BV in one wave of 264
            bv = 16 if N * H <= 32 else 32 if N * H <= 64 else 64
        elif T <= CONFIG["SCAN_FUSED_MAX_T"]:  # one chunk per program: one wave of 132 SMs (one block each)
            bv = 32 if N * H <= 132 else 64
        else:
            bv = 16 if N * H <= 64 else 32 if N * H <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    if not split:
        _scan[(triton.cdiv(V, bv), N * H)](
            state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
            H=H, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
        )
        return out, new_state
    hs = torch.empty((nc, H, K, V), dtype=torch.bfloat16, device=dev)  # state before each chunk
    dn = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)  # delta = U - W S
    _hstate[(triton.cdiv(V, bv), N * H)](
        state, cu_seqlens, w, u, kd, gl, hs, dn, new_state,
        H=H, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    obv = V if cpu else min(CONFIG["OUT_BV"], V)
    _out[(triton.cdiv(V, obv), nc, H)](cu_seqlens, qg, sc, hs, dn, out, N, H=H, K=K, V=V, BT=BT, BV=obv, BN=bn,
                                        CPU=cpu, num_warps=CONFIG["OUT_WARPS"])
    return out, new_state
