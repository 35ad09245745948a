"""Known-WRONG fixture, class [holdout-shapes]: right only on the shapes it was shown.

Tuned to the benchmark: for batch sizes in its table it is a correct kernel; for any other batch
size it skips the last row (an off-by-one in a "tail" path nobody exercised). Every workload of
the task (and of the small test copies) passes; the holdout shapes of the generalization gate do not.
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


_SEEN = {1, 3, 16, 128, 1024, 4096, 8192, 16384, 777}


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.zeros_like(hidden_states)
    grid = rows if rows in _SEEN else rows - 1
    _rmsnorm[(grid,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    return out
