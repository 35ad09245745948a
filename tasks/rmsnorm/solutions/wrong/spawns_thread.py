"""Known-WRONG fixture, class [threads]: leaves a background thread running.

No threading import: the thread is started by logging's QueueListener, which the static gate
does not forbid (an honest kernel may log); the worker counts threads before and after the call
and finds one more.
"""
import logging.handlers
import queue

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
    out = torch.empty_like(hidden_states)
    _rmsnorm[(rows,)](hidden_states, weight, out, n, eps, BLOCK=triton.next_power_of_2(n))
    logging.handlers.QueueListener(queue.Queue()).start()  # a daemon thread, never stopped
    return out
