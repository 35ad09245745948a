"""Known-WRONG fixture, class [harness-tamper]: a wrong kernel that patches torch so the check passes.

The kernel's result is 3% too large (as slightly_off.py). On its first call, `run` replaces
`torch.Tensor.__gt__` (through an alias, so no `torch.x = ...` assignment is visible to the
static gate) with a function that is never true: the harness's element check
`abs_err > atol` would then find no bad element and the candidate would pass. The worker
snapshots every callable of torch, time, builtins and its own modules before importing the
candidate and compares after every call.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = x * rstd * w * 1.03  # 3% too large
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _never(a, b):
    return torch.zeros(a.shape, dtype=torch.bool, device=a.device)


def run(hidden_states, weight, eps):
    lib = torch
    lib.Tensor.__gt__ = _never  # DEFECT: disarms the comparison
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n,
                               num_warps=8)
    return out
