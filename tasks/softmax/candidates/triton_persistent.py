"""Row softmax in Triton: persistent programs over row tiles, next tile's load pipelined.

`triton_online` launches one program per row tile; at 4096 x 32768 a 32-warp program holds a
whole 64 KiB row and only one fits an SM, so each SM alternates "wait for the row" and "reduce,
exp, store" with nothing overlapping (H200 profile: latency-bound, DRAM 55%, SM 46%). Here a grid
of (WARPS_PER_SM / num_warps) x (number of SMs) programs loops over row tiles (tile = pid, pid + grid, ...)
with `tl.range(..., num_stages=LOOP_STAGES)`: with LOOP_STAGES >= 2 Triton's software pipeliner
issues the next tile's load (through shared memory, 64 KiB per stage for a 32768-wide bf16 row,
within the H200's 227 KiB) while the current tile is reduced and stored, so DRAM stays busy across
the reduction phases. Narrow rows pack BLOCK_M rows per tile (~ROW_TILE elements), as in
`triton_online`; the persistent loop also drops the launch tail of thousands of small programs
(4096 x 4096: 4096 programs).

Each tile: whole rows in registers (BLOCK_N = next_power_of_2(width) <= 32768), float32 max,
exp, sum, one bf16 store. No masks when the width is a power of 2; rows past the end are clamped
to the last row (identical values stored twice). Rows that are entirely -inf give NaN, as
torch.softmax.

`TUNABLES` / `CONFIG` (for `kernelcraft optimize --agent tuner`): LOOP_STAGES (pipelining depth;
1 = none), WARPS_PER_SM (resident warps aimed at per SM: 32 gives one 32-warp program per SM at
32768 and eight 4-warp programs at 4096), ELEMS_PER_THREAD (from which num_warps follows, 4 to 32) and ROW_TILE.
If LOOP_STAGES = 2 does not pipeline (or runs out of shared memory) on some Triton version, 1 is
the plain persistent kernel.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"LOOP_STAGES": [1, 2, 3], "WARPS_PER_SM": [16, 32, 64], "ELEMS_PER_THREAD": [16, 32],
            "ROW_TILE": [2048, 4096, 8192]}
CONFIG = {"LOOP_STAGES": 2, "WARPS_PER_SM": 32, "ELEMS_PER_THREAD": 32, "ROW_TILE": 4096}


@triton.jit
def _softmax_persistent(x_ptr, y_ptr, M, N, stride_x, stride_y, num_tiles,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
                        LOOP_STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    cmask = (cols < N)[None, :]
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), num_stages=LOOP_STAGES):
        rows = tl.minimum(tile * BLOCK_M + tl.arange(0, BLOCK_M), M - 1).to(tl.int64)
        if EVEN_N:
            x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :],
                        eviction_policy="evict_first").to(tl.float32)
        else:
            x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=cmask,
                        other=float("-inf"), eviction_policy="evict_first").to(tl.float32)
        m = tl.max(x, axis=1)
        m = tl.where(m == float("-inf"), 0.0, m)
        e = tl.exp(x - m[:, None])
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        if EVEN_N:
            tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty))
        else:
            tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty),
                     mask=cmask)


def _num_sms(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 2  # CPU (Triton interpreter): a couple of programs, each looping over several tiles


def run(x):
    if x.stride(-1) != 1:
        x = x.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y
    block_n = triton.next_power_of_2(N)
    block_m = min(max(1, CONFIG["ROW_TILE"] // block_n), triton.next_power_of_2(M))
    num_tiles = triton.cdiv(M, block_m)
    num_warps = min(32, max(4, block_m * block_n // (32 * CONFIG["ELEMS_PER_THREAD"])))
    programs_per_sm = max(1, CONFIG["WARPS_PER_SM"] // num_warps)
    grid = min(num_tiles, programs_per_sm * _num_sms(x.device))
    _softmax_persistent[(grid,)](x, y, M, N, x.stride(0), N, num_tiles, BLOCK_M=block_m,
                                 BLOCK_N=block_n, EVEN_N=block_n == N,
                                 LOOP_STAGES=CONFIG["LOOP_STAGES"], num_warps=num_warps)
    return y
