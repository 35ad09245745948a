"""RMSNorm in Triton with tunables: BLOCK_M rows per program, the whole row in registers.

`TUNABLES` declares the search space and `CONFIG` the values in use; `kernelcraft optimize
--agent tuner` writes children that bind other configurations and keeps the fastest. More rows per
program means fewer, larger programs (less launch and scheduling overhead at large batch sizes,
more registers per program); `num_warps` trades parallelism within a program against occupancy.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_M": [1, 2, 4], "num_warps": [2, 4, 8, 16]}
CONFIG = {"BLOCK_M": 1, "num_warps": 4}


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, M, N, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, weight, eps):
    m, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    block_m = CONFIG["BLOCK_M"]
    _rmsnorm_rows[(triton.cdiv(m, block_m),)](
        hidden_states, weight, out, m, n, eps,
        BLOCK_M=block_m, BLOCK_N=triton.next_power_of_2(n), num_warps=CONFIG["num_warps"],
    )
    return out
