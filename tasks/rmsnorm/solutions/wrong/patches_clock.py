"""Known-WRONG fixture, class [harness-tamper]: replaces the clock the timer reads.

A correct kernel, but the module sets `torch.cuda.Event.elapsed_time` to report 1 microsecond
for anything: a 1000x "speedup". The static gate rejects the assignment to an attribute of an
imported module; had it slipped through, the timer calls the functions it bound before the
candidate was imported, and the run-time snapshot would reject the replacement.
"""
import torch
import triton
import triton.language as tl

torch.cuda.Event.elapsed_time = lambda self, end: 1e-3  # DEFECT


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = x * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, weight, eps):
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n,
                               num_warps=8)
    return out
