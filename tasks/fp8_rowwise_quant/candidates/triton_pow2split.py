"""Dynamic per-token FP8 (e4m3) quantization in Triton: the row as power-of-2 pieces, hardware cvt.

The row is held in registers as up to three power-of-2 pieces instead of one block padded to
next_power_of_2(hidden_size): P1 = the largest power of 2 <= N, P2 = the largest power of 2 <= the
rest, P3 = next_power_of_2 of what is left (the only masked piece). 14336 (Llama-3-8B / Mixtral
down_proj input) = 8192 + 4096 + 2048 then has no masked lane where a 16384-wide block wastes an
eighth of its lanes, registers and predicated loads; 4096 and 8192 are one piece; 5000 =
4096 + 512 + 512. Pieces 1 and 2 load and store without masks (16-byte loads, 8-byte fp8 stores).

On the GPU q = x * (1 / scale) is converted by the hardware (`.to(float8e4nv)`: sm_90's
`cvt.rn.satfinite.e4m3x2.f32`, round to nearest even, saturating); the float32 rounding to e4m3's
grid that `triton_rowwise` does for every element (issue-bound on the H200: SM 82%, math-pipe
throttle 25%) runs only under the Triton interpreter (constexpr EXACT_ROUND, set when the tensors
are not on a CUDA device), whose own conversion drops carries into odd exponents (AGENTS.md).
Rows past the end are clamped to the last row (identical values written twice), offsets are int32
(num_tokens * hidden_size <= 2^29 by the definition).

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): BLOCK_M (rows per program) and
ELEMS_PER_THREAD (row elements per thread; num_warps is the power of 2 at or below
BLOCK_M * N / (32 * ELEMS_PER_THREAD), 1 to 32).
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_M": [1, 2, 4], "ELEMS_PER_THREAD": [8, 16, 32, 64]}
CONFIG = {"BLOCK_M": 1, "ELEMS_PER_THREAD": 32}


@triton.jit
def _round_e4m3_grid(q):
    # Interpreter only: round to e4m3's grid in float32 (ties to even) so its conversion is exact.
    bits = q.to(tl.int32, bitcast=True)
    normal = ((bits + 0x7FFFF + ((bits >> 20) & 1)) & -0x100000).to(tl.float32, bitcast=True)
    subnormal = (q + 24576.0) - 24576.0
    return tl.where(tl.abs(q) < 0.015625, subnormal, normal)


@triton.jit
def _fp8_pow2(x_ptr, q_ptr, s_ptr, M, N, BLOCK_M: tl.constexpr, P1: tl.constexpr, P2: tl.constexpr,
              P3: tl.constexpr, EXACT_ROUND: tl.constexpr):
    rows = tl.minimum(tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    base = rows[:, None] * N
    c1 = tl.arange(0, P1)
    x1 = tl.load(x_ptr + base + c1[None, :], eviction_policy="evict_first").to(tl.float32)
    amax = tl.max(tl.abs(x1), axis=1)
    if P2 > 0:
        c2 = P1 + tl.arange(0, P2)
        x2 = tl.load(x_ptr + base + c2[None, :], eviction_policy="evict_first").to(tl.float32)
        amax = tl.maximum(amax, tl.max(tl.abs(x2), axis=1))
    if P3 > 0:
        c3 = P1 + P2 + tl.arange(0, P3)
        m3 = (c3 < N)[None, :]
        x3 = tl.load(x_ptr + base + c3[None, :], mask=m3, other=0.0,
                     eviction_policy="evict_first").to(tl.float32)
        amax = tl.maximum(amax, tl.max(tl.abs(x3), axis=1))
    scale = tl.maximum(amax / 448.0, 1.0 / (448.0 * 512.0))
    inv = (1.0 / scale)[:, None]
    q1 = x1 * inv
    if EXACT_ROUND:
        q1 = _round_e4m3_grid(q1)
    tl.store(q_ptr + base + c1[None, :], q1.to(q_ptr.dtype.element_ty))
    if P2 > 0:
        q2 = x2 * inv
        if EXACT_ROUND:
            q2 = _round_e4m3_grid(q2)
        tl.store(q_ptr + base + c2[None, :], q2.to(q_ptr.dtype.element_ty))
    if P3 > 0:
        q3 = x3 * inv
        if EXACT_ROUND:
            q3 = _round_e4m3_grid(q3)
        tl.store(q_ptr + base + c3[None, :], q3.to(q_ptr.dtype.element_ty), mask=m3)
    tl.store(s_ptr + rows, scale)


def _prev_pow2(v):
    return 1 << (max(1, v).bit_length() - 1)


def _pieces(n):
    p1 = _prev_pow2(n)
    rest = n - p1
    p2 = _prev_pow2(rest) if rest > 0 else 0
    rest -= p2
    p3 = triton.next_power_of_2(rest) if rest > 0 else 0
    return p1, p2, p3


def run(x):
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty((m,), dtype=torch.float32, device=x.device)
    if m == 0 or n == 0:
        return q, scale
    p1, p2, p3 = _pieces(n)
    block_m = min(CONFIG["BLOCK_M"], triton.next_power_of_2(m))
    num_warps = min(32, _prev_pow2(block_m * n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    _fp8_pow2[(triton.cdiv(m, block_m),)](x, q, scale, m, n, BLOCK_M=block_m, P1=p1, P2=p2, P3=p3,
                                          EXACT_ROUND=x.device.type != "cuda", num_warps=num_warps)
    return q, scale
