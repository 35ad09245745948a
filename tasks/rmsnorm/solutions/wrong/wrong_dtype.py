"""Known-WRONG fixture: must fail with INCORRECT_DTYPE.

A real Triton RMSNorm whose values are correct (fp32 math, one program per
row) but whose output tensor is allocated as float32 instead of bfloat16, so
the returned dtype does not match the definition's output dtype.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty),
             mask=mask)


def run(hidden_states, weight, eps):
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    # DEFECT: float32 output instead of hidden_states.dtype (bfloat16).
    out = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
    block_n = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n,
                               num_warps=8)
    return out
