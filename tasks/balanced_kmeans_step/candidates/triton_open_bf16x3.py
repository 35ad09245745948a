"""Balanced k-means step in Triton: deferred acceptance with split-bf16 ("bf16x3") distances over
the *open* centroids only.

Design
------
The contract's algorithm (deferred acceptance in rounds, then the centroid update), with the
per-round distance work cut down and made cheaper:

* Once per call: `_split_centroids` splits every centroid coordinate into bf16 pieces
  c_hi = bf16(c), c_lo = bf16(c - c_hi) and computes |c|^2 in float32; `_sqnorm` computes |x|^2
  per point. Neither is recomputed in later rounds.
* Per round: `_has_room` + torch.nonzero list the centroids that still have room (ascending),
  and `_gather_open` packs their bf16 pieces into contiguous zero-padded [D_PAD, K_OPEN_PAD]
  operands (+inf |c|^2 in the padding, so no masks in the main loop). `_propose` then runs the
  fused distance GEMM + running argmin over (unassigned points) x (open centroids): x.c from three
  bf16 tensor-core dots (x_lo c_hi + x_hi c_lo + x_hi c_hi, float32 accumulate; the point tile is
  split in registers, once per program when d fits one BLOCK_K tile), distance = |x|^2 + |c|^2 -
  2 x.c, and writes a packed key (centroid << 32 | float bits of the distance). Full centroids
  are not scored at all: on N(0, 1) data (n = 131,072, d = 128, k = 1,024, the reference algorithm
  in float32 on CPU, 11 rounds) the rounds add up to 2.14 full n x k passes when every centroid is scored and 1.64 when
  only open ones are (round 1: 59% of the points are still active but 77% of centroids open; round
  3: 15% / 27%, ...).
* Then as before: one stable torch.sort of the keys groups proposals by centroid, nearest first,
  ties in point order (the active list stays ascending); `_bounds`, `_accept` (first cap - count of
  each group), `_count`; the rejected points are compacted with torch.nonzero + `_gather`. The
  update sums each cluster's points in a fixed order after a stable sort of the assignment
  (deterministic, no atomics). torch's sort and nonzero are the only torch compute ops
  (contract.toml allows them).

Tie rule: the argmin over a tile takes the lowest index; open centroids keep ascending order, and
a later tile wins only when strictly smaller, so a point proposes to the lowest-index nearest open
centroid, as torch's min does in the reference.

Precision
---------
Distances: bf16x3 x.c has a worst-case error delta |x||c| with delta = 1.9e-4 + 3 d 2^-23 (the
representation residues of a two-piece bf16 split and a linear worst case of the float32
accumulation; the derivation is in tasks/kmeans_assign/solutions/triton_bf16x3.py): 2.4e-4 at
d = 128, and the *typical* error (random signs) ~sqrt(d) 2^-16 |x_i c_i| ~ 2e-4 absolute, about
20x below plain tf32's. The objective check is against the reference's deferred acceptance; the
algorithm is chaotic (one swapped near-tie at a full centroid cascades), so no worst-case
objective bound exists for *any* inexact arithmetic, float32 included, but the measured effect
scales with the distance noise: the reference run on tf32-rounded operands moves the objective by
1.2e-5 to 2.6e-5 (scripts/kmeans_tf32_sim.py), and on bf16x3 operands not at all
(0.0 at n = 65,536 / k = 256 and n = 32,768 / k = 1,024, scripts/kmeans_bf16x3_sim.py), against the 1e-3 allowed.

The earlier plain-tf32 version's 0.234% miss on the H200 is ~90x what tf32 operand precision
produces in simulation: not plausible as a precision effect. That kernel fed one loaded centroid
tile both to tl.trans -> tf32 dot and to the |c|^2 reduction, the same structure as the plain-tf32
kmeans_assign kernel that also failed there; this kernel has neither (|c|^2 from a pre-kernel,
B operands are plain row-major bf16 loads).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4],
}
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K_MAX": 128, "num_warps": 8, "num_stages": 2}


@triton.jit
def _iota(out_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, i.to(tl.int64), mask=i < N)


@triton.jit
def _has_room(count_ptr, out_ptr, K, cap, BLOCK: tl.constexpr):
    j = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = j < K
    tl.store(out_ptr + j, (tl.load(count_ptr + j, mask=mask, other=cap) < cap).to(tl.int8), mask=mask)


@triton.jit
def _sqnorm(x_ptr, out_ptr, N, D, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < N
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        dd = d0 + tl.arange(0, BLOCK_D)
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * D + dd[None, :], mask=rmask[:, None] & (dd < D)[None, :],
                    other=0.0)
        acc += tl.sum(x * x, axis=1)
    tl.store(out_ptr + rows, acc, mask=rmask)


@triton.jit
def _split_centroids(c_ptr, hi_ptr, lo_ptr, cn_ptr, K, D, KP, D_PAD: tl.constexpr,
                     BLOCK_J: tl.constexpr, BLOCK_D: tl.constexpr):
    jj = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    jmask = jj < K
    cn = tl.zeros([BLOCK_J], dtype=tl.float32)
    for d0 in range(0, D_PAD, BLOCK_D):
        dd = d0 + tl.arange(0, BLOCK_D)
        c = tl.load(c_ptr + jj.to(tl.int64)[:, None] * D + dd[None, :],
                    mask=jmask[:, None] & (dd < D)[None, :], other=0.0)
        cn += tl.sum(c * c, axis=1)
        hi = c.to(tl.bfloat16)
        lo = (c - hi.to(tl.float32)).to(tl.bfloat16)
        off = dd.to(tl.int64)[None, :] * KP + jj[:, None]
        tl.store(hi_ptr + off, hi)
        tl.store(lo_ptr + off, lo)
    tl.store(cn_ptr + jj, tl.where(jmask, cn, float("inf")))


@triton.jit
def _gather_open(open_ptr, hi_ptr, lo_ptr, cn_ptr, ohi_ptr, olo_ptr, ocn_ptr, oid_ptr, KO, KP, KOP,
                 D_PAD: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_D: tl.constexpr):
    jj = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    jmask = jj < KO
    src = tl.load(open_ptr + jj, mask=jmask, other=0)
    for d0 in range(0, D_PAD, BLOCK_D):
        dd = (d0 + tl.arange(0, BLOCK_D)).to(tl.int64)
        m2 = jmask[None, :] & (dd < D_PAD)[:, None]
        h = tl.load(hi_ptr + dd[:, None] * KP + src[None, :], mask=m2, other=0.0)
        lo = tl.load(lo_ptr + dd[:, None] * KP + src[None, :], mask=m2, other=0.0)
        tl.store(ohi_ptr + dd[:, None] * KOP + jj[None, :], h)
        tl.store(olo_ptr + dd[:, None] * KOP + jj[None, :], lo)
    tl.store(ocn_ptr + jj, tl.where(jmask, tl.load(cn_ptr + src, mask=jmask, other=0.0), float("inf")))
    tl.store(oid_ptr + jj, tl.where(jmask, src, 0).to(tl.int32))


@triton.jit
def _split(x):
    hi = x.to(tl.bfloat16)
    lo = (x - hi.to(tl.float32)).to(tl.bfloat16)
    return hi, lo


@triton.jit
def _dot3(xh, xl, ch, cl, acc, UPCAST: tl.constexpr):
    if UPCAST:
        # Triton interpreter only: its tl.dot matmuls the raw bf16 storage bits (triton 3.9
        # interpreter.py::create_dot), so the bf16-valued pieces go in as float32 (same exact
        # products, float32 accumulate). Set for CPU tensors (the interpreter), never on the GPU.
        xh, xl, ch, cl = xh.to(tl.float32), xl.to(tl.float32), ch.to(tl.float32), cl.to(tl.float32)
    acc = tl.dot(xl, ch, acc)
    acc = tl.dot(xh, cl, acc)
    return tl.dot(xh, ch, acc)


@triton.jit
def _propose(x_ptr, xn_ptr, active_ptr, hi_ptr, lo_ptr, cn_ptr, id_ptr, key_ptr, M, D, KOP,
             D_PAD: tl.constexpr, EVEN_D: tl.constexpr, RESIDENT: tl.constexpr, UPCAST: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    slots = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    smask = slots < M
    rows = tl.load(active_ptr + tl.minimum(slots, M - 1))  # clamped: loads need no row mask
    xrow = x_ptr + rows[:, None] * D
    ks = tl.arange(0, BLOCK_K)
    ns = tl.arange(0, BLOCK_N)
    best = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    best_j = tl.zeros([BLOCK_M], dtype=tl.int32)
    if RESIDENT:  # D_PAD == BLOCK_K: split the point tile once
        if EVEN_D:
            x = tl.load(xrow + ks[None, :])
        else:
            x = tl.load(xrow + ks[None, :], mask=(ks < D)[None, :], other=0.0)
        xh, xl = _split(x)
    for j0 in range(0, KOP, BLOCK_N):
        cols = j0 + ns
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        if RESIDENT:
            ch = tl.load(hi_ptr + ks[:, None] * KOP + cols[None, :])
            cl = tl.load(lo_ptr + ks[:, None] * KOP + cols[None, :])
            acc = _dot3(xh, xl, ch, cl, acc, UPCAST)
        else:
            for k0 in range(0, D_PAD, BLOCK_K):
                kk = k0 + ks
                if EVEN_D:
                    x = tl.load(xrow + kk[None, :])
                else:
                    x = tl.load(xrow + kk[None, :], mask=(kk < D)[None, :], other=0.0)
                xh2, xl2 = _split(x)
                ch = tl.load(hi_ptr + kk.to(tl.int64)[:, None] * KOP + cols[None, :])
                cl = tl.load(lo_ptr + kk.to(tl.int64)[:, None] * KOP + cols[None, :])
                acc = _dot3(xh2, xl2, ch, cl, acc, UPCAST)
        score = tl.load(cn_ptr + cols)[None, :] - 2.0 * acc
        m = tl.min(score, axis=1)
        j = tl.argmin(score, axis=1).to(tl.int32) + j0
        better = m < best
        best_j = tl.where(better, j, best_j)
        best = tl.where(better, m, best)
    gid = tl.load(id_ptr + best_j)
    dist = tl.maximum(best + tl.load(xn_ptr + rows), 0.0)
    key = (gid.to(tl.int64) << 32) | dist.to(tl.int32, bitcast=True).to(tl.int64)
    tl.store(key_ptr + slots, key, mask=smask)


@triton.jit
def _bounds(group_ptr, start_ptr, end_ptr, M, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = p < M
    g = tl.load(group_ptr + p, mask=mask, other=0) >> SHIFT
    prev = tl.load(group_ptr + p - 1, mask=mask & (p > 0), other=-1)
    nxt = tl.load(group_ptr + p + 1, mask=mask & (p + 1 < M), other=-1)
    prev = tl.where(p > 0, prev >> SHIFT, -1)
    nxt = tl.where(p + 1 < M, nxt >> SHIFT, -1)
    tl.store(start_ptr + g, p.to(tl.int64), mask=mask & (g != prev))
    tl.store(end_ptr + g, (p + 1).to(tl.int64), mask=mask & (g != nxt))


@triton.jit
def _accept(key_ptr, order_ptr, active_ptr, start_ptr, count_ptr, assign_ptr, reject_ptr, M, cap,
            BLOCK: tl.constexpr):
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = p < M
    g = tl.load(key_ptr + p, mask=mask, other=0) >> 32
    rank = p - tl.load(start_ptr + g, mask=mask, other=0)
    ok = rank < cap - tl.load(count_ptr + g, mask=mask, other=0)
    slot = tl.load(order_ptr + p, mask=mask, other=0)
    point = tl.load(active_ptr + slot, mask=mask, other=0)
    tl.store(assign_ptr + point, g, mask=mask & ok)
    tl.store(reject_ptr + slot, (~ok).to(tl.int8), mask=mask)


@triton.jit
def _count(key_ptr, start_ptr, end_ptr, count_ptr, M, cap, BLOCK: tl.constexpr):
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = p < M
    g = tl.load(key_ptr + p, mask=mask, other=0) >> 32
    s = tl.load(start_ptr + g, mask=mask, other=0)
    first = mask & (s == p)
    e = tl.load(end_ptr + g, mask=first, other=0)
    c = tl.load(count_ptr + g, mask=first, other=0)
    tl.store(count_ptr + g, c + tl.minimum(e - s, cap - c), mask=first)


@triton.jit
def _gather(src_ptr, idx_ptr, out_ptr, M, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < M
    j = tl.load(idx_ptr + i, mask=mask, other=0)
    tl.store(out_ptr + i, tl.load(src_ptr + j, mask=mask, other=0), mask=mask)


@triton.jit
def _update(x_ptr, c_ptr, order_ptr, start_ptr, end_ptr, out_ptr, D,
            BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    j = tl.program_id(0)
    dcols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    dmask = dcols < D
    s = tl.load(start_ptr + j)
    e = tl.load(end_ptr + j)
    acc = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
    for r0 in range(s, e, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        rmask = r < e
        pts = tl.load(order_ptr + r, mask=rmask, other=0)
        acc += tl.load(x_ptr + pts[:, None] * D + dcols[None, :], mask=rmask[:, None] & dmask[None, :], other=0.0)
    total = tl.sum(acc, axis=0)
    old = tl.load(c_ptr + j.to(tl.int64) * D + dcols, mask=dmask, other=0.0)
    size = (e - s).to(tl.float32)
    new = tl.where(e > s, total / tl.maximum(size, 1.0), old)
    tl.store(out_ptr + j.to(tl.int64) * D + dcols, new, mask=dmask)


def _grid(m, block):
    return (triton.cdiv(m, block),)


def _config(n, d, k):
    cfg = dict(CONFIG)
    block_k = max(16, min(cfg["BLOCK_K_MAX"], triton.next_power_of_2(d)))
    block_n = cfg["BLOCK_N"] if k > 64 else max(16, triton.next_power_of_2(k))
    block_m = cfg["BLOCK_M"] if d <= 128 else 64  # keeps the split point tiles within the register file
    # shared memory: each pipeline stage holds two bf16 [BLOCK_K, BLOCK_N] centroid tiles, plus the
    # split point tile (two bf16 [BLOCK_M, BLOCK_K]); stay under ~200 KiB of the H200's 227 KiB
    stage_bytes = 2 * block_k * block_n * 2
    x_bytes = 2 * block_m * block_k * 2
    stages = max(1, min(cfg["num_stages"], (200 * 1024 - x_bytes) // stage_bytes))
    return block_m, block_n, block_k, cfg["num_warps"], stages


def run(points, centroids):
    n, d = points.shape
    k = centroids.shape[0]
    dev = points.device
    points, centroids = points.contiguous(), centroids.contiguous()
    cap = (n + k - 1) // k
    assign = torch.empty(n, dtype=torch.int64, device=dev)
    count = torch.zeros(k, dtype=torch.int64, device=dev)
    start = torch.zeros(k, dtype=torch.int64, device=dev)
    end = torch.zeros(k, dtype=torch.int64, device=dev)
    block_m, block_n, block_k, warps, stages = _config(n, d, k)
    block_j = min(64, block_n)
    # once per call: bf16 pieces and |c|^2 of every centroid, |x|^2 of every point
    kp = triton.cdiv(k, block_j) * block_j
    d_pad = triton.cdiv(d, block_k) * block_k
    hi = torch.empty((d_pad, kp), dtype=torch.bfloat16, device=dev)
    lo = torch.empty_like(hi)
    cn = torch.empty(kp, dtype=torch.float32, device=dev)
    _split_centroids[(kp // block_j,)](centroids, hi, lo, cn, k, d, kp, D_PAD=d_pad, BLOCK_J=block_j,
                                       BLOCK_D=block_k, num_warps=4)
    xn = torch.empty(n, dtype=torch.float32, device=dev)
    _sqnorm[_grid(n, 64)](points, xn, n, d, BLOCK_M=64, BLOCK_D=min(128, triton.next_power_of_2(d)), num_warps=4)
    room = torch.empty(k, dtype=torch.int8, device=dev)
    active = torch.empty(n, dtype=torch.int64, device=dev)
    _iota[_grid(n, 1024)](active, n, BLOCK=1024)
    m = n
    while m:
        _has_room[_grid(k, 1024)](count, room, k, cap, BLOCK=1024)
        opened = torch.nonzero(room).reshape(-1)
        ko = opened.shape[0]
        kop = triton.cdiv(ko, block_n) * block_n
        ohi = torch.empty((d_pad, kop), dtype=torch.bfloat16, device=dev)
        olo = torch.empty_like(ohi)
        ocn = torch.empty(kop, dtype=torch.float32, device=dev)
        oid = torch.empty(kop, dtype=torch.int32, device=dev)
        _gather_open[(kop // block_j,)](opened, hi, lo, cn, ohi, olo, ocn, oid, ko, kp, kop, D_PAD=d_pad,
                                        BLOCK_J=block_j, BLOCK_D=min(64, block_k), num_warps=4)
        key = torch.empty(m, dtype=torch.int64, device=dev)
        _propose[_grid(m, block_m)](points, xn, active, ohi, olo, ocn, oid, key, m, d, kop, D_PAD=d_pad,
                                    EVEN_D=(d % block_k == 0), RESIDENT=(d_pad == block_k),
                                        UPCAST=points.device.type != "cuda", BLOCK_M=block_m,
                                    BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
        key, order = torch.sort(key, stable=True)
        _bounds[_grid(m, 1024)](key, start, end, m, SHIFT=32, BLOCK=1024)
        reject = torch.empty(m, dtype=torch.int8, device=dev)
        _accept[_grid(m, 1024)](key, order, active, start, count, assign, reject, m, cap, BLOCK=1024)
        _count[_grid(m, 1024)](key, start, end, count, m, cap, BLOCK=1024)
        left = torch.nonzero(reject).reshape(-1)
        m = left.shape[0]
        nxt = torch.empty(m, dtype=torch.int64, device=dev)
        if m:
            _gather[_grid(m, 1024)](active, left, nxt, m, BLOCK=1024)
        active = nxt
    grouped, order = torch.sort(assign, stable=True)
    start.zero_()
    end.zero_()
    _bounds[_grid(n, 1024)](grouped, start, end, n, SHIFT=0, BLOCK=1024)
    new_c = torch.empty_like(centroids)
    block_d = min(128, triton.next_power_of_2(d))
    _update[(k, triton.cdiv(d, block_d))](points, centroids, order, start, end, new_c, d, BLOCK_R=32,
                                          BLOCK_D=block_d, num_warps=4)
    return assign, new_c
