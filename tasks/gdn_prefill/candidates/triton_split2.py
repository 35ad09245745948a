"""Chunked gated delta rule prefill in three Triton kernels: candidates/triton_split.py with `_kkt_inv`'s
register pressure cut (2026-12-03).

triton_split.py's `_kkt_inv`, compiled for sm_90 (`scripts/kda_prefill_regs.py`-style ptxas report, no GPU
needed), runs at 255 registers with 1,420 bytes a thread spilled (4 warps, 8192 tokens): its four 16 x K key
tiles are float32 (normalised) and stay live in two dot-operand layouts each while the ten blocks of A are formed
between the inversions. Here (everything else is triton_split's, bit for bit):
* A's blocks are all formed before the first inversion, so the key tiles die early;
* the key tiles stay bf16 as loaded: each Gram block is a bf16 tl.dot of the raw keys (exact products, float32
  sums: more exact than triton_split's tf32 product of normalised float32 keys) scaled by the rows' 1 / norm
  afterwards (the same normalisation, applied to the 16 x 16 block instead of the 16 x 128 tile).
Spills fall to 76 bytes a thread at 4 warps (24 at 8); on CPU (interpreter) its errors against the float64
reference equal triton_split's to three digits on [0, 3, 70], [130] and strong decays over [1, 63, 64, 65, 0,
130] and [70]. The interpreter's tl.dot is wrong on bf16 operands, so with CONFIG["DOT_PATH_ON_CPU"] the Gram is
a float32 dot (BF16_DOT is off on CPU).

triton_split's description follows.

Chunked gated delta rule prefill in three Triton kernels (chunk 64, WY / UT form, split prep).

The math is solutions/triton_chunk.py's. Within a chunk of C = 64 tokens with cumulative log
decays gamma and Gamma = exp(gamma), the state M (K x V, one V-block of it) advances as
    Delta = U - W M                              (the chunk's new values)
    O     = (scale Gamma Q) M + S Delta          (S: scale exp(gamma_i - gamma_j) q_i.k_j, j <= i)
    M     = Gamma_C M + (exp(gamma_C - gamma) K)^T Delta
with W = (I + A)^-1 diag(beta Gamma) K, U = (I + A)^-1 diag(beta) V and
A_ij = beta_i exp(gamma_i - gamma_j) k_i.k_j for j < i. Every exponent is gamma_i - gamma_j <= 0
or gamma itself: nothing overflows, however strong the decay.

Why a split: on the H200 (Nsight Compute, workloads 4096 x 4 and 8192 x 1) triton_chunk's `_prep`
runs at 255 registers per thread with 66 spilled (36-72 MB of local-memory traffic), one block per
SM, 12.5% achieved occupancy, latency-bound (`mio_throttle`): one program holds a dozen live
64 x 64 float32 tiles (A, the recursive-doubling inverse with six levels of dense 64^3 products,
the decays, W, U, S, the decayed q and k). `_scan` holds 120 KiB of shared memory per block at
SCAN_STAGES 2, so one block per SM. Here:

1. `_kkt_inv`, one program per (chunk, value head), the chunk's sequence found from cu_seqlens on
   the device as `_prep` does (no host sync): l2-normalised k, gate and beta per 16-token
   sub-chunk, gamma (each sub-chunk's cumulative sum plus the previous sub-chunk's last gamma, so
   gamma is non-increasing exactly), the ten non-zero 16 x 16 blocks of A (four strictly lower
   diagonal ones, six below them: 16 x K by K x 16 products) and T = (I + A)^-1 by blocks: each
   diagonal block inverted by forward substitution (float32, one row at a time), merged 16 -> 32
   (T21 = -T22 A21 T11) and 32 -> 64 (the lower 32 x 32 block -T_b A_ba T_a as 16 x 16 tile
   products): sixteen 16^3 products instead of twelve dense 64^3 ones over mostly-zero blocks, and
   no 64 x 64 tile live at all (the largest are the four 16 x K key tiles). Stores T's lower
   blocks (float32, [T, HV, 64] rows like `sc`) and gamma (float32, [T, HV]).
2. `_wu`, same grid: loads T, gamma, q, k, v, b; W, U, the scores S (causal decay and scale), the
   decayed q and k and exp(gamma_C), stored in `_scan`'s layouts and dtypes (bf16; gamma_C float32
   at the chunk's first token), each stored as soon as it is formed so few tiles are live at once.
3. `_scan`: triton_chunk's, unchanged (one program per sequence, value head and BV columns, the
   state in float32 registers, four bf16 products per chunk, outputs written as they come), with
   SCAN_STAGES 1 by default (half the shared memory: two blocks per SM).

The extra traffic is T (256 bytes per token and value head, written once, read once) and gamma.
On CPU (the Triton interpreter) products are broadcast sums (the interpreter's tl.dot multiplies
bf16 storage bits and skips BLAS) and bf16 stores round to nearest (`_rne_bf16`), as triton_chunk.
CONFIG["DOT_PATH_ON_CPU"] (tests only) runs `_kkt_inv` and `_wu`'s tl.dot code on CPU tensors (all
their dot operands are float32, which the interpreter multiplies correctly); `_scan` keeps its CPU path.
The float32 tl.dot products (A, the merges, W, U, S) keep Triton's default precision, as triton_chunk.
In the interpreter this is ~2-3x triton_chunk's time per call: the forward substitution is 14 steps of
small ops per diagonal block, and the interpreter's cost is per op and per device-function call.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "KKT_WARPS": [1, 2, 4], "WU_WARPS": [4, 8], "SCAN_WARPS": [2, 4, 8],
            "SCAN_STAGES": [1, 2, 3]}
CONFIG = {"BV": 0, "KKT_WARPS": 4, "WU_WARPS": 8, "SCAN_WARPS": 4, "SCAN_STAGES": 1,  # BV 0: chosen in run()
          # tests only: run _kkt_inv's and _wu's GPU code path (tl.dot on float32) on CPU tensors too
          "DOT_PATH_ON_CPU": False}

BT = 64  # chunk size
BC = 16  # sub-chunk (the inverse's diagonal blocks)


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even: the Triton interpreter's .to(tl.bfloat16)
    # truncates where the GPU rounds; with this both store the same bf16 values.
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _mm(x, y, DOT: tl.constexpr):
    # x @ y; off the dot path a broadcast sum (the interpreter's tl.dot skips BLAS)
    if DOT:
        r = tl.dot(x, y)
    else:
        r = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    return r


@triton.jit
def _mmt(x, y, DOT: tl.constexpr):
    # x @ y^T
    if DOT:
        r = tl.dot(x, tl.trans(y))
    else:
        r = tl.sum(x[:, None, :] * y[None, :, :], axis=2)
    return r


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
def _sub(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, h, hv,
         H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr):
    # one sub-chunk's normalised keys, log decays (0 on padding: no decay) and beta (0 on padding)
    valid = rows < end
    ok = tl.arange(0, K)
    kr = tl.load(k_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0)
    kf = kr.to(tl.float32)
    rn = 1.0 / tl.sqrt(tl.sum(kf * kf, axis=1) + 1e-6)  # k's normalisation, applied to A's blocks
    x = tl.load(a_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32) + tl.load(dtb_ptr + hv)
    # torch's softplus (threshold 20) as max(x, 0) + log1p(e^-|x|), log1p by its series when tiny
    # (inline: each device-function call costs the interpreter a re-patch of triton.language)
    e = tl.exp(-tl.abs(x))
    sp = tl.where(x > 20.0, x, tl.maximum(x, 0.0) + tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e)))
    lg = tl.where(valid, -tl.exp(tl.load(alog_ptr + hv)) * sp, 0.0)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32)), 0.0)
    return kr, rn, lg, beta


@triton.jit
def _a_blk(ki, kj, ri, rj, bi, gi, gj, DIAG: tl.constexpr, BC: tl.constexpr, DOT: tl.constexpr,
           BF16_DOT: tl.constexpr):
    # block (I, J) of A = beta_i exp(gamma_i - gamma_j) k_i.k_j, strictly lower on the diagonal; ki, kj
    # are the raw bf16 keys (exact bf16 products, float32 sums) and ri, rj their rows' 1 / norm
    if DOT and BF16_DOT:
        kk = tl.dot(ki, tl.trans(kj))
    elif DOT:  # CONFIG["DOT_PATH_ON_CPU"]: the interpreter's tl.dot is wrong on bf16 operands
        kk = tl.dot(ki.to(tl.float32), tl.trans(kj.to(tl.float32)))
    else:
        kk = tl.sum(ki.to(tl.float32)[:, None, :] * kj.to(tl.float32)[None, :, :], axis=2)
    kk = kk * ri[:, None] * rj[None, :]
    if DIAG:
        r = tl.arange(0, BC)
        low = r[:, None] > r[None, :]
        blk = tl.where(low, bi[:, None] * kk * tl.exp(tl.where(low, gi[:, None] - gj[None, :], 0.0)), 0.0)
    else:
        blk = bi[:, None] * kk * tl.exp(gi[:, None] - gj[None, :])  # i > j throughout: exponent <= 0
    return blk


@triton.jit
def _inv_diag(a, BC: tl.constexpr):
    # (I + a)^-1 for strictly lower a by forward substitution: row i of T - I is
    # -a_i - sum_{j<i} a_ij (T - I)_j; rows not yet reached hold -a (row 0 and 1 already final)
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
def _st_blk(t_ptr, x, rows, end, hv, J: tl.constexpr, HV: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    cols = J * BC + tl.arange(0, BC)
    tl.store(t_ptr + (rows[:, None] * HV + hv) * BT + cols[None, :], x, mask=(rows < end)[:, None])


@triton.jit
def _kkt_inv(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, t_ptr, g_ptr, N,
             H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
             BN: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    tl.static_assert(BT == 4 * BC)
    c = tl.program_id(0)
    hv = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    rc = tl.arange(0, BC)
    r0 = start + rc
    r1 = start + BC + rc
    r2 = start + 2 * BC + rc
    r3 = start + 3 * BC + rc
    k0, n0, l0, b0 = _sub(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, r0, end, h, hv, H, HV, K)
    k1, n1, l1, b1 = _sub(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, r1, end, h, hv, H, HV, K)
    k2, n2, l2, b2 = _sub(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, r2, end, h, hv, H, HV, K)
    k3, n3, l3, b3 = _sub(k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, r3, end, h, hv, H, HV, K)
    # gamma, non-increasing exactly: each sub-chunk starts from the previous one's last (minimum)
    g0 = tl.cumsum(l0, 0)
    g1 = tl.cumsum(l1, 0) + tl.min(g0, 0)
    g2 = tl.cumsum(l2, 0) + tl.min(g1, 0)
    g3 = tl.cumsum(l3, 0) + tl.min(g2, 0)
    tl.store(g_ptr + r0 * HV + hv, g0, mask=r0 < end)
    tl.store(g_ptr + r1 * HV + hv, g1, mask=r1 < end)
    tl.store(g_ptr + r2 * HV + hv, g2, mask=r2 < end)
    tl.store(g_ptr + r3 * HV + hv, g3, mask=r3 < end)

    # every non-zero block of A first, so the four 16 x K key tiles die before the inversion starts
    a00 = _a_blk(k0, k0, n0, n0, b0, g0, g0, True, BC, DOT, BF16_DOT)
    a11 = _a_blk(k1, k1, n1, n1, b1, g1, g1, True, BC, DOT, BF16_DOT)
    a22 = _a_blk(k2, k2, n2, n2, b2, g2, g2, True, BC, DOT, BF16_DOT)
    a33 = _a_blk(k3, k3, n3, n3, b3, g3, g3, True, BC, DOT, BF16_DOT)
    a10 = _a_blk(k1, k0, n1, n0, b1, g1, g0, False, BC, DOT, BF16_DOT)
    a32 = _a_blk(k3, k2, n3, n2, b3, g3, g2, False, BC, DOT, BF16_DOT)
    a20 = _a_blk(k2, k0, n2, n0, b2, g2, g0, False, BC, DOT, BF16_DOT)
    a30 = _a_blk(k3, k0, n3, n0, b3, g3, g0, False, BC, DOT, BF16_DOT)
    a21 = _a_blk(k2, k1, n2, n1, b2, g2, g1, False, BC, DOT, BF16_DOT)
    a31 = _a_blk(k3, k1, n3, n1, b3, g3, g1, False, BC, DOT, BF16_DOT)
    # diagonal blocks, inverted; merged 16 -> 32: T10 = -T11 A10 T00, T32 = -T33 A32 T22
    t00 = _inv_diag(a00, BC)
    t11 = _inv_diag(a11, BC)
    t22 = _inv_diag(a22, BC)
    t33 = _inv_diag(a33, BC)
    t10 = -_mm(t11, _mm(a10, t00, DOT), DOT)
    t32 = -_mm(t33, _mm(a32, t22, DOT), DOT)
    # 32 -> 64: the lower 32 x 32 block is -T_b X T_a, X = [[A20, A21], [A30, A31]],
    # T_a = [[T00, 0], [T10, T11]], T_b = [[T22, 0], [T32, T33]]; P = X T_a first
    p20 = _mm(a20, t00, DOT) + _mm(a21, t10, DOT)
    p30 = _mm(a30, t00, DOT) + _mm(a31, t10, DOT)
    p21 = _mm(a21, t11, DOT)
    p31 = _mm(a31, t11, DOT)
    t20 = -_mm(t22, p20, DOT)
    t21 = -_mm(t22, p21, DOT)
    t30 = -(_mm(t32, p20, DOT) + _mm(t33, p30, DOT))
    t31 = -(_mm(t32, p21, DOT) + _mm(t33, p31, DOT))
    # the blocks above the diagonal are zero and not stored (_wu loads T under the causal mask)
    _st_blk(t_ptr, t00, r0, end, hv, 0, HV, BT, BC)
    _st_blk(t_ptr, t10, r1, end, hv, 0, HV, BT, BC)
    _st_blk(t_ptr, t11, r1, end, hv, 1, HV, BT, BC)
    _st_blk(t_ptr, t20, r2, end, hv, 0, HV, BT, BC)
    _st_blk(t_ptr, t21, r2, end, hv, 1, HV, BT, BC)
    _st_blk(t_ptr, t22, r2, end, hv, 2, HV, BT, BC)
    _st_blk(t_ptr, t30, r3, end, hv, 0, HV, BT, BC)
    _st_blk(t_ptr, t31, r3, end, hv, 1, HV, BT, BC)
    _st_blk(t_ptr, t32, r3, end, hv, 2, HV, BT, BC)
    _st_blk(t_ptr, t33, r3, end, hv, 3, HV, BT, BC)


@triton.jit
def _wu(q_ptr, k_ptr, v_ptr, b_ptr, cu_ptr, t_ptr, g_ptr,
        w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, scale, N,
        H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
        BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr):
    c = tl.program_id(0)
    hv = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = rows < end
    ok = tl.arange(0, K)
    ov = tl.arange(0, V)
    causal = ri[:, None] >= ri[None, :]
    gam = tl.load(g_ptr + rows * HV + hv, mask=valid, other=0.0)
    gam_last = tl.min(gam, 0)  # gamma <= 0 and non-increasing: the last valid token's
    gam = tl.where(valid, gam, gam_last)  # padding: no decay past the last token (as _prep)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32)), 0.0)
    tk = (rows[:, None] * HV + hv) * K + ok[None, :]

    # the scores and the decayed queries first (q is not needed after them)
    qr = tl.load(q_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    kr = tl.load(k_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    qn = qr / tl.sqrt(tl.sum(qr * qr, axis=1) + 1e-6)[:, None]
    kn = kr / tl.sqrt(tl.sum(kr * kr, axis=1) + 1e-6)[:, None]
    qk = _mmt(qn, kn, DOT)
    dec = tl.where(causal, tl.exp(tl.where(causal, gam[:, None] - gam[None, :], 0.0)), 0.0)
    sc = tl.where(causal, qk * dec * scale, 0.0)
    qg = qn * (scale * tl.exp(gam))[:, None]
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        sc, qg = _rne_bf16(sc), _rne_bf16(qg)
    tl.store(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], sc.to(tl.bfloat16), mask=valid[:, None])
    tl.store(qg_ptr + tk, qg.to(tl.bfloat16), mask=valid[:, None])

    # W and the decayed keys
    t_mat = tl.load(t_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid[:, None] & causal, other=0.0)
    kb = (beta * tl.exp(gam))[:, None] * kn
    w = _mm(t_mat, kb, DOT)
    kd = kn * tl.exp(gam_last - gam)[:, None]
    if CPU:
        w, kd = _rne_bf16(w), _rne_bf16(kd)
    tl.store(w_ptr + tk, w.to(tl.bfloat16), mask=valid[:, None])
    tl.store(kd_ptr + tk, kd.to(tl.bfloat16), mask=valid[:, None])

    # U
    tv = (rows[:, None] * HV + hv) * V + ov[None, :]
    vr = tl.load(v_ptr + tv, mask=valid[:, None], other=0.0).to(tl.float32)
    u = _mm(t_mat, beta[:, None] * vr, DOT)
    if CPU:
        u = _rne_bf16(u)
    tl.store(u_ptr + tv, u.to(tl.bfloat16), mask=valid[:, None])
    tl.store(gl_ptr + start * HV + hv, tl.exp(gam_last))  # at the chunk's first token


@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
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


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    dot = not cpu or CONFIG["DOT_PATH_ON_CPU"]
    out = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    tm = torch.empty((T, HV, BT), dtype=torch.float32, device=dev)  # (I + A)^-1, lower blocks
    gam = torch.empty((T, HV), dtype=torch.float32, device=dev)
    w = torch.empty((T, HV, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, HV, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, HV), dtype=torch.float32, device=dev)
    grid = (triton.cdiv(T, BT) + N, HV)  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    _kkt_inv[grid](k, A_log, a, dt_bias, b, cu_seqlens, tm, gam, N,
                   H=H, HV=HV, K=K, BT=BT, BC=BC, BN=bn, DOT=dot, BF16_DOT=not cpu, num_warps=CONFIG["KKT_WARPS"])
    _wu[grid](q, k, v, b, cu_seqlens, tm, gam, w, u, qg, kd, sc, gl, float(scale), N,
              H=H, HV=HV, K=K, V=V, BT=BT, BN=bn, CPU=cpu, DOT=dot, num_warps=CONFIG["WU_WARPS"])
    bv = CONFIG["BV"]
    if bv == 0:  # enough programs to cover the H200's 132 SMs, the widest tiles that still do
        bv = 16 if N * HV <= 64 else 32 if N * HV <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    _scan[(triton.cdiv(V, bv), N * HV)](
        state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
        HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    return out, new_state
