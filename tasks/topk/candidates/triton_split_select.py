"""Top-k per row in Triton: split-row radix select with three dispatch paths.

Every bf16 value maps to a 16-bit key that orders like the value (sign-flipped bits). `run` picks:

* k == 1 (greedy argmax): one streaming pass. Each program keeps a running element-wise maximum of
  `key << 32 | (0x7FFFFFFF - column)` (int64) across the row and reduces it once at the end: a pure
  bandwidth kernel (one read of the row, no histogram, no sort), lowest column among ties.
* small rows (next_pow2(vocab) <= SMALL_MAX): ROWS rows per program held in registers; each entry is
  packed into one int32 (`signed key << 16 | (0xFFFF - column)`), the [ROWS, VPAD] tile is sorted
  along the row (tl.sort, descending) and the first k slots are stored. One read, one launch
  (the 8192 x 128, k = 8 MoE router shape).
* everything else: a radix select on the key where each row is split over C chunks so that the grid
  has about TARGET_PROGRAMS programs even for one row (the old kernel ran one program per row and
  left 131 of 132 SMs idle at one row).
  1. `_hist_hi`   (grid rows x C): each chunk's 256-bin histogram of the key's high byte -> part1.
  2. `_hist_lo`   (grid rows x C): every program sums part1 of its row (C x 256 ints, from L2), finds
     the high byte b1 of the k-th largest key, and histograms the low byte of its chunk's keys in bin
     b1 -> part2.
  3. `_gather`    (grid rows x C): from part1/part2 every program gets the exact k-th key T, the
     number of keys > T and, per chunk, how many keys > T and == T it holds; an exclusive prefix over
     the chunks gives each chunk its write offsets, so keys > T and the lowest-column keys == T are
     written to a k-wide scratch row (packed key/column int64) without atomics: the chosen set is
     deterministic.
  4. `_sort_rows` (grid rows): tl.sort of the k survivors, values gathered from the row. When C == 1
     (many rows) the sort is fused into `_gather` (FUSE_SORT), saving a launch.
  Three streaming reads of the row in total (the later ones often from L2), all with the full grid
  busy; per-chunk partials instead of atomics keep the kernels deterministic and need no zeroed
  buffers.

Masked-off lanes are given key 0 and taken back out of bin 0's count, so no masked histogram is
needed (tl.histogram's mask argument is avoided on purpose for older Triton).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {
    "BLOCK": [1024, 2048, 4096],
    "NUM_WARPS": [4, 8],
    "TARGET_PROGRAMS": [264, 528, 1056],
    "SMALL_MAX": [1024, 2048, 4096],
    "ARGMAX_BLOCK": [2048, 4096, 8192],
}
CONFIG = {"BLOCK": 2048, "NUM_WARPS": 4, "TARGET_PROGRAMS": 528, "SMALL_MAX": 2048, "ARGMAX_BLOCK": 4096}
MAX_CHUNKS = 64


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


# ----------------------------------------------------------------------------------------- k == 1
@triton.jit
def _argmax(x_ptr, vals_ptr, idx_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * V
    offs = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], -1, tl.int64)
    for start in range(0, V, BLOCK):
        cols = start + offs
        mask = cols < V
        key = _key(x_row, cols, mask)
        packed = (key.to(tl.int64) << 32) | (0x7FFFFFFF - cols).to(tl.int64)
        best = tl.maximum(best, tl.where(mask, packed, -1))
    top = tl.max(best, axis=0)
    col = 0x7FFFFFFF - (top & 0xFFFFFFFF).to(tl.int32)
    tl.store(vals_ptr + row, tl.load(x_row + col))
    tl.store(idx_ptr + row, col.to(tl.int64))


# ----------------------------------------------------------------------------------- small vocab
@triton.jit
def _small_sort(x_ptr, vals_ptr, idx_ptr, N, V, k, ROWS: tl.constexpr, VPAD: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, VPAD)
    rmask = rows < N
    mask = rmask[:, None] & (cols[None, :] < V)
    base = rows.to(tl.int64)[:, None] * V
    b = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.int16, bitcast=True).to(tl.int32)
    skey = tl.where(b < 0, b ^ 0x7FFF, b)  # signed, orders like the value
    packed = (skey << 16) | (0xFFFF - cols[None, :])
    packed = tl.where(mask, packed, -2147483647 - 1)
    packed = tl.sort(packed, descending=True)
    col = 0xFFFF - (packed & 0xFFFF)
    keep = rmask[:, None] & (cols[None, :] < k)
    v = tl.load(x_ptr + base + col, mask=keep, other=0.0)
    out = rows.to(tl.int64)[:, None] * k + cols[None, :]
    tl.store(vals_ptr + out, v, mask=keep)
    tl.store(idx_ptr + out, col.to(tl.int64), mask=keep)


# ------------------------------------------------------------------------- split-row radix select
@triton.jit
def _hist_hi(x_ptr, part1_ptr, V, CHUNK, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    x_row = x_ptr + row.to(tl.int64) * V
    offs = tl.arange(0, BLOCK)
    bins = tl.arange(0, 256)
    hist = tl.zeros([256], dtype=tl.int32)
    pad = 0
    lo = c * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    for start in range(lo, lo + CHUNK, BLOCK):
        cols = start + offs
        mask = cols < hi
        hist += tl.histogram(_key(x_row, cols, mask) >> 8, 256)
        pad += tl.sum((~mask).to(tl.int32), axis=0)
    hist = tl.where(bins == 0, hist - pad, hist)
    tl.store(part1_ptr + (row * C + c).to(tl.int64) * 256 + bins, hist)


@triton.jit
def _row_hist(part_ptr, row, C, CT: tl.constexpr):
    # sum of a row's C per-chunk histograms
    bins = tl.arange(0, 256)
    cs = tl.arange(0, CT)
    total = tl.zeros([256], dtype=tl.int32)
    for c0 in range(0, C, CT):
        cc = c0 + cs
        ptrs = part_ptr + (row * C + cc).to(tl.int64)[:, None] * 256 + bins[None, :]
        total += tl.sum(tl.load(ptrs, mask=(cc < C)[:, None], other=0), axis=0)
    return total


@triton.jit
def _hist_lo(x_ptr, part1_ptr, part2_ptr, V, k, CHUNK, C, BLOCK: tl.constexpr, CT: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    b1, _ = _top_bin(_row_hist(part1_ptr, row, C, CT), k, 256)
    x_row = x_ptr + row.to(tl.int64) * V
    offs = tl.arange(0, BLOCK)
    bins = tl.arange(0, 256)
    hist = tl.zeros([256], dtype=tl.int32)
    other = 0
    lo = c * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    for start in range(lo, lo + CHUNK, BLOCK):
        cols = start + offs
        mask = cols < hi
        key = _key(x_row, cols, mask)
        inside = mask & ((key >> 8) == b1)
        hist += tl.histogram(tl.where(inside, key & 0xFF, 0), 256)
        other += tl.sum((~inside).to(tl.int32), axis=0)
    hist = tl.where(bins == 0, hist - other, hist)
    tl.store(part2_ptr + (row * C + c).to(tl.int64) * 256 + bins, hist)


@triton.jit
def _sort_out(x_row, out, vals_ptr, idx_ptr, row, k, KPAD: tl.constexpr):
    slots = tl.arange(0, KPAD)
    keep = slots < k
    packed = tl.load(out + slots, mask=keep, other=-1)
    packed = tl.sort(packed, descending=True)
    col = 0x7FFFFFFF - (packed & 0xFFFFFFFF).to(tl.int32)
    v = tl.load(x_row + col, mask=keep, other=0.0)
    tl.store(vals_ptr + row.to(tl.int64) * k + slots, v, mask=keep)
    tl.store(idx_ptr + row.to(tl.int64) * k + slots, col.to(tl.int64), mask=keep)


@triton.jit
def _gather(x_ptr, part1_ptr, part2_ptr, scratch_ptr, vals_ptr, idx_ptr, V, k, CHUNK, C,
            BLOCK: tl.constexpr, CT: tl.constexpr, KPAD: tl.constexpr, FUSE_SORT: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    bins = tl.arange(0, 256)
    b1, above1 = _top_bin(_row_hist(part1_ptr, row, C, CT), k, 256)
    need = k - above1
    b2, above2 = _top_bin(_row_hist(part2_ptr, row, C, CT), need, 256)
    t = b1 * 256 + b2
    ties = need - above2  # keys == t to keep (lowest columns first); keys > t: k - ties
    n_gt = k - ties
    # this chunk's write offsets: keys > t and keys == t held by the chunks before it
    cs = tl.arange(0, CT)
    gt_before = 0
    eq_before = 0
    for c0 in range(0, C, CT):
        cc = c0 + cs
        m = (cc < c)[:, None]
        off = (row * C + cc).to(tl.int64)[:, None] * 256 + bins[None, :]
        h1 = tl.load(part1_ptr + off, mask=m, other=0)
        h2 = tl.load(part2_ptr + off, mask=m, other=0)
        gt_before += tl.sum(tl.sum(tl.where(bins[None, :] > b1, h1, 0), axis=1), axis=0)
        gt_before += tl.sum(tl.sum(tl.where(bins[None, :] > b2, h2, 0), axis=1), axis=0)
        eq_before += tl.sum(tl.sum(tl.where(bins[None, :] == b2, h2, 0), axis=1), axis=0)
    x_row = x_ptr + row.to(tl.int64) * V
    out = scratch_ptr + row.to(tl.int64) * KPAD
    offs = tl.arange(0, BLOCK)
    lo = c * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    for start in range(lo, lo + CHUNK, BLOCK):
        cols = start + offs
        mask = cols < hi
        key = _key(x_row, cols, mask)
        gt = mask & (key > t)
        eq = mask & (key == t)
        # one scan for both counts: keys > t in the low 16 bits, keys == t in the high 16 bits
        both = tl.cumsum(gt.to(tl.int32) + (eq.to(tl.int32) << 16), axis=0)
        gt_rank = gt_before + (both & 0xFFFF) - 1
        eq_rank = eq_before + (both >> 16) - 1
        take_eq = eq & (eq_rank < ties)
        pos = tl.where(gt, gt_rank, n_gt + eq_rank)
        packed = (key.to(tl.int64) << 32) | (0x7FFFFFFF - cols).to(tl.int64)
        tl.store(out + pos, packed, mask=gt | take_eq)
        last = tl.max(both, axis=0)  # the scan's last element: the block's totals
        gt_before += last & 0xFFFF
        eq_before += last >> 16
    if FUSE_SORT:
        tl.debug_barrier()
        _sort_out(x_row, out, vals_ptr, idx_ptr, row, k, KPAD)


@triton.jit
def _sort_rows(x_ptr, scratch_ptr, vals_ptr, idx_ptr, V, k, KPAD: tl.constexpr):
    row = tl.program_id(0)
    _sort_out(x_ptr + row.to(tl.int64) * V, scratch_ptr + row.to(tl.int64) * KPAD, vals_ptr, idx_ptr, row, k, KPAD)


def run(logits, k):
    n, v = logits.shape
    dev = logits.device
    values = torch.empty((n, k), dtype=logits.dtype, device=dev)
    indices = torch.empty((n, k), dtype=torch.int64, device=dev)
    if n == 0:
        return values, indices
    if k == 1:
        block = min(CONFIG["ARGMAX_BLOCK"], max(128, triton.next_power_of_2(v)))
        _argmax[(n,)](logits, values, indices, v, BLOCK=block, num_warps=8 if block >= 4096 else 4)
        return values, indices
    vpad = max(16, triton.next_power_of_2(v))
    if vpad <= CONFIG["SMALL_MAX"]:
        rows = max(1, min(32, 2048 // vpad))
        _small_sort[(triton.cdiv(n, rows),)](logits, values, indices, n, v, k, ROWS=rows, VPAD=vpad,
                                             num_warps=8 if rows * vpad >= 2048 else 4)
        return values, indices
    block = CONFIG["BLOCK"]
    nw = CONFIG["NUM_WARPS"]
    blocks = triton.cdiv(v, block)
    c = max(1, min(MAX_CHUNKS, blocks, triton.cdiv(CONFIG["TARGET_PROGRAMS"], n)))
    chunk = triton.cdiv(blocks, c) * block
    c = triton.cdiv(v, chunk)
    ct = min(16, triton.next_power_of_2(c))
    kpad = max(16, triton.next_power_of_2(k))
    part1 = torch.empty((n, c, 256), dtype=torch.int32, device=dev)
    part2 = torch.empty((n, c, 256), dtype=torch.int32, device=dev)
    scratch = torch.empty((n, kpad), dtype=torch.int64, device=dev)
    _hist_hi[(n, c)](logits, part1, v, chunk, c, BLOCK=block, num_warps=nw)
    _hist_lo[(n, c)](logits, part1, part2, v, k, chunk, c, BLOCK=block, CT=ct, num_warps=nw)
    fuse = c == 1
    _gather[(n, c)](logits, part1, part2, scratch, values, indices, v, k, chunk, c, BLOCK=block, CT=ct,
                    KPAD=kpad, FUSE_SORT=fuse, num_warps=nw)
    if not fuse:
        _sort_rows[(n,)](logits, scratch, values, indices, v, k, KPAD=kpad, num_warps=4 if kpad <= 256 else 8)
    return values, indices
