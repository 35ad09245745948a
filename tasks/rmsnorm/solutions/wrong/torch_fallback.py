"""Known-WRONG fixture, class [torch-compute]: no kernel of its own.

It declares a Triton kernel and launches it, so the static gate is satisfied, then throws the
result away and returns PyTorch's own rms_norm: a fallback to the baseline, which the op audit
(a torch dispatch mode around the call) catches as compute ops called from the candidate.
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
    scratch = torch.empty_like(hidden_states)
    _rmsnorm[(rows,)](hidden_states, weight, scratch, n, eps, BLOCK=triton.next_power_of_2(n))
    return torch.nn.functional.rms_norm(hidden_states, (n,), weight, eps)
