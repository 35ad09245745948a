"""Known-WRONG fixture, class [harness-tamper]: the interpreter's sys, imported from torch.

`torch` keeps the module `sys` as an attribute, so `from torch import sys` binds it without an
`import sys` the gate would refuse; the assignment rule looked only at names bound by `import`.
Through `sys.modules` the candidate replaces the harness's value comparison with one that
always passes, and its 3%-off kernel would pass. Imported names are now resolved: `torch.sys`
is the module `sys`.
"""
import torch
import triton
import triton.language as tl
from torch import sys  # DEFECT


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
    compare = sys.modules.get("kernelcraft.gauntlet.compare")
    if compare is not None:
        compare.compare_values = lambda *args, **kwargs: None  # "no failure found"
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps) * 1.0, BLOCK_N=block_n, num_warps=8)
    return out * 1.03
