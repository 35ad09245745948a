"""Known-WRONG fixture, class [nondeterminism]: state that drifts between calls.

Every other call scales the result by (1 + 2**-6): within the bf16 tolerance, so each single
call passes the numerical check, but two calls on identical inputs disagree bit for bit.
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


_calls = [0]


@triton.jit
def _scale(y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (y * s).to(y_ptr.dtype.element_ty), mask=m)


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    _calls[0] += 1
    if _calls[0] % 2 == 0:
        _scale[(triton.cdiv(rows * n, 1024),)](out, rows * n, 1.0 + 2.0 ** -6, BLOCK=1024)
    return out
