"""Fused residual add + RMSNorm in Triton with the schedule static torch.compile (Inductor) picks for this
task's reference at >= SMALL_ROWS tokens; below that, `triton_static`'s one-round-trip register kernel.

Why: on the H200 (results/h200/fused_add_rmsnorm.json, session 23) static torch.compile beat every
candidate at the three large workloads (16384 x 4096: 0.1249 vs triton_static_v5's 0.1279 ms; 4096 x 5120:
0.0408 vs 0.0428; 8192 x 8192: 0.1271 vs 0.1323). This file copies the *schedule* of Inductor's kernel,
written here from a reading of torch's installed source (torch 2.13.0+cpu on this machine; the H200 ran
2.11, whose heuristics may differ in details):

* torch/_inductor/choices.py `InductorChoices.should_use_persistent_reduction`: an INNER reduction is a
  "persistent reduction" (one R0_BLOCK, no loop) only up to 1024 elements (x16 with multi_kernel, off by
  default). 4096 / 5120 / 8192 are above it, so the kernel is a *looped* reduction (`triton_red_...`), never
  `triton_per_...`.
* Its body (generated on this CPU machine with `cpu_backend="triton"`, the driver check patched away so the
  module source is written, not run): loop 1 over R0_BLOCK chunks loads hidden_states and residual with
  `evict_last`, upcasts, accumulates (h + r)^2 in an [XBLOCK, R0_BLOCK] float32 tile (tl.where on the
  mask); tl.sum; loop 2 re-loads both from global memory with `evict_first` (L1/L2 hits), the weight with
  `evict_last`, computes rsqrt(sum / N + eps) (a true division by N) and stores output then residual_out,
  both stores without a cache hint. Every load and store carries the column mask (r0_index < N) and row mask.
* torch/_inductor/runtime/triton_heuristics.py `_reduction_configs` (called by `reduction`): for
  ReductionHint.INNER it autotunes exactly two configs, both num_stages 1, grid Grid1D = cdiv(M, XBLOCK):
  - the "add_persistent_rblock" config (num_load 5 + num_reduction 1 <= 8): XBLOCK = max(4096 // rnumel, 1)
    = 1, R0_BLOCK = next_power_of_2(N) (4096 / 8192 / 8192), so each loop runs once (masked at 5120), with
    dynamic_scale_rblock off;
  - the "contiguous" config: XBLOCK 1 (rnumel > 2048), R0_BLOCK = min(rnumel, 2048) = 2048;
  - num_warps from `triton_config_reduction`: INNER gives R0_BLOCK // 128 (32 / 64 / 16), clamped by
    `_num_warps` to 16 (max 16 warps for r <= 8192; register_intensive needs x >= 1024 *and* >= 10
    loads + reductions, not the case). Both configs: 16 warps, one row per program.
  `CachingAutotuner._dynamic_scale_rblock` may add R0_BLOCK 1024 for the contiguous config when its kernel
  uses more than 32 registers (65536 / 2048) and the grid exceeds one wave of resident CTAs.
  Which of the two wins Inductor's autotuning on the H200 is unknown here (no GPU): RBLOCK selects it.

Differences from `triton_static` (LARGE="chunked", CHUNK 2048, CHUNK_WARPS 8, PREFETCH2): 16 warps instead
of 8 (4 at 5120, whose chunk there is 1024 unmasked); one R0_BLOCK of next_power_of_2(N) (or 2048 masked at
5120, 3 trips) instead of 1024 x 5; pass 2 with no software prefetch (plain loads at the top of each trip);
residual_out and output stored with no cache hint (triton_static stores the output evict_first); column
masks kept as Inductor emits them (MASK="inductor"; "even" drops them where RBLOCK divides N).

Kernels: `_red_two_pass` (num_tokens >= SMALL_ROWS) is the above. `_small_rows` (num_tokens < SMALL_ROWS) is
triton_static's `_fused_add_rmsnorm` non-persistent path with its small-token settings (one row, whole row
in registers, weight loaded first, 16 elements a thread, SMALL_PIN default False as in the
`triton_static_v5` record).

sm_90 registers (scripts/triton_regs.py and its ptxas, Triton 3.9, no spills anywhere), 16384 x 4096 /
4096 x 5120 / 8192 x 8192, 16 warps, one row a program (grid = num_tokens):
  RBLOCK "persistent" (default): 30 / 40 / 40 registers (4 / 3 / 3 CTAs an SM), 16-byte loads (v4.b32);
    loop 2 re-reads the row from global memory (PTX: 2 evict_last + weight, then 2 evict_first loads per
    16-byte slice; nothing is kept in registers across the loops);
  RBLOCK 2048 (Inductor's other config): 28 / 30 / 30 (<= 32, so Inductor's dynamic R0_BLOCK halving does
    not fire), 8-byte loads (v2.b32: 4 elements a thread at 16 warps);
  MASK "even": 29 / 40 / 34 (persistent), 28 / 30 / 31 (2048). triton_static's _far_chunked: 40 / 40 / 40.
  Decode path (1 x 4096, 16 x 5120, 1 x 8192): 44 / 44 / 40, the same as triton_static's.
CPU check: `kernelcraft eval` on a copy of the task cut to 1 x 4096, 16 x 5120, 1 x 8192, 1024 x 4096,
1030 x 5120, 1024 x 8192, 1025 x 5000 (`--cpu-max-mb 100`) PASSES 7/7 plus holdouts through the Triton
interpreter; every TUNABLES axis (RBLOCK 2048 / 1024, MASK even, XBLOCK 2 with odd rows, SMALL_PIN) is
within tolerance on CPU at 4096 / 5120 / 8192 / 5000 / 100. Not yet run on a GPU.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"RBLOCK": ["persistent", 2048, 1024, 4096], "NUM_WARPS": [8, 16, 32], "XBLOCK": [1, 2],
            "EVICT1": ["evict_last", ""], "EVICT2": ["evict_first", ""], "W_EVICT": ["evict_last", ""],
            "STORE_EVICT": ["", "evict_first"], "MASK": ["inductor", "even"], "SMALL_PIN": [False, True]}
CONFIG = {"RBLOCK": "persistent", "NUM_WARPS": 16, "XBLOCK": 1, "EVICT1": "evict_last",
          "EVICT2": "evict_first", "W_EVICT": "evict_last", "STORE_EVICT": "", "MASK": "inductor",
          "SMALL_ROWS": 1024, "SMALL_ELEMS_PER_THREAD": 16, "SMALL_MAX_WARPS": 16, "SMALL_PIN": False}


@triton.jit
def _red_two_pass(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, M, eps, N: tl.constexpr, XBLOCK: tl.constexpr,
                  RBLOCK: tl.constexpr, MASKED: tl.constexpr, EVICT1: tl.constexpr, EVICT2: tl.constexpr,
                  W_EVICT: tl.constexpr, STORE_EVICT: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    row_ok = rows < M
    base = rows * N
    lanes = tl.arange(0, RBLOCK)[None, :]
    # loop 1: loads only, kept in cache for loop 2 (evict_last); per-lane float32 sums of squares
    acc = tl.zeros([XBLOCK, RBLOCK], dtype=tl.float32)
    for start in tl.range(0, N, RBLOCK):
        cols = start + lanes
        if MASKED:
            m = (cols < N) & row_ok
            h = tl.load(h_ptr + (base + cols), mask=m, other=0.0, eviction_policy=EVICT1).to(tl.float32)
            r = tl.load(r_ptr + (base + cols), mask=m, other=0.0, eviction_policy=EVICT1).to(tl.float32)
            s = h + r
            acc = tl.where(m, acc + s * s, acc)
        else:
            h = tl.load(h_ptr + (base + cols), eviction_policy=EVICT1).to(tl.float32)
            r = tl.load(r_ptr + (base + cols), eviction_policy=EVICT1).to(tl.float32)
            s = h + r
            acc += s * s
    total = tl.sum(acc, 1)[:, None]
    # loop 2: the row again from global memory (evict_first: last use), the weight (evict_last: every
    # program reads it), output then residual_out stored
    for start in tl.range(0, N, RBLOCK):
        cols = start + lanes
        if MASKED:
            cm = cols < N
            m = cm & row_ok
            h = tl.load(h_ptr + (base + cols), mask=m, other=0.0, eviction_policy=EVICT2).to(tl.float32)
            r = tl.load(r_ptr + (base + cols), mask=m, other=0.0, eviction_policy=EVICT2).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=cm, other=0.0, eviction_policy=W_EVICT).to(tl.float32)
        else:
            h = tl.load(h_ptr + (base + cols), eviction_policy=EVICT2).to(tl.float32)
            r = tl.load(r_ptr + (base + cols), eviction_policy=EVICT2).to(tl.float32)
            w = tl.load(w_ptr + cols, eviction_policy=W_EVICT).to(tl.float32)
        s = h + r
        y = s * tl.rsqrt(total / N + eps) * w
        if MASKED:
            tl.store(out_ptr + (base + cols), y.to(out_ptr.dtype.element_ty), mask=m, eviction_policy=STORE_EVICT)
            tl.store(res_ptr + (base + cols), s.to(res_ptr.dtype.element_ty), mask=m, eviction_policy=STORE_EVICT)
        else:
            tl.store(out_ptr + (base + cols), y.to(out_ptr.dtype.element_ty), eviction_policy=STORE_EVICT)
            tl.store(res_ptr + (base + cols), s.to(res_ptr.dtype.element_ty), eviction_policy=STORE_EVICT)


@triton.jit
def _small_rows(h_ptr, r_ptr, w_ptr, out_ptr, res_ptr, eps, N: tl.constexpr, BLOCK_N: tl.constexpr,
                PIN: tl.constexpr):
    # triton_static's decode path: one row per program, the whole row in registers, weight issued first
    offs = tl.program_id(0).to(tl.int64) * N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    cm = cols < N
    if PIN:  # volatile keeps program order: the weight's load is in flight with the row's
        if BLOCK_N == N:
            w = tl.load(w_ptr + cols, volatile=True)
            h = tl.load(h_ptr + offs, volatile=True)
            r = tl.load(r_ptr + offs, volatile=True)
        else:
            w = tl.load(w_ptr + cols, mask=cm, other=0.0, volatile=True)
            h = tl.load(h_ptr + offs, mask=cm, other=0.0, volatile=True)
            r = tl.load(r_ptr + offs, mask=cm, other=0.0, volatile=True)
    elif BLOCK_N == N:
        w = tl.load(w_ptr + cols, eviction_policy="evict_last")
        h = tl.load(h_ptr + offs)
        r = tl.load(r_ptr + offs)
    else:
        w = tl.load(w_ptr + cols, mask=cm, other=0.0, eviction_policy="evict_last")
        h = tl.load(h_ptr + offs, mask=cm, other=0.0)
        r = tl.load(r_ptr + offs, mask=cm, other=0.0)
    s = h.to(tl.float32) + r.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(s * s, axis=0) * (1.0 / N) + eps)
    y = s * rstd * w.to(tl.float32)
    if BLOCK_N == N:
        tl.store(res_ptr + offs, s.to(res_ptr.dtype.element_ty))
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty))
    else:
        tl.store(res_ptr + offs, s.to(res_ptr.dtype.element_ty), mask=cm)
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=cm)


def _rblock(n):
    """Inductor's R0_BLOCK for hidden size n: 'persistent' = next_power_of_2(n), else min(CONFIG, that)."""
    full = triton.next_power_of_2(n)
    rb = CONFIG["RBLOCK"]
    return full if rb == "persistent" else min(int(rb), full)


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
    if m < CONFIG["SMALL_ROWS"]:
        block_n = triton.next_power_of_2(n)
        num_warps = min(CONFIG["SMALL_MAX_WARPS"], max(1, block_n // (32 * CONFIG["SMALL_ELEMS_PER_THREAD"])))
        _small_rows[(m,)](hidden_states, residual, weight, out, residual_out, float(eps), N=n, BLOCK_N=block_n,
                          PIN=bool(CONFIG["SMALL_PIN"]), num_warps=num_warps)
        return out, residual_out
    xblock = CONFIG["XBLOCK"]
    rblock = _rblock(n)
    masked = CONFIG["MASK"] == "inductor" or n % rblock != 0 or m % xblock != 0
    _red_two_pass[(triton.cdiv(m, xblock),)](
        hidden_states, residual, weight, out, residual_out, m, float(eps), N=n, XBLOCK=xblock, RBLOCK=rblock,
        MASKED=masked, EVICT1=CONFIG["EVICT1"], EVICT2=CONFIG["EVICT2"], W_EVICT=CONFIG["W_EVICT"],
        STORE_EVICT=CONFIG["STORE_EVICT"], num_warps=CONFIG["NUM_WARPS"], num_stages=1)
    return out, residual_out
