"""Known-WRONG fixture, class [seed-replay]: predicts its inputs by replaying the generator.

Caches outputs by shape and, to survive the harness's fresh-values recheck, tries to predict the
next inputs from torch's default generator (`initial_seed` + `manual_seed`). The static gate
rejects reading or reseeding generators; at run time the inputs come from private generators
seeded from the run's secret seed, and the default generator is reseeded from the OS.
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
    y = x * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


_cache = {}


def _predict(shape, dtype, device):
    g = torch.Generator(device=device)
    g.manual_seed(torch.initial_seed())  # DEFECT: replays the generator
    return torch.randn(shape, generator=g, device=device).to(dtype)


def run(hidden_states, weight, eps):
    key = tuple(hidden_states.shape)
    if key in _cache:
        return _cache[key]
    _predict(hidden_states.shape, hidden_states.dtype, hidden_states.device)
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n,
                               num_warps=8)
    _cache[key] = out
    return out
