"""LayerNorm (weight and bias) in Triton: a latency kernel for few tokens, the promoted streaming kernel for many.

Why: at decode sizes the promoted `triton_dispatch` trails Liger-Kernel (H200, CUDA-graph timing, L2
flushed: 1 x 2560 6.1 vs 4.5 us, 16 x 4544 7.3 vs 5.2 us, 128 x 6144 6.3 vs 5.5 us, 1 x 8192 5.2 vs
4.9 us). One program per row is latency-bound: what counts is the number of *dependent* trips to
memory and of block-wide reductions, not bandwidth. Its `_ln_rows` has
  1. weight and bias loaded after the statistics: a second DRAM round trip (the L2 is flushed)
     that waits behind the reduction's barriers, once per piece;
  2. the row split into up to three power-of-2 pieces (2560 = 2048 + 512, 4544 = 4096 + 256 + 256,
     6144 = 4096 + 2048), one block-wide reduction round per piece;
  3. few warps at narrow rows (4 at 2560: 20 elements a thread) where Liger runs 8.
Liger's forward (liger_kernel/ops/layer_norm.py, read, not copied) loads weight, bias and the row
together, one next_power_of_2 block per row, 8 warps at 2048-4096 columns and 16 at 8192, then
two dependent reductions (mean, then the centred sum of squares) and also stores Mean and RSTD.

`_ln_row` (num_tokens < LARGE_MIN_ROWS): one program per row, 1-D tensors throughout (a 2-D
[1, BLOCK_N] row made Triton load the shift three times in three layouts and convert weight and bias
between layouts), the row in one BLOCK_N = next_power_of_2(N) block (a lane mask only when N is not
a power of 2); weight, bias, the row and its first element (the shift K) are all in flight before
anything waits: one memory round trip. Program order alone does not do that: ptxas sinks the
weight / bias loads below the first shuffles of the reduction, i.e. behind the row's arrival (SASS of
Liger's kernel and of ours: the LDGs of W and B come after the first SHFL), a second dependent DRAM
round trip with the L2 flushed. PIN_LOADS (default on) makes these loads volatile, issued weight,
bias, row, shift: volatile accesses keep their program order, so all are issued up front
(LDG.E.128.STRONG.SYS, the same 16-byte vectors; nothing here is reused through L1 anyway).
STATS picks the statistics:
  * "shift" (default): one joint (sum, sum of squares) reduction round of d = x - K, var =
    S2/N - (S1/N)^2, y from d - S1/N; the shift keeps the one-pass variance free of cancellation
    when the row mean is large (the contract's rows have mean 1);
  * "twopass": Liger's order, mean then the centred variance: two dependent reduction rounds;
  * "raw": the joint reduction without the shift (no K load; loses ~1 bit at mean 1).
Then y = (x - mean) * rstd * w + b in float32, rounded once, one store; no Mean / RSTD outputs.
num_warps = BLOCK_N / (32 * SMALL_ELEMS_PER_THREAD), capped at SMALL_MAX_WARPS (16: Liger's
geometry at 2560, 4544, 6144 and 8192).

`_ln_chunked` (num_tokens >= LARGE_MIN_ROWS, LARGE = "chunked"): the promoted kernel unchanged but
for int64 row offsets: per-lane shifted sums over CHUNK-wide tiles (evict_last), one joint
reduction, a second pass over the same chunks (L1/L2 hits) writing y with evict_first. 0.0956 ms at
16384 x 6144 on the H200 (97% of speed of light). LARGE = "rows" uses `_ln_row` with num_warps.

Row offsets are int64 (program_id widened before the multiply). Rows past the end (chunked,
BLOCK_M > 1) are clamped to the last row, identical values written twice. Non-contiguous inputs
are made contiguous first.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"SMALL_ELEMS_PER_THREAD": [4, 8, 16, 32], "SMALL_MAX_WARPS": [8, 16, 32],
            "STATS": ["shift", "twopass", "raw"], "PIN_LOADS": [True, False], "LARGE": ["chunked", "rows"], "BLOCK_M": [1, 2],
            "num_warps": [4, 8]}
CONFIG = {'SMALL_ELEMS_PER_THREAD': 32, 'SMALL_MAX_WARPS': 16, 'STATS': 'shift', 'PIN_LOADS': True, 'LARGE_MIN_ROWS': 1024, 'LARGE': 'chunked', 'BLOCK_M': 1, 'num_warps': 8}

_STATS = {"shift": 0, "twopass": 1, "raw": 2}
_MAX_CHUNK = 2048
_MIN_CHUNK = 512


@triton.jit
def _add2(a1, a2, b1, b2):
    return a1 + b1, a2 + b2


@triton.jit
def _ln_row(x_ptr, w_ptr, b_ptr, y_ptr, eps, N: tl.constexpr, BLOCK_N: tl.constexpr,
            STATS: tl.constexpr, PIN_LOADS: tl.constexpr):
    # one row per program, 1-D tensors throughout (scalar statistics, no layout conversions)
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK_N)
    # every load first: the row, its shift, weight and bias travel to memory together. ptxas
    # otherwise sinks the weight / bias loads below the first shuffles of the reduction, i.e.
    # behind the row's arrival: a second memory round trip (seen in the SASS of Liger's kernel and of
    # the promoted one). PIN_LOADS makes them volatile loads issued before the (volatile) row load:
    # volatile accesses keep their program order, so all of them are in flight at once.
    if BLOCK_N == N:
        w = tl.load(w_ptr + cols, volatile=PIN_LOADS)
        b = tl.load(b_ptr + cols, volatile=PIN_LOADS)
        x = tl.load(x_row + cols, volatile=PIN_LOADS)
    else:
        cm = cols < N
        w = tl.load(w_ptr + cols, mask=cm, other=0.0, volatile=PIN_LOADS)
        b = tl.load(b_ptr + cols, mask=cm, other=0.0, volatile=PIN_LOADS)
        x = tl.load(x_row + cols, mask=cm, other=0.0, volatile=PIN_LOADS)
    if STATS == 0:
        k = tl.load(x_row, volatile=PIN_LOADS).to(tl.float32)
    x = x.to(tl.float32)
    w = w.to(tl.float32)
    b = b.to(tl.float32)
    if STATS == 0:
        d = x - k
        if BLOCK_N != N:
            d = tl.where(cm, d, 0.0)
        s1, s2 = tl.reduce((d, d * d), 0, _add2)
        dm = s1 * (1.0 / N)
        var = tl.maximum(s2 * (1.0 / N) - dm * dm, 0.0)
        xc = d - dm  # x - mean, from d: x itself is dead after the shift
    elif STATS == 1:
        mean = tl.sum(x, axis=0) * (1.0 / N)
        xc = x - mean
        if BLOCK_N != N:
            xc = tl.where(cm, xc, 0.0)
        var = tl.sum(xc * xc, axis=0) * (1.0 / N)
    else:
        s1, s2 = tl.reduce((x, x * x), 0, _add2)
        mean = s1 * (1.0 / N)
        var = tl.maximum(s2 * (1.0 / N) - mean * mean, 0.0)
        xc = x - mean
    y = xc * tl.rsqrt(var + eps) * w + b
    if BLOCK_N == N:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cm)


@triton.jit
def _ln_chunked(x_ptr, w_ptr, b_ptr, y_ptr, M, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                CHUNK: tl.constexpr, EVEN: tl.constexpr):
    rows = tl.minimum(tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
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


def _chunk(n):
    """The largest power of 2 <= _MAX_CHUNK dividing n if it is >= _MIN_CHUNK, else a masked chunk."""
    div = min(n & -n, _MAX_CHUNK)
    if div >= _MIN_CHUNK:
        return div, True
    chunk = min(_MAX_CHUNK, triton.next_power_of_2(n))
    return chunk, n % chunk == 0


def _launch_row(x, weight, bias, y, m, n, eps, num_warps=None):
    block_n = triton.next_power_of_2(n)
    if num_warps is None:
        num_warps = max(1, min(CONFIG["SMALL_MAX_WARPS"], block_n // (32 * CONFIG["SMALL_ELEMS_PER_THREAD"])))
    _ln_row[(m,)](x, weight, bias, y, eps, N=n, BLOCK_N=block_n, STATS=_STATS[CONFIG["STATS"]],
                  PIN_LOADS=bool(CONFIG["PIN_LOADS"]), num_warps=num_warps)


def run(x, weight, bias, eps):
    if not x.is_contiguous():
        x = x.contiguous()
    if not weight.is_contiguous():
        weight = weight.contiguous()
    if not bias.is_contiguous():
        bias = bias.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    if m == 0 or n == 0:
        return y
    eps = float(eps)
    if m < CONFIG["LARGE_MIN_ROWS"]:
        _launch_row(x, weight, bias, y, m, n, eps)
        return y
    block_m, num_warps = CONFIG["BLOCK_M"], CONFIG["num_warps"]
    if CONFIG["LARGE"] == "rows":
        _launch_row(x, weight, bias, y, m, n, eps, num_warps)
        return y
    chunk, even = _chunk(n)
    num_warps = max(1, min(num_warps, block_m * chunk // 256))  # >= 8 elements per thread
    _ln_chunked[(triton.cdiv(m, block_m),)](x, weight, bias, y, m, eps, N=n, BLOCK_M=block_m,
                                            CHUNK=chunk, EVEN=even, num_warps=num_warps)
    return y
