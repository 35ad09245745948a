"""Top-k per row in Triton: the promoted group-maximum filter, with a large-k path built from four wide,
shallow launches (no per-row sort of the threshold, no atomics, no loop over the row in one program).

Dispatch (`run`):
* k < BIGK_MIN, or k == 1, or next_pow2(vocab) <= SMALL_MAX: `_run_promoted`, a verbatim copy of
  `solutions/triton_groupmax_filter.py`'s `run` and kernels (argmax / in-register sort / group-max
  filter), which already leads every peer at k <= 50, k = 1 and the MoE shape.
* k >= BIGK_MIN (256) on long rows: the multi-program path below.

Measured (one H100 80GB HBM3, session 19, `kernelcraft eval` beside FlashInfer 0.6.13, PASSED every gate): the
version of commit 6416f26 (before the MC_MIN_GROUP / MC_THR_ELEMS tuning below) took 0.1319 ms at 256 x 128,256
k=1,024 (FlashInfer 0.1744, the promoted kernel 0.3211) and 0.2807 ms at 1,024 x 256,000 k=256 (FlashInfer 0.9858,
promoted 1.2385): results/h100/topk.json, rebuilt by results/h100/catalog-2026-12-06-s19b/judged_sources.json.
This version (the tuning since) is not yet timed. The other costs below are estimates from bytes, grid sizes
and dependency chains; register counts from ptxas for sm_90 (Triton 3.9 on the CPU machine).

Why not the 8-bit tl.histogram radix select. Triton lowers tl.histogram (HistogramOpToLLVM) to
log2(bins) warp ballots per element plus, for each of the bins/32 bins a lane owns, an AND/XOR chain
and a popcount: ~100 warp instructions per 32 elements at 256 bins, about 1.2 elements per SM cycle,
~0.5 TB/s of bf16 on 132 SMs, so a histogram over the whole row is ALU-bound far below bandwidth. The
high byte of the bf16 order key (sign + 7 exponent bits) is also too coarse for N(0, 1) logits: the
bin holding the k-th value, [2, 8), holds 2.3% of the row (5.8k entries at vocab 256,000, 2.9k at
128,256).

The large-k path (the groups are g columns, g a power of two, G = cdiv(vocab, g) >= MC_GROUP_FACTOR * k,
then widened up to MC_MIN_GROUP = 16 columns, one 32-byte sector, while G >= 2k):
1. K1 `_mc_group_max` (grid rows x cdiv(G, R), R * g = MC_BLOCK1 = 8192 columns per program, 4 warps,
   16 KB per program, 8 16-byte loads per thread in flight): every group's maximum order key, stored as
   int16. The only full read of the logits: a handful of integer ops per element and one max.
2. K2 `_mc_threshold` (grid rows): L = the k-th largest of the G group maxima, found by a radix-4
   search (8 steps; the counts of maxima >= three trial values come from ONE int64 block reduction,
   16-bit fields), then a block scan writes the ids of the groups whose maximum is >= L (at least k,
   typically k + the ties at L), in column order. At least k groups have a maximum >= L, so at least
   k entries are >= L: every top-k entry is >= L, and it lies in a listed group.
3. K3 `_mc_gather` (grid rows x NP, NP = cdiv(MC_GCAP_FACTOR * k, GB), GB = MC_GATHER_BLOCK / g
   groups per program): each program loads GB listed groups ([GB, g] tile of whole groups), keeps the
   entries >= L and writes them, packed as key << 32 | column, into its own SC = MC_SC_FACTOR * GB slots
   in column order (positions from two block scans, no atomics), and its count. Programs past the
   list exit. Rows are walked in reverse (MC_REVERSE): the rows K1 read last are the likeliest still
   in L2. Only about 1/(MC_GROUP_FACTOR) of the row is read here, in whole sectors.
4. K4 `_mc_emit` (grid rows): the NP slot ranges laid end to end are the row's candidates in column
   order (virtual index i); each becomes an int32 (signed key << 16 | 0xFFFF - i), the CAP =
   next_pow2(MC_CAP_FACTOR * k) vector is sorted once (tl.sort, descending: key descending, column
   ascending), and the first k are stored: the column reloaded from the candidate slot, the value
   rebuilt from the key bits (the key is a bijection of the bf16 bit pattern, so values equal
   logits.gather(indices) bit for bit).
Expected candidates for i.i.d. logits: about -G ln(1 - k/G) (the k-th largest of G group maxima is a
lower bound that about that many entries pass), plus about half the entries tied at L:
~1.1k at k = 1024 (G = 8,016) and ~275 at k = 256 (G = 4,000).

Per launch at the two large-k workloads (defaults; estimates, not measurements):
| launch | 256 x 128,256, k = 1,024 (g = 16, G = 8,016) | 1,024 x 256,000, k = 256 (g = 64, G = 4,000) |
|---|---|---|
| K1 | 256 x 16 programs; reads 65.7 MB, writes 4.1 MB; one DRAM round trip each; ~23 us at ~3 TB/s | 1,024 x 32; reads 524 MB, writes 8.2 MB; ~175 us |
| K2 | 256 programs, 16 warps; 16 KB from L2 each; 8 reductions + 1 scan; ~5-10 us | 1,024, 8 warps; 8 KB each; ~10-15 us (two waves at 4 CTAs/SM) |
| K3 | 256 x 16 (about 8 live per row); ~1.03k groups x 32 B = 33 KB per row (8.5 MB, partly L2), ~1.1k x 8 B written; three dependent memory trips; ~3-5 us | 1,024 x 16 (about 8 live); ~260 groups x 128 B = 33 KB per row (34 MB, DRAM); ~10-15 us |
| K4 | 256 programs, 8 warps; ~17 KB from L2 per row; a 2,048-key int32 sort (66 compare-exchange steps, 6 across warps); writes 2.6 MB; ~8-10 us | 1,024, 4 warps; 512-key sort; writes 2.6 MB; ~5 us |
| total | ~45-55 us + three launch boundaries (FlashInfer, H100: 0.1745 ms) | ~0.21-0.23 ms (FlashInfer, H100: 0.989 ms) |
The latency chain of every program is a few dependent memory trips plus, in K2 and K4, a fixed number
of block reductions or sort steps; no program loops over a row with a reduction, a scan and an atomic
per block (the promoted `_compact` does, 21-125 times per program at these shapes).

Registers (ptxas sm_90 from Triton 3.9, no spills in any kernel), at 256 x 128,256 k = 1,024 /
1,024 x 256,000 k = 256: K1 32 / 31, K2 63 (16 warps) / 64 (8 warps), K3 89 / 95, K4 90 (8 warps) /
64 (4 warps).

Determinism and ties: no atomics anywhere in this path. The candidate set (entries >= L) is a function
of the row, the sort key is unique (key, column), so the output is the first k entries in (key
descending, column ascending) order: the lowest columns win among ties, as in the promoted kernel, and
two calls give the same result bit for bit.

Overflow (heavy ties, e.g. constant rows): more than MC_GCAP_FACTOR * k listed groups (K2), more than SC
entries in one K3 program, or more than CAP candidates in the row: K4 then runs an exact radix select
over that row (the promoted `_radix_row` with this path's packing: two 256-bin histogram passes and a
gather pass, slow but only for such rows, FALLBACK_BLOCK columns per step) into the slots [0, k) and
sorts them with the same code. N(0, 1) rows never overflow at the workloads' shapes (CPU check).

CONFIG: the promoted knobs, then BIGK_MIN, MC_GROUP_FACTOR (G >= this * k), MC_BLOCK1 (columns per K1
program), MC_WARPS1, MC_MIN_GROUP (minimum group width), MC_THR_ELEMS (group maxima per K2 thread: its
num_warps is GP / (32 * this), clamped to 4..16), MC_GCAP_FACTOR (listed groups before overflow, in k),
MC_GATHER_BLOCK (columns per K3 program), MC_GATHER_WARPS, MC_SC_FACTOR (K3 slots per group),
MC_CAP_FACTOR (K4 sort width = next_pow2(this * k)), MC_EMIT_WARPS (K4 warps when CAP > 512),
MC_REVERSE, FALLBACK_BLOCK.
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
    "MC_GROUP_FACTOR": [4, 8, 16],
    "MC_BLOCK1": [4096, 8192, 16384],
    "MC_WARPS1": [4, 8],
    "MC_MIN_GROUP": [1, 16, 32],
    "MC_THR_ELEMS": [8, 16, 32],
    "MC_GCAP_FACTOR": [2, 3],
    "MC_GATHER_BLOCK": [2048, 4096, 8192],
    "MC_GATHER_WARPS": [4, 8],
    "MC_SC_FACTOR": [2, 3, 4],
    "MC_CAP_FACTOR": [2, 4],
    "MC_EMIT_WARPS": [4, 8, 16],
    "MC_REVERSE": [0, 1],
    "FALLBACK_BLOCK": [512, 1024, 2048],
}
CONFIG = {"BLOCK": 2048, "NUM_WARPS": 4, "TARGET_PROGRAMS": 528, "SMALL_MAX": 2048, "ARGMAX_BLOCK": 4096,
          "GROUP_FACTOR": 2, "CAP_FACTOR": 2,
          "BIGK_MIN": 256, "MC_GROUP_FACTOR": 8, "MC_BLOCK1": 8192, "MC_WARPS1": 4, "MC_MIN_GROUP": 16, "MC_THR_ELEMS": 16,
          "MC_GCAP_FACTOR": 2, "MC_GATHER_BLOCK": 4096, "MC_GATHER_WARPS": 8, "MC_SC_FACTOR": 2,
          "MC_CAP_FACTOR": 2, "MC_EMIT_WARPS": 8, "MC_REVERSE": 1, "FALLBACK_BLOCK": 512}
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


# ------------------------------------------------------------------ large-k path (multi-program)
@triton.jit
def _skey(x_ptr, offs, mask):
    # signed 16-bit order key of a bf16 (in int32): _key - 32768; an involution on the bit pattern
    b = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.int16, bitcast=True).to(tl.int32)
    return b ^ ((b >> 15) & 0x7FFF)


@triton.jit
def _mc_group_max(x_ptr, gmax_ptr, V, G, GPAD, g: tl.constexpr, R: tl.constexpr, W: tl.constexpr):
    # K1: the maxima (signed keys, int16) of R consecutive groups of g columns
    row = tl.program_id(0)
    grp = tl.program_id(1) * R + tl.arange(0, R)
    x_row = x_ptr + row.to(tl.int64) * V
    w = tl.arange(0, W)
    acc = tl.full([R], -32768, tl.int32)
    for j in tl.static_range(0, g, W):
        cols = grp[:, None] * g + j + w[None, :]
        mask = (cols < V) & (grp < G)[:, None]
        key = tl.where(mask, _skey(x_row, cols, mask), -32768)
        acc = tl.maximum(acc, tl.max(key, axis=1))
    tl.store(gmax_ptr + row.to(tl.int64) * GPAD + grp, acc.to(tl.int16), mask=grp < G)


@triton.jit
def _mc_threshold(gmax_ptr, gsel_ptr, nsel_ptr, thr_ptr, ovf_ptr, G, GPAD, k, GCAP, GP: tl.constexpr):
    # K2: L = the k-th largest group maximum by a radix-4 search (8 steps; the counts of maxima >= three
    # trial values in one int64 reduction, 16 bits each: G < 32768), then the ids of the groups whose
    # maximum is >= L, in column order
    row = tl.program_id(0)
    i = tl.arange(0, GP)
    m = tl.load(gmax_ptr + row.to(tl.int64) * GPAD + i, mask=i < G, other=0).to(tl.int32)
    m = tl.where(i < G, m + 32768, -1)  # unsigned key; padding never counts
    t = k * 0  # invariant: nt >= k maxima are >= t
    nt = G + t
    for s in tl.static_range(8):
        c1 = t | (1 << (14 - 2 * s))
        c2 = t | (2 << (14 - 2 * s))
        c3 = t | (3 << (14 - 2 * s))
        tot = tl.sum((m >= c1).to(tl.int64) + ((m >= c2).to(tl.int64) << 16) + ((m >= c3).to(tl.int64) << 32),
                     axis=0)
        n1 = (tot & 0xFFFF).to(tl.int32)
        n2 = ((tot >> 16) & 0xFFFF).to(tl.int32)
        n3 = (tot >> 32).to(tl.int32)
        nt = tl.where(n3 >= k, n3, tl.where(n2 >= k, n2, tl.where(n1 >= k, n1, nt)))
        t = tl.where(n3 >= k, c3, tl.where(n2 >= k, c2, tl.where(n1 >= k, c1, t)))
    sel = m >= t
    pos = tl.cumsum(sel.to(tl.int32), axis=0) - 1
    tl.store(gsel_ptr + row.to(tl.int64) * GCAP + pos, i, mask=sel & (pos < GCAP))
    tl.store(nsel_ptr + row, nt)
    tl.store(thr_ptr + row, t - 32768)
    tl.store(ovf_ptr + row, (nt > GCAP).to(tl.int32))


@triton.jit
def _mc_gather(x_ptr, gsel_ptr, nsel_ptr, thr_ptr, ovf_ptr, cand_ptr, ccnt_ptr, N, V, GCAP, SC, CSTRIDE,
               NP, g: tl.constexpr, GB: tl.constexpr, REVERSE: tl.constexpr):
    # K3: GB selected groups per program; their entries >= L packed (key << 32 | column) into this
    # program's SC slots, in column order; the count goes to ccnt (a count > SC flags the row)
    if REVERSE:
        row = N - 1 - tl.program_id(0)  # the rows K1 read last are the likeliest still in L2
    else:
        row = tl.program_id(0)
    p = tl.program_id(1)
    ns = tl.minimum(tl.load(nsel_ptr + row), GCAP)
    cnt = ns * 0
    if p * GB < ns:
        thr = tl.load(thr_ptr + row)
        j = p * GB + tl.arange(0, GB)
        jm = j < ns
        gid = tl.load(gsel_ptr + row.to(tl.int64) * GCAP + j, mask=jm, other=0)
        cols = gid[:, None] * g + tl.arange(0, g)[None, :]
        mask = jm[:, None] & (cols < V)
        skey = _skey(x_ptr + row.to(tl.int64) * V, cols, mask)
        take = (mask & (skey >= thr)).to(tl.int32)
        per = tl.sum(take, axis=1)
        pos = (tl.cumsum(per, axis=0) - per)[:, None] + tl.cumsum(take, axis=1) - 1
        cnt = tl.sum(per, axis=0)
        packed = ((skey + 32768).to(tl.int64) << 32) | cols.to(tl.int64)
        tl.store(cand_ptr + row.to(tl.int64) * CSTRIDE + p * SC + pos, packed, mask=(take != 0) & (pos < SC))
        if cnt > SC:
            tl.store(ovf_ptr + row, 1)
    tl.store(ccnt_ptr + row.to(tl.int64) * NP + p, cnt)


@triton.jit
def _mc_exact_row(x_row, out, V, k, BLOCK: tl.constexpr):
    # exact select of one row into out[0:k] (key << 32 | column, column order): the overflow
    # fallback (heavy ties); the promoted _radix_row with this path's packing
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
        packed = (key.to(tl.int64) << 32) | cols.to(tl.int64)
        tl.store(out + pos, packed, mask=take)
        written += tl.sum(take.to(tl.int32), axis=0)
        eq_seen += tl.sum(eq.to(tl.int32), axis=0)


@triton.jit
def _mc_slot(i, cnt_row, SC, NP: tl.constexpr, dense):
    # physical slot of virtual candidate i: programs' slot ranges [q * SC, q * SC + count_q) laid end
    # to end (column order); dense (an overflowed row's fallback output): slot i
    adj = tl.zeros_like(i)
    end = 0
    for q in tl.static_range(NP):
        c = tl.load(cnt_row + q)
        end += c
        adj += tl.where(i >= end, SC - c, 0)
    return tl.where(dense, i, i + adj)


@triton.jit
def _mc_emit(x_ptr, cand_ptr, ccnt_ptr, ovf_ptr, vals_ptr, idx_ptr, V, k, SC, CSTRIDE,
             NP: tl.constexpr, CAP: tl.constexpr, FB_BLOCK: tl.constexpr):
    # K4: the row's candidates as int32 (signed key << 16 | 0xFFFF - virtual index), sorted
    # descending (key desc, column asc); the first k are stored, values rebuilt from their keys
    row = tl.program_id(0)
    out = cand_ptr + row.to(tl.int64) * CSTRIDE
    cnt_row = ccnt_ptr + row.to(tl.int64) * NP
    i = tl.arange(0, CAP)
    total = 0
    for q in tl.static_range(NP):
        total += tl.load(cnt_row + q)
    dense = (tl.load(ovf_ptr + row) != 0) | (total > CAP)
    if dense:
        tl.debug_barrier()
        _mc_exact_row(x_ptr + row.to(tl.int64) * V, out, V, k, FB_BLOCK)
        tl.debug_barrier()
        total = k + total * 0
    live = i < total
    c = tl.load(out + _mc_slot(i, cnt_row, SC, NP, dense), mask=live, other=0)
    s = ((c >> 32).to(tl.int32) - 32768) << 16 | (0xFFFF - i)
    s = tl.where(live, s, -2147483647 - 1)
    s = tl.sort(s, descending=True)
    keep = i < k
    vi = 0xFFFF - (s & 0xFFFF)
    c = tl.load(out + _mc_slot(vi, cnt_row, SC, NP, dense), mask=keep, other=0)
    sk = s >> 16
    bits = (sk ^ ((sk >> 15) & 0x7FFF)).to(tl.int16)
    tl.store(vals_ptr + row.to(tl.int64) * k + i, bits.to(tl.bfloat16, bitcast=True), mask=keep)
    tl.store(idx_ptr + row.to(tl.int64) * k + i, c & 0x7FFFFFFF, mask=keep)


def _run_mc(logits, k):
    n, v = logits.shape
    dev = logits.device
    cfg = CONFIG
    values = torch.empty((n, k), dtype=logits.dtype, device=dev)
    indices = torch.empty((n, k), dtype=torch.int64, device=dev)
    # groups: g a power of two with G = cdiv(v, g) >= MC_GROUP_FACTOR * k (g = 1 keeps every entry), then
    # widened to MC_MIN_GROUP columns (K3 reads whole 32-byte sectors anyway) while G >= 2k
    g = 1
    while triton.cdiv(v, 2 * g) >= cfg["MC_GROUP_FACTOR"] * k:
        g *= 2
    while g < cfg["MC_MIN_GROUP"] and triton.cdiv(v, 2 * g) >= 2 * k:
        g *= 2
    G = triton.cdiv(v, g)
    assert G < 32768, "K2 packs counts of up to G into 16-bit fields"
    gp = triton.next_power_of_2(G)
    W = min(g, cfg["MC_BLOCK1"])
    R = max(1, cfg["MC_BLOCK1"] // g)
    GB = max(1, cfg["MC_GATHER_BLOCK"] // g)
    NP = triton.cdiv(cfg["MC_GCAP_FACTOR"] * k, GB)
    gcap = NP * GB
    sc = min(GB * g, cfg["MC_SC_FACTOR"] * GB)
    cap = triton.next_power_of_2(cfg["MC_CAP_FACTOR"] * k)
    cstride = max(NP * sc, cap)
    gmax = torch.empty((n, gp), dtype=torch.int16, device=dev)
    rowinfo = torch.empty((3, n), dtype=torch.int32, device=dev)  # selected groups, L, overflow flag
    gsel = torch.empty((n, gcap), dtype=torch.int32, device=dev)
    ccnt = torch.empty((n, NP), dtype=torch.int32, device=dev)
    cand = torch.empty((n, cstride), dtype=torch.int64, device=dev)
    nsel, thr, ovf = rowinfo[0], rowinfo[1], rowinfo[2]
    _mc_group_max[(n, triton.cdiv(G, R))](logits, gmax, v, G, gp, g=g, R=R, W=W,
                                          num_warps=cfg["MC_WARPS1"])
    _mc_threshold[(n,)](gmax, gsel, nsel, thr, ovf, G, gp, k, gcap, GP=gp,
                        num_warps=min(16, max(4, gp // (32 * cfg["MC_THR_ELEMS"]))))
    _mc_gather[(n, NP)](logits, gsel, nsel, thr, ovf, cand, ccnt, n, v, gcap, sc, cstride, NP, g=g, GB=GB,
                        REVERSE=cfg["MC_REVERSE"], num_warps=cfg["MC_GATHER_WARPS"])
    _mc_emit[(n,)](logits, cand, ccnt, ovf, values, indices, v, k, sc, cstride, NP=NP, CAP=cap,
                   FB_BLOCK=cfg["FALLBACK_BLOCK"], num_warps=4 if cap <= 512 else cfg["MC_EMIT_WARPS"])
    return values, indices


def run(logits, k):
    n, v = logits.shape
    if (n > 0 and k != 1 and k >= CONFIG["BIGK_MIN"]
            and max(16, triton.next_power_of_2(v)) > CONFIG["SMALL_MAX"]):
        return _run_mc(logits, k)
    return _run_promoted(logits, k)
