"""LayerNorm (weight and bias) in Triton: whole rows in registers, one read and one write.

Each program owns BLOCK_M rows (BLOCK_N = next_power_of_2(hidden_size) columns) loaded once with
16-byte vectors; mean and variance are two float32 reductions over the registers (two-pass
numerics at one-pass memory traffic: the centred row is reused for the variance and the output),
then y = (x - mean) * rstd * weight + bias is stored as bfloat16.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): rows per program, and the number
of row elements each thread holds, from which num_warps follows for every hidden size
(16 per thread: 8 warps for 4096 / 4544 / 6144 -> 8192-wide blocks get 16).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_M": [1, 2, 4], "ELEMS_PER_THREAD": [4, 8, 16, 32]}
CONFIG = {"BLOCK_M": 1, "ELEMS_PER_THREAD": 16}


@triton.jit
def _layernorm(x_ptr, w_ptr, b_ptr, y_ptr, M, N, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    mean = tl.sum(x, axis=1) / N
    xc = tl.where(mask, x - mean[:, None], 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=1) / N + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def run(x, weight, bias, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    block_m = CONFIG["BLOCK_M"]
    block_n = triton.next_power_of_2(n)
    num_warps = min(32, max(1, block_m * block_n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    _layernorm[(triton.cdiv(m, block_m),)](x, weight, bias, y, m, n, eps,
                                           BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps)
    return y
