"""Row softmax in Triton: rows in registers, or a two-pass chunked stream for many wide rows.

Two kernels, chosen in run() by the shape:

* `_softmax_rows` (every width up to _REG_MAX_N = 16384, and few rows of any width): BLOCK_M whole
  rows per program in registers (BLOCK_N = next_power_of_2(width)), float32 max, exp, sum, one
  bf16 store: one read, one write. Rows past the end are clamped to the last row (identical
  values stored twice) and power-of-2 widths have no column mask; int32 offsets (the definition
  bounds num_rows * width by 2^31). The tile (BLOCK_M * BLOCK_N elements) and the elements per
  thread come from CONFIG["ROWS"] = [tile, elements per thread]: [4096, 16] is `triton_online`'s
  measured point (4096-wide rows: one row, 8 warps); [8192, 32] packs two 4096-wide rows into an
  8-warp program.
* `_softmax_chunked` (width > _REG_MAX_N and num_rows >= _CHUNK_MIN_ROWS, i.e. 4096 x 32768):
  a 32-warp program holding a whole 64 KiB row lets one program per SM be resident (H200 profile:
  latency-bound, DRAM 55%). Here one program per row walks it in CHUNK-wide pieces with
  CHUNK_WARPS warps, so several programs share an SM:
  1. pass 1 (loads evict_last): per-lane running max m and rescaled sum l, with one exp per
     element and no cross-warp reduction inside the loop: e = exp(-|x - m|);
     x > m: l = l * e + 1, m = x; else l = l + e. One block reduction at the end:
     M = max(m), L = sum(l * exp(m - M)).
  2. pass 2 (loads and stores evict_first): y = exp(x - M) / L. The row was read by the same
     program a few microseconds earlier, so the re-read hits L2 and DRAM traffic stays 1x (live
     rows ~ resident programs x 64 KiB: ~5 per SM at the default is ~40 MiB, inside the 60 MB L2).
  The width is a constexpr (constant trip counts) and EVEN (width % CHUNK == 0) drops all masks.
  The running max starts at the lowest finite float32, so -inf entries need no special case;
  a row that is entirely -inf gives NaN, as torch.softmax.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): CHUNK and CHUNK_WARPS shape the
chunked kernel (elements per thread per chunk = CHUNK / (32 * CHUNK_WARPS): 16 at the default),
ROWS the register kernel.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"CHUNK": [2048, 4096, 8192], "CHUNK_WARPS": [4, 8], "ROWS": [[4096, 16], [8192, 32]]}
CONFIG = {'CHUNK': 2048, 'CHUNK_WARPS': 8, 'ROWS': [4096, 16]}

_REG_MAX_N = 16384      # wider rows go to the chunked kernel when there are many of them
_CHUNK_MIN_ROWS = 512   # fewer rows than this: the register kernel (short per-program chains)
_LOWEST = -3.4028234663852886e38


@triton.jit
def _softmax_rows(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  EVEN_N: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    cols = tl.arange(0, BLOCK_N)
    offs = (rows * N)[:, None] + cols[None, :]
    if EVEN_N:
        x = tl.load(x_ptr + offs, eviction_policy="evict_first").to(tl.float32)
    else:
        cm = (cols < N)[None, :]
        x = tl.load(x_ptr + offs, mask=cm, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
    m = tl.max(x, axis=1)
    m = tl.where(m == float("-inf"), 0.0, m)
    e = tl.exp(x - m[:, None])
    y = e * (1.0 / tl.sum(e, axis=1))[:, None]
    if EVEN_N:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=cm)


@triton.jit
def _softmax_chunked(x_ptr, y_ptr, N: tl.constexpr, CHUNK: tl.constexpr, EVEN: tl.constexpr,
                     LOWEST: tl.constexpr):
    base = tl.program_id(0) * N
    x_row = x_ptr + base
    y_row = y_ptr + base
    offs = tl.arange(0, CHUNK)
    m_vec = tl.full([CHUNK], LOWEST, tl.float32)
    l_vec = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + offs
        if EVEN:
            x = tl.load(x_row + cols, eviction_policy="evict_last").to(tl.float32)
        else:
            x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"),
                        eviction_policy="evict_last").to(tl.float32)
        gt = x > m_vec
        e = tl.exp(tl.where(gt, m_vec - x, x - m_vec))
        l_vec = tl.where(gt, l_vec * e + 1.0, l_vec + e)
        m_vec = tl.maximum(m_vec, x)
    m = tl.max(m_vec, axis=0)
    inv = 1.0 / tl.sum(l_vec * tl.exp(m_vec - m), axis=0)
    for start in range(0, N, CHUNK):
        cols = start + offs
        if EVEN:
            x = tl.load(x_row + cols, eviction_policy="evict_first").to(tl.float32)
            y = tl.exp(x - m) * inv
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), eviction_policy="evict_first")
        else:
            cmask = cols < N
            x = tl.load(x_row + cols, mask=cmask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
            y = tl.exp(x - m) * inv
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cmask,
                     eviction_policy="evict_first")


def run(x):
    if not x.is_contiguous():
        x = x.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y
    block_n = triton.next_power_of_2(N)
    if block_n > _REG_MAX_N and M >= _CHUNK_MIN_ROWS:
        chunk = min(CONFIG["CHUNK"], block_n)
        num_warps = max(1, min(CONFIG["CHUNK_WARPS"], chunk // 256))
        _softmax_chunked[(M,)](x, y, N=N, CHUNK=chunk, EVEN=N % chunk == 0, LOWEST=_LOWEST,
                               num_warps=num_warps)
        return y
    tile, ept = CONFIG["ROWS"]
    block_m = min(max(1, tile // block_n), triton.next_power_of_2(M))
    num_warps = min(32, max(4, block_m * block_n // (32 * ept)))
    _softmax_rows[(triton.cdiv(M, block_m),)](x, y, M, N, BLOCK_M=block_m, BLOCK_N=block_n,
                                             EVEN_N=block_n == N, num_warps=num_warps)
    return y
