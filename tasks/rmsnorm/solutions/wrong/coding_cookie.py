# coding: raw_unicode_escape
"""Known-WRONG fixture, class [encoding]: code hidden in comments by the coding cookie.

The first line makes the importer decode this file with raw_unicode_escape, which turns every
backslash-u-000a in the text into a line break. Read as UTF-8 (as the static gate used to read
it), the two comments below are comments; imported, each holds code: a side stream created at
import, and a `run` that launches the kernel on it and returns before the visible launch. Work
on another stream escapes the timer (issue 20). The static gate now reads the bytes as the
importer does and refuses any coding cookie but UTF-8.
"""
import torch
import triton
import triton.language as tl

# streams are not used \u000aimport contextlib\u000a_SIDE = torch.cuda.Stream() if torch.cuda.is_available() else None


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


def run(hidden_states, weight, eps):
    x = hidden_states.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    # one program per row \u000a    with torch.cuda.stream(_SIDE) if _SIDE is not None else contextlib.nullcontext():\u000a        _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0), out.stride(0), float(eps), BLOCK_N=block_n, num_warps=8)\u000a    return out
    _rmsnorm_kernel[(n_rows,)](x, weight.contiguous(), out, n_cols, x.stride(0),
                               out.stride(0), float(eps), BLOCK_N=block_n,
                               num_warps=8)
    return out
