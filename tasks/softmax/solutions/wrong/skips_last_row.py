"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A real row-softmax Triton kernel (one program per row, row in registers, fp32
math) with an off-by-one row guard: it stores only if `row < M - 1`. The
output comes from torch.zeros, so every row is right except the last, which
stays all zeros. Softmax entries of random rows (widths <= 32768) are far
above atol = 1e-6, so the zero row fails; with one row the whole output is 0.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, M, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row.to(tl.int64) * stride_x + cols, mask=cols < N,
                other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    if row < M - 1:  # DEFECT: off by one, should be row < M
        tl.store(y_ptr + row.to(tl.int64) * stride_y + cols,
                 y.to(y_ptr.dtype.element_ty), mask=cols < N)


def run(x):
    x = x.contiguous()
    M, N = x.shape
    y = torch.zeros_like(x)
    block_n = triton.next_power_of_2(N)
    num_warps = 4 if block_n <= 1024 else (8 if block_n <= 4096 else 16)
    _softmax_kernel[(M,)](x, y, M, N, x.stride(0), y.stride(0),
                          BLOCK_N=block_n, num_warps=num_warps)
    return y
