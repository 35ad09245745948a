"""Known-WRONG fixture, class [nondeterminism] behind a numerical failure: a "race" whose every outcome is wrong.

Each call scales the result by 1 + 0.05 * (calls so far): outside the bf16 tolerance on every call, and different
on every call, as a kernel whose lost updates differ from launch to launch. The verdict stays INCORRECT_NUMERICAL
(the output is wrong), but its reason must also say that a second call on identical inputs differed: the
determinism gate runs only after the checks pass, and a race read as rounding costs days (gdn_prefill, session 25).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, eps, s, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w * s).to(y_ptr.dtype.element_ty), mask=mask)


_calls = [0]


def run(hidden_states, weight, eps):
    rows, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    _calls[0] += 1
    _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, 1.0 + 0.05 * _calls[0], BLOCK=triton.next_power_of_2(n))
    return out
