"""LeapQuant decode step of a gated-delta-rule layer (the KDA wishlist request conless-leapquant-gdn-step) in
Triton, functional form `run` only: the key side of each (sequence, head) is reduced once by a small kernel, then
the value rows stream through a second kernel that does little besides the int8 row sums.

Why (results/h200/design/leapquant_step_sweep-2026-12-03): gdn_step_vsplit.py recomputed the key side (the q / k
norms, the buffered keys' and the Compensator Tokens' dot products with k and q: a [16, 128] and a [4, 128] tile)
in each of its V / BV programs and kept it live beside the int8 tile: 148-203 registers a thread, 3-4 blocks per
SM, 12.5-18.75% occupancy, DRAM throughput 18-26% (Nsight Compute at batch 256); its best CONFIG (BV 32, 2 warps)
reached 21% of the memory bound. Here:
1. `_keys`, one program per (sequence, head): kn, qn, the gate (at, pn, beta) and, as float32 scratch per pair,
   xk = (s_k / 127) kn and xq = (s_k / 127) qn [K], wk_j = wd_j (kbuf_j . kn) and wq_j [L], uk_r = u_r . kn and
   uq_r [R], pn, beta and kn . qn; it also writes the pair's own outputs k_row, w_new and p_new.
2. `_values`, one program per (pair, BV value rows): the int8 slice (read once from DRAM), ubuf's and q's columns,
   s_v, vx, and the pair's 1.2 KB of scratch (from L2); per row two K-reductions of the int8 row and short sums over
   L and R.
The scratch costs 1.2 KB written and read back per pair (~4% of the 28.6 KB the step moves) and a second launch.
Numerics per element are gdn_step_triton's: the same float32 sums over K, the same order of the products
(pn (sv c.x + q.u) + sum_j wd_j ubuf_j (kbuf_j . x)); beta rounded to bf16 from a round-to-nearest sigmoid; bf16
outputs rounded to nearest even on the bits.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64, 128], "num_warps": [1, 2, 4, 8], "KEY_WARPS": [1, 2, 4], "MAGIC": [0, 1], "PACK": [0, 1]}
CONFIG = {'BV': 16, 'num_warps': 1, 'KEY_WARPS': 2, 'MAGIC': 0, 'PACK': 0}


@triton.jit
def _bf16(x):
    # float32 -> bfloat16 rounding to nearest even, done on the bits: the CPU interpreter's cast truncates
    # (on a GPU the cast that follows is then exact, so both give the GPU's rounding)
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True).to(tl.bfloat16)


@triton.jit
def _log1p(x):
    # log(1 + x) loses x's digits for small x; two terms of the series are exact to float32 there
    return tl.where(x < 1e-4, x * (1.0 - 0.5 * x), tl.log(1.0 + x))


@triton.jit
def _i8f32(c, MAGIC: tl.constexpr):
    # int8 values (in any integer type) -> float32; MAGIC: float(0x4B400000 + c) = 12582912 + c exactly, an integer
    # add and a float subtract instead of I2F (16 per SM and clock on sm_90)
    if MAGIC:
        return (c.to(tl.int32) + 0x4B400000).to(tl.float32, bitcast=True) - 12582912.0
    else:
        return c.to(tl.float32)


@triton.jit
def _keys(s_k, u, kbuf, w, p, h, qx, kx, a, b, A_log, dt_bias, k_row, w_new, p_new, scr,
          H: tl.constexpr, HK: tl.constexpr, K: tl.constexpr, L: tl.constexpr, R: tl.constexpr, NS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # = sequence * H + head
    seq, head = pid // H, pid % H
    kh = seq * HK + head // (H // HK)
    ks, js, rs = tl.arange(0, K), tl.arange(0, L), tl.arange(0, R)
    kf = tl.load(kx + kh * K + ks).to(tl.float32)
    qf = tl.load(qx + kh * K + ks).to(tl.float32)
    sk = tl.load(s_k + pid * K + ks) / 127.0
    kb = tl.load(kbuf + pid * L * K + js[:, None] * K + ks[None, :]).to(tl.float32)
    uu = tl.load(u + pid * R * K + rs[:, None] * K + ks[None, :]).to(tl.float32)
    wv = tl.load(w + pid * L + js)
    hv = tl.load(h + pid)
    g = tl.load(a + pid).to(tl.float32) + tl.load(dt_bias + head)
    bb = tl.load(b + pid).to(tl.float32)
    pv = tl.load(p + pid)
    alog = tl.load(A_log + head)
    kn = kf * tl.math.rsqrt(tl.sum(kf * kf, axis=0) + 1e-6)
    qn = qf * tl.math.rsqrt(tl.sum(qf * qf, axis=0) + 1e-6) * (1.0 / tl.sqrt(K * 1.0))
    sp = tl.where(g <= 20.0, _log1p(tl.exp(g)), g)
    at = tl.exp(-tl.exp(alog) * sp)
    beta = _bf16(tl.math.div_rn(1.0, 1.0 + tl.exp(-bb))).to(tl.float32)
    pn = pv * at
    wd = wv * tl.where(js < hv, at, 1.0)
    base = scr + pid * NS
    tl.store(base + ks, sk * kn)
    tl.store(base + K + ks, sk * qn)
    tl.store(base + 2 * K + js, wd * tl.sum(kb * kn[None, :], axis=1))
    tl.store(base + 2 * K + L + js, wd * tl.sum(kb * qn[None, :], axis=1))
    tl.store(base + 2 * K + 2 * L + rs, tl.sum(uu * kn[None, :], axis=1))
    tl.store(base + 2 * K + 2 * L + R + rs, tl.sum(uu * qn[None, :], axis=1))
    tl.store(base + 2 * K + 2 * L + 2 * R, pn)
    tl.store(base + 2 * K + 2 * L + 2 * R + 1, beta)
    tl.store(base + 2 * K + 2 * L + 2 * R + 2, tl.sum(kn * qn, axis=0))
    tl.store(k_row + pid * K + ks, _bf16(kn))
    tl.store(w_new + pid * L + js, tl.where(js == hv, 1.0, wd))
    tl.store(p_new + pid, pn)


@triton.jit
def _values(codes, s_v, q, ubuf, vx, scr, o, u_row,
            K: tl.constexpr, V: tl.constexpr, L: tl.constexpr, R: tl.constexpr, BV: tl.constexpr,
            NS: tl.constexpr, MAGIC: tl.constexpr, PACK: tl.constexpr):
    pid_v = tl.program_id(1)
    pid = tl.program_id(0).to(tl.int64)  # the pair on axis 0: grid y stops at 65535; 64-bit offsets past 2**31
    ks, js, rs = tl.arange(0, K), tl.arange(0, L), tl.arange(0, R)
    vs = pid_v * BV + tl.arange(0, BV)
    if PACK:  # int32 words of 4 codes (the launcher passes an int32 view): a register holds 4 codes, not 1
        k4 = tl.arange(0, K // 4)
        c = tl.load(codes + pid * V * (K // 4) + vs[:, None] * (K // 4) + k4[None, :])
    else:
        c = tl.load(codes + pid * V * K + vs[:, None] * K + ks[None, :])
    ub = tl.load(ubuf + pid * L * V + js[:, None] * V + vs[None, :]).to(tl.float32)
    qq = tl.load(q + pid * R * V + rs[:, None] * V + vs[None, :]).to(tl.float32)
    sv = tl.load(s_v + pid * V + vs)
    vv = tl.load(vx + pid * V + vs).to(tl.float32)
    base = scr + pid * NS
    if not PACK:
        xk = tl.load(base + ks)
        xq = tl.load(base + K + ks)
    wk = tl.load(base + 2 * K + js)
    wq = tl.load(base + 2 * K + L + js)
    uk = tl.load(base + 2 * K + 2 * L + rs)
    uq = tl.load(base + 2 * K + 2 * L + R + rs)
    pn = tl.load(base + 2 * K + 2 * L + 2 * R)
    beta = tl.load(base + 2 * K + 2 * L + 2 * R + 1)
    kq = tl.load(base + 2 * K + 2 * L + 2 * R + 2)
    if PACK:
        # byte i of word w is column 4 w + i (little-endian): four [BV, K / 4] products against strided x's
        rk = tl.zeros([BV], dtype=tl.float32)
        rq = tl.zeros([BV], dtype=tl.float32)
        for i in tl.static_range(4):
            ci = _i8f32((c << (24 - 8 * i)) >> 24, MAGIC)
            rk += tl.sum(ci * tl.load(base + 4 * k4 + i)[None, :], axis=1)
            rq += tl.sum(ci * tl.load(base + K + 4 * k4 + i)[None, :], axis=1)
    else:
        cf = _i8f32(c, MAGIC)
        rk = tl.sum(cf * xk[None, :], axis=1)
        rq = tl.sum(cf * xq[None, :], axis=1)
    s0k = sv * rk + tl.sum(qq * uk[:, None], axis=0)
    s0q = sv * rq + tl.sum(qq * uq[:, None], axis=0)
    s_kn = pn * s0k + tl.sum(ub * wk[:, None], axis=0)
    s_qn = pn * s0q + tl.sum(ub * wq[:, None], axis=0)
    upd = beta * (vv - s_kn)
    y = s_qn + kq * upd
    tl.store(o + pid * V + vs, _bf16(y))
    tl.store(u_row + pid * V + vs, _bf16(upd))


def run(codes, s_k, s_v, u, q, kbuf, ubuf, w, p, h, qx, kx, vx, a, b, A_log, dt_bias):
    B, H, V, K = codes.shape
    L, R, HK = kbuf.shape[-2], u.shape[-2], qx.shape[1]
    dev = codes.device
    o = torch.empty((B, H, V), dtype=torch.bfloat16, device=dev)
    k_row = torch.empty((B, H, K), dtype=torch.bfloat16, device=dev)
    u_row = torch.empty((B, H, V), dtype=torch.bfloat16, device=dev)
    w_new = torch.empty_like(w)
    p_new = torch.empty_like(p)
    if B * H == 0:
        return o, k_row, u_row, w_new, p_new
    ns = triton.cdiv(2 * K + 2 * L + 2 * R + 3, 32) * 32  # scratch floats per pair, rows 128-byte aligned
    scr = torch.empty((B * H, ns), dtype=torch.float32, device=dev)
    _keys[(B * H,)](s_k, u, kbuf, w, p, h, qx, kx, a, b, A_log, dt_bias, k_row, w_new, p_new, scr,
                    H=H, HK=HK, K=K, L=L, R=R, NS=ns, num_warps=CONFIG["KEY_WARPS"])
    bv = min(CONFIG["BV"], V)
    if CONFIG["PACK"]:
        codes = codes.view(torch.int32)
    _values[(B * H, triton.cdiv(V, bv))](codes, s_v, q, ubuf, vx, scr, o, u_row, K=K, V=V, L=L, R=R, BV=bv, NS=ns,
                                         MAGIC=CONFIG["MAGIC"], PACK=CONFIG["PACK"],
                                         num_warps=CONFIG["num_warps"])
    return o, k_row, u_row, w_new, p_new
