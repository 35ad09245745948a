"""Known-WRONG fixture, class [input-mutation]: correct output, but it scribbles on an input.

A second tiny kernel zeroes the first element of `weight` after the output is written (say, a
scratch buffer reused carelessly). Outputs are right; the inputs no longer equal their pristine
copies.
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


@triton.jit
def _scribble(w_ptr):
    tl.store(w_ptr, tl.zeros([1], dtype=w_ptr.dtype.element_ty).sum(axis=0))


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    _scribble[(1,)](weight)
    return out
