"""Chunked Kimi Delta Attention prefill, solutions/triton_chunk.py's three kernels with `_intra` (and
`_prep`) restructured so that few tiles are live at once.

The math is triton_chunk's (its docstring has the WY / UT form): per chunk of 64 tokens and head,
A_ij = sum_c k_i[c] k_j[c] exp(gamma_i[c] - gamma_j[c]) and S likewise with q_i (j <= i), built in
16 x 16 blocks, then `_prep` inverts (I + A), forms W, U, the decayed q and k, and `_scan` runs the
recurrence. Outputs, layouts, dtypes and the entry point are triton_chunk's.

Why: on the H200 (Nsight Compute, 8192-token workload) triton_chunk's `_intra` took 73-82% of the
kernel time at 255 registers per thread with spills (594 MB of local-memory loads): one program per
(chunk, head) held q, k and gamma of all four sub-chunks (twelve 16 x 128 float32 tiles, ~192
registers per thread at 4 warps) while it formed the ten blocks; `_prep` spilled too (255 registers,
8 warps), its q, k, v, gamma and the 64 x 64 tiles loaded up front and live through the inverse.

1. `_intra`: one program per (chunk, sub-chunk row I, head), 4x the programs (the 1-token and short
   workloads had 64 programs for 132 SMs). It loads sub-chunk I's q, k and its *local* cumulative
   log decay c_I (cumsum over I's own rows: gamma_i - gamma at the boundary before I), forms the
   diagonal block as triton_chunk's `_diag` (exp(c_i - c_j) = exp(gamma_i - gamma_j)), then walks
   J = I-1 .. 0, reloading k_J and the gate input of J's rows (L2) for each block:
       exp(gamma_i - gamma_j) = exp(c_i) * exp(s + c_J,last - c_j)
   where s is the log decay of the sub-chunks strictly between J and I, accumulated along the walk.
   Both factors are <= 1 (triton_chunk's boundary split at r = gamma before I, the same factors),
   so nothing overflows; the exponents are sums over at most 64 tokens of this chunk, never a
   difference of two large cumulative gammas. Live at once: I's k exp(c_I), q exp(c_I) and one
   J's tiles. The cost: the gate and the norm of k of rows J are recomputed for each I > J (ten
   16-row gate tiles per chunk instead of eight, ten k tiles instead of four).
2. `_prep`: the same values, each input loaded where first needed and each result stored as soon
   as it is formed: S (from the qk blocks alone), A and its inverse (recursive doubling as
   triton_chunk), gamma and exp(gamma_C), then k: the decayed k and W, then q: the decayed q,
   then v: U.
3. `_scan`: triton_chunk's, unchanged.

Registers and spills for sm_90 (scripts/kda_prefill_regs.py, Triton 3.9's ptxas, no GPU needed):
                      registers  spill stores / loads    shared memory (8192 x 1)
    triton_chunk _intra      255       496 B / 780 B            24 KiB   (4 warps)
    triton_chunk _prep       255       504 B / 504 B            64 KiB   (8 warps)
    this _intra              165         0 B / 0 B              41 KiB   (4 warps)
    this _prep               252         0 B / 0 B              48 KiB   (8 warps; 4096 x 32: 255, 0 B)
   Both changes in `_intra` are needed: the per-sub-chunk programs with `_diag`'s column loop unrolled
   (static_range, as triton_chunk) still spill 28 B at 255 registers; the loop alone in triton_chunk
   spills 484 B / 856 B. INTRA_WARPS 2 spills 232 B. Not yet timed on a GPU.

Numerics: float32 throughout, tl.dot as triton_chunk (Triton's default precision for float32 operands,
bf16 in `_scan`). The association of the decay exponents differs from triton_chunk's (local sums
instead of differences of chunk-cumulative gammas), so A and S agree with triton_chunk's to float32
rounding, not bit for bit. On CPU (the Triton interpreter) products are broadcast sums and bf16
stores round to nearest (`_rne_bf16`), as triton_chunk; CONFIG["INTRA_GPU_PATH_ON_CPU"] (tests only)
runs `_intra`'s GPU code (column loop, tl.dot on float32) on CPU tensors.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "INTRA_WARPS": [2, 4], "PREP_WARPS": [4, 8], "SCAN_WARPS": [4, 8],
            "SCAN_STAGES": [1, 2]}
CONFIG = {"BV": 0, "INTRA_WARPS": 4, "PREP_WARPS": 8, "SCAN_WARPS": 4, "SCAN_STAGES": 2,
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
def _log_decay(a_ptr, dtb_ptr, alog_ptr, rows, valid, h, H: tl.constexpr, K: tl.constexpr):
    ok = tl.arange(0, K)
    x = tl.load(a_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    x = x + tl.load(dtb_ptr + h * K + ok)[None, :]
    return tl.where(valid[:, None], -tl.exp(tl.load(alog_ptr + h)) * _softplus(x), 0.0)  # padding: no decay


@triton.jit
def _normed(ptr, rows, valid, h, H: tl.constexpr, K: tl.constexpr):
    ok = tl.arange(0, K)
    x = tl.load(ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    return x / tl.sqrt(tl.sum(x * x, axis=1) + 1e-6)[:, None]



@triton.jit
def _diag(qi, ki, gi, BC: tl.constexpr, CPU: tl.constexpr):
    # a sub-chunk's own block, j <= i: sum_c x_i[c] k_j[c] exp(g_i[c] - g_j[c]), exponents <= 0
    # (triton_chunk's, the column loop not unrolled; g here is the sub-chunk's local cumulative log decay)
    rr = tl.arange(0, BC)
    if CPU:  # numpy: the whole [16, 16, K] at once
        causal = rr[:, None, None] >= rr[None, :, None]
        e = tl.where(causal, tl.exp(tl.where(causal, gi[:, None, :] - gi[None, :, :], 0.0)), 0.0)
        kk = tl.sum(ki[:, None, :] * ki[None, :, :] * e, axis=2)
        qk = tl.sum(qi[:, None, :] * ki[None, :, :] * e, axis=2)
    else:  # registers: one column j at a time, a loop (unrolled, ptxas spilled: see the docstring)
        kk = tl.zeros([BC, BC], dtype=tl.float32)
        qk = tl.zeros([BC, BC], dtype=tl.float32)
        for j in range(0, BC):
            kj = tl.sum(tl.where(rr[:, None] == j, ki, 0.0), axis=0)
            gj = tl.sum(tl.where(rr[:, None] == j, gi, 0.0), axis=0)
            live = (rr >= j)[:, None]
            e = tl.where(live, tl.exp(tl.where(live, gi - gj[None, :], 0.0)), 0.0)
            ke = kj[None, :] * e
            kk = tl.where(rr[None, :] == j, tl.sum(ki * ke, axis=1)[:, None], kk)
            qk = tl.where(rr[None, :] == j, tl.sum(qi * ke, axis=1)[:, None], qk)
    return kk, qk


@triton.jit
def _put(akk_ptr, aqk_ptr, kk, qk, rows, end, h, col0, H: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    # a 16 x 16 block at the sub-chunk's rows, chunk columns col0 .. col0 + 15
    offs = (rows[:, None] * H + h) * BT + col0 + tl.arange(0, BC)[None, :]
    m = (rows < end)[:, None]
    tl.store(akk_ptr + offs, kk, mask=m)
    tl.store(aqk_ptr + offs, qk, mask=m)


@triton.jit
def _intra(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, cu_ptr, akk_ptr, aqk_ptr, N,
           H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr,
           CPU: tl.constexpr):
    # one program per (chunk, sub-chunk row I, head): the blocks (I, J) for J <= I
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
    ci = tl.cumsum(_log_decay(a_ptr, dtb_ptr, alog_ptr, rows, valid, h, H, K), 0)  # gamma_i - gamma before I
    qi = _normed(q_ptr, rows, valid, h, H, K)
    ki = _normed(k_ptr, rows, valid, h, H, K)
    kk, qk = _diag(qi, ki, ci, BC, CPU)
    _put(akk_ptr, aqk_ptr, kk, qk, rows, end, h, sub * BC, H, BT, BC)
    li = tl.exp(ci)  # exp(gamma_i - r), r = gamma at the last token before I: <= 1
    lk = ki * li
    lq = qi * li
    s = tl.zeros([K], dtype=tl.float32)  # log decay of the sub-chunks strictly between J and I
    for d in range(0, sub):
        jrows = first - (d + 1) * BC + rr  # sub-chunk J = I - 1 - d: all its rows are valid
        lj = _log_decay(a_ptr, dtb_ptr, alog_ptr, jrows, jrows < end, h, H, K)
        cj = tl.cumsum(lj, 0)
        tot = tl.sum(tl.where((rr == BC - 1)[:, None], cj, 0.0), axis=0)  # J's last row of cj
        kj = _normed(k_ptr, jrows, jrows < end, h, H, K)
        rj = kj * tl.exp(s[None, :] + tot[None, :] - cj)  # exp(r - gamma_j) <= 1
        if CPU:
            kk = tl.sum(lk[:, None, :] * rj[None, :, :], axis=2)
            qk = tl.sum(lq[:, None, :] * rj[None, :, :], axis=2)
        else:
            kk = tl.dot(lk, tl.trans(rj))
            qk = tl.dot(lq, tl.trans(rj))
        _put(akk_ptr, aqk_ptr, kk, qk, rows, end, h, (sub - 1 - d) * BC, H, BT, BC)
        s = s + tot


@triton.jit
def _prep(q_ptr, k_ptr, v_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, akk_ptr, aqk_ptr,
          w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, scale, N,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, LOG_BT: tl.constexpr,
          BN: tl.constexpr, CPU: tl.constexpr):
    # triton_chunk's values, each input loaded where it is first needed and each result stored as
    # soon as it is formed
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = rows < end
    ok = tl.arange(0, K)
    ov = tl.arange(0, V)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * H + h, mask=valid, other=0.0).to(tl.float32)), 0.0)
    causal = ri[:, None] >= ri[None, :]
    strict = ri[:, None] > ri[None, :]
    aoffs = (rows[:, None] * H + h) * BT + ri[None, :]
    # S first: the scores need nothing else
    qk = tl.load(aqk_ptr + aoffs, mask=valid[:, None] & causal, other=0.0)
    sc = tl.where(causal, qk * scale, 0.0)
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        sc = _rne_bf16(sc)
    tl.store(sc_ptr + aoffs, sc.to(tl.bfloat16), mask=valid[:, None])
    kk = tl.load(akk_ptr + aoffs, mask=valid[:, None] & causal, other=0.0)
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
    gam = tl.cumsum(_log_decay(a_ptr, dtb_ptr, alog_ptr, rows, valid, h, H, K), 0)  # [BT, K]
    gam_last = tl.min(gam, axis=0)  # non-increasing per channel: the last row is the minimum
    tl.store(gl_ptr + (start * H + h) * K + ok, tl.exp(gam_last))  # at the chunk's first token
    kn = _normed(k_ptr, rows, valid, h, H, K)
    kd = kn * tl.exp(gam_last[None, :] - gam)
    if CPU:
        kd = _rne_bf16(kd)
    tl.store(kd_ptr + tk, kd.to(tl.bfloat16), mask=valid[:, None])
    kb = beta[:, None] * tl.exp(gam) * kn
    if CPU:
        w = tl.sum(t_mat[:, :, None] * kb[None, :, :], axis=1)
        w = _rne_bf16(w)
    else:
        w = tl.dot(t_mat, kb)
    tl.store(w_ptr + tk, w.to(tl.bfloat16), mask=valid[:, None])
    qg = _normed(q_ptr, rows, valid, h, H, K) * tl.exp(gam) * scale
    if CPU:
        qg = _rne_bf16(qg)
    tl.store(qg_ptr + tk, qg.to(tl.bfloat16), mask=valid[:, None])
    vr = tl.load(v_ptr + (rows[:, None] * H + h) * V + ov[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    vb = beta[:, None] * vr
    if CPU:
        u = tl.sum(t_mat[:, :, None] * vb[None, :, :], axis=1)
        u = _rne_bf16(u)
    else:
        u = tl.dot(t_mat, vb)
    tl.store(u_ptr + (rows[:, None] * H + h) * V + ov[None, :], u.to(tl.bfloat16), mask=valid[:, None])


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
            o = tl.dot(qg, mb) + tl.dot(sc, db)
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl[:, None] * m + tl.dot(tl.trans(kd), db)
    tl.store(ns_ptr + st, m)


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    akk = torch.empty((T, H, BT), dtype=torch.float32, device=dev)
    aqk = torch.empty_like(akk)
    w = torch.empty((T, H, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, H, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    grid = (triton.cdiv(T, BT) + N, H)  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    intra_cpu = cpu and not CONFIG["INTRA_GPU_PATH_ON_CPU"]
    intra_grid = (grid[0] * (BT // BC), H)  # one program per (chunk, sub-chunk, head)
    _intra[intra_grid](q, k, A_log, a, dt_bias, cu_seqlens, akk, aqk, N, H=H, K=K, BT=BT, BC=BC, BN=bn,
                       CPU=intra_cpu, num_warps=CONFIG["INTRA_WARPS"])
    _prep[grid](q, k, v, A_log, a, dt_bias, b, cu_seqlens, akk, aqk, w, u, qg, kd, sc, gl, float(scale), N,
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
