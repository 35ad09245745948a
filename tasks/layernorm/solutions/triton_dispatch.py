"""LayerNorm (weight and bias) in Triton: a register kernel for few tokens, a streaming kernel for many.

Two kernels, chosen in run() by the number of rows:

* `_ln_rows` (few tokens, and the LARGE = "rows" alternative for many): BLOCK_M whole rows per
  program held in registers as up to three power-of-2 pieces (6144 = 4096 + 2048, 2560 = 2048 +
  512, 8192 = 8192: no masked lane; 4544 = 4096 + 256 + 256 and 1000 = 512 + 256 + 256: only the
  last piece is masked). Rows past the end are clamped to the last row (identical values stored
  twice), so there is no row mask. One read, one write.
* `_ln_chunked` (many tokens, LARGE = "chunked", the default): each program walks BLOCK_M rows in
  CHUNK-wide [BLOCK_M, CHUNK] tiles twice. Pass 1 keeps per-lane float32 sums of d = x - K and d*d
  (K = the row's first element: a shift that keeps the one-pass variance S2/N - (S1/N)^2 free of
  cancellation when the row mean is large), loads with evict_last, and reduces once at the end.
  Pass 2 re-reads the chunks (the row was read microseconds ago by the same SM: an L1/L2 hit, so
  DRAM traffic stays 1x), y = (x - mean) * rstd * w + b, loads and stores with evict_first.
  The register footprint is one tile (CHUNK * BLOCK_M / threads values per thread), not the whole
  row, so many small programs fit an SM and keep enough bytes in flight; hidden_size is a
  constexpr, so the chunk loops have constant trip counts (3 at 6144, 4 at 8192) the compiler can
  unroll. CHUNK is the largest power of 2 <= 2048 dividing hidden_size when that is >= 512
  (6144, 8192, 2560: EVEN, no masks at all), else a masked last chunk.

Both: statistics are float32 with a single joint (sum, sum of squares) reduction round per piece,
int32 offsets (the definition bounds num_tokens * hidden_size by 2^29), math as the reference,
rounded once to bfloat16.

Dispatch: num_tokens >= _LARGE_MIN_ROWS (1024) uses CONFIG["LARGE"]; fewer tokens use `_ln_rows`
with one row per program and ~16 elements per thread (the measured-best `triton_rowwise` point).

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`; they shape only the many-token
path): LARGE (streaming "chunked" or register "rows"), BLOCK_M (rows per program) and num_warps.
Elements per thread per tile: chunked = 2048 * BLOCK_M / (32 * num_warps) (16 at the default);
rows at 6144 = 6144 * BLOCK_M / (32 * num_warps) (48 at BLOCK_M 1, 4 warps, as rmsnorm's 94.5%
kernel at 32).

Tuned on the H200 (`kernelcraft optimize tasks/layernorm --agent tuner:candidates/triton_dispatch.py
--budget 12`, scripts/h200x2_tune.sh, 2026-11-30; ledger in results/h200/design/): 12 configurations,
best chunked with 8 warps, BLOCK_M 1 (1.814x the baseline; 0.0979 ms = 97% of speed of light at
16384 x 6144, 93% at 8192 x 8192), now CONFIG; the helper's default (4 warps) gave 1.780x.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"LARGE": ["chunked", "rows"], "BLOCK_M": [1, 2], "num_warps": [2, 4, 8]}
CONFIG = {'LARGE': 'chunked', 'BLOCK_M': 1, 'num_warps': 8}

_LARGE_MIN_ROWS = 1024  # from here on the many-token path
_MAX_CHUNK = 2048
_MIN_CHUNK = 512
_SMALL_ELEMS_PER_THREAD = 16


@triton.jit
def _add2(a1, a2, b1, b2):
    return a1 + b1, a2 + b2


@triton.jit
def _ln_rows(x_ptr, w_ptr, b_ptr, y_ptr, M, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
             P1: tl.constexpr, P2: tl.constexpr, P3: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    base = rows * N
    k = tl.load(x_ptr + base).to(tl.float32)  # per-row shift for the one-pass statistics
    c1 = tl.arange(0, P1)
    x1 = tl.load(x_ptr + base[:, None] + c1[None, :], eviction_policy="evict_first").to(tl.float32)
    d1 = x1 - k[:, None]
    s1, s2 = tl.reduce((d1, d1 * d1), 1, _add2)
    if P2 > 0:
        c2 = P1 + tl.arange(0, P2)
        x2 = tl.load(x_ptr + base[:, None] + c2[None, :], eviction_policy="evict_first").to(tl.float32)
        d2 = x2 - k[:, None]
        t1, t2 = tl.reduce((d2, d2 * d2), 1, _add2)
        s1 += t1
        s2 += t2
    if P3 > 0:
        c3 = P1 + P2 + tl.arange(0, P3)
        m3 = c3 < N
        x3 = tl.load(x_ptr + base[:, None] + c3[None, :], mask=m3[None, :], other=0.0,
                     eviction_policy="evict_first").to(tl.float32)
        d3 = tl.where(m3[None, :], x3 - k[:, None], 0.0)
        t1, t2 = tl.reduce((d3, d3 * d3), 1, _add2)
        s1 += t1
        s2 += t2
    dm = s1 / N
    var = tl.maximum(s2 / N - dm * dm, 0.0)
    mean = k + dm
    rstd = tl.rsqrt(var + eps)
    w1 = tl.load(w_ptr + c1).to(tl.float32)
    b1 = tl.load(b_ptr + c1).to(tl.float32)
    y1 = (x1 - mean[:, None]) * rstd[:, None] * w1[None, :] + b1[None, :]
    tl.store(y_ptr + base[:, None] + c1[None, :], y1.to(y_ptr.dtype.element_ty))
    if P2 > 0:
        w2 = tl.load(w_ptr + c2).to(tl.float32)
        b2 = tl.load(b_ptr + c2).to(tl.float32)
        y2 = (x2 - mean[:, None]) * rstd[:, None] * w2[None, :] + b2[None, :]
        tl.store(y_ptr + base[:, None] + c2[None, :], y2.to(y_ptr.dtype.element_ty))
    if P3 > 0:
        w3 = tl.load(w_ptr + c3, mask=m3, other=0.0).to(tl.float32)
        b3 = tl.load(b_ptr + c3, mask=m3, other=0.0).to(tl.float32)
        y3 = (x3 - mean[:, None]) * rstd[:, None] * w3[None, :] + b3[None, :]
        tl.store(y_ptr + base[:, None] + c3[None, :], y3.to(y_ptr.dtype.element_ty), mask=m3[None, :])


@triton.jit
def _ln_chunked(x_ptr, w_ptr, b_ptr, y_ptr, M, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                CHUNK: tl.constexpr, EVEN: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    base = rows * N
    offs = tl.arange(0, CHUNK)
    k = tl.load(x_ptr + base).to(tl.float32)
    acc1 = tl.zeros([BLOCK_M, CHUNK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_M, CHUNK], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + offs
        ptrs = x_ptr + base[:, None] + cols[None, :]
        if EVEN:
            d = tl.load(ptrs, eviction_policy="evict_last").to(tl.float32) - k[:, None]
        else:
            cm = (cols < N)[None, :]
            x = tl.load(ptrs, mask=cm, other=0.0, eviction_policy="evict_last").to(tl.float32)
            d = tl.where(cm, x - k[:, None], 0.0)
        acc1 += d
        acc2 += d * d
    s1, s2 = tl.reduce((acc1, acc2), 1, _add2)
    dm = s1 / N
    var = tl.maximum(s2 / N - dm * dm, 0.0)
    mean = (k + dm)[:, None]
    rstd = tl.rsqrt(var + eps)[:, None]
    for start in range(0, N, CHUNK):
        cols = start + offs
        offs2 = base[:, None] + cols[None, :]
        if EVEN:
            x = tl.load(x_ptr + offs2, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
            b = tl.load(b_ptr + cols, eviction_policy="evict_last").to(tl.float32)
            y = (x - mean) * rstd * w[None, :] + b[None, :]
            tl.store(y_ptr + offs2, y.to(y_ptr.dtype.element_ty), eviction_policy="evict_first")
        else:
            cmask = cols < N
            cm = cmask[None, :]
            x = tl.load(x_ptr + offs2, mask=cm, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + cols, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            b = tl.load(b_ptr + cols, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            y = (x - mean) * rstd * w[None, :] + b[None, :]
            tl.store(y_ptr + offs2, y.to(y_ptr.dtype.element_ty), mask=cm, eviction_policy="evict_first")


def _prev_pow2(v):
    return 1 << (max(1, v).bit_length() - 1)


def _pieces(n):
    p1 = _prev_pow2(n)
    rest = n - p1
    p2 = _prev_pow2(rest) if rest > 0 else 0
    rest -= p2
    p3 = triton.next_power_of_2(rest) if rest > 0 else 0
    return p1, p2, p3


def _chunk(n):
    """The largest power of 2 <= _MAX_CHUNK dividing n if it is >= _MIN_CHUNK, else a masked chunk."""
    div = min(n & -n, _MAX_CHUNK)
    if div >= _MIN_CHUNK:
        return div, True
    chunk = min(_MAX_CHUNK, triton.next_power_of_2(n))
    return chunk, n % chunk == 0


def _launch_rows(x, weight, bias, y, m, n, eps, block_m, num_warps):
    p1, p2, p3 = _pieces(n)
    block_m = min(block_m, triton.next_power_of_2(m))
    _ln_rows[(triton.cdiv(m, block_m),)](x, weight, bias, y, m, eps, N=n, BLOCK_M=block_m,
                                         P1=p1, P2=p2, P3=p3, num_warps=num_warps)


def run(x, weight, bias, eps):
    if not x.is_contiguous():
        x = x.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    if m == 0 or n == 0:
        return y
    eps = float(eps)
    if m < _LARGE_MIN_ROWS:
        num_warps = max(1, min(16, _prev_pow2(n // (32 * _SMALL_ELEMS_PER_THREAD))))
        _launch_rows(x, weight, bias, y, m, n, eps, 1, num_warps)
        return y
    block_m, num_warps = CONFIG["BLOCK_M"], CONFIG["num_warps"]
    if CONFIG["LARGE"] == "rows":
        _launch_rows(x, weight, bias, y, m, n, eps, block_m, num_warps)
        return y
    chunk, even = _chunk(n)
    num_warps = max(1, min(num_warps, block_m * chunk // 256))  # >= 8 elements per thread
    _ln_chunked[(triton.cdiv(m, block_m),)](x, weight, bias, y, m, eps, N=n, BLOCK_M=block_m,
                                            CHUNK=chunk, EVEN=even, num_warps=num_warps)
    return y
