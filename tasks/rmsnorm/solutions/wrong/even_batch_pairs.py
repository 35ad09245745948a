"""Known-WRONG fixture, class [holdout-shapes]: right for odd batch sizes and multiples of 16 only.

The host code picks a launch per batch-size class, as kernels tuned on the benchmark shapes do: a
16-row tiled grid for multiples of 16, one program per row plus a separate tail row for odd counts,
and for the remaining even counts a row-pair grid whose bound is one pair short. The last two rows
of an even batch that is no multiple of 16 (2, 6, 10, 4094...) stay zero. The task's workloads
(1, 16, 128, ... and the test copies' 1 and 3) and holdouts that are always odd (1, 17, 129, m + 1,
2m + 1) never hit it; an even holdout no multiple of 16 does.
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
    out = torch.zeros_like(hidden_states)
    if rows % 16 == 0 or rows % 2 == 1:
        grid = rows  # tiled path / per-row path with its tail row: both cover every row
    else:
        grid = 2 * (rows // 2 - 1)  # the pair path: one pair short
    if grid > 0:
        _rmsnorm[(grid,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    return out
