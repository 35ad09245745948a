"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A chunked Triton FP8 quantizer that takes each row's amax from its first 1024-column chunk
only (the cross-chunk reduction is missing): the scale is too small for rows whose largest
element lies further right, and those elements saturate at +-448.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, q_ptr, s_ptr, N, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, CHUNK)
    first = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(first), axis=0) / 448.0, 1.0 / (448.0 * 512.0))  # DEFECT: one chunk
    for start in range(0, N, CHUNK):
        c = start + cols
        x = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
        q = tl.minimum(tl.maximum(x / scale, -448.0), 448.0)
        tl.store(q_ptr + row * N + c, q.to(q_ptr.dtype.element_ty), mask=c < N)
    tl.store(s_ptr + row, scale)


def run(x):
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty((m,), dtype=torch.float32, device=x.device)
    _kernel[(m,)](x, q, scale, n, CHUNK=1024, num_warps=4)
    return q, scale
