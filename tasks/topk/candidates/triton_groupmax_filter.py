"""Top-k per row in Triton: group-maximum threshold, one filtering pass, sort of the survivors.

tl.histogram costs ~100+ instructions per element on sm_90 (a ballot per bin bit and a popcount per
owned bin for every element), which is why histogram-based radix selects run far below bandwidth on
long rows. This design uses no histogram on the long path; every element costs a handful of integer
ops. bf16 values map to 16-bit keys that order like the values.

* k == 1: a streaming argmax (running element-wise max of `key << 32 | (0x7FFFFFFF - column)`).
* next_pow2(vocab) <= SMALL_MAX: ROWS rows per program in registers, packed int32
  (`signed key << 16 | (0xFFFF - column)`), tl.sort along the row, first k stored (one launch).
* otherwise (four launches, two streaming reads of the row):
  1. `_group_max` (grid rows x tiles): the row is cut into G >= GROUP_FACTOR * k groups of g columns
     (g a power of two); each group's maximum key is written out (cheap: a max in registers).
  2. `_threshold` (grid rows): L = the k-th largest group maximum (tl.sort of G <= ~4k keys). At
     least k groups have a maximum >= L, so at least k entries are >= L: L is a lower bound of the
     k-th largest key and every top-k entry is >= L. For N(0,1) logits only ~1.1-1.3 k entries are
     >= L. Also zeroes the row's candidate counter (no memset launch).
  3. `_compact` (grid rows x chunks): entries with key >= L are appended (packed key/column, int64)
     to a CAP-wide candidate row: one scalar atomic_add per block reserves room, a block cumsum
     places them. Blocks without a candidate skip the scan.
  4. `_select` (grid rows): if the row's count <= CAP, sort the candidates (key descending, column
     ascending) and keep the first k: the lowest columns win among ties, so the chosen set does not
     depend on the atomics' order (deterministic). If the count overflowed CAP (heavy ties, e.g.
     constant rows), that row falls back to an exact in-program radix select (two 256-bin
     histograms + gather over the row; slow but correct, only for pathological rows).
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
    "GROUP_FACTOR": [2, 4],
    "CAP_FACTOR": [2, 3, 4],
}
CONFIG = {"BLOCK": 2048, "NUM_WARPS": 4, "TARGET_PROGRAMS": 528, "SMALL_MAX": 2048, "ARGMAX_BLOCK": 4096,
          "GROUP_FACTOR": 2, "CAP_FACTOR": 2}
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



# ----------------------------------------------------------------------- group-max threshold path
@triton.jit
def _group_max(x_ptr, gmax_ptr, V, G, GPAD, g, R: tl.constexpr, W: tl.constexpr):
    row = tl.program_id(0)
    grp = tl.program_id(1) * R + tl.arange(0, R)
    x_row = x_ptr + row.to(tl.int64) * V
    w = tl.arange(0, W)
    acc = tl.full([R], -1, tl.int32)
    for j in range(0, g, W):
        cols = grp[:, None] * g + j + w[None, :]
        mask = (cols < V) & (grp < G)[:, None]
        key = tl.where(mask, _key(x_row, cols, mask), -1)
        acc = tl.maximum(acc, tl.max(key, axis=1))
    tl.store(gmax_ptr + row.to(tl.int64) * GPAD + grp, acc, mask=grp < G)


@triton.jit
def _threshold(gmax_ptr, thr_ptr, cnt_ptr, G, GPAD, k, GP: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, GP)
    m = tl.load(gmax_ptr + row.to(tl.int64) * GPAD + i, mask=i < G, other=-1)
    m = tl.sort(m, descending=True)
    thr = tl.max(tl.where(i == k - 1, m, -1), axis=0)
    tl.store(thr_ptr + row, thr)
    tl.store(cnt_ptr + row, 0)


@triton.jit
def _compact(x_ptr, thr_ptr, cnt_ptr, cand_ptr, V, CHUNK, CAP, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    thr = tl.load(thr_ptr + row)
    x_row = x_ptr + row.to(tl.int64) * V
    out = cand_ptr + row.to(tl.int64) * CAP
    offs = tl.arange(0, BLOCK)
    lo = c * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    for start in range(lo, lo + CHUNK, BLOCK):
        cols = start + offs
        mask = cols < hi
        key = _key(x_row, cols, mask)
        take = mask & (key >= thr)
        n = tl.sum(take.to(tl.int32), axis=0)
        if n > 0:
            base = tl.atomic_add(cnt_ptr + row, n)
            pos = base + tl.cumsum(take.to(tl.int32), axis=0) - 1
            packed = (key.to(tl.int64) << 32) | (0x7FFFFFFF - cols).to(tl.int64)
            tl.store(out + pos, packed, mask=take & (pos < CAP))


@triton.jit
def _radix_row(x_row, out, V, k, BLOCK: tl.constexpr):
    # exact select of one row into out[0:k] (packed, unsorted): the fallback for overflowed rows
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
    ties = need - above_lo
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


@triton.jit
def _select(x_ptr, cnt_ptr, cand_ptr, vals_ptr, idx_ptr, V, k, CAP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * V
    out = cand_ptr + row.to(tl.int64) * CAP
    cnt = tl.load(cnt_ptr + row)
    slots = tl.arange(0, CAP)
    if cnt > CAP:
        tl.debug_barrier()
        _radix_row(x_row, out, V, k, BLOCK)
        tl.debug_barrier()
        cnt = k
    packed = tl.load(out + slots, mask=slots < cnt, other=-1)
    packed = tl.sort(packed, descending=True)
    keep = slots < k
    col = 0x7FFFFFFF - (packed & 0xFFFFFFFF).to(tl.int32)
    v = tl.load(x_row + col, mask=keep, other=0.0)
    tl.store(vals_ptr + row.to(tl.int64) * k + slots, v, mask=keep)
    tl.store(idx_ptr + row.to(tl.int64) * k + slots, col.to(tl.int64), mask=keep)


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
    # groups: g a power of two with G = cdiv(v, g) >= GROUP_FACTOR * k (g = 1 keeps every entry)
    g = 1
    while triton.cdiv(v, 2 * g) >= CONFIG["GROUP_FACTOR"] * k:
        g *= 2
    G = triton.cdiv(v, g)
    gp = triton.next_power_of_2(G)
    W = min(g, CONFIG["BLOCK"])
    R = max(1, CONFIG["BLOCK"] // g)
    gmax = torch.empty((n, gp), dtype=torch.int32, device=dev)
    thr = torch.empty((n,), dtype=torch.int32, device=dev)
    cnt = torch.empty((n,), dtype=torch.int32, device=dev)
    cap = max(128, triton.next_power_of_2(CONFIG["CAP_FACTOR"] * k))
    cand = torch.empty((n, cap), dtype=torch.int64, device=dev)
    nw = CONFIG["NUM_WARPS"]
    _group_max[(n, triton.cdiv(G, R))](logits, gmax, v, G, gp, g, R=R, W=W, num_warps=nw)
    _threshold[(n,)](gmax, thr, cnt, G, gp, k, GP=gp, num_warps=4 if gp <= 1024 else 8)
    block = CONFIG["BLOCK"]
    blocks = triton.cdiv(v, block)
    c = max(1, min(MAX_CHUNKS, blocks, triton.cdiv(CONFIG["TARGET_PROGRAMS"], n)))
    chunk = triton.cdiv(blocks, c) * block
    c = triton.cdiv(v, chunk)
    _compact[(n, c)](logits, thr, cnt, cand, v, chunk, cap, BLOCK=block, num_warps=nw)
    _select[(n,)](logits, cnt, cand, values, indices, v, k, CAP=cap, BLOCK=block,
                  num_warps=4 if cap <= 512 else 8)
    return values, indices
