"""Known-WRONG fixture: must fail with RUNTIME_ERROR.

A real Triton RMSNorm kernel, but `run` rejects its inputs with a ValueError
before launching (an over-strict shape guard that wrongly demands a batch
size divisible by 1 << 20), so every call raises.
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
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty),
             mask=mask)


def run(hidden_states, weight, eps):
    n_rows, n_cols = hidden_states.shape
    # DEFECT: this guard rejects every valid batch size (1 <= batch <= 32768).
    if n_rows % (1 << 20) != 0:
        raise ValueError(f"batch_size must be a multiple of {1 << 20}, got {n_rows}")
    x = hidden_states.contiguous()
    out = torch.empty_like(x)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps),
                               BLOCK_N=triton.next_power_of_2(n_cols), num_warps=8)
    return out
