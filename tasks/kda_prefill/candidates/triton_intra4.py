"""Chunked Kimi Delta Attention prefill: candidates/triton_intra3.py with `_prep`'s (I + A)^-1 done by
16 x 16 blocks (gdn_prefill's triton_split2 `_kkt_inv`) instead of recursive doubling on 64 x 64 tiles.
Everything else (`_gate`, `_intra`, `_hstate`, `_out`, `_scan`, run's buffers and launches, the CPU paths)
is triton_intra3's, bit for bit; intra3's description follows this one.

Why: triton_intra3's H200 profile at 8192 x 1 (Nsight Compute, base clocks): `_prep` 901 us (40% of the
time) at 190 registers a thread, one block per SM, memory units 66% with DRAM at 12%; `_intra` 862 us
(38%), `_hstate` 283, `_gate` 119, `_out` 115. Its `_prep` keeps several 64 x 64 float32 tiles live (A,
T, the level's mask and product) through six levels of dense 64^3 products (T <- T - T A_off T), most of
whose blocks are zero.

What changed (only `_prep`; same inputs, outputs, grid, no extra pass or global traffic):
1. A is loaded as its ten non-zero 16 x 16 blocks (strictly lower on the diagonal, beta_i on the rows, as
   before); each diagonal block is inverted by forward substitution (float32, `_inv_diag`, 14 row steps),
   then merged 16 -> 32 (T10 = -T11 A10 T00, T32 = -T33 A32 T22) and 32 -> 64 (the lower 32 x 32 block
   -T_b X T_a as 16 x 16 products): sixteen 16^3 tl.dot products instead of twelve 64^3 ones, and no
   64 x 64 tile. The left factors of the merges enter negated (a value of their own), so their
   dot-operand copies die in the merges instead of staying live until W / U use the same blocks.
2. W = T diag(beta exp(gamma)) K^ and U = T diag(beta) V by sub-chunk J (a column of T's blocks):
   W_I = sum_{J <= I} T_IJ kb_J, U_I likewise; each key and value tile [16, 128] is loaded once (kd stored
   as it is loaded), W_I and U_I stored as soon as column I is added. W and U advance together so that
   the blocks of column J are used, and their (per-warp replicated) dot-operand copies die, in one place.
   The expressions of kd, kb = k^ beta exp(gamma), beta v, gamma_C and exp(gamma_C) are intra3's.
3. CONFIG: PREP_WARPS 4 and SCAN_STAGES 3 (intra3's best on the H200: 0.80x FLA; its file had 8 / 2);
   PREP_MAXNREG (0: no cap) passes `maxnreg` to `_prep` on the GPU; PREP_GPU_PATH_ON_CPU (tests only)
   runs `_prep`'s tl.dot code on CPU tensors (every `_prep` dot operand is float32, which the interpreter
   multiplies correctly).

Registers for sm_90 (`TRITON_DEFAULT_FP_FUSION=1 PYTHONPATH=src python scripts/kda_prefill_regs.py
tasks/kda_prefill/candidates/triton_intra4.py --seqs 8192:1,1024:32`, Triton 3.9's ptxas, no GPU; the
other warp counts and caps with the same compile through a CONFIG override, 2026-12-06):
                       intra3 `_prep`                      intra4 `_prep`
    4 warps            255, 136 B spilled, 48 KiB smem     217, 0 B spilled, 11 KiB smem: 2 blocks/SM
    8 warps            208, 0 B (1 block/SM), 48 KiB       140, 0 B (1 block/SM), 11 KiB
    8 warps, cap 128   -                                   128, 44 B spilled (2 blocks/SM)
    4 warps, cap 168   -                                   168, 228 B spilled (3 blocks/SM)
The brief's aim (<= 128 at its warps with no spill) is not met: what remains live at the peak (ptxas
liveness, nvdisasm --print-life-ranges on the cubin, 8 warps) is the six [16, 128] float32 W / U
accumulators of the interleaved column loop (~50 registers at 8 warps, ~100 at 4), the key tile's
normalisation / exponential temporaries and their addresses; during the inversion ~60-120 (beta and
the row masks of four sub-chunks in two layouts, the forward substitution's layout conversions). Tried
and no better (regs at 4 / 8 warps): W then U in separate passes over T (251 / 142; T's blocks stay live
in registers through the W pass), U transposed so T is the right operand (250 / 138), rows of W / U one
at a time with the key / value tiles of earlier sub-chunks reloaded from L1 (241 / 140), beta folded into
T's columns (220 / 146), beta reloaded where used (219 / 140). Under Triton 3.6 (the H200's) the counts
differ (intra3's `_prep` profiled at 190): the local numbers give the direction only.

CPU check (Triton 3.9 interpreter, 2026-12-06): max |error| against the definition's float64 reference,
output / new_state, the same for triton_intra3, this file and this file with PREP_GPU_PATH_ON_CPU (to the
digits shown; outputs bit-identical to intra3's, states within 2.4e-5 of intra3's: float32 summation order):
    lengths (heads)                      ordinary decays       ~exp(-49) per token
    0, 3, 70 (2)                         8.8e-4 / 5.3e-3       2.0e-4 / 2.2e-3
    130 (2)                              7.0e-4 / 3.8e-3
    1, 63, 64, 65, 0, 130 (2)            9.9e-4 / 5.1e-3       2.5e-4 / 2.7e-3
    0, 1, 5, 0, 17 (32)                  1.3e-3 / 6.1e-3
Empty sequences keep their state bit for bit. The gauntlet on a small copy of the task (lengths 0 and 40,
32 heads, `TRITON_INTERPRET=1 python -m kernelcraft eval <copy> tasks/kda_prefill/candidates/triton_intra4.py
--device cpu --no-timing`) PASSED. Only compiled, never run on CPU: tf32 rounding of `_prep`'s dot operands
(the interpreter multiplies in float32), the hardware's bf16 conversion (emulated by `_rne_bf16`) and the
`maxnreg` option. Not yet timed on a GPU.

triton_intra3's description:

Chunked Kimi Delta Attention prefill: candidates/triton_intra2.py with a lean `_gate` and the
scan's output split into its own kernel (five kernels: `_gate`, `_intra`, `_prep`, `_hstate`, `_out`;
CONFIG["SCAN_SPLIT_O"] = False keeps triton_intra2's fused `_scan` instead of the last two).

The math is triton_chunk's (its docstring has the WY / UT form) and triton_intra2's (its docstring
has the intra-chunk scheme): per chunk of 64 tokens and head, A_ij = sum_c k_i[c] k_j[c]
exp(gamma_i[c] - gamma_j[c]) and S likewise with q_i (j <= i), in 16 x 16 blocks; (I + A)^-1 by
recursive doubling, W, U, the decayed q and k; the recurrence with the state in float32 registers.
Outputs, layouts, dtypes and the entry point are triton_chunk's.

Why: triton_intra2's H200 profile at 8192 x 1 (results/h200/profiles/kda_prefill/intra2_1ca0667f,
base clocks): `_prep` 878 us, `_intra` 842 us, `_gate` 598 us, `_scan` 561 us (~2.9 ms; FLA's whole
chunk_kda ~1.06 ms). `_gate` was latency-bound with no_instruction its top stall: its static_range
unrolled four 16-row bodies, each with [16, 128] tiles of a, q and k (a huge body for a pass that
moves ~0.4 GB). `_scan` at BV = 16 had 256 programs, i.e. two waves at one block per SM, the block
holding 120.5 KiB of shared memory (two pipeline stages of the w, qg and kd [64, 128] bf16 tiles).

What changed vs triton_intra2:
1. `_gate` computes only gamma2 (the chunk-local inclusive cumulative log2 decay, float32
   [T, H, K], as before). One program per (chunk, head, K-block of CONFIG["GATE_BK"] channels),
   CONFIG["GATE_BC"] rows per step of a `tl.range` loop (not unrolled; CONFIG["GATE_STAGES"] its
   num_stages; steps past the sequence's end skipped), the cumulative sum carried across steps in a
   [BK] vector. Only `a` is read: 1 / ||q||, 1 / ||k|| and qg are no longer made here (no rq / rk
   buffers). Default BK 64, 16 rows, 2 warps: 64 registers (triton_intra2: 106 at 4 warps).
2. `_intra` (one program per (chunk, sub-chunk I, head), as before) computes 1 / ||q|| and 1 / ||k||
   of its own 16 rows from the tiles it loads anyway (one K-reduction each) and stores
   qg = scale q^ exp(gamma) (bf16) for them, before the sub-chunk products so the tile dies early.
   The diagonal block's column loop loads row j of k unnormalised (no per-row scalar from memory);
   the finished block's columns are scaled by 1 / ||k_j|| once (a [16] vector, one layout
   conversion). Each earlier sub-chunk J's tile gets its 1 / ||k|| from its own K-reduction (the
   tile is loaded for the dot anyway). `_prep` likewise computes 1 / ||k|| from the [64, 128] k tile
   it loads. Cost: three extra row reductions per (I, J) pair and per chunk, against a [T, H]
   float32 write and two reads per norm.
3. `_hstate` (SCAN_SPLIT_O, the default): the recurrence alone, two products per chunk,
   delta = U - W S and S <- diag(exp(gamma_C)) S + kd^T delta. Per chunk it stores the state before
   the chunk, **bf16**, [C, H, K, V] (C = cdiv(T, 64) + N; sequence n's j-th chunk at
   bos // 64 + n + j, unique and in range since floor(bos_{n+1} / 64) + 1 >= floor(bos_n / 64) +
   cdiv(len_n, 64)), and delta, bf16 [T, H, V] (FLA's h and v_new, also bf16). bf16 because that is
   exactly the operand the fused `_scan` already fed the output's product (tl.dot(qg, m.to(bf16)))
   and the delta it fed both products (delta.to(bf16)): on the GPU the split path forms the same
   operands as the fused one, only the kernel boundary moves; the recurrence keeps the state in
   float32 registers as before, so new_state is unchanged. bf16 also halves the 135 MB (8192 x 1)
   the scratch state would take in float32. Shared memory: w and kd only, 72.5 KiB at BV 16 (83
   registers: up to 3 blocks per SM), 80.5 KiB at BV 32, 96.5 KiB at BV 64 (250 registers: 2 blocks).
   BV (CONFIG["BV"] = 0): the widest of 16 / 32 / 64 whose N * H * (128 / BV) programs fit one wave
   of 264 (2 per SM): 16 up to N * H = 32, 32 up to 64, then 64.
4. `_out`: o = qg S_c + S_intra delta per (V-block of CONFIG["OUT_BV"], chunk, head), all chunks in
   parallel (V-blocks of one chunk neighbouring programs, so the second reads qg and S from L2),
   CONFIG["OUT_WARPS"] warps; 74 registers, 48 KiB.

Numerical range: as triton_intra2 (every exponent passed to exp2 is <= 0 up to the rounding of the
cumulative sum; differences of chunk-local cumulative sums only; see its docstring). The gate's
cumulative sum is now formed per BCG-row step plus the carried last row (triton_intra2: per 16 rows
plus carry, the same at the default GATE_BC 16). Precision otherwise as triton_intra2: float32
everywhere, tl.dot on float32 operands at Triton's default precision in `_intra` and `_prep`, bf16
operands in `_hstate` / `_out` / `_scan`; bf16 rounding points W, U, qg, kd, S and (split path) the
per-chunk state and delta, which the fused GPU path rounds at the same places. q^ and k^ are
x * (1 / ||x||). On CPU (the Triton interpreter, whose tl.dot is wrong on bf16 operands) products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as
triton_intra2; the split path's CPU branch also rounds the stored state and delta to bf16 as the GPU
does (triton_intra2's fused CPU branch keeps them float32, so its CPU state errors are a little
smaller than the GPU's). CONFIG["INTRA_GPU_PATH_ON_CPU"] (tests only) runs `_intra`'s GPU code on CPU.

CPU check (Triton 3.9 interpreter, 2026-12-03; max |error| against the definition's float64
reference, all within the contract, an empty sequence keeps its state bit for bit), 2 heads,
output / new_state, ordinary decays (~exp(-49)-per-token decays all <= 5e-4 / 3.7e-3):
    lengths                  triton_intra2         intra3 split          intra3 fused
    0, 1, 5, 0, 17           8.1e-4 / 3.4e-3       7.6e-4 / 4.4e-3       8.1e-4 / 3.4e-3
    1                        9.6e-4 / 1.8e-3       9.6e-4 / 2.3e-3       9.6e-4 / 1.8e-3
    0, 1, 63, 64, 65, 130    7.8e-4 / 3.7e-3       7.8e-4 / 5.5e-3       7.8e-4 / 3.7e-3
    3, 70, 0, 130            7.8e-4 / 4.4e-3       8.5e-4 / 5.6e-3       7.8e-4 / 4.4e-3
32 heads (the task's), same columns:
    0, 1, 5, 0, 17           1.2e-3 / 4.4e-3       1.4e-3 / 6.0e-3       1.2e-3 / 4.4e-3
    1                        1.0e-3 / 3.5e-3       1.2e-3 / 4.3e-3       1.0e-3 / 3.5e-3
    0, 1, 63, 64, 65, 130    1.1e-3 / 5.7e-3       1.1e-3 / 7.5e-3       1.1e-3 / 5.7e-3
(~exp(-49) decays: <= 4.6e-4 / 6.1e-3.) The split path's larger CPU errors are the bf16 rounding of
the stored state and delta, which the GPU's fused path has too; the fused path matches
triton_intra2 to the digit. The gauntlet on a small copy of the task (lengths 0 and 40, 32 heads,
`kernelcraft eval ... --device cpu --no-timing`) PASSED, worst error 5.6e-3 (triton_intra2 4.7e-3).
Registers and spills for sm_90 (`PYTHONPATH=src python scripts/kda_prefill_regs.py
tasks/kda_prefill/candidates/triton_intra3.py --seqs 8192:1,1024:32`, Triton 3.9's ptxas, no GPU):
                 warps  registers       spills  shared (8192 x 1 / 1024 x 32)   triton_intra2
    _gate            2         64          0 B      4 KiB                          106, 4 KiB (4 warps)
    _intra           4    165-167          0 B     48 KiB                          164, 41 KiB
    _prep            8    207-208          0 B     48 KiB                          213, 48 KiB
    _hstate          4    83 / 250         0 B     72.5 / 96.5 KiB (BV 16 / 64)    _scan 90 / 186,
    _out             4     62-74           0 B     48 KiB                          120.5 / 144.5 KiB
With SCAN_SPLIT_O False `_scan` is triton_intra2's (90 / 186 registers, 120.5 / 144.5 KiB).
Not yet timed on a GPU: what it gains there is unmeasured. Memory: the split path adds ~0.4 GB of
traffic at 8192 x 1 (the bf16 state scratch written and read, 135 MB each way, and delta, 67 MB
each way) for all chunks' outputs in parallel and a recurrence kernel of half the shared memory.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "GATE_BK": [32, 64, 128], "GATE_BC": [16, 32, 64], "GATE_STAGES": [1, 2, 3],
            "GATE_WARPS": [1, 2, 4], "INTRA_WARPS": [2, 4], "INTRA_MAXNREG": [0, 168], "PREP_WARPS": [4, 8],
            "PREP_MAXNREG": [0, 128, 168], "SCAN_WARPS": [4, 8], "SCAN_STAGES": [2, 3], "SCAN_SPLIT_O": [True, False],
            "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8]}
CONFIG = {"BV": 0, "GATE_BK": 64, "GATE_BC": 16, "GATE_STAGES": 2, "GATE_WARPS": 2,
          "INTRA_WARPS": 4, "INTRA_MAXNREG": 168, "PREP_WARPS": 4, "PREP_MAXNREG": 0, "SCAN_WARPS": 4,
          "SCAN_STAGES": 3, "SCAN_SPLIT_O": True, "OUT_BV": 64, "OUT_WARPS": 4,
          # tests only: run _intra's GPU code path (column loop, tl.dot on fp32) on CPU tensors too
          "INTRA_GPU_PATH_ON_CPU": False,
          # tests only: run _prep's GPU code path (tl.dot on fp32 16 x 16 blocks) on CPU tensors too
          "PREP_GPU_PATH_ON_CPU": False}

BT = 64  # chunk
BC = 16  # sub-chunk


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even (the interpreter's .to(tl.bfloat16) truncates)
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


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
def _rnorm(x):
    # 1 / ||x|| per row, eps 1e-6 inside the root (FLA's use_qk_l2norm_in_kernel)
    return 1.0 / tl.sqrt(tl.sum(x * x, axis=1) + 1e-6)


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
def _intra(q_ptr, k_ptr, gam_ptr, cu_ptr, akk_ptr, sc_ptr, qg_ptr, scale, N,
           H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr,
           CPU: tl.constexpr, CPU_STORE: tl.constexpr):
    # one program per (chunk, sub-chunk row I, head): the blocks (I, J) for J <= I, zeros of S for
    # J > I, and qg = scale q^ exp(gamma) of I's rows; 1 / ||q||, 1 / ||k|| computed here
    NSUB: tl.constexpr = BT // BC
    h = tl.program_id(1)
    sub = tl.program_id(0) % NSUB
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0) // NSUB, BT, BN)
    first = start + sub * BC
    if (n >= N) | (first >= end):  # past the last chunk, or a sub-chunk past its sequence's end
        return
    rr = tl.arange(0, BC)
    rows = first + rr
    valid = rows < end
    m2 = valid[:, None]
    ok = tl.arange(0, K)
    tk = (rows[:, None] * H + h) * K + ok[None, :]
    gi = tl.load(gam_ptr + tk, mask=m2, other=0.0)
    kraw = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    rki = _rnorm(kraw)  # padded rows: 1 / sqrt(1e-6), times zeros
    ki = kraw * rki[:, None]
    qi = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    qi = qi * _rnorm(qi)[:, None]
    # qg for _scan / _out (bf16): first, so that its tile dies before the sub-chunk products
    qg = qi * tl.exp2(gi) * scale
    if CPU_STORE:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        qg = _rne_bf16(qg)
    tl.store(qg_ptr + tk, qg.to(tl.bfloat16), mask=m2)
    # S's columns right of the diagonal block: zeros (_scan / _out read whole rows of S)
    oc = tl.arange(0, BT)
    tl.store(sc_ptr + (rows[:, None] * H + h) * BT + oc[None, :], tl.zeros([BC, BT], dtype=tl.bfloat16),
             mask=m2 & (oc[None, :] >= (sub + 1) * BC))
    # the diagonal block, j <= i: sum_c x_i[c] k_j[c] exp2(g_i[c] - g_j[c]), exponents <= 0
    if CPU:  # numpy: the whole [16, 16, K] at once
        causal = (rr[:, None, None] >= rr[None, :, None]) & m2[:, :, None]
        e = tl.where(causal, tl.exp2(tl.where(causal, gi[:, None, :] - gi[None, :, :], 0.0)), 0.0)
        kk = tl.sum(ki[:, None, :] * ki[None, :, :] * e, axis=2)
        qk = tl.sum(qi[:, None, :] * ki[None, :, :] * e, axis=2)
    else:  # one column j at a time, row j loaded from memory (L1): two in-warp K-reductions per column
        kk = tl.zeros([BC, BC], dtype=tl.float32)
        qk = tl.zeros([BC, BC], dtype=tl.float32)
        for j in range(0, BC):
            # row j, clamped into the sequence: a column past its end meets only padded rows i >= j,
            # which the select below drops, so its loads need no mask
            rj = tl.minimum(first + j, end - 1)
            # row j as a [BC, K] tile of repeated rows, in the tiles' own layout (triton_intra2's note);
            # k_j unnormalised: the column is scaled by 1 / ||k_j|| after the loop
            tj = (rj * H + h) * K + ok[None, :] + 0 * rr[:, None]
            gj = tl.load(gam_ptr + tj)
            kj = tl.load(k_ptr + tj).to(tl.float32)
            ke = kj * tl.exp2(gi - gj)
            put = (rr[None, :] == j) & (rr[:, None] >= j)
            kk = tl.where(put, tl.sum(ki * ke, axis=1)[:, None], kk)
            qk = tl.where(put, tl.sum(qi * ke, axis=1)[:, None], qk)
        rkc = tl.where(valid, rki, 0.0)[None, :]  # 1 / ||k_j|| per column (one layout conversion)
        kk = kk * rkc
        qk = qk * rkc
    _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, sub * BC, scale, H, BT, BC, CPU)
    # J < I through r = gamma2 at I's first row: exp2(g_i - r) <= 1 (I's rows), exp2(r - g_j) <= 1 (J's)
    r = tl.load(gam_ptr + (first * H + h) * K + ok)
    li = tl.where(m2, tl.exp2(tl.where(m2, gi - r[None, :], 0.0)), 0.0)
    lk = ki * li
    lq = qi * li
    # J's tiles: a scalar 64-bit row base plus one loop-invariant int32 offset tile
    toff = rr[:, None] * (H * K) + ok[None, :]
    for d in range(0, sub):
        j0 = start + d * BC  # sub-chunk J = d < I: all its rows are valid
        jb = j0 * (H * K) + h * K
        gj = tl.load(gam_ptr + jb + toff)
        kj = tl.load(k_ptr + jb + toff).to(tl.float32)
        rj = kj * (_rnorm(kj)[:, None] * tl.exp2(r[None, :] - gj))
        if CPU:
            kk = tl.sum(lk[:, None, :] * rj[None, :, :], axis=2)
            qk = tl.sum(lq[:, None, :] * rj[None, :, :], axis=2)
        else:
            kk = tl.dot(lk, tl.trans(rj))
            qk = tl.dot(lq, tl.trans(rj))
        _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, d * BC, scale, H, BT, BC, CPU)


@triton.jit
def _mm(x, y, acc, DOT: tl.constexpr):
    # acc + x @ y (acc None: x @ y); off the dot path a broadcast sum (the interpreter's tl.dot skips BLAS)
    if DOT:
        r = tl.dot(x, y, acc)
    else:
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
    kk = tl.load(akk_ptr + (rows[:, None] * H + h) * BT + J * BC + rc[None, :], mask=m, other=0.0)
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
def _keys(k_ptr, gam_ptr, kd_ptr, rows, end, h, beta, gam_last, H: tl.constexpr, K: tl.constexpr,
          CPU_STORE: tl.constexpr):
    # one sub-chunk's keys: stores kd = k^ exp(gamma_C - gamma) (bf16), returns beta k^ exp(gamma) for W
    ok = tl.arange(0, K)
    m2 = (rows < end)[:, None]
    tk = (rows[:, None] * H + h) * K + ok[None, :]
    gam = tl.load(gam_ptr + tk, mask=m2, other=0.0)
    kn = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    kn = kn * _rnorm(kn)[:, None]
    kd = kn * tl.exp2(gam_last[None, :] - gam)  # exponents <= 0
    if CPU_STORE:
        kd = _rne_bf16(kd)
    tl.store(kd_ptr + tk, kd.to(tl.bfloat16), mask=m2)
    return kn * beta[:, None] * tl.exp2(gam)


@triton.jit
def _vals(v_ptr, rows, end, h, beta, H: tl.constexpr, V: tl.constexpr):
    # one sub-chunk's beta v for U
    ov = tl.arange(0, V)
    tv = (rows[:, None] * H + h) * V + ov[None, :]
    return beta[:, None] * tl.load(v_ptr + tv, mask=(rows < end)[:, None], other=0.0).to(tl.float32)


@triton.jit
def _st(ptr, x, rows, end, h, H: tl.constexpr, D: tl.constexpr, CPU_STORE: tl.constexpr):
    # one sub-chunk's rows of W or U, bf16
    od = tl.arange(0, D)
    if CPU_STORE:
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * H + h) * D + od[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])


@triton.jit
def _prep(k_ptr, v_ptr, b_ptr, cu_ptr, akk_ptr, gam_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, N,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
          BN: tl.constexpr, DOT: tl.constexpr, CPU_STORE: tl.constexpr):
    # (I + A)^-1 by 16 x 16 blocks, W, U, kd = k^ exp(gamma_C - gamma) and exp(gamma_C); A from _intra,
    # gamma2 from _gate. No 64 x 64 tile: A and T as their ten non-zero 16 x 16 blocks (gdn_prefill's
    # triton_split2 `_kkt_inv`), W and U by 16-row sub-chunks (each key / value tile loaded once)
    tl.static_assert(BT == 4 * BC)
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    rc = tl.arange(0, BC)
    r0 = start + rc
    r1 = start + BC + rc
    r2 = start + 2 * BC + rc
    r3 = start + 3 * BC + rc
    b0 = _beta(b_ptr, r0, end, h, H)
    b1 = _beta(b_ptr, r1, end, h, H)
    b2 = _beta(b_ptr, r2, end, h, H)
    b3 = _beta(b_ptr, r3, end, h, H)
    # diagonal blocks, inverted by forward substitution
    t00 = _inv_diag(_ablk(akk_ptr, r0, end, b0, h, 0, True, H, BT, BC), BC)
    t11 = _inv_diag(_ablk(akk_ptr, r1, end, b1, h, 1, True, H, BT, BC), BC)
    t22 = _inv_diag(_ablk(akk_ptr, r2, end, b2, h, 2, True, H, BT, BC), BC)
    t33 = _inv_diag(_ablk(akk_ptr, r3, end, b3, h, 3, True, H, BT, BC), BC)
    # merged 16 -> 32: T10 = -T11 A10 T00, T32 = -T33 A32 T22. The left factors enter negated (n..):
    # a value of their own, whose dot-operand copy dies here (the W / U products take T's own blocks)
    n11 = -t11
    n22 = -t22
    n33 = -t33
    t10 = _mm(n11, _mm(_ablk(akk_ptr, r1, end, b1, h, 0, False, H, BT, BC), t00, None, DOT), None, DOT)
    t32 = _mm(n33, _mm(_ablk(akk_ptr, r3, end, b3, h, 2, False, H, BT, BC), t22, None, DOT), None, DOT)
    # 32 -> 64: the lower 32 x 32 block is -T_b X T_a, X = [[A20, A21], [A30, A31]],
    # T_a = [[T00, 0], [T10, T11]], T_b = [[T22, 0], [T32, T33]]; P = X T_a first
    a21 = _ablk(akk_ptr, r2, end, b2, h, 1, False, H, BT, BC)
    a31 = _ablk(akk_ptr, r3, end, b3, h, 1, False, H, BT, BC)
    p20 = _mm(a21, t10, _mm(_ablk(akk_ptr, r2, end, b2, h, 0, False, H, BT, BC), t00, None, DOT), DOT)
    p30 = _mm(a31, t10, _mm(_ablk(akk_ptr, r3, end, b3, h, 0, False, H, BT, BC), t00, None, DOT), DOT)
    p21 = _mm(a21, t11, None, DOT)
    p31 = _mm(a31, t11, None, DOT)
    n32 = -t32
    t20 = _mm(n22, p20, None, DOT)
    t21 = _mm(n22, p21, None, DOT)
    t30 = _mm(n33, p30, _mm(n32, p20, None, DOT), DOT)
    t31 = _mm(n33, p31, _mm(n32, p21, None, DOT), DOT)
    ok = tl.arange(0, K)
    gam_last = tl.load(gam_ptr + ((tl.minimum(end, start + BT) - 1) * H + h) * K + ok)  # gamma2 at the last row
    tl.store(gl_ptr + (start * H + h) * K + ok, tl.exp2(gam_last))  # exp(gamma_C), at the chunk's first token
    # W = T diag(beta exp(gamma)) K^ and U = T diag(beta) V together, by sub-chunk J (a column of T's blocks):
    # W_I = sum_{J <= I} T_IJ kb_J, U_I likewise with vb_J; each key / value tile loaded once, kd stored as it
    # is loaded, W_I and U_I stored as soon as column I is added. W and U side by side so that T's blocks of
    # column J are used (and their dot-operand copies die) in one place
    kb = _keys(k_ptr, gam_ptr, kd_ptr, r0, end, h, b0, gam_last, H, K, CPU_STORE)
    vb = _vals(v_ptr, r0, end, h, b0, H, V)
    _st(w_ptr, _mm(t00, kb, None, DOT), r0, end, h, H, K, CPU_STORE)
    _st(u_ptr, _mm(t00, vb, None, DOT), r0, end, h, H, V, CPU_STORE)
    w1 = _mm(t10, kb, None, DOT)
    u1 = _mm(t10, vb, None, DOT)
    w2 = _mm(t20, kb, None, DOT)
    u2 = _mm(t20, vb, None, DOT)
    w3 = _mm(t30, kb, None, DOT)
    u3 = _mm(t30, vb, None, DOT)
    kb = _keys(k_ptr, gam_ptr, kd_ptr, r1, end, h, b1, gam_last, H, K, CPU_STORE)
    vb = _vals(v_ptr, r1, end, h, b1, H, V)
    _st(w_ptr, _mm(t11, kb, w1, DOT), r1, end, h, H, K, CPU_STORE)
    _st(u_ptr, _mm(t11, vb, u1, DOT), r1, end, h, H, V, CPU_STORE)
    w2 = _mm(t21, kb, w2, DOT)
    u2 = _mm(t21, vb, u2, DOT)
    w3 = _mm(t31, kb, w3, DOT)
    u3 = _mm(t31, vb, u3, DOT)
    kb = _keys(k_ptr, gam_ptr, kd_ptr, r2, end, h, b2, gam_last, H, K, CPU_STORE)
    vb = _vals(v_ptr, r2, end, h, b2, H, V)
    _st(w_ptr, _mm(t22, kb, w2, DOT), r2, end, h, H, K, CPU_STORE)
    _st(u_ptr, _mm(t22, vb, u2, DOT), r2, end, h, H, V, CPU_STORE)
    w3 = _mm(t32, kb, w3, DOT)
    u3 = _mm(t32, vb, u3, DOT)
    kb = _keys(k_ptr, gam_ptr, kd_ptr, r3, end, h, b3, gam_last, H, K, CPU_STORE)
    vb = _vals(v_ptr, r3, end, h, b3, H, V)
    _st(w_ptr, _mm(t33, kb, w3, DOT), r3, end, h, H, K, CPU_STORE)
    _st(u_ptr, _mm(t33, vb, u3, DOT), r3, end, h, H, V, CPU_STORE)


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


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    gam = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    akk = torch.empty((T, H, BT), dtype=torch.float32, device=dev)
    w = torch.empty((T, H, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, H, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    grid = (nc, H)
    bn = triton.next_power_of_2(N + 1)
    bk = min(CONFIG["GATE_BK"], K)
    _gate[(nc, H, triton.cdiv(K, bk))](A_log, a, dt_bias, cu_seqlens, gam, N, H=H, K=K, BT=BT,
                                        BCG=min(CONFIG["GATE_BC"], BT), BK=bk, BN=bn,
                                        STAGES=CONFIG["GATE_STAGES"], num_warps=CONFIG["GATE_WARPS"])
    intra_cpu = cpu and not CONFIG["INTRA_GPU_PATH_ON_CPU"]
    intra_grid = (nc * (BT // BC), H)  # one program per (chunk, sub-chunk, head)
    # triton_intra2: capped at 168 registers, 164 allocated without spilling: 3 blocks, 12 warps per SM
    cap = {"maxnreg": CONFIG["INTRA_MAXNREG"]} if CONFIG["INTRA_MAXNREG"] and not cpu else {}
    _intra[intra_grid](q, k, gam, cu_seqlens, akk, sc, qg, float(scale), N, H=H, K=K, BT=BT, BC=BC, BN=bn,
                       CPU=intra_cpu, CPU_STORE=cpu, num_warps=CONFIG["INTRA_WARPS"], **cap)
    prep_dot = not cpu or CONFIG["PREP_GPU_PATH_ON_CPU"]
    _prep[grid](k, v, b, cu_seqlens, akk, gam, w, u, kd, gl, N,
                H=H, K=K, V=V, BT=BT, BC=BC, BN=bn, DOT=prep_dot, CPU_STORE=cpu, num_warps=CONFIG["PREP_WARPS"],
                **({"maxnreg": CONFIG["PREP_MAXNREG"]} if CONFIG["PREP_MAXNREG"] and not cpu else {}))
    bv = CONFIG["BV"]
    split = CONFIG["SCAN_SPLIT_O"]
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        if split:  # _hstate fits 2-3 blocks per SM (72-97 KiB shared): the widest BV in one wave of 264
            bv = 16 if N * H <= 32 else 32 if N * H <= 64 else 64
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
