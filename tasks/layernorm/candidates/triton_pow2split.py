"""LayerNorm (weight and bias) in Triton: the row in registers as up to three power-of-2 pieces.

The existing `triton_rowwise` pads each row to next_power_of_2(hidden_size): at 6144 a quarter
of the 8192 lanes are masked, yet they still cost registers, predicated loads, `where`s and
reduction work, and the H200 profile showed that kernel issue-bound (SM 73%, DRAM 52%). Here the
row is split into the binary pieces of its width: P1 = the largest power of 2 <= N, P2 = the
largest power of 2 <= N - P1, P3 = next_power_of_2 of what is left (the only masked piece).
6144 = 4096 + 2048 and 2560 = 2048 + 512 and 8192 = 8192 have no masked lane at all; 4544 =
4096 + 256 + 256 (192 used); 1000 = 512 + 256 + 256 (232 used). Pieces 1 and 2 are loaded and
stored without masks (16-byte vectors), and no `where` is needed on them.

Rows past the end are clamped to the last row instead of masked (the last program then writes the
last row's values twice, identical values), so no row mask either. Offsets are int32: the
definition bounds num_tokens * hidden_size by 32768 * 16384 = 2^29.

Numerics are two-pass over the registers (mean, then the centred sum of squares), as the
reference. BLOCK_M rows per program ([BLOCK_M, P] tiles) for narrow rows.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): BLOCK_M (rows per program) and
ELEMS_PER_THREAD (row elements per thread; num_warps = the power of 2 at or below
BLOCK_M * N / (32 * ELEMS_PER_THREAD), 1 to 32: 6144 -> 8 warps at 16, 16 warps at 8).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_M": [1, 2, 4], "ELEMS_PER_THREAD": [8, 16, 24, 32]}
CONFIG = {"BLOCK_M": 1, "ELEMS_PER_THREAD": 16}


@triton.jit
def _layernorm_pow2(x_ptr, w_ptr, b_ptr, y_ptr, M, N, eps,
                    BLOCK_M: tl.constexpr, P1: tl.constexpr, P2: tl.constexpr, P3: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    base = rows[:, None] * N
    c1 = tl.arange(0, P1)
    x1 = tl.load(x_ptr + base + c1[None, :], eviction_policy="evict_first").to(tl.float32)
    s = tl.sum(x1, axis=1)
    if P2 > 0:
        c2 = P1 + tl.arange(0, P2)
        x2 = tl.load(x_ptr + base + c2[None, :], eviction_policy="evict_first").to(tl.float32)
        s += tl.sum(x2, axis=1)
    if P3 > 0:
        c3 = P1 + P2 + tl.arange(0, P3)
        m3 = c3 < N
        x3 = tl.load(x_ptr + base + c3[None, :], mask=m3[None, :], other=0.0,
                     eviction_policy="evict_first").to(tl.float32)
        s += tl.sum(x3, axis=1)
    mean = s / N
    xc1 = x1 - mean[:, None]
    ss = tl.sum(xc1 * xc1, axis=1)
    if P2 > 0:
        xc2 = x2 - mean[:, None]
        ss += tl.sum(xc2 * xc2, axis=1)
    if P3 > 0:
        xc3 = tl.where(m3[None, :], x3 - mean[:, None], 0.0)
        ss += tl.sum(xc3 * xc3, axis=1)
    rstd = tl.rsqrt(ss / N + eps)
    w1 = tl.load(w_ptr + c1).to(tl.float32)
    b1 = tl.load(b_ptr + c1).to(tl.float32)
    y1 = xc1 * rstd[:, None] * w1[None, :] + b1[None, :]
    tl.store(y_ptr + base + c1[None, :], y1.to(y_ptr.dtype.element_ty))
    if P2 > 0:
        w2 = tl.load(w_ptr + c2).to(tl.float32)
        b2 = tl.load(b_ptr + c2).to(tl.float32)
        y2 = xc2 * rstd[:, None] * w2[None, :] + b2[None, :]
        tl.store(y_ptr + base + c2[None, :], y2.to(y_ptr.dtype.element_ty))
    if P3 > 0:
        w3 = tl.load(w_ptr + c3, mask=m3, other=0.0).to(tl.float32)
        b3 = tl.load(b_ptr + c3, mask=m3, other=0.0).to(tl.float32)
        y3 = xc3 * rstd[:, None] * w3[None, :] + b3[None, :]
        tl.store(y_ptr + base + c3[None, :], y3.to(y_ptr.dtype.element_ty), mask=m3[None, :])


def _prev_pow2(v):
    return 1 << (max(1, v).bit_length() - 1)


def _pieces(n):
    p1 = _prev_pow2(n)
    rest = n - p1
    p2 = _prev_pow2(rest) if rest > 0 else 0
    rest -= p2
    p3 = triton.next_power_of_2(rest) if rest > 0 else 0
    return p1, p2, p3


def run(x, weight, bias, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    if m == 0 or n == 0:
        return y
    p1, p2, p3 = _pieces(n)
    block_m = min(CONFIG["BLOCK_M"], triton.next_power_of_2(m))
    num_warps = min(32, _prev_pow2(block_m * n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    _layernorm_pow2[(triton.cdiv(m, block_m),)](x, weight, bias, y, m, n, eps, BLOCK_M=block_m,
                                                P1=p1, P2=p2, P3=p3, num_warps=num_warps)
    return y
