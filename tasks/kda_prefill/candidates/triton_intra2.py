"""Chunked Kimi Delta Attention prefill: candidates/triton_intra.py with the intra-chunk work fed
from a scratch buffer instead of register tiles (four kernels: `_gate`, `_intra`, `_prep`, `_scan`).

The math is triton_chunk's (its docstring has the WY / UT form): per chunk of 64 tokens and head,
A_ij = sum_c k_i[c] k_j[c] exp(gamma_i[c] - gamma_j[c]) and S likewise with q_i (j <= i), built in
16 x 16 blocks; (I + A)^-1 by recursive doubling, W, U, the decayed q and k; the recurrence with the
state in float32 registers. Outputs, layouts, dtypes and the entry point are triton_chunk's.

Why: triton_intra's H200 profile (results/h200/profiles/kda_prefill/intra_1ca0667f, 8192 x 1):
`_intra` 4,237 us (69%), memory units at 92% with DRAM at 1.4%, short_scoreboard stalls 62%. Its
`_diag` column loop pulled row j of k and of the decay out of [16, 128] register tiles with a
masked sum over the rows (a cross-warp reduction through shared memory) and then reduced over
K = 128 twice: four cross-thread reductions per column, 64 per sub-chunk.

1. `_gate` (new; one program per (chunk, head), 16 rows at a time carrying the cumulative sum): the
   per-channel log decay, its chunk-local inclusive cumulative sum in log2 units (gamma2 =
   gamma / ln 2, so later kernels call exp2 directly), stored float32 [T, H, K]; 1 / ||q|| and
   1 / ||k|| (eps 1e-6 inside the root) stored float32 [T, H]; qg = scale q^ exp(gamma) (bf16, the
   scan's). The gate is computed once per token: triton_intra computed it in `_prep` again and in
   `_intra` for every earlier sub-chunk (ten 16-row gate tiles per chunk), an exp, a log and an exp
   per element each time.
2. `_intra`: one program per (chunk, sub-chunk row I, head), as triton_intra. The diagonal block's
   column loop loads row j of gamma2 (float32) and of k (bf16, times its stored 1 / ||k_j||) from
   memory (L1: the program has just read the same rows as its own tile) instead of extracting it
   from register tiles. The row is loaded as a [16, 128] tile of repeated rows so that it arrives
   in the tiles' own layout (a [128] or [1, 128] load gets a layout of its own, warps over K, and
   then either a shared-memory conversion per column or cross-warp reductions: seen in the TTGIR).
   Per column: one [16, 128] exp2 tile and two K-reductions along rows, inside a warp (8 values in
   a thread, 4 shuffle steps; SASS of the loop: 16 MUFU.EX2, 16 SHFL.BFLY, no BAR, LDS or STS per
   thread and column), no masks on the tile (rows i < j are dropped by the select that places the
   column). 2 reductions per column instead of 4 and none through shared memory: 32 per sub-chunk
   instead of 64, and no barriers. Between sub-chunks J < I, tl.dot on decay-scaled tiles through
   the reference r = gamma2 at I's first row (FLA's choice): exp2(gamma2_i - r) <= 1 for I's rows,
   exp2(r - gamma2_j) <= 1 for J's rows; r is one row load (no walk accumulating the decay between J
   and I, no recomputed gate or norm of J). S is scaled and stored bf16 here (zeros right of the
   diagonal block), so `_prep` no longer reads or writes it.
3. `_prep`: A (float32, from `_intra`), beta, the inverse (recursive doubling, unchanged), then from
   gamma2 and k (times 1 / ||k||): exp(gamma_C) (gamma2's last row, one row load), kd =
   k^ exp(gamma_C - gamma) and W; U from v. No gate, no q, no S: 213 registers instead of 252.
4. `_scan`: triton_intra's, the products accumulating into the mma accumulator (tl.dot(a, b, acc))
   instead of separate adds.

Numerical range (how each formulation keeps exp within float32): the reference steps token by
token in float64 (S <- S diag(g), g = exp(-A softplus(.)) in (0, 1]): no exponent of a difference
ever forms. FLA's chunk_kda stores the chunk-local cumulative gate in float32 log2 units and
exponentiates differences only: inside a 16-token sub-chunk pairwise, exp2(g_i - g_j) with
i >= j (chunk_intra_token_parallel.py, one token per program, row j loaded from memory: the
scheme used here), between sub-chunks through g at the first row n of sub-chunk I,
exp2(g_i - g_n) exp2(g_n - g_j) (chunk_intra.py's fused inter kernel: the scheme used here); its
`safe_gate` (a reference in the middle of a sub-chunk, exponents of both signs) needs a gate lower
bound the contract does not have, so it is not used. Here every exponent passed to exp2 is <= 0
up to the rounding of the cumulative sum (gamma2 is non-increasing per channel: -A softplus <= 0),
so nothing overflows; a factor that underflows to 0 (a decay below 2^-126 across the gap) stands
for a product that is smaller still, below float32's resolution of the sum. Exponents are
differences of chunk-local cumulative sums (|gamma2| <= 64 tokens of decay, ~4,500 at ~exp(-49)
per token, float32 ulp 5e-4 there, i.e. a relative error <= 4e-4 of the factors it forms, the
scale triton_chunk already had; triton_intra formed local sums). Padding rows have no decay; an
exp2 whose lanes may see a padded row (or i < j in the column loop) is either selected away before
it multiplies anything or lands only in rows that are never stored.

Precision otherwise as triton_intra: float32 everywhere, tl.dot on float32 operands at Triton's
default precision in `_intra` and `_prep`, bf16 operands in `_scan`; the same bf16 rounding
points (W, U, qg, kd, S). q^ and k^ are x * (1 / ||x||) instead of x / ||x|| (one rounding apart).
On CPU (the Triton interpreter) products are broadcast sums and bf16 stores round to nearest
(`_rne_bf16`), as triton_chunk; CONFIG["INTRA_GPU_PATH_ON_CPU"] (tests only) runs `_intra`'s GPU
code (the column loop with row loads, tl.dot on float32) on CPU tensors.

Memory per [T, H, 128] tensor at 8192 x 1: 67 MB bf16, 134 MB float32 ([T, H, 64]: half). `_gate`
reads a, q, k and writes gamma2 and qg: ~400 MB. `_intra` reads q, k, gamma2 (J tiles again from
L2, rows j from L1) and writes A (float32) and S (bf16): ~370 MB from DRAM. `_prep` reads A, gamma2,
k, v and writes W, U, kd: ~540 MB. `_scan` as before: ~370 MB. ~1.7 GB in all, ~0.4 ms at the
H200's DRAM bandwidth (triton_intra: 6.1 ms of kernel time at base clocks, DRAM at 1-14%).

Registers and spills for sm_90 (`PYTHONPATH=src python scripts/kda_prefill_regs.py
tasks/kda_prefill/candidates/triton_intra2.py --seqs 8192:1,4096:32,1`, Triton 3.9's ptxas, no GPU):
                 warps  registers  spills   shared (8192 x 1)   triton_intra
    _gate            4        106    0 B          4 KiB           (new)
    _intra           4        164    0 B         41 KiB           164, 41 KiB
    _prep            8        213    0 B         48 KiB           252, 48 KiB
    _scan            4         90    0 B        120.5 KiB         94 (186 at 4096 x 32, BV 64)
`_intra` is capped with maxnreg = 168 (CONFIG["INTRA_MAXNREG"]; 0 = no cap): ptxas's own choice is
178 (2 blocks of 4 warps per SM), capped it allocates 164 without spilling (3 blocks per SM). GATE
8 warps: 88 registers; INTRA_WARPS 2: 246; PREP_WARPS 4: 255 with 8 B spilled. Not yet timed on a
GPU: what it gains there is unmeasured.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "GATE_WARPS": [2, 4, 8], "INTRA_WARPS": [2, 4], "INTRA_MAXNREG": [0, 168],
            "PREP_WARPS": [4, 8],
            "SCAN_WARPS": [4, 8], "SCAN_STAGES": [1, 2]}
CONFIG = {"BV": 0, "GATE_WARPS": 4, "INTRA_WARPS": 4, "INTRA_MAXNREG": 168, "PREP_WARPS": 8, "SCAN_WARPS": 4, "SCAN_STAGES": 2,
          # tests only: run _intra's GPU code path (column loop, tl.dot on fp32) on CPU tensors too
          "INTRA_GPU_PATH_ON_CPU": False}

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
def _gate(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, cu_ptr, gam_ptr, rq_ptr, rk_ptr, qg_ptr, scale, N,
          H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr,
          CPU: tl.constexpr):
    # per (chunk, head), 16 rows at a time: gamma2 (chunk-local inclusive cumulative log2 decay),
    # 1 / ||q||, 1 / ||k||, qg = scale q^ exp(gamma)
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    rr = tl.arange(0, BC)
    ok = tl.arange(0, K)
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    dtb = tl.load(dtb_ptr + h * K + ok)
    carry = tl.zeros([K], dtype=tl.float32)  # gamma2 at the last row of the sub-chunks before
    for s in tl.static_range(BT // BC):
        rows = start + s * BC + rr
        valid = rows < end
        m2 = valid[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        x = tl.load(a_ptr + tk, mask=m2, other=0.0).to(tl.float32) + dtb[None, :]
        g = tl.where(m2, neg_a * _softplus(x), 0.0)  # padding rows: no decay
        gam = carry[None, :] + tl.cumsum(g, 0) * 1.4426950408889634  # log2 units: exp(gamma) = exp2(gam)
        tl.store(gam_ptr + tk, gam, mask=m2)
        carry = tl.sum(tl.where((rr == BC - 1)[:, None], gam, 0.0), axis=0)
        kr = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        tl.store(rk_ptr + rows * H + h, 1.0 / tl.sqrt(tl.sum(kr * kr, axis=1) + 1e-6), mask=valid)
        qr = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        rq = 1.0 / tl.sqrt(tl.sum(qr * qr, axis=1) + 1e-6)
        tl.store(rq_ptr + rows * H + h, rq, mask=valid)
        qg = qr * (rq * scale)[:, None] * tl.exp2(gam)
        if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
            qg = _rne_bf16(qg)
        tl.store(qg_ptr + tk, qg.to(tl.bfloat16), mask=m2)


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
def _intra(q_ptr, k_ptr, gam_ptr, rq_ptr, rk_ptr, cu_ptr, akk_ptr, sc_ptr, scale, N,
           H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr,
           CPU: tl.constexpr):
    # one program per (chunk, sub-chunk row I, head): the blocks (I, J) for J <= I, zeros of S for J > I
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
    ki = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32) * \
        tl.load(rk_ptr + rows * H + h, mask=valid, other=0.0)[:, None]
    qi = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32) * \
        tl.load(rq_ptr + rows * H + h, mask=valid, other=0.0)[:, None]
    # S's columns right of the diagonal block: zeros (_scan reads whole rows of S)
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
            # row j as a [BC, K] tile of repeated rows: loaded in the tiles' own layout (rows over warps,
            # a row over a warp's lanes), so the K-reductions below stay inside a warp; a [1, K] or [K]
            # load gets a layout of its own (warps over K) and a shared-memory conversion per column
            tj = (rj * H + h) * K + ok[None, :] + 0 * rr[:, None]
            gj = tl.load(gam_ptr + tj)
            kj = tl.load(k_ptr + tj).to(tl.float32) * tl.load(rk_ptr + rj * H + h)
            # no mask on the [BC, K] tile: rows i < j (exponent > 0, possibly inf) and padded rows
            # are dropped from the reduced column by the select, which never multiplies them
            ke = kj * tl.exp2(gi - gj)
            put = (rr[None, :] == j) & (rr[:, None] >= j)
            kk = tl.where(put, tl.sum(ki * ke, axis=1)[:, None], kk)
            qk = tl.where(put, tl.sum(qi * ke, axis=1)[:, None], qk)
    _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, sub * BC, scale, H, BT, BC, CPU)
    # J < I through r = gamma2 at I's first row: exp2(g_i - r) <= 1 (I's rows), exp2(r - g_j) <= 1 (J's)
    r = tl.load(gam_ptr + (first * H + h) * K + ok)
    li = tl.where(m2, tl.exp2(tl.where(m2, gi - r[None, :], 0.0)), 0.0)
    lk = ki * li
    lq = qi * li
    # J's tiles: a scalar 64-bit row base plus one loop-invariant int32 offset tile (a tile of 64-bit
    # offsets in the dot operands' layout cost ~50 more registers per thread)
    toff = rr[:, None] * (H * K) + ok[None, :]
    for d in range(0, sub):
        j0 = start + d * BC  # sub-chunk J = d < I: all its rows are valid
        jb = j0 * (H * K) + h * K
        gj = tl.load(gam_ptr + jb + toff)
        kj = tl.load(k_ptr + jb + toff).to(tl.float32) * tl.load(rk_ptr + j0 * H + h + rr * H)[:, None]
        rj = kj * tl.exp2(r[None, :] - gj)
        if CPU:
            kk = tl.sum(lk[:, None, :] * rj[None, :, :], axis=2)
            qk = tl.sum(lq[:, None, :] * rj[None, :, :], axis=2)
        else:
            kk = tl.dot(lk, tl.trans(rj))
            qk = tl.dot(lq, tl.trans(rj))
        _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, d * BC, scale, H, BT, BC, CPU)


@triton.jit
def _prep(k_ptr, v_ptr, b_ptr, cu_ptr, akk_ptr, gam_ptr, rk_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, N,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, LOG_BT: tl.constexpr,
          BN: tl.constexpr, CPU: tl.constexpr):
    # (I + A)^-1, W, U, kd = k^ exp(gamma_C - gamma) and exp(gamma_C); A from _intra, gamma2 and
    # 1 / ||k|| from _gate
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = rows < end
    m2 = valid[:, None]
    ok = tl.arange(0, K)
    ov = tl.arange(0, V)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * H + h, mask=valid, other=0.0).to(tl.float32)), 0.0)
    strict = ri[:, None] > ri[None, :]
    kk = tl.load(akk_ptr + (rows[:, None] * H + h) * BT + ri[None, :], mask=m2 & strict, other=0.0)
    a_mat = tl.where(strict, beta[:, None] * kk, 0.0)
    # (I + A)^-1 by recursive doubling: merging 2b-blocks [[X, 0], [Y, Z]] needs -Z^-1 Y X^-1
    t_mat = (ri[:, None] == ri[None, :]).to(tl.float32)
    for s in tl.static_range(LOG_BT):
        blk = 1 << s
        merge = ((ri[:, None] // (2 * blk)) == (ri[None, :] // (2 * blk))) & \
                ((ri[:, None] // blk) % 2 == 1) & ((ri[None, :] // blk) % 2 == 0)
        part = tl.where(merge, a_mat, 0.0)
        if CPU:  # broadcast sums: the interpreter's tl.dot skips BLAS
            tp = tl.sum(t_mat[:, :, None] * part[None, :, :], axis=1)
            t_mat = t_mat - tl.sum(tp[:, :, None] * t_mat[None, :, :], axis=1)
        else:
            t_mat = t_mat - tl.dot(tl.dot(t_mat, part), t_mat)
    tk = (rows[:, None] * H + h) * K + ok[None, :]
    gam = tl.load(gam_ptr + tk, mask=m2, other=0.0)
    gam_last = tl.load(gam_ptr + ((tl.minimum(end, start + BT) - 1) * H + h) * K + ok)  # gamma2 at the last row
    tl.store(gl_ptr + (start * H + h) * K + ok, tl.exp2(gam_last))  # exp(gamma_C), at the chunk's first token
    kn = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32) * \
        tl.load(rk_ptr + rows * H + h, mask=valid, other=0.0)[:, None]
    kd = kn * tl.exp2(gam_last[None, :] - gam)  # exponents <= 0
    if CPU:
        kd = _rne_bf16(kd)
    tl.store(kd_ptr + tk, kd.to(tl.bfloat16), mask=m2)
    kb = kn * beta[:, None] * tl.exp2(gam)
    if CPU:
        w = tl.sum(t_mat[:, :, None] * kb[None, :, :], axis=1)
        w = _rne_bf16(w)
    else:
        w = tl.dot(t_mat, kb)
    tl.store(w_ptr + tk, w.to(tl.bfloat16), mask=m2)
    tv = (rows[:, None] * H + h) * V + ov[None, :]
    vb = beta[:, None] * tl.load(v_ptr + tv, mask=m2, other=0.0).to(tl.float32)
    if CPU:
        u = tl.sum(t_mat[:, :, None] * vb[None, :, :], axis=1)
        u = _rne_bf16(u)
    else:
        u = tl.dot(t_mat, vb)
    tl.store(u_ptr + tv, u.to(tl.bfloat16), mask=m2)


@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
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


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    gam = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    rq = torch.empty((T, H), dtype=torch.float32, device=dev)
    rk = torch.empty_like(rq)
    akk = torch.empty((T, H, BT), dtype=torch.float32, device=dev)
    w = torch.empty((T, H, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, H, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    grid = (triton.cdiv(T, BT) + N, H)  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    _gate[grid](q, k, A_log, a, dt_bias, cu_seqlens, gam, rq, rk, qg, float(scale), N,
                H=H, K=K, BT=BT, BC=BC, BN=bn, CPU=cpu, num_warps=CONFIG["GATE_WARPS"])
    intra_cpu = cpu and not CONFIG["INTRA_GPU_PATH_ON_CPU"]
    intra_grid = (grid[0] * (BT // BC), H)  # one program per (chunk, sub-chunk, head)
    # ptxas's own choice is 174-178 registers at 4 warps (2 blocks per SM); capped at 168 it allocates
    # 164 without spilling (scripts/kda_prefill_regs.py): 3 blocks, 12 warps per SM
    cap = {"maxnreg": CONFIG["INTRA_MAXNREG"]} if CONFIG["INTRA_MAXNREG"] and not cpu else {}
    _intra[intra_grid](q, k, gam, rq, rk, cu_seqlens, akk, sc, float(scale), N, H=H, K=K, BT=BT, BC=BC, BN=bn,
                       CPU=intra_cpu, num_warps=CONFIG["INTRA_WARPS"], **cap)
    _prep[grid](k, v, b, cu_seqlens, akk, gam, rk, w, u, kd, gl, N,
                H=H, K=K, V=V, BT=BT, LOG_BT=BT.bit_length() - 1, BN=bn, CPU=cpu, num_warps=CONFIG["PREP_WARPS"])
    bv = CONFIG["BV"]
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        bv = 16 if N * H <= 64 else 32 if N * H <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    _scan[(triton.cdiv(V, bv), N * H)](
        state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
        H=H, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    return out, new_state
