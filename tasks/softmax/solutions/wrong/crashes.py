"""Known-WRONG fixture: must fail with RUNTIME_ERROR (the worker process dies).

A real row-softmax Triton kernel, but `run` first lifts Python's recursion
limit to 10**9 and calls a small function that recurses without end through
a C builtin (`sorted(..., key=...)`, whose C frame is several KiB). With
the interpreter's recursion guard out of the way, the C stack overflows and
the process is killed by SIGSEGV (seen on CPython 3.11 and 3.12) instead of
raising a catchable exception. (On interpreters that check the real C-stack
depth, 3.14+, it raises RecursionError instead: still a RUNTIME_ERROR.)
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask,
                other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _row_key(n):
    # DEFECT: unbounded recursion, each level through C (list.sort's key call).
    return sorted((n + 1,), key=_row_key)


def run(x):
    sys.setrecursionlimit(10**9)
    _row_key(0)
    x = x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N), num_warps=8)
    return y
