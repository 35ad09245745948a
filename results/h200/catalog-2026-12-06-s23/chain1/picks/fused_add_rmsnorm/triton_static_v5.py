"""Fused residual add + RMSNorm in Triton: hidden size as a constexpr, a two-pass chunked kernel for many
tokens (Inductor's shape), a one-round-trip register kernel for few.

Why: the promoted `triton_rowwise` moves 3.94 TB/s at 16384 x 4096 and 8192 x 8192 (0.136 ms) where
a static-shape torch.compile of the reference moves 4.2 TB/s (0.125 / 0.127 ms, H200, CUDA-graph
timing, L2 flushed). Inductor's kernel for this graph (generated here with cpu_backend="triton"; on
CUDA it autotunes this looped form against a persistent one) is a *two-pass* row kernel: loop 1
loads hidden_states and residual in R0_BLOCK chunks with evict_last and accumulates the sum of
squares; loop 2 reloads them with evict_first (L2 hits), stores residual_out and the output. Small
per-thread state means high occupancy, which is what keeps enough bytes in flight; the same
structure is the promoted LayerNorm's `_ln_chunked` (97% of speed of light on this H200).

`_far_chunked` (num_tokens >= SMALL_ROWS, LARGE = "chunked", default): that two-pass structure,
BLOCK_M rows x CHUNK columns per tile (CHUNK = the largest power of 2 <= CONFIG["CHUNK"] dividing
hidden_size: 2048 at 4096 / 8192, 1024 at 5120, unmasked; else a masked CHUNK), CHUNK_WARPS warps
(>= 8 elements a thread). Pass 1 has no store in it: with residual_out stored in pass 1 the SASS
waited for chunk 1's data before issuing chunk 2's loads (a store may alias the next loads); now
every chunk's loads are issued at once. PREFETCH2: pass 2 loads chunk i + 1 before storing chunk
i (masked off past the end), so its L2 round trips overlap.

`_fused_add_rmsnorm` (num_tokens < SMALL_ROWS, and LARGE = "rows"): whole rows in registers, one
read and one write of each tensor:
* hidden_size is a constexpr: for 4096 / 8192 (BLOCK_N == N) there is no column mask at all, the
  row stride is a compile-time constant (16-byte vectors proven from N itself, not from the
  runtime "divisible by 16" hint) and 1/N is a constant multiply. When num_tokens is a multiple of
  BLOCK_M (EVEN_M) there is no row handling either; otherwise rows past the end are clamped to the
  last row (identical values written twice), so no access is ever predicated on the row.
* every load is issued up front: the weight first (W_FIRST), then hidden_states and residual.
  Program order alone does not do it: ptxas sinks the weight load below the row's reduction math
  (SASS of this kernel, of the promoted one and of Liger's LayerNorm: the weight's LDG comes after
  the first SHFL, i.e. after the row has arrived), a second dependent memory round trip per row
  (from DRAM at one row with the L2 flushed, from L2 at many rows). PIN (SMALL_PIN below
  SMALL_ROWS, default on; PIN above, default off) makes the weight and row loads volatile:
  volatile accesses keep their program order, so the weight's load is issued before the row's and
  all are in flight together (LDG.E.128.STRONG.SYS, same 16-byte vectors).
* num_warps from elements per thread: ELEMS_PER_THREAD 8 with MAX_WARPS 16 gives 16 warps for
  4096 (the promoted kernel ran 8), 16 for 5120 (8192-wide block) and 8192.
  Tokens below SMALL_ROWS use SMALL_ELEMS_PER_THREAD (16: the promoted kernel's launch geometry,
  which already leads every peer at decode sizes).
* LOAD_EVICT / STORE_EVICT: cache hints on the streamed tensors ("" = none, as Inductor;
  "evict_first" = the promoted kernel's loads).
* RES_STORE_EARLY: store residual_out before the sum-of-squares reduction (promoted kernel) or
  with the output after it (Inductor's order).
* PERSIST: 0 = one program per BLOCK_M rows; k > 0 = k x (number of SMs) programs looping over row
  blocks with the weight loaded once per program. PREFETCH (persistent only): load block i + 1
  (raw bf16, loop-carried registers) before block i's reduction and stores, so every program always
  has a row in flight instead of idling through its reduction; occupancy no longer has to hide it.
  ptxas (sm_90): 40 registers at 4096, 81-84 at 5120 / 8192 with PREFETCH (16 warps): only one such
  program fits an SM there, so PERSIST above 1 only makes sense at 4096 (3 fit).

Math: float32 sum of the two bf16 inputs, residual_out = the sum rounded once, output = sum *
rsqrt(mean(sum^2) + eps) * weight rounded once (the float32 sum is normalized, as FlashInfer's kernel
does). Row offsets are int64 (program_id widened before the multiply). Non-contiguous inputs are
made contiguous first.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"LARGE": ["chunked", "rows"], "CHUNK": [1024, 2048, 4096], "CHUNK_WARPS": [4, 8, 16],
            "CHUNK_BLOCK_M": [1, 2], "PREFETCH2": [True, False],
            "ELEMS_PER_THREAD": [4, 8, 16, 32], "MAX_WARPS": [8, 16, 32], "BLOCK_M": [1, 2, 4],
            "LOAD_EVICT": ["", "evict_first"], "STORE_EVICT": ["", "evict_first"],
            "RES_STORE_EARLY": [False, True], "W_FIRST": [True, False], "PERSIST": [0, 2, 4, 8],
            "PREFETCH": [True, False], "PIN": [False, True], "SMALL_PIN": [True, False]}
CONFIG = {'LARGE': 'chunked', 'CHUNK': 2048, 'CHUNK_WARPS': 8, 'CHUNK_BLOCK_M': 1, 'PREFETCH2': True, 'ELEMS_PER_THREAD': 8, 'MAX_WARPS': 16, 'BLOCK_M': 1, 'SMALL_ELEMS_PER_THREAD': 16, 'SMALL_ROWS': 1024, 'LOAD_EVICT': '', 'STORE_EVICT': '', 'RES_STORE_EARLY': False, 'W_FIRST': True, 'PERSIST': 0, 'PREFETCH': True, 'PIN': False, 'SMALL_PIN': False}


@triton.jit
def _offsets(blk, M, N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_M: tl.constexpr):
    rows = blk * BLOCK_M + tl.arange(0, BLOCK_M)  # int64: blk is
    if not EVEN_M:
        rows = tl.minimum(rows, M - 1)  # rows past the end repeat the last row
    cols = tl.arange(0, BLOCK_N)
    return rows[:, None] * N + cols[None, :], (cols < N)[None, :]


@triton.jit
def _load_rows(h_ptr, r_ptr, offs, cm, N: tl.constexpr, BLOCK_N: tl.constexpr, LOAD_EVICT: tl.constexpr,
               PIN: tl.constexpr = False):
    if PIN:  # volatile: program order kept; PTX allows no cache hint on it
        if BLOCK_N == N:
            h = tl.load(h_ptr + offs, volatile=True)
            r = tl.load(r_ptr + offs, volatile=True)
        else:
            h = tl.load(h_ptr + offs, mask=cm, other=0.0, volatile=True)
            r = tl.load(r_ptr + offs, mask=cm, other=0.0, volatile=True)
    elif BLOCK_N == N:
        h = tl.load(h_ptr + offs, eviction_policy=LOAD_EVICT)
        r = tl.load(r_ptr + offs, eviction_policy=LOAD_EVICT)
    else:
        h = tl.load(h_ptr + offs, mask=cm, other=0.0, eviction_policy=LOAD_EVICT)
        r = tl.load(r_ptr + offs, mask=cm, other=0.0, eviction_policy=LOAD_EVICT)
    return h, r


@triton.jit
def _store(ptr, offs, cm, v, N: tl.constexpr, BLOCK_N: tl.constexpr, STORE_EVICT: tl.constexpr):
    if BLOCK_N == N:
        tl.store(ptr + offs, v.to(ptr.dtype.element_ty), eviction_policy=STORE_EVICT)
    else:
        tl.store(ptr + offs, v.to(ptr.dtype.element_ty), mask=cm, eviction_policy=STORE_EVICT)


@triton.jit
def _finish(out_ptr, res_ptr, h, r, w, offs, cm, eps, N: tl.constexpr, BLOCK_N: tl.constexpr,
            STORE_EVICT: tl.constexpr, RES_STORE_EARLY: tl.constexpr):
    s = h.to(tl.float32) + r.to(tl.float32)
    if RES_STORE_EARLY:
        _store(res_ptr, offs, cm, s, N, BLOCK_N, STORE_EVICT)
    rstd = tl.rsqrt(tl.sum(s * s, axis=1) * (1.0 / N) + eps)
    y = s * rstd[:, None] * w[None, :]
    if not RES_STORE_EARLY:
        _store(res_ptr, offs, cm, s, N, BLOCK_N, STORE_EVICT)
    _store(out_ptr, offs, cm, y, N, BLOCK_N, STORE_EVICT)


@triton.jit
def _load_w(w_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr, PIN: tl.constexpr = False):
    cols = tl.arange(0, BLOCK_N)
    if PIN:
        if BLOCK_N == N:
            w = tl.load(w_ptr + cols, volatile=True)
        else:
            w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, volatile=True)
    elif BLOCK_N == N:
        w = tl.load(w_ptr + cols, eviction_policy="evict_last")
    else:
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last")
    return w.to(tl.float32)


@triton.jit
def _fused_add_rmsnorm(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, M, eps, num_blocks,
                       N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       EVEN_M: tl.constexpr, LOAD_EVICT: tl.constexpr, STORE_EVICT: tl.constexpr,
                       RES_STORE_EARLY: tl.constexpr, W_FIRST: tl.constexpr, PERSIST: tl.constexpr,
                       PREFETCH: tl.constexpr, PIN: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    if PERSIST:
        # weight once per program; with PREFETCH the next block's rows are loaded (raw bf16,
        # loop-carried) before this block's reduction, a two-deep software pipeline in registers
        w = _load_w(w_ptr, N, BLOCK_N)
        nprog = tl.num_programs(0).to(tl.int64)
        if PREFETCH:
            offs, cm = _offsets(pid, M, N, BLOCK_M, BLOCK_N, EVEN_M)
            h, r = _load_rows(h_ptr, r_ptr, offs, cm, N, BLOCK_N, LOAD_EVICT)
            for blk in range(pid, num_blocks, nprog):
                # the last iteration re-loads the final block (an L2 hit) instead of branching
                noffs, ncm = _offsets(tl.minimum(blk + nprog, num_blocks - 1), M, N, BLOCK_M, BLOCK_N, EVEN_M)
                hn, rn = _load_rows(h_ptr, r_ptr, noffs, ncm, N, BLOCK_N, LOAD_EVICT)
                _finish(out_ptr, res_ptr, h, r, w, offs, cm, eps, N, BLOCK_N, STORE_EVICT, RES_STORE_EARLY)
                h, r, offs, cm = hn, rn, noffs, ncm
        else:
            for blk in range(pid, num_blocks, nprog):
                offs, cm = _offsets(blk, M, N, BLOCK_M, BLOCK_N, EVEN_M)
                h, r = _load_rows(h_ptr, r_ptr, offs, cm, N, BLOCK_N, LOAD_EVICT)
                _finish(out_ptr, res_ptr, h, r, w, offs, cm, eps, N, BLOCK_N, STORE_EVICT, RES_STORE_EARLY)
    else:
        offs, cm = _offsets(pid, M, N, BLOCK_M, BLOCK_N, EVEN_M)
        if W_FIRST:
            w = _load_w(w_ptr, N, BLOCK_N, PIN)
            h, r = _load_rows(h_ptr, r_ptr, offs, cm, N, BLOCK_N, LOAD_EVICT, PIN)
            _finish(out_ptr, res_ptr, h, r, w, offs, cm, eps, N, BLOCK_N, STORE_EVICT, RES_STORE_EARLY)
        else:
            # the promoted kernel's order: the weight load waits behind the residual store
            h, r = _load_rows(h_ptr, r_ptr, offs, cm, N, BLOCK_N, LOAD_EVICT)
            s = h.to(tl.float32) + r.to(tl.float32)
            _store(res_ptr, offs, cm, s, N, BLOCK_N, STORE_EVICT)
            w = _load_w(w_ptr, N, BLOCK_N)
            rstd = tl.rsqrt(tl.sum(s * s, axis=1) * (1.0 / N) + eps)
            _store(out_ptr, offs, cm, s * rstd[:, None] * w[None, :], N, BLOCK_N, STORE_EVICT)


@triton.jit
def _far_chunked(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, M, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                 CHUNK: tl.constexpr, EVEN: tl.constexpr, PREFETCH2: tl.constexpr):
    rows = tl.minimum(tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    base = rows[:, None] * N
    offs = tl.arange(0, CHUNK)
    # pass 1: loads only (evict_last), per-lane float32 sums of squares of s = h + r. No store in
    # this loop, so nothing keeps the compiler from issuing every chunk's loads at once (a store
    # may alias the next chunk's loads: with residual_out stored here, the SASS waited for chunk 1
    # before loading chunk 2).
    acc = tl.zeros([BLOCK_M, CHUNK], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        o = base + (start + offs)[None, :]
        if EVEN:
            s = (tl.load(h_ptr + o, eviction_policy="evict_last").to(tl.float32)
                 + tl.load(r_ptr + o, eviction_policy="evict_last").to(tl.float32))
        else:
            cm = ((start + offs) < N)[None, :]
            s = (tl.load(h_ptr + o, mask=cm, other=0.0, eviction_policy="evict_last").to(tl.float32)
                 + tl.load(r_ptr + o, mask=cm, other=0.0, eviction_policy="evict_last").to(tl.float32))
        acc += s * s
    rstd = tl.rsqrt(tl.sum(acc, axis=1) * (1.0 / N) + eps)[:, None]
    # pass 2: the same chunks again (L2 hits: read microseconds ago by this program, evict_first
    # now), s recomputed in float32, both outputs stored
    if PREFETCH2:
        # chunk i + 1 is loaded before chunk i's stores (which could alias it), so the L2 round
        # trips overlap; past the end the mask is all false and nothing is read
        hn = tl.load(h_ptr + base + offs[None, :], mask=(offs < N)[None, :], other=0.0,
                     eviction_policy="evict_first")
        rn = tl.load(r_ptr + base + offs[None, :], mask=(offs < N)[None, :], other=0.0,
                     eviction_policy="evict_first")
        for start in range(0, N, CHUNK):
            cols = start + offs
            cmask = cols < N
            cm = cmask[None, :]
            h = hn
            r = rn
            nm = ((cols + CHUNK) < N)[None, :]
            hn = tl.load(h_ptr + base + (cols + CHUNK)[None, :], mask=nm, other=0.0, eviction_policy="evict_first")
            rn = tl.load(r_ptr + base + (cols + CHUNK)[None, :], mask=nm, other=0.0, eviction_policy="evict_first")
            w = tl.load(w_ptr + cols, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            s = h.to(tl.float32) + r.to(tl.float32)
            o = base + cols[None, :]
            tl.store(res_ptr + o, s.to(res_ptr.dtype.element_ty), mask=cm)
            tl.store(out_ptr + o, (s * rstd * w[None, :]).to(out_ptr.dtype.element_ty), mask=cm,
                     eviction_policy="evict_first")
    else:
        for start in range(0, N, CHUNK):
            cols = start + offs
            o = base + cols[None, :]
            if EVEN:
                s = (tl.load(h_ptr + o, eviction_policy="evict_first").to(tl.float32)
                     + tl.load(r_ptr + o, eviction_policy="evict_first").to(tl.float32))
                w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
                tl.store(res_ptr + o, s.to(res_ptr.dtype.element_ty))
                tl.store(out_ptr + o, (s * rstd * w[None, :]).to(out_ptr.dtype.element_ty),
                         eviction_policy="evict_first")
            else:
                cmask = cols < N
                cm = cmask[None, :]
                s = (tl.load(h_ptr + o, mask=cm, other=0.0, eviction_policy="evict_first").to(tl.float32)
                     + tl.load(r_ptr + o, mask=cm, other=0.0, eviction_policy="evict_first").to(tl.float32))
                w = tl.load(w_ptr + cols, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
                tl.store(res_ptr + o, s.to(res_ptr.dtype.element_ty), mask=cm)
                tl.store(out_ptr + o, (s * rstd * w[None, :]).to(out_ptr.dtype.element_ty), mask=cm,
                         eviction_policy="evict_first")


_SM_COUNT = {}


def _sm_count(device):
    if device.type != "cuda":
        return 2  # CPU (Triton interpreter): a few programs, each looping over several blocks
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


def _chunk(n, max_chunk):
    """The largest power of 2 <= max_chunk dividing n if it is >= 512, else a masked chunk."""
    div = min(n & -n, max_chunk)
    if div >= min(512, max_chunk):
        return div, True
    chunk = min(max_chunk, triton.next_power_of_2(n))
    return chunk, n % chunk == 0


def run(hidden_states, residual, weight, eps):
    if not hidden_states.is_contiguous():
        hidden_states = hidden_states.contiguous()
    if not residual.is_contiguous():
        residual = residual.contiguous()
    if not weight.is_contiguous():
        weight = weight.contiguous()
    m, n = hidden_states.shape
    out = torch.empty_like(hidden_states)
    residual_out = torch.empty_like(hidden_states)
    if m == 0 or n == 0:
        return out, residual_out
    block_n = triton.next_power_of_2(n)
    small = m < CONFIG["SMALL_ROWS"]
    if not small and CONFIG["LARGE"] == "chunked":
        chunk, even = _chunk(n, CONFIG["CHUNK"])
        block_m = CONFIG["CHUNK_BLOCK_M"]
        num_warps = max(1, min(CONFIG["CHUNK_WARPS"], block_m * chunk // 256))  # >= 8 elements a thread
        _far_chunked[(triton.cdiv(m, block_m),)](
            hidden_states, residual, weight, out, residual_out, m, float(eps), N=n, BLOCK_M=block_m,
            CHUNK=chunk, EVEN=even, PREFETCH2=bool(CONFIG["PREFETCH2"]), num_warps=num_warps)
        return out, residual_out
    block_m = 1 if small else min(CONFIG["BLOCK_M"], triton.next_power_of_2(m))
    ept = CONFIG["SMALL_ELEMS_PER_THREAD"] if small else CONFIG["ELEMS_PER_THREAD"]
    num_warps = min(CONFIG["MAX_WARPS"], max(1, block_m * block_n // (32 * ept)))
    num_blocks = triton.cdiv(m, block_m)
    persist = 0 if small else CONFIG["PERSIST"]
    grid = min(num_blocks, persist * _sm_count(hidden_states.device)) if persist else num_blocks
    _fused_add_rmsnorm[(grid,)](
        hidden_states, residual, weight, out, residual_out, m, float(eps), num_blocks,
        N=n, BLOCK_M=block_m, BLOCK_N=block_n, EVEN_M=(m % block_m == 0),
        LOAD_EVICT=CONFIG["LOAD_EVICT"], STORE_EVICT=CONFIG["STORE_EVICT"],
        RES_STORE_EARLY=bool(CONFIG["RES_STORE_EARLY"]), W_FIRST=bool(CONFIG["W_FIRST"]),
        PERSIST=bool(persist), PREFETCH=bool(CONFIG["PREFETCH"]),
        PIN=bool(CONFIG["SMALL_PIN"] if small else CONFIG["PIN"]), num_warps=num_warps,
    )
    return out, residual_out
