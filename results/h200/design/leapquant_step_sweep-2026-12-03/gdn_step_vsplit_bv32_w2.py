"""LeapQuant decode step of a gated-delta-rule layer (the KDA wishlist request conless-leapquant-gdn-step) in
Triton, functional form `run` only: gdn_step_triton.py's arithmetic with the value rows split across programs.

gdn_step_triton.py runs one program of 8 warps per (sequence, head) over the whole 128 x 128 int8 tile: at batch 256
on the H200 it takes 0.337 ms (results/h200/requests/run4/) where the request's 28.6 KB per program at the H200's
copy bandwidth is ~0.055 ms: the programs wait on one long chain (norms, then the tile's row sums, then the buffer's
sums) with two 8-warp blocks per SM. Here a program owns BV value rows of one (sequence, head): its slice of the
int8 tile, of the buffered values ubuf and of the Compensator Tokens q is its own (read once from DRAM), and the
key-side data (kx / qx, s_k, kbuf, u: 6 KB per head) is re-read by the V / BV programs of the head from L2. The
largest load (the int8 slice) is issued first. The program with the first slice also writes k_row, w_new, p_new.
Numerics per element are gdn_step_triton's (the same sums over K, in float32; beta rounded to bf16 from a
round-to-nearest sigmoid; bf16 outputs rounded to nearest even on the bits).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64, 128], "num_warps": [1, 2, 4, 8]}
CONFIG = {'BV': 32, 'num_warps': 2}


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
def _gdn_step_v(codes, s_k, s_v, u, q, kbuf, ubuf, w, p, h, qx, kx, vx, a, b, A_log, dt_bias,
                o, k_row, u_row, w_new, p_new,
                H: tl.constexpr, HK: tl.constexpr, K: tl.constexpr, V: tl.constexpr, L: tl.constexpr,
                R: tl.constexpr, BV: tl.constexpr):
    pid_v = tl.program_id(1)  # the (sequence, head) axis is 0: grid y stops at 65535, 4097 sequences x 32 heads pass it
    pid = tl.program_id(0).to(tl.int64)  # = sequence * H + head; 64-bit: pid * V * K passes 2**31 at 4097 sequences
    seq, head = pid // H, pid % H
    kh = seq * HK + head // (H // HK)
    ks, js, rs = tl.arange(0, K), tl.arange(0, L), tl.arange(0, R)
    vs = pid_v * BV + tl.arange(0, BV)
    # this program's own bytes first: the int8 slice, then the value-side slices
    c = tl.load(codes + pid * V * K + vs[:, None] * K + ks[None, :]).to(tl.float32)
    ub = tl.load(ubuf + pid * L * V + js[:, None] * V + vs[None, :]).to(tl.float32)
    qq = tl.load(q + pid * R * V + rs[:, None] * V + vs[None, :]).to(tl.float32)
    sv = tl.load(s_v + pid * V + vs)
    vv = tl.load(vx + pid * V + vs).to(tl.float32)
    # the head's key-side data (shared by its V / BV programs: L2)
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
    # checkpoint: S0 = q^T u + codes * (s_k / 127) [cols] * s_v [rows], on this program's rows
    s0k = sv * tl.sum(c * (sk * kn)[None, :], axis=1)
    s0q = sv * tl.sum(c * (sk * qn)[None, :], axis=1)
    s0k += tl.sum(qq * tl.sum(uu * kn[None, :], axis=1)[:, None], axis=0)
    s0q += tl.sum(qq * tl.sum(uu * qn[None, :], axis=1)[:, None], axis=0)
    # buffered updates: sum_j wd_j ubuf_j (kbuf_j . x)
    sk_buf = tl.sum(ub * (wd * tl.sum(kb * kn[None, :], axis=1))[:, None], axis=0)
    sq_buf = tl.sum(ub * (wd * tl.sum(kb * qn[None, :], axis=1))[:, None], axis=0)
    s_kn = pn * s0k + sk_buf
    s_qn = pn * s0q + sq_buf
    upd = beta * (vv - s_kn)
    y = s_qn + tl.sum(kn * qn, axis=0) * upd
    tl.store(o + pid * V + vs, _bf16(y))
    tl.store(u_row + pid * V + vs, _bf16(upd))
    if pid_v == 0:
        tl.store(k_row + pid * K + ks, _bf16(kn))
        tl.store(w_new + pid * L + js, tl.where(js == hv, 1.0, wd))
        tl.store(p_new + pid, pn)


def run(codes, s_k, s_v, u, q, kbuf, ubuf, w, p, h, qx, kx, vx, a, b, A_log, dt_bias):
    B, H, V, K = codes.shape
    L, R, HK = kbuf.shape[-2], u.shape[-2], qx.shape[1]
    dev = codes.device
    o = torch.empty((B, H, V), dtype=torch.bfloat16, device=dev)
    k_row = torch.empty((B, H, K), dtype=torch.bfloat16, device=dev)
    u_row = torch.empty((B, H, V), dtype=torch.bfloat16, device=dev)
    w_new = torch.empty_like(w)
    p_new = torch.empty_like(p)
    bv = min(CONFIG["BV"], V)
    _gdn_step_v[(B * H, triton.cdiv(V, bv))](codes, s_k, s_v, u, q, kbuf, ubuf, w, p, h, qx, kx, vx, a, b, A_log,
                                             dt_bias, o, k_row, u_row, w_new, p_new, H=H, HK=HK, K=K, V=V, L=L, R=R,
                                             BV=bv, num_warps=CONFIG["num_warps"])
    return o, k_row, u_row, w_new, p_new
