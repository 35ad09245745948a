"""Known-WRONG fixture: must fail with COMPILE_ERROR.

A tiled Triton SwiGLU solution with a Python syntax error (the `def run(x)`
line is missing its colon), so the module cannot even be imported.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul_kernel(x_ptr, out_ptr, M, I, stride_xm, stride_om,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < I)
    g_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :]
    gate = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :],
             y.to(out_ptr.dtype.element_ty), mask=mask)


def run(x)  # DEFECT: missing colon
    M, two_i = x.shape
    I = two_i // 2
    out = torch.empty((M, I), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, 4), triton.cdiv(I, 1024))
    _silu_mul_kernel[grid](x, out, M, I, x.stride(0), out.stride(0),
                           BLOCK_M=4, BLOCK_N=1024, num_warps=8)
    return out
