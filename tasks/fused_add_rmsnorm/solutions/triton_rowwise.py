"""Fused residual add + RMSNorm in Triton: whole rows in registers, one read and one write of each tensor.

Each program owns BLOCK_M rows (BLOCK_N = next_power_of_2(hidden_size) columns): it loads
hidden_states and residual once (16-byte vectors, evict-first: nothing reads them again), adds in
float32, stores the updated residual, reduces the sum of squares in float32 and stores the normed
row; the norm uses the float32 sum, as FlashInfer's kernel does. 4 tensor passes instead of the
eager baseline's 5 and a single launch.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): rows per program, and the number
of row elements each thread holds, from which num_warps follows for every hidden size
(16 per thread: 8 warps for 4096, 16 for 8192).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_M": [1, 2, 4], "ELEMS_PER_THREAD": [4, 8, 16, 32]}
CONFIG = {"BLOCK_M": 1, "ELEMS_PER_THREAD": 16}


@triton.jit
def _fused_add_rmsnorm(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, M, N, eps,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    h = tl.load(h_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    s = h + r
    tl.store(res_ptr + offs, s.to(res_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(s * s, axis=1) / N + eps)
    tl.store(out_ptr + offs, (s * rstd[:, None] * w[None, :]).to(out_ptr.dtype.element_ty), mask=mask)


def run(hidden_states, residual, weight, eps):
    m, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    residual_out = torch.empty_like(hidden_states)
    block_m = CONFIG["BLOCK_M"]
    block_n = triton.next_power_of_2(n)
    num_warps = min(32, max(1, block_m * block_n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    _fused_add_rmsnorm[(triton.cdiv(m, block_m),)](
        hidden_states, residual, weight, out, residual_out, m, n, eps,
        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
    )
    return out, residual_out
