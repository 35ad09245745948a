"""Known-WRONG fixture, class [stress-inputs]: squares in float16, so one outlier zeroes its row.

To halve the registers of the sum of squares, each element is squared in float16 before the float32
sum. For N(0, 1) activations that costs ~1e-3 relative, inside bf16's tolerance, so every workload
and holdout shape passes. A row holding one LLM-style outlier |x| > 256 squares it past float16's
largest finite value (65504): the sum is inf, rsqrt(inf) = 0, and the whole row comes out zero.
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
    xh = x.to(tl.float16)
    sq = (xh * xh).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(sq, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    if rows:
        _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    return out
