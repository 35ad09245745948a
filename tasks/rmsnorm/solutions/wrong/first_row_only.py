"""Known-WRONG fixture, class [stale-memory]: computes one row and hopes the rest is already there.

The "150x" pattern: the output comes from torch.empty and only row 0 is computed. If the
allocator handed back memory where the reference's result had been, the other rows would look
right. Here the candidate runs before the reference, and on CUDA the allocator is seeded with NaN
blocks first, so the unwritten rows read NaN (on CPU, whatever malloc returns).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    _rmsnorm[(1,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    return out
