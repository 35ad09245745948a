"""Known-WRONG fixture: must fail with RUNTIME_ERROR (the worker process dies).

A real row-softmax Triton kernel, but `run` first reads through a numpy view
whose stride (2**40 bytes) points far outside its one-element buffer, into
unmapped memory: the process is killed by SIGSEGV, as a native kernel with a
wild pointer would be, instead of raising a catchable exception.
"""
import numpy as np
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


def run(x):
    # DEFECT: a wild read, 1 TiB past a one-element buffer.
    wild = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2,), strides=(1 << 40,))
    float(wild.sum())
    x = x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N), num_warps=8)
    return y
