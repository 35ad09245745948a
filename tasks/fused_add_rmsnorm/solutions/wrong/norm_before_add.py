"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A real fused Triton kernel that writes the updated residual correctly but normalizes
hidden_states alone (the residual is added after the norm's input was taken): `residual_out`
is right, `output` is RMSNorm of the wrong row.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    h = tl.load(h_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(res_ptr + row * N + cols, (h + r).to(res_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / N + eps)  # DEFECT: should normalize h + r
    tl.store(out_ptr + row * N + cols, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, residual, weight, eps):
    m, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    residual_out = torch.empty_like(hidden_states)
    _kernel[(m,)](hidden_states, residual, weight, out, residual_out, n, eps,
                  BLOCK_N=triton.next_power_of_2(n), num_warps=8)
    return out, residual_out
