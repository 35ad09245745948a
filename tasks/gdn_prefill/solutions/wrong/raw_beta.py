"""Known-wrong: uses the logit b as beta instead of sigmoid(b).

The honest kernels of ../triton_chunk.py with that one change."""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "PREP_WARPS": [4, 8], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [1, 2, 3]}
CONFIG = {"BV": 0, "PREP_WARPS": 8, "SCAN_WARPS": 4, "SCAN_STAGES": 2}  # BV 0: chosen from the batch below

BT = 64  # chunk size


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even: the Triton interpreter's .to(tl.bfloat16)
    # truncates where the GPU rounds; with this both store the same bf16 values.
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
def _prep(q_ptr, k_ptr, v_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr,
          w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, scale, N,
          H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
          LOG_BT: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr):
    c = tl.program_id(0)
    hv = tl.program_id(1)
    h = hv // (HV // H)
    # which sequence holds global chunk c: prefix sum of per-sequence chunk counts
    on = tl.arange(0, BN)
    lo = tl.load(cu_ptr + on, mask=on < N, other=0)
    hi = tl.load(cu_ptr + on + 1, mask=on < N, other=0)
    nck = (hi - lo + BT - 1) // BT
    incl = tl.cumsum(nck, 0)
    n = tl.sum((incl <= c).to(tl.int32), 0)
    if n >= N:
        return
    pick = on == n
    j = c - tl.sum(tl.where(pick, incl - nck, 0), 0)
    start = tl.sum(tl.where(pick, lo, 0), 0) + j * BT
    end = tl.sum(tl.where(pick, hi, 0), 0)

    ri = tl.arange(0, BT)
    rows = start + ri
    valid = rows < end
    ok = tl.arange(0, K)
    ov = tl.arange(0, V)
    qr = tl.load(q_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    kr = tl.load(k_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    vr = tl.load(v_ptr + (rows[:, None] * HV + hv) * V + ov[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    qn = qr / tl.sqrt(tl.sum(qr * qr, axis=1) + 1e-6)[:, None]
    kn = kr / tl.sqrt(tl.sum(kr * kr, axis=1) + 1e-6)[:, None]
    x = tl.load(a_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32) + tl.load(dtb_ptr + hv)
    lg = tl.where(valid, -tl.exp(tl.load(alog_ptr + hv)) * _softplus(x), 0.0)  # padding: no decay
    beta = tl.where(valid, tl.load(b_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32), 0.0)  # BUG
    gam = tl.cumsum(lg, 0)
    gam_last = tl.min(gam, 0)  # gamma is non-increasing: its last entry is its minimum

    causal = ri[:, None] >= ri[None, :]
    strict = ri[:, None] > ri[None, :]
    dec = tl.where(causal, tl.exp(tl.where(causal, gam[:, None] - gam[None, :], 0.0)), 0.0)
    # CPU: products as broadcast sums. The interpreter's tl.dot is numpy's matmul with a dtype
    # argument, which skips BLAS (~7 ms per 64^3 product); the broadcast form is ~10x faster there.
    if CPU:
        kk = tl.sum(kn[:, None, :] * kn[None, :, :], axis=2)
        qk = tl.sum(qn[:, None, :] * kn[None, :, :], axis=2)
    else:
        kk = tl.dot(kn, tl.trans(kn))
        qk = tl.dot(qn, tl.trans(kn))
    a_mat = tl.where(strict, beta[:, None] * kk * dec, 0.0)
    # (I + A)^-1 by recursive doubling: merging 2b-blocks [[X, 0], [Y, Z]] needs -Z^-1 Y X^-1
    t_mat = (ri[:, None] == ri[None, :]).to(tl.float32)
    for s in tl.static_range(LOG_BT):
        blk = 1 << s
        merge = ((ri[:, None] // (2 * blk)) == (ri[None, :] // (2 * blk))) & \
                ((ri[:, None] // blk) % 2 == 1) & ((ri[None, :] // blk) % 2 == 0)
        part = tl.where(merge, a_mat, 0.0)
        if CPU:
            tp = tl.sum(t_mat[:, :, None] * part[None, :, :], axis=1)
            t_mat = t_mat - tl.sum(tp[:, :, None] * t_mat[None, :, :], axis=1)
        else:
            t_mat = t_mat - tl.dot(tl.dot(t_mat, part), t_mat)
    kb = (beta * tl.exp(gam))[:, None] * kn
    vb = beta[:, None] * vr
    if CPU:
        w = tl.sum(t_mat[:, :, None] * kb[None, :, :], axis=1)
        u = tl.sum(t_mat[:, :, None] * vb[None, :, :], axis=1)
    else:
        w = tl.dot(t_mat, kb)
        u = tl.dot(t_mat, vb)
    sc = tl.where(causal, qk * dec * scale, 0.0)
    qg = qn * (scale * tl.exp(gam))[:, None]
    kd = kn * tl.exp(gam_last - gam)[:, None]

    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        w, qg, kd, u, sc = _rne_bf16(w), _rne_bf16(qg), _rne_bf16(kd), _rne_bf16(u), _rne_bf16(sc)
    tk = (rows[:, None] * HV + hv) * K + ok[None, :]
    tl.store(w_ptr + tk, w.to(tl.bfloat16), mask=valid[:, None])
    tl.store(qg_ptr + tk, qg.to(tl.bfloat16), mask=valid[:, None])
    tl.store(kd_ptr + tk, kd.to(tl.bfloat16), mask=valid[:, None])
    tl.store(u_ptr + (rows[:, None] * HV + hv) * V + ov[None, :], u.to(tl.bfloat16), mask=valid[:, None])
    tl.store(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], sc.to(tl.bfloat16), mask=valid[:, None])
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
    out = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    w = torch.empty((T, HV, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, HV, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, HV), dtype=torch.float32, device=dev)
    max_chunks = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    _prep[(max_chunks, HV)](
        q, k, v, A_log, a, dt_bias, b, cu_seqlens, w, u, qg, kd, sc, gl, float(scale), N,
        H=H, HV=HV, K=K, V=V, BT=BT, LOG_BT=BT.bit_length() - 1, BN=triton.next_power_of_2(N + 1), CPU=cpu,
        num_warps=CONFIG["PREP_WARPS"],
    )
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
