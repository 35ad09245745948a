"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A real tiled Triton GeGLU kernel that takes gate and up from the wrong halves
(gelu_tanh(up) * gate: the [up | gate] layout of some checkpoints, not vLLM's [gate | up]).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, M, I, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < I
    up = tl.load(x_ptr + row * 2 * I + cols, mask=mask, other=0.0).to(tl.float32)  # DEFECT: this is gate
    g = tl.load(x_ptr + row * 2 * I + I + cols, mask=mask, other=0.0).to(tl.float32)  # DEFECT: this is up
    u = 0.7978845608028654 * (g + 0.044715 * g * g * g)
    tl.store(out_ptr + row * I + cols, (g / (1.0 + tl.exp(-2.0 * u)) * up).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    m, two_i = x.shape
    i = two_i // 2
    out = torch.empty((m, i), dtype=x.dtype, device=x.device)
    _kernel[(m, triton.cdiv(i, 1024))](x, out, m, i, BLOCK_N=1024, num_warps=4)
    return out
