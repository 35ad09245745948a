"""Neox rotary embedding of query and key in Triton: a (tokens, head groups) grid for few tokens, the
promoted one-program-per-token kernel for many.

Why: at decode sizes (1 to a few hundred tokens) the promoted `triton_tokens` runs one program per
token that rotates all 40 heads (32 query, 8 key) behind one dependent chain: load the position,
then the cos / sin row it indexes, then rotate. There are few programs, so few SMs work, and each
pays that chain before its first head is done. Above SMALL_T tokens there is enough work to hide it,
and the promoted kernel (copied here unchanged as `_rope_neox`) is kept.

`_rope_heads` (num_tokens <= SMALL_T): program (t, g) rotates HEADS_PER_PROG heads of token t: head
group g covers query heads while g * HEADS_PER_PROG < 32, key heads after it (HEADS_PER_PROG divides
8, so a group never straddles the two tensors and no head mask is needed). With 4 heads per program
that is 10 programs per token instead of 1. The program loads its [HEADS_PER_PROG, 64] halves of q
or k *first*, then the token's position, then the cos / sin row: the q / k loads do not depend on
the position, so their DRAM latency can overlap the position -> cos / sin chain. Program order alone
does not guarantee that order in the SASS (ptxas may sink independent loads below dependent ones:
AGENTS.md, "Volatile loads pin load order"); PIN_LOADS makes all five loads volatile, which keeps
their program order (PTX allows no cache hint on a volatile load, so PIN_LOADS drops evict_first).
POS_FIRST issues the position load before the q / k loads instead (the chain starts earlier; the
q / k loads still come before cos / sin). For reference, the sm_90 SASS of this kernel without
PIN_LOADS already issues position, q / k, then cos / sin, with no wait between the q / k loads and
the position load. SMALL_WARPS: with 4 heads per program a half-tile is 256
bf16 elements, one warp of 16-byte vectors.

The cos / sin row is loaded as a [HEADS_PER_PROG, 64] tile (the same row for every head, each
thread reading the 16-byte vectors it multiplies): loaded as a [64] row and broadcast, it went
through shared memory and a barrier (convert_layout) before the first multiply.

Math as `triton_tokens`: float32 rotation of bf16 inputs with float32 cos / sin, one rounding to
bf16 into fresh outputs, the same expressions. On the GPU, Triton (FP fusion on, its default in 3.9)
contracts each output into one FMA and one multiply, and which product goes into the FMA follows
LLVM's operand ranking, i.e. the order of the loads: loading sin before cos gives
`fma(x1, cos, -(x2 * sin))` and `fma(x1, sin, x2 * cos)`, triton_tokens' contraction (PTX of both for
sm_90), so the two kernels should give identical bits there too; with cos first, the second output
contracted `x2 * cos` instead. The interpreter does not contract. Token offsets are int64
(program_id widened before the multiply).

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): SMALL_T (the largest token count
that takes the head-group kernel), HEADS_PER_PROG, SMALL_WARPS, PIN_LOADS, POS_FIRST; BLOCK_T and
num_warps of the large path (the promoted kernel's defaults).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"SMALL_T": [128, 512, 1024, 2047], "HEADS_PER_PROG": [1, 2, 4, 8], "SMALL_WARPS": [1, 2, 4],
            "PIN_LOADS": [True, False], "POS_FIRST": [False, True],
            "BLOCK_T": [1, 2, 4], "num_warps": [2, 4, 8]}
CONFIG = {'SMALL_T': 1024, 'HEADS_PER_PROG': 4, 'SMALL_WARPS': 1, 'PIN_LOADS': False, 'POS_FIRST': False, 'BLOCK_T': 1, 'num_warps': 4}


@triton.jit
def _ld(ptr, PIN: tl.constexpr):
    if PIN:  # volatile: kept in program order among the volatile loads
        x = tl.load(ptr, volatile=True)
    else:
        x = tl.load(ptr)
    return x


@triton.jit
def _ld_stream(ptr, PIN: tl.constexpr):
    if PIN:
        x = tl.load(ptr, volatile=True)
    else:
        x = tl.load(ptr, eviction_policy="evict_first")
    return x


@triton.jit
def _rope_heads(pos_ptr, q_ptr, k_ptr, cs_ptr, qo_ptr, ko_ptr,
                HQ: tl.constexpr, HK: tl.constexpr, HALF: tl.constexpr, HPP: tl.constexpr,
                PIN: tl.constexpr, POS_FIRST: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h0 = tl.program_id(1) * HPP  # first head of the group, counted over q's heads then k's
    if h0 < HQ:
        src = q_ptr + (t * HQ + h0) * (2 * HALF)
        dst = qo_ptr + (t * HQ + h0) * (2 * HALF)
    else:
        src = k_ptr + (t * HK + (h0 - HQ)) * (2 * HALF)
        dst = ko_ptr + (t * HK + (h0 - HQ)) * (2 * HALF)
    h = tl.arange(0, HPP)
    c = tl.arange(0, HALF)
    offs = h[:, None] * (2 * HALF) + c[None, :]
    if POS_FIRST:
        pos = _ld(pos_ptr + t, PIN)
        x1 = _ld_stream(src + offs, PIN).to(tl.float32)
        x2 = _ld_stream(src + offs + HALF, PIN).to(tl.float32)
    else:
        x1 = _ld_stream(src + offs, PIN).to(tl.float32)
        x2 = _ld_stream(src + offs + HALF, PIN).to(tl.float32)
        pos = _ld(pos_ptr + t, PIN)
    # cos / sin as [HPP, HALF] tiles (the row repeated per head), loaded straight into x1 / x2's
    # layout: a [HALF] row broadcast afterwards went through shared memory and a barrier. sin before
    # cos: with this order LLVM contracts the products into FMAs as in triton_tokens (see above).
    row = cs_ptr + pos * (2 * HALF) + (c[None, :] + 0 * h[:, None])
    sin = _ld(row + HALF, PIN)
    cos = _ld(row, PIN)
    tl.store(dst + offs, (x1 * cos - x2 * sin).to(dst.dtype.element_ty))
    tl.store(dst + offs + HALF, (x2 * cos + x1 * sin).to(dst.dtype.element_ty))


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
    if t <= CONFIG["SMALL_T"]:
        hpp = CONFIG["HEADS_PER_PROG"]
        assert hq % hpp == 0 and hk % hpp == 0, "HEADS_PER_PROG must divide both head counts"
        _rope_heads[(t, (hq + hk) // hpp)](positions, query, key, cos_sin_cache, q_out, k_out,
                                           HQ=hq, HK=hk, HALF=d // 2, HPP=hpp,
                                           PIN=bool(CONFIG["PIN_LOADS"]), POS_FIRST=bool(CONFIG["POS_FIRST"]),
                                           num_warps=CONFIG["SMALL_WARPS"])
    else:
        bt = CONFIG["BLOCK_T"]
        _rope_neox[(triton.cdiv(t, bt),)](positions, query, key, cos_sin_cache, q_out, k_out, t,
                                          HQ=hq, HK=hk, HALF=d // 2, BLOCK_T=bt,
                                          num_warps=CONFIG["num_warps"])
    return q_out, k_out
