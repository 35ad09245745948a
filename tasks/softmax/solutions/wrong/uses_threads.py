"""Known-WRONG fixture: must be REJECTED by the static gate.

A correct row-softmax Triton kernel, but `run` launches it from a
`threading.Thread` and joins it. Solutions may not start threads (work
hidden on another thread can escape timing and isolation), so the static
gate must reject the source before it is ever run, even though the numbers
would be right.
"""
import threading

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
    x = x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    block_n = triton.next_power_of_2(N)
    num_warps = 4 if block_n <= 1024 else (8 if block_n <= 4096 else 16)

    def _launch():
        _softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0),
                              BLOCK_N=block_n, num_warps=num_warps)

    worker = threading.Thread(target=_launch)  # DEFECT: threads are forbidden
    worker.start()
    worker.join()
    return y
