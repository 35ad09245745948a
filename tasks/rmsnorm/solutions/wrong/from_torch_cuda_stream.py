"""Known-WRONG fixture, class [escaped-timer]: a side stream imported by name.

`from torch.cuda import Stream, stream` was checked on `torch.cuda` only, and `Stream()` is a
call of a plain name, not of `.Stream`: the old gate passed it. The kernel runs on the side
stream, so the timer (which records events on the current stream) does not wait for it. Imported
names are now checked like attributes.
"""
import contextlib

import torch
import triton
import triton.language as tl
from torch.cuda import Stream, stream  # DEFECT


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
    ctx = stream(Stream()) if torch.cuda.is_available() else contextlib.nullcontext()
    with ctx:
        _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                                   out.stride(0), float(eps), BLOCK_N=block_n, num_warps=8)
    return out
