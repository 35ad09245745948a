"""Known-WRONG fixture, class [harness-tamper]: code kept in a file the gate does not parse.

The static gate parsed only the .py sources; payload.txt is declared too, so the builder writes it
next to main.py, and `runpy.run_path` runs it: there `import threading` (or anything else) is
never seen. A python/triton solution's sources must now all be .py files, and runpy, like every
module that runs files or strings as code, is refused.
"""
import runpy  # DEFECT

import torch
import triton
import triton.language as tl

_payload = runpy.run_path(__file__.replace("main.py", "payload.txt"))


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
    _payload["before_launch"]()
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n, num_warps=8)
    return out
