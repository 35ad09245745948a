"""Chunked gated delta rule prefill: solutions/triton_chunk.py with a one-kernel blocked `_prep` and the
scan's output split into its own kernel (`_prep`, `_hstate`, `_out`; CONFIG["SCAN_SPLIT_O"] = False keeps
triton_chunk's fused `_scan` instead of the last two). Outputs, layouts, dtypes and the entry point are
triton_chunk's; so is the math (its docstring has the WY / UT form).

Why (H200, 2026-12-02, `scripts/gdn_prefill_split.py`, device us per call):
    tokens x seqs   _prep   _scan   FLA total (state pass fwd_h / output fwd_o / kkt+solve+wu+gates)
    8192 x 1          206     227   252 (154 / 37 / 61)
    4096 x 4          106      62    87 (24 / 20 / 43)
    4096 x 32         102      51   115 (48 / 20 / 46)
triton_chunk's `_prep` ran at 255 registers with 66 spilled (ptxas here: 708-772 bytes a thread), one block
per SM, latency-bound: a dozen live 64 x 64 float32 tiles (six dense 64^3 recursive-doubling levels).
Its `_scan` does four products per chunk in the serial loop (FLA's state pass two, the outputs in a
parallel kernel), 120 KiB of shared memory a block, and at 8192 x 1 only 64 programs for 132 SMs.
candidates/triton_split2.py's cheaper inverse cost a third pass (T stored and re-read).

What changed:
1. `_prep`, still one program per (chunk, value head) and one pass, is a sweep over the chunk's four
   16-row blocks I. Row I: the Gram blocks k_I k_J^T and q_I k_J^T (J <= I) of the raw bf16 rows (exact
   products, float32 sums; triton_split2's scheme) in a loop over K pieces of CONFIG["PREP_BK"], the row
   norms from the same loads; A's and S's row I (decay, beta, causal masks on the 16 x 16 blocks; S's
   upper blocks stored as zeros); T_II by triton_split2's forward substitution, T_IJ = -T_II sum_{J<=L<I}
   A_IL T_LJ (the same blocked inverse as its 16 -> 32 -> 64 merges, in row order, sixteen 16^3
   products); then W_I = sum_J T_IJ diag(beta Gamma / ||k||)_J k_J and U_I = sum_J T_IJ diag(beta)_J v_J
   (the column scales folded into the 16 x 16 blocks, k_J / v_J reloaded raw from L1 / L2, K pieces in a
   loop, float32 products at Triton's default precision as triton_chunk's W and U), qg_I and kd_I, all
   stored as formed. No 64 x 64 tile exists; the live state is T's lower blocks, one row of A and
   16 x BK pieces. Rows are loaded clamped to the sequence's last token, unmasked (masked loads' zero
   fills were hoisted by ptxas and held for the whole kernel); the duplicated rows past the end have
   beta = 0 and are never stored. Token indices are int32 (T * HV * 128 < 2^31: T < 2M tokens).
2. `_hstate` + `_out` (SCAN_SPLIT_O, the default), as kda_prefill's triton_intra3: the recurrence alone with
   two products per chunk, storing each chunk's incoming state (bf16, [cdiv(T, 64) + N, HV, K, V]; a
   sequence's j-th chunk at bos // 64 + n + j) and delta = U - W M (bf16, [T, HV, V]), the exact bf16
   operands the fused scan fed its output products; `_out` forms o = qg M_c + S delta per (V block of
   CONFIG["OUT_BV"], chunk, value head), every chunk in parallel. The state stays float32 in registers,
   so new_state is formed as before (on the GPU; the CPU branch of the fused scan keeps the state and
   delta float32 where the split one rounds them as the GPU does, hence its larger CPU errors below).
3. BV (CONFIG["BV"] = 0) from N x heads, now down to 8 (tl.dot takes N = 8 on sm_90): split path 8 up to
   N * HV = 16 (one sequence: 8 heads x 16 = 128 programs), 16 up to 32, 32 up to 64, then 64 (`_hstate`
   fits 2-3 blocks per SM); fused path 8 at N * HV = 8 (128 programs), then triton_chunk's rule.
   SCAN_STAGES 1 is not offered (Triton 3.6 miscompiles that one-stage loop on sm_90, AGENTS.md).

Registers and spills for sm_90 (Triton 3.9's ptxas, no GPU: `PYTHONPATH=src python scripts/triton_regs.py
tasks/gdn_prefill <file> --axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,
num_v_heads=8,head_size=128` and likewise 4096 x 4, 4096 x 32; 2026-12-06):
                  warps  registers  spills (st / ld bytes)  shared            blocks/SM by regs+smem
    triton_chunk
      _prep           8        255  708-772 / 720-784       96.3 KiB          1
      _scan           4    80 / 123       0                 120 / 128 KiB     1 (BV 16 / 32)
    this file
      _prep           4        255  44-48 / 48-56           8 KiB             2 (8 warps: 255, 12 / 12 B)
      _hstate         4   64-80 / 244     0                 69-72 / 96 KiB    3 / 2 (BV 8-16 / 64)
      _out            4      62-74        0                 48 KiB            4
      _scan (fused)   4         64        0                 116 KiB           1 (BV 8, 8192 x 1)
The register aim for `_prep` (no spills, <= 168: 3 blocks of 4 warps) is not met. Where they go
(`nvdisasm -plr` life ranges on cut-down variants): each M = 16 product's A operand is held whole by every
warp and 16 x 16 tiles are replicated across warp pairs, so the cost does not fall with more warps; the
W / U products alone take ~45-55 registers (a micro-kernel of one row's W loop), and under them sit T's
blocks, the gate / norm vectors in two or three layouts each, and the grams' unrolled pieces. Variants
tried (all 255 registers): full 16 x 128 tiles, no K loop: 200-240 B spilled; K loop at BK 32 / 64:
60-290 B; one loop for both Grams: 60-200 B; W / U after all of T: 150-260 B; unpipelined loops: 60-180
B; capped at 168 (maxnreg): 640-1,200 B. Without the W / U products the kernel takes 132 registers.

CPU check (Triton 3.9 interpreter, 2026-12-06; max |error| against the definition's float64 reference,
output / new_state; task shapes, 4 q/k and 8 value heads; empty sequences keep their state bit for bit):
    lengths (decay)                    triton_chunk       this, split         this, fused
    0, 3, 70                           9.0e-4 / 3.1e-3    9.0e-4 / 4.8e-3     9.0e-4 / 3.1e-3
    130                                1.2e-3 / 4.6e-3    1.2e-3 / 6.4e-3     1.2e-3 / 4.6e-3
    1, 63, 64, 65, 0, 130              1.1e-3 / 4.8e-3    1.4e-3 / 5.2e-3     1.1e-3 / 4.8e-3
    1, 63, 64, 65, 0, 130 (~exp(-49))  3.5e-4 / 3.6e-3    3.5e-4 / 3.6e-3     3.5e-4 / 3.6e-3
    70 (~exp(-49))                     3.0e-4 / 1.5e-3    3.0e-4 / 1.5e-3     3.0e-4 / 1.5e-3
Against triton_chunk the fused path differs by <= 2.4e-4 / 6.5e-4 (bf16 rounding of W, U, S, qg, kd
formed in another order), the split path by <= 2.0e-3 / 2.4e-3 (its bf16 state and delta). With
CONFIG["DOT_PATH_ON_CPU"] (`_prep`'s tl.dot code on float32 operands, BK 32: a four-piece K loop) the
results match the broadcast path to 2.4e-4 / 1.3e-6 on 0, 3, 70 and exactly on
~exp(-49) decays over 1, 63, 64, 65, 0, 130. `kernelcraft eval` on a small copy of the
task (sequences 0, 3, 70; `--device cpu --no-timing`): PASSED, worst error 7.8e-3 (triton_chunk 3.9e-3
on its CPU eval). In the interpreter a call is ~5x triton_chunk's (the forward substitution and the many
16 x 16 block ops: its cost is per op). Not compiled for or run on a GPU beyond ptxas: what it gains there
is unmeasured. Memory: the split path adds the bf16 state scratch (34 MB each way at 8192 x 1) and delta
(17 MB each way); `_prep` reloads k and v tiles from L1 / L2: 56 loads of a 16 x 128 tile a program
against triton_chunk's 12 (the same DRAM traffic if they hit).

On CPU (the Triton interpreter, whose tl.dot multiplies bf16 storage bits and skips BLAS) products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as triton_chunk.
"""
import torch
import triton
import triton.language as tl

# SCAN_STAGES 1 is left out: Triton 3.6 miscompiles the scan loop's one-stage pipeline on sm_90 (an
# out-of-bounds shared read, AGENTS.md); _hstate has the same loop shape, so it is left out there too.
TUNABLES = {"BV": [8, 16, 32, 64], "PREP_WARPS": [2, 4, 8], "PREP_BK": [16, 32, 64, 128], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [2, 3],
            "SCAN_SPLIT_O": [True, False], "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8]}
CONFIG = {'BV': 0, 'PREP_WARPS': 4, 'PREP_BK': 128, 'SCAN_WARPS': 4, 'SCAN_STAGES': 2, 'SCAN_SPLIT_O': False, 'OUT_BV': 64, 'OUT_WARPS': 4, 'DOT_PATH_ON_CPU': False}

BT = 64  # chunk size
BC = 16  # sub-chunk: the inverse's diagonal blocks, _prep's row blocks


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
def _piece(x_ptr, lrows, h, kc, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    # columns kc .. kc + BK of a sub-chunk's rows of q, k or v as stored (bf16). lrows are the rows clamped
    # to the sequence's last token: no mask (a masked load's zero fill costs registers that ptxas keeps
    # live from far ahead), and the duplicated rows past the end never reach a stored value (their
    # beta is 0, so their A rows and W / U columns vanish; their own rows are not stored)
    oc = kc + tl.arange(0, BK)
    return tl.load(x_ptr + (lrows[:, None] * H + h) * K + oc[None, :])


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
def _mma(x, y, acc, DOT: tl.constexpr):
    # acc + x @ y on float32 operands
    if DOT:
        r = tl.dot(x, y, acc)
    else:
        r = acc + tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    return r


@triton.jit
def _grams(x_ptr, k_ptr, ri, r0, r1, r2, r3, h, I: tl.constexpr, H: tl.constexpr, K: tl.constexpr,
           BK: tl.constexpr, BC: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # row block I's Gram blocks x_I k_J^T (J <= I; the others stay 0; x = k for A, q for S) of the raw
    # bf16 rows (exact products, float32 sums) and the rows' sums of squares of x. K is taken in
    # BK-wide pieces in a loop: an M = 16 product's A operand is held whole by every warp (a 16 x K bf16
    # tile is 32 registers a thread). A's and S's Grams are separate loops: half the accumulators live.
    g0 = tl.zeros([BC, BC], dtype=tl.float32)
    g1 = tl.zeros([BC, BC], dtype=tl.float32)
    g2 = tl.zeros([BC, BC], dtype=tl.float32)
    g3 = tl.zeros([BC, BC], dtype=tl.float32)
    ss = tl.zeros([BC], dtype=tl.float32)
    for kc in tl.range(0, K, BK):
        xi = _piece(x_ptr, ri, h, kc, H, K, BK)
        xf = xi.to(tl.float32)
        ss += tl.sum(xf * xf, axis=1)
        g0 += _gram(xi, _piece(k_ptr, r0, h, kc, H, K, BK), DOT, BF16_DOT)
        if I >= 1:
            g1 += _gram(xi, _piece(k_ptr, r1, h, kc, H, K, BK), DOT, BF16_DOT)
        if I >= 2:
            g2 += _gram(xi, _piece(k_ptr, r2, h, kc, H, K, BK), DOT, BF16_DOT)
        if I >= 3:
            g3 += _gram(xi, _piece(k_ptr, r3, h, kc, H, K, BK), DOT, BF16_DOT)
    return g0, g1, g2, g3, ss


@triton.jit
def _blk(kk, qk, ni, si, nj, bi, gi, gj, DIAG: tl.constexpr, BC: tl.constexpr):
    # block (I, J) of A = beta_i exp(gamma_i - gamma_j) k^_i.k^_j (strictly lower on the diagonal) and of
    # the scores S = scale exp(gamma_i - gamma_j) q^_i.k^_j (lower, diagonal included), from the raw
    # Gram blocks: ni, nj the rows' 1 / ||k||, si = scale / ||q_i||. Off the diagonal i > j: exponents <= 0.
    kk = kk * ni[:, None] * nj[None, :]
    qk = qk * si[:, None] * nj[None, :]
    if DIAG:
        r = tl.arange(0, BC)
        incl = r[:, None] >= r[None, :]
        dec = tl.where(incl, tl.exp(tl.where(incl, gi[:, None] - gj[None, :], 0.0)), 0.0)
        a = tl.where(r[:, None] > r[None, :], bi[:, None] * kk * dec, 0.0)
    else:
        dec = tl.exp(gi[:, None] - gj[None, :])
        a = bi[:, None] * kk * dec
    return a, qk * dec


@triton.jit
def _inv_diag(a, BC: tl.constexpr):
    # (I + a)^-1 for strictly lower a by forward substitution (triton_split2's): row i of T - I is
    # -a_i - sum_{j<i} a_ij (T - I)_j; rows not yet reached hold -a (rows 0 and 1 already final)
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
def _st(ptr, x, rows, end, hv, col0, HV: tl.constexpr, W: tl.constexpr, CPU: tl.constexpr):
    # a [16, n] tile into a [T, HV, W] bf16 buffer at columns col0.., rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * HV + hv) * W + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])


@triton.jit
def _row_wu(o_ptr, x_ptr, ri, r0, r1, r2, r3, end, h, hv, t0, t1, t2, t3, c0, c1, c2, c3, I: tl.constexpr,
            H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BK: tl.constexpr, DOT: tl.constexpr,
            CPU: tl.constexpr):
    # row block I of W = sum_J T_IJ diag(beta_j Gamma_j / ||k_j||) k_J (x = k, c = beta Gamma / ||k||) or of
    # U = sum_J T_IJ diag(beta_j) v_J (x = v, c = beta), stored: the column scales fold into the 16 x 16
    # blocks, the raw tiles are (re)loaded (L1 / L2) BK columns at a time in a loop
    p0 = t0 * c0[None, :]
    p1 = t1 * c1[None, :]
    p2 = t2 * c2[None, :]
    p3 = t3 * c3[None, :]
    for kc in tl.range(0, K, BK):
        acc = _mm(p0, _piece(x_ptr, r0, h, kc, H, K, BK).to(tl.float32), DOT)
        if I >= 1:
            acc = _mma(p1, _piece(x_ptr, r1, h, kc, H, K, BK).to(tl.float32), acc, DOT)
        if I >= 2:
            acc = _mma(p2, _piece(x_ptr, r2, h, kc, H, K, BK).to(tl.float32), acc, DOT)
        if I >= 3:
            acc = _mma(p3, _piece(x_ptr, r3, h, kc, H, K, BK).to(tl.float32), acc, DOT)
        _st(o_ptr, acc, ri, end, hv, kc, HV, K, CPU)


@triton.jit
def _row_qk(q_ptr, k_ptr, qg_ptr, kd_ptr, ri, li, end, h, hv, qs, ks, H: tl.constexpr, HV: tl.constexpr,
            K: tl.constexpr, BK: tl.constexpr, CPU: tl.constexpr):
    # row block I's decayed queries scale Gamma q^ (qs = scale Gamma / ||q||) and decayed keys
    # exp(gamma_C - gamma) k^ (ks = exp(gamma_C - gamma) / ||k||)
    for kc in tl.range(0, K, BK):
        _st(qg_ptr, _piece(q_ptr, li, h, kc, H, K, BK).to(tl.float32) * qs[:, None], ri, end, hv, kc, HV, K, CPU)
        _st(kd_ptr, _piece(k_ptr, li, h, kc, H, K, BK).to(tl.float32) * ks[:, None], ri, end, hv, kc, HV, K, CPU)


@triton.jit
def _prep(q_ptr, k_ptr, v_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr,
          w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, scale, N,
          H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
          BC: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr,
          BF16_DOT: tl.constexpr):
    # One program per (chunk, value head), a sweep over the chunk's four 16-row blocks I: A's row I
    # and S's row I (16 x 16 blocks from the raw q / k tiles), T's row I by block forward substitution
    # (T_II by rows, T_IJ = -T_II sum_{J<=L<I} A_IL T_LJ), then W_I, U_I, qg_I, kd_I stored. Only T's
    # lower blocks (10 x 16 x 16 float32), one row of A and one 16 x K accumulator pair stay live.
    tl.static_assert(BT == 4 * BC)
    c = tl.program_id(0)
    hv = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    # token indices as int32 (cu_seqlens is int64): half the address arithmetic and registers; offsets
    # stay below 2^31 for T * HV * max(K, V, BT) < 2^31 (T < 2M tokens here)
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    rc = tl.arange(0, BC)
    r0 = start + rc
    r1 = start + BC + rc
    r2 = start + 2 * BC + rc
    r3 = start + 3 * BC + rc
    x0 = tl.minimum(r0, end - 1)  # rows to load: clamped, unmasked (see _piece)
    x1 = tl.minimum(r1, end - 1)
    x2 = tl.minimum(r2, end - 1)
    x3 = tl.minimum(r3, end - 1)
    # gates first (gamma of the whole chunk: kd needs its last value). gamma non-increasing exactly:
    # each sub-chunk continues from the previous one's last (minimum); padding keeps the last value
    l0, b0 = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, r0, end, hv, HV)
    l1, b1 = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, r1, end, hv, HV)
    l2, b2 = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, r2, end, hv, HV)
    l3, b3 = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, r3, end, hv, HV)
    g0 = tl.cumsum(l0, 0)
    g1 = tl.cumsum(l1, 0) + tl.min(g0, 0)
    g2 = tl.cumsum(l2, 0) + tl.min(g1, 0)
    g3 = tl.cumsum(l3, 0) + tl.min(g2, 0)
    glast = tl.min(g3, 0)
    tl.store(gl_ptr + start * HV + hv, tl.exp(glast))  # at the chunk's first token
    zero = tl.zeros([BC, BC], dtype=tl.float32)

    # row 0
    kk0, kk1, kk2, kk3, ssk = _grams(k_ptr, k_ptr, x0, x0, x1, x2, x3, h, 0, H, K, BK, BC, DOT, BF16_DOT)
    qk0, qk1, qk2, qk3, ssq = _grams(q_ptr, k_ptr, x0, x0, x1, x2, x3, h, 0, H, K, BK, BC, DOT, BF16_DOT)
    n0 = 1.0 / tl.sqrt(ssk + 1e-6)  # q^ = q / sqrt(sum q^2 + 1e-6), k^ likewise
    s0 = scale / tl.sqrt(ssq + 1e-6)
    _row_qk(q_ptr, k_ptr, qg_ptr, kd_ptr, r0, x0, end, h, hv, s0 * tl.exp(g0), n0 * tl.exp(glast - g0), H, HV, K, BK, CPU)
    a00, c = _blk(kk0, qk0, n0, s0, n0, b0, g0, g0, True, BC)
    _st(sc_ptr, c, r0, end, hv, 0 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r0, end, hv, 1 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r0, end, hv, 2 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r0, end, hv, 3 * BC, HV, BT, CPU)
    t00 = _inv_diag(a00, BC)
    cs0 = b0 * tl.exp(g0) * n0  # W's column scale: beta Gamma / ||k||
    _row_wu(w_ptr, k_ptr, r0, x0, x1, x2, x3, end, h, hv, t00, zero, zero, zero, cs0, cs0, cs0, cs0, 0, H, HV, K, BK, DOT, CPU)
    _row_wu(u_ptr, v_ptr, r0, x0, x1, x2, x3, end, hv, hv, t00, zero, zero, zero, b0, b0, b0, b0, 0, HV, HV, V, BK, DOT, CPU)

    # row 1
    kk0, kk1, kk2, kk3, ssk = _grams(k_ptr, k_ptr, x1, x0, x1, x2, x3, h, 1, H, K, BK, BC, DOT, BF16_DOT)
    qk0, qk1, qk2, qk3, ssq = _grams(q_ptr, k_ptr, x1, x0, x1, x2, x3, h, 1, H, K, BK, BC, DOT, BF16_DOT)
    n1 = 1.0 / tl.sqrt(ssk + 1e-6)
    s1 = scale / tl.sqrt(ssq + 1e-6)
    _row_qk(q_ptr, k_ptr, qg_ptr, kd_ptr, r1, x1, end, h, hv, s1 * tl.exp(g1), n1 * tl.exp(glast - g1), H, HV, K, BK, CPU)
    a10, c = _blk(kk0, qk0, n1, s1, n0, b1, g1, g0, False, BC)
    _st(sc_ptr, c, r1, end, hv, 0 * BC, HV, BT, CPU)
    a11, c = _blk(kk1, qk1, n1, s1, n1, b1, g1, g1, True, BC)
    _st(sc_ptr, c, r1, end, hv, 1 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r1, end, hv, 2 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r1, end, hv, 3 * BC, HV, BT, CPU)
    t11 = _inv_diag(a11, BC)
    t10 = -_mm(t11, _mm(a10, t00, DOT), DOT)
    cs1 = b1 * tl.exp(g1) * n1
    _row_wu(w_ptr, k_ptr, r1, x0, x1, x2, x3, end, h, hv, t10, t11, zero, zero, cs0, cs1, cs0, cs0, 1, H, HV, K, BK, DOT, CPU)
    _row_wu(u_ptr, v_ptr, r1, x0, x1, x2, x3, end, hv, hv, t10, t11, zero, zero, b0, b1, b0, b0, 1, HV, HV, V, BK, DOT, CPU)

    # row 2
    kk0, kk1, kk2, kk3, ssk = _grams(k_ptr, k_ptr, x2, x0, x1, x2, x3, h, 2, H, K, BK, BC, DOT, BF16_DOT)
    qk0, qk1, qk2, qk3, ssq = _grams(q_ptr, k_ptr, x2, x0, x1, x2, x3, h, 2, H, K, BK, BC, DOT, BF16_DOT)
    n2 = 1.0 / tl.sqrt(ssk + 1e-6)
    s2 = scale / tl.sqrt(ssq + 1e-6)
    _row_qk(q_ptr, k_ptr, qg_ptr, kd_ptr, r2, x2, end, h, hv, s2 * tl.exp(g2), n2 * tl.exp(glast - g2), H, HV, K, BK, CPU)
    a20, c = _blk(kk0, qk0, n2, s2, n0, b2, g2, g0, False, BC)
    _st(sc_ptr, c, r2, end, hv, 0 * BC, HV, BT, CPU)
    a21, c = _blk(kk1, qk1, n2, s2, n1, b2, g2, g1, False, BC)
    _st(sc_ptr, c, r2, end, hv, 1 * BC, HV, BT, CPU)
    a22, c = _blk(kk2, qk2, n2, s2, n2, b2, g2, g2, True, BC)
    _st(sc_ptr, c, r2, end, hv, 2 * BC, HV, BT, CPU)
    _st(sc_ptr, zero, r2, end, hv, 3 * BC, HV, BT, CPU)
    t22 = _inv_diag(a22, BC)
    t21 = -_mm(t22, _mm(a21, t11, DOT), DOT)
    t20 = -_mm(t22, _mma(a21, t10, _mm(a20, t00, DOT), DOT), DOT)
    cs2 = b2 * tl.exp(g2) * n2
    _row_wu(w_ptr, k_ptr, r2, x0, x1, x2, x3, end, h, hv, t20, t21, t22, zero, cs0, cs1, cs2, cs0, 2, H, HV, K, BK, DOT, CPU)
    _row_wu(u_ptr, v_ptr, r2, x0, x1, x2, x3, end, hv, hv, t20, t21, t22, zero, b0, b1, b2, b0, 2, HV, HV, V, BK, DOT, CPU)

    # row 3
    kk0, kk1, kk2, kk3, ssk = _grams(k_ptr, k_ptr, x3, x0, x1, x2, x3, h, 3, H, K, BK, BC, DOT, BF16_DOT)
    qk0, qk1, qk2, qk3, ssq = _grams(q_ptr, k_ptr, x3, x0, x1, x2, x3, h, 3, H, K, BK, BC, DOT, BF16_DOT)
    n3 = 1.0 / tl.sqrt(ssk + 1e-6)
    s3 = scale / tl.sqrt(ssq + 1e-6)
    _row_qk(q_ptr, k_ptr, qg_ptr, kd_ptr, r3, x3, end, h, hv, s3 * tl.exp(g3), n3 * tl.exp(glast - g3), H, HV, K, BK, CPU)
    a30, c = _blk(kk0, qk0, n3, s3, n0, b3, g3, g0, False, BC)
    _st(sc_ptr, c, r3, end, hv, 0 * BC, HV, BT, CPU)
    a31, c = _blk(kk1, qk1, n3, s3, n1, b3, g3, g1, False, BC)
    _st(sc_ptr, c, r3, end, hv, 1 * BC, HV, BT, CPU)
    a32, c = _blk(kk2, qk2, n3, s3, n2, b3, g3, g2, False, BC)
    _st(sc_ptr, c, r3, end, hv, 2 * BC, HV, BT, CPU)
    a33, c = _blk(kk3, qk3, n3, s3, n3, b3, g3, g3, True, BC)
    _st(sc_ptr, c, r3, end, hv, 3 * BC, HV, BT, CPU)
    t33 = _inv_diag(a33, BC)
    t32 = -_mm(t33, _mm(a32, t22, DOT), DOT)
    t31 = -_mm(t33, _mma(a32, t21, _mm(a31, t11, DOT), DOT), DOT)
    t30 = -_mm(t33, _mma(a32, t20, _mma(a31, t10, _mm(a30, t00, DOT), DOT), DOT), DOT)
    cs3 = b3 * tl.exp(g3) * n3
    _row_wu(w_ptr, k_ptr, r3, x0, x1, x2, x3, end, h, hv, t30, t31, t32, t33, cs0, cs1, cs2, cs3, 3, H, HV, K, BK, DOT, CPU)
    _row_wu(u_ptr, v_ptr, r3, x0, x1, x2, x3, end, hv, hv, t30, t31, t32, t33, b0, b1, b2, b3, 3, HV, HV, V, BK, DOT, CPU)


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
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    _prep[(nc, HV)](
        q, k, v, A_log, a, dt_bias, b, cu_seqlens, w, u, qg, kd, sc, gl, float(scale), N,
        H=H, HV=HV, K=K, V=V, BT=BT, BC=BC, BK=K if not dot else min(CONFIG["PREP_BK"], K), BN=bn, CPU=cpu,
        DOT=dot, BF16_DOT=not cpu,
        num_warps=CONFIG["PREP_WARPS"],
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
