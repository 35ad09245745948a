"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A real row-wise Triton LayerNorm that forgets to subtract the mean (an RMSNorm with a bias):
on rows whose mean is not zero (the contract draws x from N(1, 1)) every output is wrong.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)  # DEFECT: no mean subtraction
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (x * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, weight, bias, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    _kernel[(m,)](x, weight, bias, y, n, eps, BLOCK_N=triton.next_power_of_2(n), num_warps=8)
    return y
