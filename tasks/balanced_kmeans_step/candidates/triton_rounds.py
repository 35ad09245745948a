"""Balanced k-means step in Triton: the contract's deferred acceptance, one fused kernel per round.

Per round, `_propose` gives every unassigned point its nearest centroid that still has room: the
split-tf32 ("tf32x3") distance GEMM with a fused running argmin (as in kmeans_assign; full centroids scored +inf),
never materializing the n x k matrix, and writes a packed key (centroid << 32 | float bits of the
distance). One stable torch.sort of the keys groups the proposals by centroid, nearest first
(point order among equal distances); `_bounds` marks each group's span, `_accept` takes the first
`cap - count` of every group, `_count` moves the counts, and the rejected points are compacted
(torch.nonzero + `_gather`) for the next round. N(0, 1) data needs ~12 rounds, ~2.2 n proposals in
all. The update sorts the assignment (stable) and sums each cluster's points in a fixed order, so
the step is deterministic without atomics. torch's sort and nonzero are the only torch compute
ops (contract.toml allows them).

Precision: with plain tf32 distances the H200 objective came out 0.234% above the reference's
(the contract allows 0.1%). The distances both pick each point's proposal and rank the proposers
at a centroid, so their errors compound over the rounds. "tf32x3" (tf32 head/tail split, three
tensor-core MMAs) keeps tensor cores at ~3x the MMA work and gives x.c close to fp32 accuracy. The
Triton interpreter computes every tl.dot in fp32 and cannot show the difference; this choice is
not yet verified on the H200.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _iota(out_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, i.to(tl.int64), mask=i < N)


@triton.jit
def _propose(x_ptr, c_ptr, active_ptr, count_ptr, key_ptr, M, K, D, cap,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    slots = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    smask = slots < M
    rows = tl.load(active_ptr + slots, mask=smask, other=0)
    best = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    best_j = tl.zeros([BLOCK_M], dtype=tl.int32)
    xn = tl.zeros([BLOCK_M], dtype=tl.float32)
    ks = tl.arange(0, BLOCK_K)
    for j0 in range(0, K, BLOCK_N):
        cols = j0 + tl.arange(0, BLOCK_N)
        room = tl.load(count_ptr + cols, mask=cols < K, other=cap) < cap
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        cn = tl.zeros([BLOCK_N], dtype=tl.float32)
        xs = tl.zeros([BLOCK_M], dtype=tl.float32)
        for k0 in range(0, D, BLOCK_K):
            kk = k0 + ks
            kmask = kk < D
            x = tl.load(x_ptr + rows[:, None] * D + kk[None, :], mask=smask[:, None] & kmask[None, :], other=0.0)
            # c^T tile [BLOCK_K, BLOCK_N] addressed directly (feature dim contiguous, K-major as the
            # MMA wants) rather than transposing a loaded tile in registers: fp32 dots on transposed
            # tiles have a history of miscompiles (triton-lang/triton#1840, #1937)
            ct = tl.load(c_ptr + cols.to(tl.int64)[None, :] * D + kk[:, None],
                         mask=(cols < K)[None, :] & kmask[:, None], other=0.0)
            # tf32x3: 3 tensor-core passes, near-fp32 x.c (plain tf32 missed the objective bound on H200)
            acc = tl.dot(x, ct, acc, input_precision="tf32x3")
            cn += tl.sum(ct * ct, axis=0)
            xs += tl.sum(x * x, axis=1)
        xn = xs
        score = tl.where(room[None, :], cn[None, :] - 2.0 * acc, float("inf"))
        m = tl.min(score, axis=1)
        j = tl.argmin(score, axis=1).to(tl.int32) + j0
        better = m < best
        best_j = tl.where(better, j, best_j)
        best = tl.where(better, m, best)
    dist = tl.maximum(best + xn, 0.0)
    key = (best_j.to(tl.int64) << 32) | dist.to(tl.int32, bitcast=True).to(tl.int64)
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


def run(points, centroids):
    n, d = points.shape
    k = centroids.shape[0]
    dev = points.device
    cap = (n + k - 1) // k
    assign = torch.empty(n, dtype=torch.int64, device=dev)
    count = torch.zeros(k, dtype=torch.int64, device=dev)
    start = torch.zeros(k, dtype=torch.int64, device=dev)
    end = torch.zeros(k, dtype=torch.int64, device=dev)
    active = torch.empty(n, dtype=torch.int64, device=dev)
    _iota[_grid(n, 1024)](active, n, BLOCK=1024)
    block_k = max(16, min(32, triton.next_power_of_2(d)))
    block_n = 128 if k > 64 else max(16, triton.next_power_of_2(k))
    m = n
    while m:
        key = torch.empty(m, dtype=torch.int64, device=dev)
        _propose[_grid(m, 128)](points, centroids, active, count, key, m, k, d, cap, BLOCK_M=128,
                                BLOCK_N=block_n, BLOCK_K=block_k, num_warps=8, num_stages=3)
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
