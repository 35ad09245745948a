"""Known-WRONG fixture: must fail with INCORRECT_NUMERICAL.

A real Triton rotary-embedding kernel in the GPT-J (interleaved) style: it rotates the pairs
(x[2i], x[2i+1]) by the angle of frequency i, where the definition asks for the neox style,
pairs (x[i], x[i + head_dim / 2]). Same cos / sin, same shapes, different rotation.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rotate(src_ptr, dst_ptr, t, cos, sin, H: tl.constexpr, HALF: tl.constexpr):
    h = tl.arange(0, H)
    c = tl.arange(0, HALF)
    offs = t * (H * 2 * HALF) + h[:, None] * (2 * HALF) + 2 * c[None, :]  # DEFECT: interleaved pairs
    x1 = tl.load(src_ptr + offs).to(tl.float32)
    x2 = tl.load(src_ptr + offs + 1).to(tl.float32)
    tl.store(dst_ptr + offs, (x1 * cos - x2 * sin).to(dst_ptr.dtype.element_ty))
    tl.store(dst_ptr + offs + 1, (x2 * cos + x1 * sin).to(dst_ptr.dtype.element_ty))


@triton.jit
def _kernel(pos_ptr, q_ptr, k_ptr, cs_ptr, qo_ptr, ko_ptr, HQ: tl.constexpr, HK: tl.constexpr,
            HALF: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    pos = tl.load(pos_ptr + t)
    c = tl.arange(0, HALF)
    cos = tl.load(cs_ptr + pos * 2 * HALF + c)[None, :]
    sin = tl.load(cs_ptr + pos * 2 * HALF + HALF + c)[None, :]
    _rotate(q_ptr, qo_ptr, t, cos, sin, HQ, HALF)
    _rotate(k_ptr, ko_ptr, t, cos, sin, HK, HALF)


def run(positions, query, key, cos_sin_cache):
    t, hq, d = query.shape
    q_out = torch.empty_like(query)
    k_out = torch.empty_like(key)
    _kernel[(t,)](positions, query, key, cos_sin_cache, q_out, k_out, HQ=hq, HK=key.shape[1], HALF=d // 2,
                  num_warps=4)
    return q_out, k_out
