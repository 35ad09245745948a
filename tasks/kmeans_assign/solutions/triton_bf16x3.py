"""Nearest-centroid assignment in Triton: split-bf16 ("bf16x3") distance GEMM with a fused argmin.

Design
------
1. `_split_centroids` (tiny pre-kernel, k x d elements): every centroid coordinate c is split into
   two bf16 pieces, c_hi = bf16(c) and c_lo = bf16(c - c_hi), stored transposed and zero padded as
   [D_PAD, K_PAD] (the canonical row-major B operand of tl.dot, no in-kernel transpose), plus
   |c|^2 in float32 from the unsplit values (+inf for the padding columns, so padded centroids
   can never win and the main loop needs no column masks).
2. `_assign`: one program per BLOCK_M points walks all centroids in BLOCK_N tiles. The point tile is
   split the same way in registers (x_hi, x_lo) and x.c is accumulated in float32 by three bf16
   tensor-core dots: x_lo c_hi + x_hi c_lo + x_hi c_hi (small terms first). score = |c|^2 - 2 x.c
   (|x|^2 is common to a point's centroids and cannot change its argmin), then a running
   (min, argmin) per point in registers; the n x k matrix is never written. With RESIDENT (d fits
   one BLOCK_K tile) the point tile is loaded and split once per program, not once per centroid
   tile. Rows past n are clamped to n - 1 for the loads (stores are masked), so loads are unmasked
   when d is a multiple of BLOCK_K.

bf16 runs twice as fast as tf32 on the H200's tensor cores, so three bf16 MMAs cost about what 1.5
tf32 MMAs cost, and half of what the previous tf32x3 (three tf32 MMAs plus in-kernel splits of both
operands every tile) costs.

Precision argument (rigorous, worst case, any d <= 512)
-------------------------------------------------------
bf16 keeps p = 8 significant bits. Whether the fp32 -> bf16 conversion rounds (GPU) or truncates
(the Triton interpreter), |x - x_hi| <= 2^-7 |x|; r = x - x_hi is exact in fp32; |r - x_lo| <=
2^-7 |r| <= 2^-14 |x|, and |x_lo| <= 2^-7 (1 + 2^-7) |x|. Same for c. Each bf16 x bf16 product is
exact in fp32. The neglected part of x_i c_i is x_lo c_lo plus the two representation residues
times the other operand: at most (2^-14 (1+2^-7)^2 + 2 * 2^-14 (1 + 2^-7 + 2^-14)) |x_i c_i|
< 3.1 * 2^-14 |x_i c_i| = 1.9e-4 |x_i c_i|. The float32 accumulation of the 3d partial products
(tensor cores: assume as bad as truncation, 2^-23 per addition, linear worst case) adds at most
3 d 2^-23 sum|x_i c_i|. With sum |x_i c_i| <= |x||c| (Cauchy-Schwarz), the computed x.c is off by
at most delta |x||c_j|, delta = 1.9e-4 + 3d * 1.2e-7 <= 3.7e-4 at d = 512 (2.4e-4 at d = 128).
|c|^2 in fp32: <= d 2^-24 |c|^2. A score s_j = |c_j|^2 - 2 x.c_j is then off by e_j <=
2 delta |x||c_j| + d 2^-24 |c_j|^2 <= delta (|x|^2 + max|c|^2) + 3e-5 max|c|^2. The chosen j* minimises
the computed score, so its true squared distance exceeds the nearest one's by at most
e_j* + e_nearest <= 2 delta (|x|^2 + max|c|^2) + 6e-5 max|c|^2 <= 8e-4 x (|x|^2 + max |c|^2) at
d = 512 (5.4e-4 at d = 128): inside the contract's 2e-3 by 2.5x even in the worst case, where plain
tf32 is not (with a truncating tf32 conversion its worst case is 2^-8 = 3.9e-3 of the scale; its
*typical* error is ~1e-4, scripts/kmeans_tf32_sim.py). The float32 rounding of the score itself
(2^-24 of |score| <= 2^-24 x 3 x scale) is negligible. scripts/kmeans_bf16x3_sim.py checks the
argument numerically in float64: max |x.c error| / (|x||c|) 3e-6 (rounding) / 1.5e-5
(truncation), worst argmin excess 0 / 1.6e-6 of the scale, against tf32's 1.5e-4 and 5.7e-5.

Why plain tf32 failed on the H200 (earlier version): not explained by precision (operand
rounding/truncation typical errors are 12x inside the tolerance at n = 65k; the worst case over 1M
points grows only like the Gaussian tail). That version fed the same loaded centroid tile both to
tl.trans -> tf32 dot and to the |c|^2 reduction; a GPU-side defect on that path is the likeliest
cause. This kernel has neither: |c|^2 comes from the pre-kernel, and the B operand is a plain
row-major bf16 load.
"""
import torch
import triton
import triton.language as tl

# Tunables (per workload class; the tuner may override). BLOCK_K must be >= 16 and a power of 2.
TUNABLES = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4],
}
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K_MAX": 128, "num_warps": 8, "num_stages": 3}


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
def _assign(x_ptr, hi_ptr, lo_ptr, cn_ptr, out_ptr, N, D, KP,
            D_PAD: tl.constexpr, EVEN_D: tl.constexpr, RESIDENT: tl.constexpr, UPCAST: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < N
    xrow = x_ptr + tl.minimum(rows, N - 1).to(tl.int64)[:, None] * D
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
    for j0 in range(0, KP, BLOCK_N):
        cols = j0 + ns
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        if RESIDENT:
            ch = tl.load(hi_ptr + ks[:, None] * KP + cols[None, :])
            cl = tl.load(lo_ptr + ks[:, None] * KP + cols[None, :])
            acc = _dot3(xh, xl, ch, cl, acc, UPCAST)
        else:
            for k0 in range(0, D_PAD, BLOCK_K):
                kk = k0 + ks
                if EVEN_D:
                    x = tl.load(xrow + kk[None, :])
                else:
                    x = tl.load(xrow + kk[None, :], mask=(kk < D)[None, :], other=0.0)
                xh2, xl2 = _split(x)
                ch = tl.load(hi_ptr + kk[:, None] * KP + cols[None, :])
                cl = tl.load(lo_ptr + kk[:, None] * KP + cols[None, :])
                acc = _dot3(xh2, xl2, ch, cl, acc, UPCAST)
        score = tl.load(cn_ptr + cols)[None, :] - 2.0 * acc
        m = tl.min(score, axis=1)
        j = tl.argmin(score, axis=1).to(tl.int32) + j0
        better = m < best
        best_j = tl.where(better, j, best_j)
        best = tl.where(better, m, best)
    tl.store(out_ptr + rows, best_j.to(tl.int64), mask=rmask)


def _config(n, d, k):
    cfg = dict(CONFIG)
    block_k = max(16, min(cfg["BLOCK_K_MAX"], triton.next_power_of_2(d)))
    block_n = cfg["BLOCK_N"] if k > 64 else max(16, triton.next_power_of_2(k))
    block_m = cfg["BLOCK_M"] if n > 16384 or d < 256 else 64
    if d > 128 and block_m > 64:
        block_m = 64  # keeps the split point tiles within the register file
    # shared memory: each pipeline stage holds two bf16 [BLOCK_K, BLOCK_N] centroid tiles, plus the
    # split point tile (two bf16 [BLOCK_M, BLOCK_K]); stay under ~200 KiB of the H200's 227 KiB
    stage_bytes = 2 * block_k * block_n * 2
    x_bytes = 2 * block_m * block_k * 2
    stages = max(1, min(cfg["num_stages"], (200 * 1024 - x_bytes) // stage_bytes))
    return block_m, block_n, block_k, cfg["num_warps"], stages


def split_centroids(centroids, block_n, block_k):
    """(c_hi, c_lo) as bf16 [D_PAD, K_PAD] and |c|^2 (float32, +inf padding) for the assign kernels."""
    k, d = centroids.shape
    kp = triton.cdiv(k, block_n) * block_n
    d_pad = triton.cdiv(d, block_k) * block_k
    hi = torch.empty((d_pad, kp), dtype=torch.bfloat16, device=centroids.device)
    lo = torch.empty_like(hi)
    cn = torch.empty(kp, dtype=torch.float32, device=centroids.device)
    block_j = min(64, block_n)
    _split_centroids[(kp // block_j,)](centroids, hi, lo, cn, k, d, kp, D_PAD=d_pad, BLOCK_J=block_j,
                                       BLOCK_D=block_k, num_warps=4)
    return hi, lo, cn, kp, d_pad


def run(points, centroids):
    n, d = points.shape
    k = centroids.shape[0]
    out = torch.empty(n, dtype=torch.int64, device=points.device)
    if n == 0:
        return out
    block_m, block_n, block_k, warps, stages = _config(n, d, k)
    hi, lo, cn, kp, d_pad = split_centroids(centroids.contiguous(), block_n, block_k)
    _assign[(triton.cdiv(n, block_m),)](points.contiguous(), hi, lo, cn, out, n, d, kp, D_PAD=d_pad,
                                        EVEN_D=(d % block_k == 0), RESIDENT=(d_pad == block_k),
                                        UPCAST=points.device.type != "cuda",
                                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                        num_warps=warps, num_stages=stages)
    return out
