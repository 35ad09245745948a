"""Row softmax in Triton: the row stays in registers as bfloat16, exp recomputed for the output.

The H200 profile of `triton_online` at 4096 x 32768: one 32-warp program per row holds the row in
float32 (32 values per thread, 63 registers), so only one program fits an SM (45% achieved
occupancy, DRAM 55%, SM 46%): while that program reduces, exponentiates and stores, no loads are in
flight on the SM (latency-bound, one row at a time). Here the register footprint of the row is
halved so that two or more programs share an SM and one's loads overlap another's math:

* the row is loaded and kept as bfloat16 (two values per 32-bit register);
* the max is taken on the bf16 values (exact), the sum of exp(x - max) in float32 from a
  conversion that dies right after the sum;
* the output recomputes exp from the bf16 values, rebuilt to float32 by a 16-bit shift of their
  bits (a different instruction sequence, so the compiler does not merge it with the first
  conversion and keep a float32 copy alive), as exp2((x - max) * log2(e) - log2(sum)): the
  division by the sum folded into the exponent. exp costs twice, but the SM had half its issue
  slots idle.

With 16 warps at 32768 (64 values, 32 registers of row per thread) two programs fit an SM.
Narrow rows pack BLOCK_M rows per program (~ROW_TILE elements). Rows that are entirely -inf give
NaN, as torch.softmax. Error: exp2 of a float32 argument within a few ulps of the exact one, far
inside the contract's 1.6e-2 relative tolerance.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): ELEMS_PER_THREAD (row values
per thread, from which num_warps follows: 32768 -> 16 warps at 64), MIN_WARPS (floor on
num_warps: 4096-wide rows get 4 warps, 32 values per thread) and ROW_TILE (elements per program
for narrow rows).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"ELEMS_PER_THREAD": [16, 32, 64], "MIN_WARPS": [2, 4, 8], "ROW_TILE": [2048, 4096, 8192]}
CONFIG = {"ELEMS_PER_THREAD": 64, "MIN_WARPS": 4, "ROW_TILE": 4096}


@triton.jit
def _softmax_bf16_rows(x_ptr, y_ptr, M, N, stride_x, stride_y,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    if EVEN_N:
        xb = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], eviction_policy="evict_first")
    else:
        mask = (cols < N)[None, :]
        xb = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=float("-inf"),
                     eviction_policy="evict_first")
    m = tl.max(xb, axis=1).to(tl.float32)
    m = tl.where(m == float("-inf"), 0.0, m)
    s = tl.sum(tl.exp2((xb.to(tl.float32) - m[:, None]) * 1.4426950408889634), axis=1)
    shift = m * 1.4426950408889634 + tl.log2(s)
    # bf16 -> float32 by its bits (exact), a second path the compiler keeps separate.
    xf = (xb.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    y = tl.exp2(xf * 1.4426950408889634 - shift[:, None])
    if EVEN_N:
        tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def run(x):
    if x.stride(-1) != 1:
        x = x.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y
    block_n = triton.next_power_of_2(N)
    block_m = min(max(1, CONFIG["ROW_TILE"] // block_n), triton.next_power_of_2(M))
    num_warps = min(32, max(CONFIG["MIN_WARPS"], block_m * block_n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    _softmax_bf16_rows[(triton.cdiv(M, block_m),)](x, y, M, N, x.stride(0), N, BLOCK_M=block_m,
                                                   BLOCK_N=block_n, EVEN_N=block_n == N,
                                                   num_warps=num_warps)
    return y
