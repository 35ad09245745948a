"""Top-k per row in Triton: a two-digit radix select on the bf16 bit pattern, then one gather pass.

bf16 values map to 16-bit keys that order like the values (sign-flipped bits). One program per row:
pass 1 histograms the high byte (256 bins) and finds the bin that holds the k-th largest key; pass 2
histograms the low byte inside that bin, which fixes the exact k-th key T and how many keys exceed
it. Pass 3 keeps every key > T and the first (k - #greater) keys == T in column order, writing
(key, column) packed in int64 to a k-wide scratch row; the k survivors are sorted in registers
(tl.sort, descending key, ascending column among ties) and their values gathered from the row.
Three reads of the row (the second and third mostly from L2); no atomics, so the result is
deterministic. Masked-off lanes are given key 0 and taken back out of bin 0's count, so no masked
histogram is needed.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _key(x_ptr, cols, mask):
    b = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    key = tl.where((b & 0x8000) != 0, (~b) & 0xFFFF, b | 0x8000)
    return tl.where(mask, key, 0)


@triton.jit
def _top_bin(hist, need, BINS: tl.constexpr):
    # the largest bin b whose suffix count (keys in bins >= b) reaches need, and the count above b
    bins = tl.arange(0, BINS)
    suffix = tl.sum(hist, axis=0) - tl.cumsum(hist, axis=0) + hist
    b = tl.max(tl.where(suffix >= need, bins, -1), axis=0)
    above = tl.sum(tl.where(bins > b, hist, 0), axis=0)
    return b, above


@triton.jit
def _topk(x_ptr, vals_ptr, idx_ptr, scratch_ptr, V, k, BLOCK: tl.constexpr, KPAD: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * V
    offs = tl.arange(0, BLOCK)
    bins = tl.arange(0, 256)
    hist = tl.zeros([256], dtype=tl.int32)
    pad = 0
    for start in range(0, V, BLOCK):
        cols = start + offs
        mask = cols < V
        hist += tl.histogram(_key(x_row, cols, mask) >> 8, 256)
        pad += tl.sum((~mask).to(tl.int32), axis=0)
    hist = tl.where(bins == 0, hist - pad, hist)
    hi, above_hi = _top_bin(hist, k, 256)
    need = k - above_hi
    hist = tl.zeros([256], dtype=tl.int32)
    other = 0
    for start in range(0, V, BLOCK):
        cols = start + offs
        mask = cols < V
        key = _key(x_row, cols, mask)
        inside = mask & ((key >> 8) == hi)
        hist += tl.histogram(tl.where(inside, key & 0xFF, 0), 256)
        other += tl.sum((~inside).to(tl.int32), axis=0)
    hist = tl.where(bins == 0, hist - other, hist)
    lo, above_lo = _top_bin(hist, need, 256)
    t = hi * 256 + lo
    ties = need - above_lo  # keys equal to t to keep, lowest columns first
    out = scratch_ptr + row.to(tl.int64) * KPAD
    written = 0
    eq_seen = 0
    for start in range(0, V, BLOCK):
        cols = start + offs
        mask = cols < V
        key = _key(x_row, cols, mask)
        eq = mask & (key == t)
        eq_rank = eq_seen + tl.cumsum(eq.to(tl.int32), axis=0) - 1
        take = (mask & (key > t)) | (eq & (eq_rank < ties))
        pos = written + tl.cumsum(take.to(tl.int32), axis=0) - 1
        packed = (key.to(tl.int64) << 32) | (0x7FFFFFFF - cols).to(tl.int64)
        tl.store(out + pos, packed, mask=take)
        written += tl.sum(take.to(tl.int32), axis=0)
        eq_seen += tl.sum(eq.to(tl.int32), axis=0)
    tl.debug_barrier()
    slots = tl.arange(0, KPAD)
    packed = tl.load(out + slots, mask=slots < k, other=-1)
    packed = tl.sort(packed, descending=True)
    col = 0x7FFFFFFF - (packed & 0xFFFFFFFF).to(tl.int32)
    keep = slots < k
    v = tl.load(x_row + col, mask=keep, other=0.0)
    tl.store(vals_ptr + row.to(tl.int64) * k + slots, v, mask=keep)
    tl.store(idx_ptr + row.to(tl.int64) * k + slots, col.to(tl.int64), mask=keep)


def run(logits, k):
    n, v = logits.shape
    values = torch.empty((n, k), dtype=logits.dtype, device=logits.device)
    indices = torch.empty((n, k), dtype=torch.int64, device=logits.device)
    kpad = max(16, triton.next_power_of_2(k))
    scratch = torch.empty((n, kpad), dtype=torch.int64, device=logits.device)
    block = min(4096, max(256, triton.next_power_of_2(v)))
    _topk[(n,)](logits, values, indices, scratch, v, k, BLOCK=block, KPAD=kpad, num_warps=8)
    return values, indices
