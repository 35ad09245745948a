"""Neox rotary embedding of query and key in Triton: one program per BLOCK_T tokens, every head.

A program reads its tokens' positions and float32 cos / sin rows once, then rotates all 32 query
heads and 8 key heads of those tokens as [BLOCK_T, heads, head_dim / 2] tiles: the two halves of
each head are 128-byte contiguous runs, loaded as 16-byte vectors, rotated in float32 and stored
once as bfloat16 into fresh outputs. Every query / key byte is read once and written once, and the
cos / sin row is shared by the token's 40 heads.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): tokens per program and warps.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_T": [1, 2, 4], "num_warps": [2, 4, 8]}
CONFIG = {"BLOCK_T": 1, "num_warps": 4}


@triton.jit
def _rotate(src_ptr, dst_ptr, t, tmask, cos, sin, H: tl.constexpr, HALF: tl.constexpr):
    h = tl.arange(0, H)
    c = tl.arange(0, HALF)
    offs = t[:, None, None] * (H * 2 * HALF) + h[None, :, None] * (2 * HALF) + c[None, None, :]
    m = tmask[:, None, None] & (h[None, :, None] < H) & (c[None, None, :] < HALF)
    x1 = tl.load(src_ptr + offs, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
    x2 = tl.load(src_ptr + offs + HALF, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
    tl.store(dst_ptr + offs, (x1 * cos - x2 * sin).to(dst_ptr.dtype.element_ty), mask=m)
    tl.store(dst_ptr + offs + HALF, (x2 * cos + x1 * sin).to(dst_ptr.dtype.element_ty), mask=m)


@triton.jit
def _rope_neox(pos_ptr, q_ptr, k_ptr, cs_ptr, qo_ptr, ko_ptr, T,
               HQ: tl.constexpr, HK: tl.constexpr, HALF: tl.constexpr, BLOCK_T: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < T
    pos = tl.load(pos_ptr + t, mask=tmask, other=0)
    c = tl.arange(0, HALF)
    row = cs_ptr + pos[:, None] * (2 * HALF) + c[None, :]
    cos = tl.load(row, mask=tmask[:, None], other=0.0)[:, None, :]
    sin = tl.load(row + HALF, mask=tmask[:, None], other=0.0)[:, None, :]
    _rotate(q_ptr, qo_ptr, t, tmask, cos, sin, HQ, HALF)
    _rotate(k_ptr, ko_ptr, t, tmask, cos, sin, HK, HALF)


def run(positions, query, key, cos_sin_cache):
    t, hq, d = query.shape
    hk = key.shape[1]
    q_out = torch.empty_like(query)
    k_out = torch.empty_like(key)
    bt = CONFIG["BLOCK_T"]
    _rope_neox[(triton.cdiv(t, bt),)](positions, query, key, cos_sin_cache, q_out, k_out, t,
                                      HQ=hq, HK=hk, HALF=d // 2, BLOCK_T=bt, num_warps=CONFIG["num_warps"])
    return q_out, k_out
