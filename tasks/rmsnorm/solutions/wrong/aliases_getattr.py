"""Known-WRONG fixture, class [harness-tamper]: dynamic builtins reached through aliases.

The static gate used to flag only *calls* of getattr, exec and their kin: `_ga = getattr` is a
reference, and `_ga(torch.cuda, "Str" + "eam")` a call of a local name, so both passed, and the
computed names fetch a side stream the kernel is launched on (work that escapes the timer). Any
reference to a dynamic builtin is now refused.
"""
import contextlib

import torch
import triton
import triton.language as tl

_ga = getattr  # DEFECT: an alias the old gate did not see


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
    ctx = contextlib.nullcontext()
    if torch.cuda.is_available():
        side = _ga(torch.cuda, "Str" + "eam")()
        ctx = _ga(torch.cuda, "str" + "eam")(side)
    with ctx:
        _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                                   out.stride(0), float(eps), BLOCK_N=block_n, num_warps=8)
    return out
