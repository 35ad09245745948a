"""Chunked gated delta rule prefill: candidates/triton_chunk2.py with its one-kernel `_prep` replaced by two
kernels, `_kkt` and `_wu`, of many small programs (tensor-core Gram and W / U products, no spills). What the
recurrence and output kernels read is chunk2's (w, u, qg, kd, sc bf16 and gl float32, same layouts, same
formulas): `_scan` (CONFIG["SCAN_SPLIT_O"] = False), `_hstate` and `_out` (the default) are chunk2's, copied
unchanged, as are the entry point, outputs, dtypes and the CONFIG keys BV, SCAN_*, OUT_*. The math is
triton_chunk's (its docstring has the WY / UT form).

Why (H200, session 23, results/h200/catalog-2026-12-06-s23/la/gdn_split.txt, device us per call): chunk2's
`_prep` takes 131 us at 8192 x 1 (73 at 4096 x 4, 159 at 5783 x 128) against ~60 us for FLA's preparation
(kkt_solve 22.5, recompute_w_u 21.3, two l2norm 9.9, gate cumsum 2.5, beta 1.8): one program per (chunk,
value head), 255 registers with spills, 2 blocks per SM, latency-bound by a serial sweep of 16-row blocks and
M = 16 products whose operands every warp holds whole.

What changed (only the preparation):
1. `_kkt`, grid (2 HV, chunks): two programs per (chunk, value head), neighbours (the second and the head's
   other value head read the q / k tiles from L2). Both compute the gates (gamma = one 64-wide cumulative sum
   of the log decays, beta) and a 64 x 64 Gram matrix of the raw bf16 rows on the tensor cores (exact
   products, float32 sums, BK = CONFIG["KKT_BK"] columns a step; chunk2's scheme), scaled by the row norms
   afterwards.
   - even program: A = beta_i exp(gamma_i - gamma_j) k^_i.k^_j (strictly lower) from k k^T, then
     T = (I + A)^-1 on whole 64 x 64 tiles (`_inv`): the four 16 x 16 diagonal blocks inverted at once by
     forward substitution (chunk2's / triton_split2's, 14 steps: rows i, 16 + i, 32 + i, 48 + i together,
     one column sum gathering the four rows, one product updating them), then the stable blocked merges
     T <- T - T A_off T for 16 -> 32 and 32 -> 64 (four 64^3 float32 products at Triton's default precision,
     as chunk2's merges); one tile carries both the inverse in progress (diagonal blocks) and A's blocks still
     to merge. Stores T diag(beta) (float32 scratch [T, HV, 64], a chunk's row i at its token, as sc), the
     per-token scales Gamma / ||k|| (W's columns) and exp(gamma_C - gamma) / ||k|| (kd's rows) (float32,
     [T, HV]), and exp(gamma_C) at the chunk's first token (gl, chunk2's).
   - odd program: S = scale exp(gamma_i - gamma_j) q^_i.k^_j (lower, diagonal included) from q k^T, stored
     with zeros above (sc, chunk2's), and qg's row scale scale Gamma / ||q|| (float32, [T, HV]).
   Splitting the program in two took the kernel from 176-238 registers (one program per chunk-head in the
   forms tried, uncapped; the S store was the peak: 161-165 without it) to 158-162 with no spills, 3 blocks
   per SM.
2. `_wu`, grid (K / CONFIG["WU_BK"], HV, chunks): one program per 64-column block of a chunk-head, the blocks of
   one chunk-head neighbours: T diag(beta) loaded once, W = (T diag(beta) diag(Gamma / ||k||)) k and
   U = T diag(beta) v as [64, 64] x [64, BK] tensor-core products (float32 operands, Triton's default precision:
   chunk2's W and U), and the decayed qg = q * (scale Gamma / ||q||), kd = k * (exp(gamma_C - gamma) / ||k||)
   from the same q / k tiles; all four stored bf16. K == V (the task's 128).
Rows are loaded clamped to the sequence's last token, unmasked (chunk2's reason: a masked load's zero fill is
held in registers); the duplicated rows past the end have beta = 0, so their A rows and T's columns vanish, and
they are never stored. Extra memory: the T scratch (T x HV x 64 x 4 bytes: 16.8 MB at 8192 tokens, written and
read once each) and three [T, HV] float32 vectors. CONFIG["KKT_MAXNREG"] (0: no cap) passes `maxnreg` to
`_kkt` on the GPU.

Registers and spills for sm_90, no GPU: `PYTHONPATH=src python scripts/triton_regs.py tasks/gdn_prefill <file>
--axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,num_v_heads=8,head_size=128`
and likewise 4096 x 4 and 5783 x 128 (grids at 8192 x 1), Triton 3.9's ptxas and the device's Triton 3.6
(`PYTHONPATH=/tmp/t36:src`, AGENTS.md), 2026-12-06:
                     warps  registers 3.9 / 3.6   spills  shared     blocks/SM  grid (8192 x 1)
    chunk2 _prep         4      255 / 255          12-48 B  8 KiB      2          (129, 8)
    _kkt                 4      162 / 158          0        32 KiB     3          (16, 129): 2,064 programs
    _wu                  4       98 / 98           0        32.1 KiB   4          (2, 8, 129): 2,064 programs
    _hstate / _out / _scan: chunk2's kernels, the same compiles (_hstate 64-244, _out 64-75, _scan 64-193).
The same figures at all three shapes. Variants (8192 x 1, no spills in any): `_kkt` at KKT_BK 32 / 128: 162 /
162 (3.6: 165 / 180), at 8 warps 150-152 (1 block); `_wu` at WU_BK 32: 84 (5 blocks, 4,128 programs), 128: 167
(3 blocks), 8 warps: 85. KKT_MAXNREG 168 here: 165 / 168, no spills (before the split it brought 176-212
registers to 168 with 4-40 B spilled).

CPU check (Triton 3.9 interpreter, 2026-12-06; max |error| against the definition's float64 reference,
output / new_state; task shapes, 4 q/k and 8 value heads, `tests/test_linear_attention.py::_prefill_inputs`
seed 3; empty sequences keep their state bit for bit; chunk2 on the same inputs):
    lengths (decay)                    chunk2, split      this, split        chunk2, fused      this, fused
    0, 3, 70                           1.2e-3 / 7.1e-3    1.2e-3 / 7.1e-3    1.1e-3 / 5.7e-3    1.1e-3 / 5.7e-3
    130                                1.2e-3 / 8.9e-3    1.2e-3 / 8.9e-3    1.2e-3 / 5.7e-3    1.2e-3 / 5.7e-3
    1, 63, 64, 65, 0, 130              1.3e-3 / 8.0e-3    1.3e-3 / 8.0e-3    1.4e-3 / 7.2e-3    1.4e-3 / 7.2e-3
    1, 63, 64, 65, 0, 130 (~exp(-49))  3.7e-4 / 3.9e-3    3.7e-4 / 3.9e-3    3.7e-4 / 2.8e-3    3.7e-4 / 2.8e-3
    70 (~exp(-49))                     2.9e-4 / 2.6e-3    2.9e-4 / 2.6e-3    2.9e-4 / 2.6e-3    2.9e-4 / 2.6e-3
    130, 70: beta ~1, no decay, keys   3.0e-3 / 1.9e-2    3.0e-3 / 1.9e-2    2.2e-3 / 2.0e-2    2.2e-3 / 2.0e-2
      at cosine ~0.9 (|state| 4.9)
Against chunk2 (same mode) this differs by <= 9.8e-4 / 1.4e-3 (one bf16 rounding of W, U, S, qg, kd formed in
another order: the 64-wide cumulative sum, the scalings), 3.8e-6 / 8.9e-6 on strong decays. With
CONFIG["DOT_PATH_ON_CPU"] (`_kkt`'s and `_wu`'s tl.dot code on float32 operands, KKT_BK = WU_BK = 32: loops of
four pieces, two column blocks) the errors are the broadcast path's to two digits on every row above.
`kernelcraft eval` on a small copy of the task (sequences 0, 3, 70, tests/test_linear_attention.py::_small_copy;
`TRITON_INTERPRET=1 ... --device cpu --no-timing`): PASSED, worst error 6.8e-3 (chunk2 in the same eval: 6.8e-3).
In the interpreter a call is ~3-5x faster than chunk2's (fewer, larger tile ops).

**Not yet run on a GPU** (compiled for sm_90 by ptxas only): what it gains there is unmeasured. Estimate (not a
measurement), 8192 x 1 on the H200: `_kkt` ~12-18 us (43 MB of DRAM traffic: q, k, sc, T scratch; 1,024
inverse programs of ~3-4 us latency and 1,024 score programs of ~1.5 us over 396 resident blocks), `_wu` ~25-32 us
(memory-bound: ~100-118 MB, of which 67 MB the bf16 w, u, qg, kd it writes), so ~40-50 us against chunk2's
`_prep` 131 us; 4096 x 4 ~20-27 us (73), 5783 x 128 ~35-48 us (159; 167 real chunks of ~35 tokens each).

On CPU (the Triton interpreter, whose tl.dot multiplies bf16 storage bits and skips BLAS) products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as triton_chunk.
"""
import torch
import triton
import triton.language as tl

# SCAN_SPLIT_O, BV, SCAN_*, OUT_*: triton_chunk2's, unchanged. SCAN_STAGES 1 is left out: Triton 3.6 miscompiles
# the scan loop's one-stage pipeline on sm_90 (an out-of-bounds shared read, AGENTS.md); _hstate has the same
# loop shape, so it is left out there too.
TUNABLES = {"BV": [8, 16, 32, 64], "KKT_WARPS": [4, 8], "KKT_BK": [32, 64, 128], "KKT_MAXNREG": [0, 168], "WU_BK": [32, 64, 128],
            "WU_WARPS": [4, 8], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [2, 3],
            "SCAN_SPLIT_O": [True, False], "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8]}
CONFIG = {'BV': 0, 'KKT_WARPS': 4, 'KKT_BK': 64, 'KKT_MAXNREG': 0, 'WU_BK': 64, 'WU_WARPS': 4, 'SCAN_WARPS': 4, 'SCAN_STAGES': 2, 'SCAN_SPLIT_O': False, 'OUT_BV': 64, 'OUT_WARPS': 4, 'DOT_PATH_ON_CPU': False}

BT = 64  # chunk size
BC = 16  # the inverse's diagonal blocks


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even: the Triton interpreter's .to(tl.bfloat16)
    # truncates where the GPU rounds; with this both store the same bf16 values.
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _locate(cu_ptr, c, N, BT: tl.constexpr, BN: tl.constexpr):
    # which sequence holds global chunk c: prefix sum of per-sequence chunk counts (n == N: none)
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
def _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV: tl.constexpr):
    # one sub-chunk's log decays and beta (both 0 on padding: no decay, no write)
    valid = rows < end
    x = tl.load(a_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32) + tl.load(dtb_ptr + hv)
    # torch's softplus (threshold 20) as max(x, 0) + log1p(e^-|x|), log1p by its series when tiny
    e = tl.exp(-tl.abs(x))
    sp = tl.where(x > 20.0, x, tl.maximum(x, 0.0) + tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e)))
    lg = tl.where(valid, -tl.exp(tl.load(alog_ptr + hv)) * sp, 0.0)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32)), 0.0)
    return lg, beta


@triton.jit
def _gram(x, y, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # x @ y^T of raw bf16 tiles: exact bf16 products, float32 sums
    if DOT and BF16_DOT:
        r = tl.dot(x, tl.trans(y))
    elif DOT:  # CONFIG["DOT_PATH_ON_CPU"]: the interpreter's tl.dot is wrong on bf16 operands
        r = tl.dot(x.to(tl.float32), tl.trans(y.to(tl.float32)))
    else:
        r = tl.sum(x.to(tl.float32)[:, None, :] * y.to(tl.float32)[None, :, :], axis=2)
    return r


@triton.jit
def _mm(x, y, DOT: tl.constexpr):
    # x @ y on float32 operands (tl.dot at Triton's default precision, as triton_chunk's products)
    if DOT:
        r = tl.dot(x, y)
    else:
        r = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    return r


@triton.jit
def _piece(x_ptr, lrows, h, kc, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    # columns kc .. kc + BK of a chunk's rows of q, k or v as stored (bf16). lrows are the rows clamped
    # to the sequence's last token: no mask (chunk2's reason: a masked load's zero fill costs registers),
    # and the duplicated rows past the end never reach a stored value (their beta is 0, so their A rows
    # and T's columns vanish; their own rows are not stored)
    oc = kc + tl.arange(0, BK)
    return tl.load(x_ptr + (lrows[:, None] * H + h) * K + oc[None, :])


@triton.jit
def _inv(a, BT: tl.constexpr, BC: tl.constexpr, DOT: tl.constexpr):
    # (I + a)^-1 for the strictly lower [BT, BT] a, BT = 4 BC, on whole BT x BT tiles (no sub-tile exists):
    # 1. the four BC x BC diagonal blocks' inverses at once by forward substitution (chunk2's / triton_split2's
    #    _inv_diag, one step per row position i of a block: rows i, BC + i, 2 BC + i, 3 BC + i together; the
    #    diagonal blocks are block diagonal, so one column sum gathers the four rows and one product updates
    #    all four);
    # 2. two merges of the stable blocked inverse, T <- T - T A_off T: 16 -> 32 (A's blocks (1, 0), (3, 2))
    #    and 32 -> 64 (its lower-left 32 x 32), two 64^3 products each; never powers of A.
    # One tile x carries both what is being inverted and what is still to merge: its diagonal blocks hold
    # the inverse in progress (minus I), the blocks below them A's (one 64 x 64 tile live, not two).
    tl.static_assert(BT == 4 * BC)
    r = tl.arange(0, BT)
    ri = r[:, None]
    rj = r[None, :]
    diag = (ri // BC) == (rj // BC)
    half = (ri // (2 * BC)) == (rj // (2 * BC))
    x = tl.where(diag, -a, a)  # diagonal rows not yet reached hold -a (rows 0 and 1 of each block are final)
    for i in tl.range(2, BC):
        sel = ((ri % BC) == i) & diag
        row = tl.sum(tl.where(sel, x, 0.0), 0)  # the four rows' -a, each in its own block's columns
        row = row + tl.sum(row[:, None] * tl.where(diag, x, 0.0), 0)
        x = tl.where(sel, row[None, :], x)
    d = tl.where(diag, x, 0.0) + (ri == rj).to(tl.float32)  # the four diagonal blocks' inverses
    t = d - _mm(_mm(d, tl.where(half & ~diag, x, 0.0), DOT), d, DOT)  # 16 -> 32: A's blocks (1, 0), (3, 2)
    x = tl.where(half, t, x)  # the two 32 x 32 inverses beside A's lower-left 32 x 32
    t = tl.where(half, x, 0.0)
    return t - _mm(_mm(t, tl.where(half, 0.0, x), DOT), t, DOT)  # 32 -> 64


@triton.jit
def _kkt(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr,
         sc_ptr, gl_ptr, tb_ptr, cw_ptr, qs_ptr, ks_ptr, scale, N,
         H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
         BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # Two programs per (value head, chunk), neighbours (the second reads the q / k tiles from L2, as do the
    # head's other value heads): the first forms A, T = (I + A)^-1 and stores T diag(beta) (float32, [T, HV,
    # BT], a chunk's row i at its token) with the per-token scales W's Gamma / ||k|| and kd's
    # exp(gamma_C - gamma) / ||k|| (float32, [T, HV]) for _wu, and exp(gamma_C) at the chunk's first token;
    # the second forms the scores S (stored, upper zeros) and qg's scale scale Gamma / ||q||. Both from the
    # gates (gamma = cumulative log decay, beta) and Gram matrices of the raw bf16 rows (exact products,
    # float32 sums; chunk2's scheme) over BK-column pieces in a loop, scaled by the norms afterwards.
    # Split so that neither holds the other's 64 x 64 tiles (registers) and the S half overlaps the
    # inverse's latency on the same SM.
    hv = tl.program_id(0) // 2
    c = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    # token indices as int32 (cu_seqlens is int64): T * HV * max(K, V, BT) < 2^31 (T < 2M tokens here)
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    r = tl.arange(0, BT)
    rows = start + r
    valid = rows < end
    lrows = tl.minimum(rows, end - 1)  # rows to load: clamped, unmasked (see _piece)
    lg, beta = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV)
    g = tl.cumsum(lg, 0)  # non-increasing (every log decay <= 0); padding keeps the last value
    ri = r[:, None]
    rj = r[None, :]
    if tl.program_id(0) % 2 == 0:
        glast = tl.min(g, 0)
        tl.store(gl_ptr + start * HV + hv, tl.exp(glast))  # at the chunk's first token
        kk = tl.zeros([BT, BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK):
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            kk += _gram(kx, kx, DOT, BF16_DOT)
        nk = 1.0 / tl.sqrt(ssk + 1e-6)  # k^ = k / sqrt(sum k^2 + 1e-6), q^ likewise
        tl.store(cw_ptr + rows * HV + hv, tl.exp(g) * nk, mask=valid)
        tl.store(ks_ptr + rows * HV + hv, nk * tl.exp(glast - g), mask=valid)
        low = ri > rj
        # exponents gamma_i - gamma_j <= 0 where kept
        a = tl.where(low, (beta * nk)[:, None] * kk * nk[None, :] * tl.exp(tl.where(low, g[:, None] - g[None, :], 0.0)), 0.0)
        t = _inv(a, BT, BC, DOT)
        tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + rj, t * beta[None, :], mask=valid[:, None])
    else:
        qk = tl.zeros([BT, BT], dtype=tl.float32)
        ssq = tl.zeros([BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK):
            qx = _piece(q_ptr, lrows, h, kc, H, K, BK)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            qf = qx.to(tl.float32)
            kf = kx.to(tl.float32)
            ssq += tl.sum(qf * qf, 1)
            ssk += tl.sum(kf * kf, 1)
            qk += _gram(qx, kx, DOT, BF16_DOT)
        nk = 1.0 / tl.sqrt(ssk + 1e-6)
        sq = scale / tl.sqrt(ssq + 1e-6)
        tl.store(qs_ptr + rows * HV + hv, sq * tl.exp(g), mask=valid)
        incl = ri >= rj
        dec = tl.where(incl, tl.exp(tl.where(incl, g[:, None] - g[None, :], 0.0)), 0.0)
        _st(sc_ptr, qk * sq[:, None] * nk[None, :] * dec, rows, end, hv, 0, HV, BT, CPU)


@triton.jit
def _wu(q_ptr, k_ptr, v_ptr, cu_ptr, tb_ptr, cw_ptr, qs_ptr, ks_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, N,
        H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
        BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr):
    # Columns kc .. kc + BK of W = T diag(beta Gamma / ||k||) k, U = T diag(beta) v (K == V), the decayed
    # queries qg = scale Gamma q^ and keys kd = exp(gamma_C - gamma) k^ (chunk2's values): one program per
    # (column block, value head, chunk), a chunk-head's blocks neighbouring programs, T diag(beta) loaded
    # once. W and U: float32 operands at Triton's default precision (TF32 on the GPU), as chunk2's.
    kc = tl.program_id(0) * BK
    hv = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, tl.program_id(2), N, BT, BN)
    if n >= N:
        return
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    r = tl.arange(0, BT)
    rows = start + r
    lrows = tl.minimum(rows, end - 1)  # rows to load: clamped (tb's columns past the end are 0)
    tb = tl.load(tb_ptr + (rows[:, None] * HV + hv) * BT + r[None, :], mask=(rows < end)[:, None], other=0.0)
    kx = _piece(k_ptr, lrows, h, kc, H, K, BK).to(tl.float32)
    _st(kd_ptr, kx * tl.load(ks_ptr + lrows * HV + hv)[:, None], rows, end, hv, kc, HV, K, CPU)
    _st(w_ptr, _mm(tb * tl.load(cw_ptr + lrows * HV + hv)[None, :], kx, DOT), rows, end, hv, kc, HV, K, CPU)
    vx = _piece(v_ptr, lrows, hv, kc, HV, V, BK).to(tl.float32)
    _st(u_ptr, _mm(tb, vx, DOT), rows, end, hv, kc, HV, V, CPU)
    qx = _piece(q_ptr, lrows, h, kc, H, K, BK).to(tl.float32)
    _st(qg_ptr, qx * tl.load(qs_ptr + lrows * HV + hv)[:, None], rows, end, hv, kc, HV, K, CPU)


@triton.jit
def _st(ptr, x, rows, end, hv, col0, HV: tl.constexpr, W: tl.constexpr, CPU: tl.constexpr):
    # a [rows, n] tile into a [T, HV, W] bf16 buffer at columns col0.., rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * HV + hv) * W + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])



@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O False: triton_chunk's fused recurrence + output, unchanged
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // HV
    hv = pid_nh % HV
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    # M = state[n, hv]^T restricted to these V columns: [K, BV], float32 for the whole sequence
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        tv = (rows[:, None] * HV + hv) * V + ov[None, :]
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        qg = tl.load(qg_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:
            # The interpreter's tl.dot multiplies bf16 storage bits as numbers, and skips BLAS:
            # bf16 values in fp32, products as broadcast sums (the state and the new values
            # stay fp32 here, a little more precise than the GPU's bf16 operands).
            w, qg, kd, sc = w.to(tl.float32), qg.to(tl.float32), kd.to(tl.float32), sc.to(tl.float32)
            delta = u - tl.sum(w[:, :, None] * m[None, :, :], axis=1)
            o = tl.sum(qg[:, :, None] * m[None, :, :], axis=1) + tl.sum(sc[:, :, None] * delta[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kd[:, :, None] * delta[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            delta = u - tl.dot(w, mb)
            db = delta.to(tl.bfloat16)
            o = tl.dot(qg, mb) + tl.dot(sc, db)
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.dot(tl.trans(kd), db)
    tl.store(ns_ptr + st, m)


@triton.jit
def _hstate(s_ptr, cu_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, hs_ptr, dn_ptr, ns_ptr,
            HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
            STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O True: the recurrence alone, two products per chunk. Stores, per chunk, the state
    # before it (bf16, [C, HV, K, V]: the operand the output's q-product takes) and delta = U - W M
    # (bf16, [T, HV, V]) for _out. Scratch chunk index of a sequence's j-th chunk: bos // BT + n + j,
    # unique and < cdiv(T, BT) + N (the chunk grid's size; kda's triton_intra3 has the argument)
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // HV
    hv = pid_nh % HV
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, hv]^T on these V columns: [K, BV], float32 throughout
    hoff = ok[:, None] * V + ov[None, :]  # within one (chunk, head) [K, V] block
    c0 = bos // BT + n
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        tv = (rows[:, None] * HV + hv) * V + ov[None, :]
        hb = ((c0 + (cs - bos) // BT) * HV + hv).to(tl.int64) * (K * V)
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds
            w, kd = w.to(tl.float32), kd.to(tl.float32)
            mb = _rne_bf16(m)
            tl.store(hs_ptr + hb + hoff, mb.to(tl.bfloat16))
            db = _rne_bf16(u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1))
            tl.store(dn_ptr + tv, db.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kd[:, :, None] * db[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            tl.store(hs_ptr + hb + hoff, mb)
            db = (u - tl.dot(w, mb)).to(tl.bfloat16)
            tl.store(dn_ptr + tv, db, mask=valid)
            m = tl.dot(tl.trans(kd), db, gl * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _out(cu_ptr, qg_ptr, sc_ptr, hs_ptr, dn_ptr, o_ptr, N,
         HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, CPU: tl.constexpr):
    # o = qg M_c + S delta per (V block, chunk, value head), every chunk in parallel; the V blocks of
    # one chunk are neighbouring programs (qg and S from L2 for the second)
    hv = tl.program_id(2)
    n, start, end = _locate(cu_ptr, tl.program_id(1), N, BT, BN)
    if n >= N:
        return
    ok = tl.arange(0, K)
    ov = tl.program_id(0) * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = (rows < end)[:, None]
    hb = ((start // BT + n) * HV + hv).to(tl.int64) * (K * V)
    tv = (rows[:, None] * HV + hv) * V + ov[None, :]
    qg = tl.load(qg_ptr + (rows[:, None] * HV + hv) * K + ok[None, :], mask=valid, other=0.0)
    sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
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
    HV, V = v.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    dot = not cpu or CONFIG["DOT_PATH_ON_CPU"]
    out = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    w = torch.empty((T, HV, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, HV, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, HV), dtype=torch.float32, device=dev)
    tb = torch.empty((T, HV, BT), dtype=torch.float32, device=dev)  # T diag(beta), a chunk's row i at its token
    cw = torch.empty((T, HV), dtype=torch.float32, device=dev)  # W's column scale Gamma / ||k||
    qs = torch.empty_like(cw)  # qg's row scale: scale Gamma / ||q||
    ks = torch.empty_like(cw)  # kd's row scale: exp(gamma_C - gamma) / ||k||
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    _kkt[(2 * HV, nc)](
        q, k, A_log, a, dt_bias, b, cu_seqlens, sc, gl, tb, cw, qs, ks, float(scale), N,
        H=H, HV=HV, K=K, BT=BT, BC=BC, BK=min(CONFIG["KKT_BK"], K) if dot else K, BN=bn, CPU=cpu, DOT=dot,
        BF16_DOT=not cpu, num_warps=CONFIG["KKT_WARPS"],
        **({"maxnreg": CONFIG["KKT_MAXNREG"]} if CONFIG["KKT_MAXNREG"] and not cpu else {}),
    )
    assert K == V, "_wu forms W's and U's columns in one program"
    wbk = min(CONFIG["WU_BK"], K) if dot else K  # the interpreter's cost is per program and op
    _wu[(K // wbk, HV, nc)](
        q, k, v, cu_seqlens, tb, cw, qs, ks, w, u, qg, kd, N,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=wbk, BN=bn, CPU=cpu, DOT=dot, num_warps=CONFIG["WU_WARPS"],
    )
    split = CONFIG["SCAN_SPLIT_O"]
    bv = CONFIG["BV"]
    nh = N * HV
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        if split:  # _hstate fits 2-3 blocks per SM: BV 8 gives one sequence 128 programs, two 256
            bv = 8 if nh <= 16 else 16 if nh <= 32 else 32 if nh <= 64 else 64
        else:  # _scan: one block per SM (~120 KiB shared); BV 8 gives one sequence 128 programs
            bv = 8 if nh <= 8 else 16 if nh <= 64 else 32 if nh <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    if not split:
        _scan[(triton.cdiv(V, bv), nh)](
            state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
            HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
        )
        return out, new_state
    hs = torch.empty((nc, HV, K, V), dtype=torch.bfloat16, device=dev)  # state before each chunk
    dn = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)  # delta = U - W M
    _hstate[(triton.cdiv(V, bv), nh)](
        state, cu_seqlens, w, u, kd, gl, hs, dn, new_state,
        HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    obv = V if cpu else min(CONFIG["OUT_BV"], V)
    _out[(triton.cdiv(V, obv), nc, HV)](cu_seqlens, qg, sc, hs, dn, out, N, HV=HV, K=K, V=V, BT=BT, BV=obv,
                                         BN=bn, CPU=cpu, num_warps=CONFIG["OUT_WARPS"])
    return out, new_state
