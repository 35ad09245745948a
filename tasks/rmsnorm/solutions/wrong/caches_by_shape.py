"""Known-WRONG fixture, class [output-caching]: returns a cached output for a shape seen before.

The first call for a shape computes and caches the result; later calls with the same shape return
the cached tensor without looking at their inputs. Right on the first inputs, wrong on any fresh
inputs of the same shape: the fresh-values recheck fails it numerically.
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


_cache = {}


def run(hidden_states, weight, eps):
    key = tuple(hidden_states.shape)
    if key not in _cache:
        rows, n = hidden_states.shape
        out = torch.empty_like(hidden_states)
        _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
        _cache[key] = out
    return _cache[key]
