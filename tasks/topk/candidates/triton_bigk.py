"""Top-k per row in Triton: the promoted group-maximum filter, with a large-k path whose per-row sorts
are replaced by a bitwise threshold search and a tile sort + merge-rank split over several programs.

Derived from `solutions/triton_groupmax_filter.py` (promoted). Output semantics are exactly that
file's: the k largest entries of each row ordered by (16-bit order key descending, column ascending),
i.e. the lowest columns win among ties and the order among equal values is by column; values are
gathered from the row. The result is a pure function of the row (no dependence on atomic order), so
it is bit-identical to the promoted kernel on every input, whichever path runs.

Dispatch (`run`):
* k < BIGK_MIN, or k == 1, or next_pow2(vocab) <= SMALL_MAX: `_run_promoted`, a verbatim copy of the
  promoted `run` and its kernels (argmax / in-register sort / group-max filter). Nothing changes for
  k <= 50, k = 1 and the MoE shape, where the promoted kernel leads every peer.
* k >= BIGK_MIN on long rows: the large-k path below (four launches, two streaming reads of the row,
  like the promoted one).

Why (reasoning only; nothing here has been measured on a GPU). At large k the promoted path runs two
one-program-per-row `tl.sort`s of thousands of keys: `_threshold` sorts GP = next_pow2(G) group
maxima (G >= GROUP_FACTOR * k: 4096 keys at k = 1024) only to read off the k-th largest, and `_select`
sorts the CAP-wide candidate row (CAP = next_pow2(2k) = 2048 int64 slots at k = 1024, padding
included, for ~1.1-1.3k real candidates). A bitonic `tl.sort` of n keys is ~log2(n)^2 / 2 stages of
compare-exchange with a layout change through shared memory and a barrier per cross-thread stage;
with one program per row (256 programs at 256 rows for 132 SMs) those are long, barrier-bound
programs on half-empty SMs. The large-k path removes both:

1. `_group_max_bk` (grid rows x tiles): the promoted `_group_max` (G >= GROUP_FACTOR * k groups of g
   columns, their maximum keys) and program (row, 0) also zeroes the row's candidate counter, which
   the old `_threshold` launch did.
2. `_compact_bk` (grid rows x chunks): first L = the k-th largest group maximum, found without a
   sort: 16 greedy bit steps `t |= bit if count(gmax >= t | bit) >= k` (the largest t with at least
   k group maxima >= t, which is exactly the k-th largest; 16 vector compares + sums over the GP
   keys, no layout shuffles). Every chunk program of a row recomputes it from the row's G maxima
   (GP int32, 16 KB at GROUP_FACTOR 2, from L2), so the `_threshold` launch disappears. L is the
   promoted kernel's L, so the candidate set (entries with key >= L) and the overflow condition are
   the same. Then the promoted
   `_compact` loop verbatim: entries >= L appended as packed (key << 32 | 0x7FFFFFFF - column) into
   a CAP-wide row, one atomic per block. Chunks per row: about BIGK_TARGET_PROGRAMS programs in all
   (the promoted kernel's TARGET_PROGRAMS knob, separate here so it can be tuned for large k: the
   loop waits on one atomic round trip per block that has a candidate, which at large k is nearly
   every block, so more programs in flight may hide more of that latency; untested).
3. `_tile_sort` (grid rows x CAP / TILE): each program sorts one TILE-slot tile of the candidate row
   (descending; slots >= count padded with -1, which sorts last) and writes it back in place. Tiles
   at or past the row's count exit at once. A TILE = 256 int64 sort is a 36-stage network per
   program, against 66 stages over 2048 slots in one program before, and the tiles of a row run in
   parallel.
   Overflow (count > CAP: heavy ties, e.g. constant rows): program (row, 0) runs the promoted exact
   radix fallback (`_radix_row`: the k largest, ties to the lowest columns) into slots [0, k), then
   sorts those tiles itself, one after another (slots >= k become -1); the other programs of that
   row do nothing. The fallback lives here with a small block (FALLBACK_BLOCK) so that it does not
   inflate the register count of `_rank_scatter` (ptxas sm_90: 64 registers here, 28 there; with
   the fallback and a CAP-wide sort in `_rank_scatter` it took 122-128).
4. `_rank_scatter` (grid rows x CAP / TILE): packed keys are unique in a row (distinct columns), so
   the output position of candidate e is its rank, the number of candidates > e. In its own sorted
   tile that is its slot; in every other live tile it is found by a branchless binary search
   (log2(TILE) + 1 dependent loads from the just-written, L2-resident tile). Candidates with
   rank < k gather their value from the row and store value and column at position rank: the output
   is written in order with no sort of the row. Work per row: count * (live tiles - 1) *
   (log2(TILE) + 1) loads; about 1.2k * 4 * 9 = 43k at k = 1024 (N(0, 1) rows), spread over 5
   programs. An overflowed row counts as k candidates (what `_tile_sort` left in [0, k)).

Identity with the promoted kernel: same L (the k-th largest group maximum, by search instead of
sort), same candidate set, and the outputs are the first k of that set in (key desc, column asc)
order, which is what the promoted `_select` stores after its sort; the overflow fallback is the
promoted code. Offsets that can pass 2^31 (row * vocab, row * CAP) are int64.

CONFIG (large-k knobs; the rest are the promoted kernel's): BIGK_MIN = 256 (k at or above it takes the
large-k path; both large-k workloads, 256 x 128,256 with k = 1024 and 1,024 x 256,000 with k = 256,
do), SORT_TILE = 256 (tile of `_tile_sort` / `_rank_scatter`, capped at CAP), SORT_WARPS = 4,
BIGK_TARGET_PROGRAMS = 1056 (compaction programs for the large-k path; the promoted value is 528),
FALLBACK_BLOCK = 512 (block of the overflow fallback's row scans).
Open: whether the remaining time at large k is the compaction loop's atomics rather than the sorts
(not profiled); a per-row exact radix threshold (so only k entries survive) was not needed for
bit-identity and is left for a profile to justify.
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
    "BIGK_MIN": [128, 256, 512, 1025],
    "SORT_TILE": [128, 256, 512],
    "SORT_WARPS": [2, 4, 8],
    "BIGK_TARGET_PROGRAMS": [528, 1056, 2112],
    "FALLBACK_BLOCK": [256, 512, 1024, 2048],
}
CONFIG = {"BLOCK": 2048, "NUM_WARPS": 4, "TARGET_PROGRAMS": 528, "SMALL_MAX": 2048, "ARGMAX_BLOCK": 4096,
          "GROUP_FACTOR": 2, "CAP_FACTOR": 2,
          "BIGK_MIN": 256, "SORT_TILE": 256, "SORT_WARPS": 4, "BIGK_TARGET_PROGRAMS": 1056,
          "FALLBACK_BLOCK": 512}
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


def _run_promoted(logits, k):
    # verbatim body of triton_groupmax_filter.run
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


# ------------------------------------------------------------------------------------ large-k path
@triton.jit
def _group_max_bk(x_ptr, gmax_ptr, cnt_ptr, V, G, GPAD, g, R: tl.constexpr, W: tl.constexpr):
    # the promoted _group_max; program (row, 0) also zeroes the row's candidate counter
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
    if tl.program_id(1) == 0:
        tl.store(cnt_ptr + row, 0)


@triton.jit
def _kth_largest(m, k):
    # the largest t in [0, 65535] with at least k entries of m >= t: the k-th largest entry of m
    # (padding is -1 and never counts); 16 greedy bit steps instead of a sort
    t = k * 0
    for b in tl.static_range(16):
        c = t | (1 << (15 - b))
        n = tl.sum((m >= c).to(tl.int32), axis=0)
        t = tl.where(n >= k, c, t)
    return t


@triton.jit
def _compact_bk(x_ptr, gmax_ptr, cnt_ptr, cand_ptr, V, G, GPAD, k, CHUNK, CAP,
                GP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    i = tl.arange(0, GP)
    m = tl.load(gmax_ptr + row.to(tl.int64) * GPAD + i, mask=i < G, other=-1)
    thr = _kth_largest(m, k)
    # from here the promoted _compact
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
def _tile_sort(x_ptr, cnt_ptr, cand_ptr, V, k, CAP: tl.constexpr, TILE: tl.constexpr, BLOCK: tl.constexpr):
    # sort one TILE-slot tile of the row's candidates in place, descending; slots >= count become -1
    row = tl.program_id(0)
    p = tl.program_id(1)
    lo = p * TILE
    out = cand_ptr + row.to(tl.int64) * CAP
    cnt = tl.load(cnt_ptr + row)
    if cnt > CAP:
        if p == 0:
            # overflowed row (heavy ties): the promoted exact radix select writes the k survivors to
            # slots [0, k); this program then sorts their tiles one after the other (slots >= k
            # become -1), and _rank_scatter treats the row as holding k candidates
            tl.debug_barrier()
            _radix_row(x_ptr + row.to(tl.int64) * V, out, V, k, BLOCK)
            tl.debug_barrier()
            for t in range(0, tl.cdiv(k, TILE)):
                slots = t * TILE + tl.arange(0, TILE)
                packed = tl.load(out + slots, mask=slots < k, other=-1)
                packed = tl.sort(packed, descending=True)
                tl.store(out + slots, packed)
    elif lo < cnt:
        slots = lo + tl.arange(0, TILE)
        packed = tl.load(out + slots, mask=slots < cnt, other=-1)
        packed = tl.sort(packed, descending=True)
        tl.store(out + slots, packed)


@triton.jit
def _rank_scatter(x_ptr, cnt_ptr, cand_ptr, vals_ptr, idx_ptr, V, k, CAP: tl.constexpr, TILE: tl.constexpr,
                  LOG_TILE: tl.constexpr):
    row = tl.program_id(0)
    p = tl.program_id(1)
    x_row = x_ptr + row.to(tl.int64) * V
    out = cand_ptr + row.to(tl.int64) * CAP
    vals_row = vals_ptr + row.to(tl.int64) * k
    idx_row = idx_ptr + row.to(tl.int64) * k
    cnt = tl.load(cnt_ptr + row)
    cnt = tl.where(cnt > CAP, k, cnt)  # an overflowed row: _tile_sort left its exact k in [0, k)
    nt = tl.cdiv(cnt, TILE)
    if p < nt:
        i = tl.arange(0, TILE)
        e = tl.load(out + p * TILE + i)  # this tile, sorted descending, -1 past the count
        rank = i  # candidates > e in its own tile
        for q in range(0, nt):
            if q != p:
                tile = out + q * TILE
                # number of entries > e in sorted tile q: greedy bits give min(count, TILE - 1),
                # the last probe adds the TILE-th
                pos = tl.zeros([TILE], dtype=tl.int32)
                for j in tl.static_range(LOG_TILE):
                    s = TILE >> (j + 1)
                    probe = tl.load(tile + pos + (s - 1))
                    pos = tl.where(probe > e, pos + s, pos)
                probe = tl.load(tile + pos)
                pos += (probe > e).to(tl.int32)
                rank += pos
        keep = (e >= 0) & (rank < k)
        col = 0x7FFFFFFF - (e & 0xFFFFFFFF).to(tl.int32)
        v = tl.load(x_row + col, mask=keep, other=0.0)
        tl.store(vals_row + rank, v, mask=keep)
        tl.store(idx_row + rank, col.to(tl.int64), mask=keep)


def _run_bigk(logits, k):
    n, v = logits.shape
    dev = logits.device
    values = torch.empty((n, k), dtype=logits.dtype, device=dev)
    indices = torch.empty((n, k), dtype=torch.int64, device=dev)
    # groups exactly as the promoted path: g a power of two with G = cdiv(v, g) >= GROUP_FACTOR * k
    g = 1
    while triton.cdiv(v, 2 * g) >= CONFIG["GROUP_FACTOR"] * k:
        g *= 2
    G = triton.cdiv(v, g)
    gp = triton.next_power_of_2(G)
    W = min(g, CONFIG["BLOCK"])
    R = max(1, CONFIG["BLOCK"] // g)
    gmax = torch.empty((n, gp), dtype=torch.int32, device=dev)
    cnt = torch.empty((n,), dtype=torch.int32, device=dev)
    cap = max(128, triton.next_power_of_2(CONFIG["CAP_FACTOR"] * k))
    cand = torch.empty((n, cap), dtype=torch.int64, device=dev)
    nw = CONFIG["NUM_WARPS"]
    _group_max_bk[(n, triton.cdiv(G, R))](logits, gmax, cnt, v, G, gp, g, R=R, W=W, num_warps=nw)
    block = CONFIG["BLOCK"]
    blocks = triton.cdiv(v, block)
    c = max(1, min(MAX_CHUNKS, blocks, triton.cdiv(CONFIG["BIGK_TARGET_PROGRAMS"], n)))
    chunk = triton.cdiv(blocks, c) * block
    c = triton.cdiv(v, chunk)
    _compact_bk[(n, c)](logits, gmax, cnt, cand, v, G, gp, k, chunk, cap, GP=gp, BLOCK=block,
                        num_warps=nw if gp <= 4096 else 8)
    tile = min(CONFIG["SORT_TILE"], cap)
    tiles = cap // tile
    sw = CONFIG["SORT_WARPS"]
    _tile_sort[(n, tiles)](logits, cnt, cand, v, k, CAP=cap, TILE=tile, BLOCK=CONFIG["FALLBACK_BLOCK"],
                           num_warps=sw)
    _rank_scatter[(n, tiles)](logits, cnt, cand, values, indices, v, k, CAP=cap, TILE=tile,
                              LOG_TILE=tile.bit_length() - 1, num_warps=sw)
    return values, indices


def run(logits, k):
    n, v = logits.shape
    if (n > 0 and k != 1 and k >= CONFIG["BIGK_MIN"]
            and max(16, triton.next_power_of_2(v)) > CONFIG["SMALL_MAX"]):
        return _run_bigk(logits, k)
    return _run_promoted(logits, k)
