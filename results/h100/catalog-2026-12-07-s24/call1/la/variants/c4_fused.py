"""Chunked gated delta rule prefill: candidates/triton_chunk3.py with a sequence-parallel (two-level) state
recurrence, so that a long sequence is not one chain of cdiv(n, 64) dependent chunk steps. chunk3's `_kkt` and
`_wu` (w, u, qg, kd, sc, gl: same buffers, layouts, formulas) and its serial `_scan` / `_hstate` + `_out` are
copied unchanged; the entry point, outputs, dtypes and the state convention (new_state returned, `state` not
written, an empty sequence's state bit for bit) are chunk3's. The serial path still runs where segmenting
gives nothing (the rule below).

Why (H200, session 23, results/h200/catalog-2026-12-06-s23/la/gdn_split.txt, torch.profiler device us per
call): at 8192 x 1 chunk2's fused `_scan` takes 226-242 us at BV 16 / 32 (291.7 at 64), its `_hstate` 205.5 +
`_out` 30.4, against FLA 0.6.0's h kernel 155.3 + o kernel 37.5; at 4096 x 4 `_scan` 36.9 (BV 32), `_hstate`
32.0 + `_out` 15.9, FLA h 23.8 + o 19.9; at 5783 x 128 `_scan` 102.1 (BV 64), FLA h 152.6 + o 43.0. The long
single sequences lose because the recurrence over 64-token chunks is serial: 128 steps of ~1.8 us
(226 / 128) with only HV x V / BV programs.

The algebra. The scan's step (chunk c; M = state^T restricted to some columns, [K, BV], float32) is
    M <- g_c M + kd_c^T (U_c - W_c M) = A_c M + kd_c^T U_c,   A_c = g_c I - kd_c^T W_c   ([K, K], K = 128)
(`_hstate`: delta = u - w M, M = gl M + kd^T delta; g_c = gl, kd = exp(gamma_C - gamma) k^, W = the `w`
rows). The columns of M are independent, so over a segment of chunks M_end = A M_start + B with
A = A_last ... A_first (the same step run on the identity with U = 0: [0 | I] as extra columns of an augmented
[K, V + K] state) and B the end state from zero. Each A_c is a contraction for valid inputs (the chunk
product of per-token g (I - beta k^ k^T), beta in (0, 1), |k^| = 1, g <= 1), so products are stable.

What changed (new kernels; grids at 8192 x 1):
1. Segmentation (`_plan`, every program computes it from cu_seqlens, no host sync): one segment length
   L = max(SEG, cdiv(longest sequence's chunks, SEG_TARGET), cdiv(all chunks, SEG_TOTAL)) chunks (a 0 key
   turns its term off); a sequence of P = cdiv(chunks, L) >= 3 segments is segmented, any other (<= 2 L
   chunks, empty ones included) is one segment run from its initial state as in the serial scan (P = 2
   would not shorten the chain: L + L steps). Defaults SEG 8, SEG_TARGET 8, SEG_TOTAL 32: 8192 x 1 -> L 16,
   P 8; 4551 x 16 (4096 + 15 short) -> L 8, P 8 for the long one; 2048-token sequences -> P 4; 1024-token
   ones (16 chunks) are not segmented.
2. `_seg` (phase 1), grid ((V + K) / SEG_BV, phase-1 slots, HV) = (4, 7, 8): one program per column block
   of a segment's augmented state, for segments 0 .. P - 2 of segmented sequences (the last segment's end
   state is phase 3's). State columns: from zero (segment 0: from the initial state, so its end state is
   the true one), bf16 operands as the serial scan's, stored float32 to `hb` [slot, HV, K, V]; A's columns
   (segments >= 1 only): the identity, U = 0, and with SEG_T_SPLIT (default) M and the new values enter the
   products as bf16 pairs hi + lo (hi = bf16(x), lo = bf16(x - hi): four bf16 products a chunk instead of
   two, ~16 significant bits), stored as the pair to `ab` [slot, HV, 2, K, K] bf16. A phase-1 segment holds
   only full chunks: no masks.
3. `_xfer` (phase 2), grid (V / XFER_BV, N, HV) = (4, 1, 8): per segmented sequence, serial over its P - 2
   middle segments: h <- A_j h + B_j from h = the end state of segment 0, written back over B_j, so slot j
   then holds segment j + 1's start state. XFER_PRECISION "bf16x3" (default): A_hi h_hi + A_hi h_lo +
   A_lo h_hi with float32 sums (A's pair loaded as stored; h split in registers); "bf16": A_hi h_hi.
4. `_pscan` (phase 3), grid (V / PAR_BV, phase-3 segments, HV) = (2, 8, 8): chunk3's fused `_scan` step
   (output and state, four bf16 products a chunk) over one segment from its start state (the sequence's
   initial state for segment 0, else `hb`); a sequence's last segment stores new_state. PAR_BV 0 (default):
   32 where the bound on (segment, head) pairs x V / 32 fits the SMs (the kernel holds ~144 KiB of shared
   memory: one block per SM), else 64.
Critical path at 8192 x 1: 16 + 6 + 16 dependent steps (phase 1, 2, 3) instead of 128. Path rule (host,
shapes only; CUDA-graph capturable): the segmented path when SEG > 0, N <= SEG_MAX_N (16; with more sequences
the serial scan already has N x HV x V / BV programs) and T > 2 SEG 64 (else no sequence can have P >= 3);
otherwise chunk3's path, unchanged (so 1 x 1, 1024 x 1, 4096 x 32 and 5783 x 128 run exactly chunk3). The
grids are sized from bounds (phase-1 slots <= min(T // (SEG 64), SEG_TOTAL, N (SEG_TARGET - 1)), phase-3
segments <= min(N + slots, N SEG_TARGET)); programs past the plan exit after `_plan`. Extra memory at
8192 x 1: hb + ab, 7 slots x 8 heads x 128 KiB = 7 MiB.

Precision. Phase 1's state columns and phase 3 round what the serial scan rounds (bf16 operands, float32
state and sums). A multiplies whole states in phase 2, so its rounding is a second error stream: with A at
bf16 like the state ("lo": SEG_T_SPLIT False, XFER_PRECISION "bf16") the state errors grew to 1.0-1.5x chunk3's
(table); with the bf16 pairs they are 0.86-1.05x chunk3's. Triton's tf32x3 on float32 A was tried for phase 2 and
dropped: 255 registers, 48-928 B spilled (Triton 3.6 / 3.9, whole or halved A tiles); "ieee" spilled 4.7-6 KB.
In an earlier version of this file, phase 2 at "tf32" (emulated on CPU as truncation) put the adversarial
row below at 0.98 (A as pairs) and 1.02 (A at bf16) of the tolerance.

Registers and spills for sm_90, no GPU (`PYTHONPATH=src python3 scripts/triton_regs.py tasks/gdn_prefill
<file> --axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,num_v_heads=8,
head_size=128`, likewise 4096 x 4 and 4551 x 16; Triton 3.9's ptxas and the device's Triton 3.6
(`PYTHONPATH=/tmp/t36:src`), 2026-12-07):
                 warps  registers 3.9 / 3.6   spills  shared     blocks/SM  grid 8192 x 1 / 4096 x 4
    _seg             4  204 / 211 (176-209)   0       96 KiB     2          (4, 7, 8) / (4, 8, 8)
    _xfer            8  100 / 104 (104-117)   0       160 KiB    1          (4, 1, 8) / (4, 4, 8)
    _pscan           4  204 / 204 (167-204)   0       144 KiB    1          (2, 8, 8) / (2, 12, 8)
    _kkt, _wu: chunk3's (162 / 158, 98; no spills). 5783 x 128 takes chunk3's path (_hstate 244, _out 64).
(registers in brackets: the other shapes.) Variants, 8192 x 1, no spills: SEG_BV 32 `_seg` 112 (3.9, before
the hi / lo pairs; 78 KiB), SEG_T_SPLIT off 180 / 166, PAR_BV 32 `_pscan` 138 (128 KiB, still one block),
XFER_PRECISION "bf16" 80, XFER_WARPS 4 175 / 169, SCAN_WARPS 8 `_pscan` 188.

CPU check (Triton 3.9 interpreter, 2026-12-07; max |error| against the definition's float64 reference,
output / new_state; task shapes; tests/test_linear_attention.py::_prefill_inputs seed 3; "beta ~1" rows:
A_log -12 (no decay), b 12, keys 3 x a shared random row + N(0, 1) (cosine ~0.9); empty sequences keep their
state bit for bit in every run). chunk3 on the same inputs; SEG 1 / 2 with SEG_TARGET = SEG_TOTAL = 0 fix
L = 1 / 2 chunks so that short inputs have >= 3 segments; "lo" = SEG_T_SPLIT False, XFER_PRECISION "bf16":
    lengths (decay)                  segments at L    chunk3 split      chunk3 fused      this (L = 1)      this, lo (L = 1)
    0, 3, 70                         none             1.2e-3 / 7.1e-3   1.1e-3 / 5.7e-3   1.2e-3 / 7.1e-3   1.2e-3 / 7.1e-3
    130                              3                1.2e-3 / 8.9e-3   1.2e-3 / 5.7e-3   1.2e-3 / 7.7e-3   1.2e-3 / 1.1e-2
    1, 63, 64, 65, 0, 130            3 (130)          1.3e-3 / 8.0e-3   1.4e-3 / 7.2e-3   1.3e-3 / 7.4e-3   1.3e-3 / 1.2e-2
      the same, ~exp(-49) decays     3 (130)          3.7e-4 / 3.9e-3   3.7e-4 / 2.8e-3   3.7e-4 / 3.9e-3   3.7e-4 / 3.9e-3
    70 (~exp(-49))                   none             2.9e-4 / 2.6e-3   2.9e-4 / 2.6e-3   2.9e-4 / 2.6e-3   2.9e-4 / 2.6e-3
    130, 70: beta ~1 (|state| 4.7)   3 (130)          2.2e-3 / 2.2e-2   1.9e-3 / 2.0e-2   2.2e-3 / 2.0e-2   2.2e-3 / 2.2e-2
    300, 0, 200                      5, 4             1.4e-3 / 5.9e-3   1.4e-3 / 4.7e-3   1.4e-3 / 5.4e-3   1.4e-3 / 6.1e-3
      the same, ~exp(-49) decays     5, 4             5.1e-4 / 2.8e-3   5.1e-4 / 2.8e-3   5.1e-4 / 2.8e-3   5.1e-4 / 2.8e-3
    400: beta ~1 (|state| 4.5)       7                3.3e-3 / 3.4e-2   2.4e-3 / 3.3e-2   3.3e-3 / 3.6e-2   3.3e-3 / 4.5e-2
  L = 2 (300, 0, 200: 3 segments and none; 400 beta ~1: 4): 1.4e-3 / 5.9e-3 and 3.3e-3 / 3.5e-2; CPU_TILES (the GPU's
  column blocks) gives the same bits. Default CONFIG (L = 8 here):
    1100, 5, 800                     3, 1, 1          1.4e-3 / 1.0e-2   1.3e-3 / 8.5e-3   1.4e-3 / 9.1e-3   1.4e-3 / 8.8e-3
    2100, 0, 700                     5, 1, 1          1.5e-3 / 8.4e-3   1.2e-3 / 6.3e-3   1.5e-3 / 8.7e-3   1.5e-3 / 8.7e-3
    2100: beta ~1 (|state| 4.9)      5                worst error / (atol + rtol |ref|), output / new_state (the contract's
                                                      tolerances): chunk3 split 0.69 / 0.95; this 0.68 / 0.88; "lo" 0.67 /
                                                      0.97; bf16 pairs in phase 1 with XFER "bf16" 0.61 / 0.91
Against chunk3 split (the CPU path that rounds as the GPU does) the segmented runs differ by <= 9.8e-4 on the
output (one bf16 unit) and 4.5e-3 - 1.1e-2 on the state (the larger on the beta ~1 rows, where chunk3's own fused
and split paths differ by 1.1e-2); where no sequence is segmented the result is chunk3's bit for bit.
`kernelcraft eval` of a small copy (sequences 0, 3, 70 and 0, 3, 200: tests/test_linear_attention.py::_small_copy
with SMALL["gdn_prefill"] = [[0, 3, 70], [0, 3, 200]]; `TRITON_INTERPRET=1 PYTHONPATH=src python3 -m kernelcraft
eval <copy> <this file> <SEG 1 variants> --device cpu --no-timing`): PASSED, this file (serial at these lengths)
and its SEG 1 variants (the 200-token sequence in 4 segments; also with CPU_TILES), worst error 6.6e-3 (this file) and 5.4e-3 (SEG 1, both variants).
scripts/gdn_prefill_fault.py (GPU only) finds the launches `_kkt, _wu, _seg, _xfer, _pscan` (and `_hstate, _out`
on the serial path); its own main() run on CPU tensors (a driver that makes torch.cuda.synchronize a no-op and
its JIT type check the interpreter's) printed ok for lengths 64 and 0,1100,5. scripts/gdn_prefill_split.py
takes the file as --solution (it profiles whatever `run` launches).

**Not yet run on a GPU**; estimate, not a measurement. Per-step latencies from the measured serial kernels
above (H200): fused `_scan` 1.77 / 1.90 / 2.28 us a chunk at BV 16 / 32 / 64 (226.2, 242.6, 291.7 us over 128
chunks), `_hstate` 1.61 (BV 32), `_scan` at 4096 x 4 BV 64 2.6 (42.0 / 16). 8192 x 1 (L 16, P 8):
`_seg` 208 live programs (2 + 6 x 4 column blocks x 8 heads) fit one wave at 2 blocks per SM, 16 steps at
~2.0-2.8 us (the A programs' four products, two programs sharing an SM) = 32-45 us; `_xfer` 32 programs,
6 steps of a 64 KiB A pair from L2 and three [128, 128] x [128, 32] products, ~1.5-2.5 us = 9-15 us;
`_pscan` 128 programs (8 segments x 8 heads x 2), one per SM, 16 steps x 2.3 us = ~37 us; three launch
gaps ~5-10 us: **~85-105 us against `_scan` 226-232 us** (FLA h + o: 193 us). With chunk3's `_kkt` + `_wu`
at their own estimate (40-50 us, also unmeasured) a call would be ~125-155 us against FLA's 255 (1.6-2.0x);
with chunk2's measured `_prep` (131 us) instead, ~215-235 (1.1-1.2x). 4096 x 4 (1024 tokens = 16 chunks
each): not segmented (P = 2), but T and N select the segmented path, so `_seg` and `_xfer` launch and exit
(~3-6 us) and `_pscan` runs each sequence whole at PAR_BV 64 (the rule's bound, 12 segments, does not know
the lengths): chunk2's fused BV 64 measured 42.0 us here, so **~45-50 us** against chunk3's default split
path (chunk2's split BV 32: 32.0 + 15.9 = 48) and chunk2 fused BV 32 (36.9): no gain at this shape, a loss of
up to ~10 us against the best serial tile. SEG 4 would segment it (P = 4: 4 + 2 + 4 steps; `_seg` 320
programs ~1.2 waves, `_pscan` 256 programs = two waves at one block per SM): ~35-40 us, no better than fused
BV 32. Where it should help besides 8192 x 1: 4551 x 16 (the 4096-token sequence: 8 + 6 + 8 steps for 64),
4096 x 3 (2048 + 0 + 2048: 8 + 2 + 8 for 32), mixed_8 (its 2048-token sequence; the 1000-token one, not
segmented, then bounds the chain at 16 steps). The first measurements to take: scripts/gdn_prefill_split.py
with this file and SEG 0 / 4 / 16 variants, PAR_BV 32 / 64, SEG_BV 32.

On CPU (the Triton interpreter, whose tl.dot multiplies bf16 storage bits and skips BLAS) products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as triton_chunk; the
new kernels round where their GPU code rounds (`_pscan` too, unlike `_scan`'s CPU path, which keeps float32).
"""
import torch
import triton
import triton.language as tl

# chunk3's keys unchanged (SCAN_STAGES 1 left out: Triton 3.6 miscompiles the one-stage scan loop on sm_90,
# AGENTS.md; the segment loops have its shape); SEG*, XFER_*, PAR_BV: the sequence-parallel recurrence.
TUNABLES = {"BV": [8, 16, 32, 64], "KKT_WARPS": [4, 8], "KKT_BK": [32, 64, 128], "KKT_MAXNREG": [0, 168], "WU_BK": [32, 64, 128],
            "WU_WARPS": [4, 8], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [2, 3],
            "SCAN_SPLIT_O": [True, False], "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8],
            "SEG": [0, 4, 8, 16], "SEG_TARGET": [0, 4, 8, 16], "SEG_TOTAL": [0, 16, 32, 64], "SEG_MAX_N": [4, 16, 64],
            "SEG_BV": [16, 32, 64], "SEG_WARPS": [4, 8], "SEG_T_SPLIT": [True, False], "XFER_BV": [16, 32, 64], "XFER_WARPS": [4, 8],
            "XFER_PRECISION": ["bf16x3", "bf16"], "PAR_BV": [0, 16, 32, 64],
            "DOT_PATH_ON_CPU": [False], "CPU_TILES": [False]}
CONFIG = {'BV': 0, 'KKT_WARPS': 4, 'KKT_BK': 64, 'KKT_MAXNREG': 0, 'WU_BK': 64, 'WU_WARPS': 4, 'SCAN_WARPS': 4, 'SCAN_STAGES': 2, 'SCAN_SPLIT_O': False, 'OUT_BV': 64, 'OUT_WARPS': 4, 'SEG': 8, 'SEG_TARGET': 8, 'SEG_TOTAL': 32, 'SEG_MAX_N': 16, 'SEG_BV': 64, 'SEG_WARPS': 4, 'SEG_T_SPLIT': True, 'XFER_BV': 32, 'XFER_WARPS': 8, 'XFER_PRECISION': 'bf16x3', 'PAR_BV': 0, 'DOT_PATH_ON_CPU': False, 'CPU_TILES': False}

BT = 64  # chunk size
BC = 16  # the inverse's diagonal blocks


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even: the Triton interpreter's .to(tl.bfloat16)
    # truncates where the GPU rounds; with this both store the same bf16 values.
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _locate(cu_ptr, c, N, BT: tl.constexpr, BN: tl.constexpr):
    # which sequence holds global chunk c: prefix sum of per-sequence chunk counts (n == N: none)
    on = tl.arange(0, BN)
    lo = tl.load(cu_ptr + on, mask=on < N, other=0)
    hi = tl.load(cu_ptr + on + 1, mask=on < N, other=0)
    nck = (hi - lo + BT - 1) // BT
    incl = tl.cumsum(nck, 0)
    n = tl.sum((incl <= c).to(tl.int32), 0)
    pick = on == n
    j = c - tl.sum(tl.where(pick, incl - nck, 0), 0)
    start = tl.sum(tl.where(pick, lo, 0), 0) + j * BT
    end = tl.sum(tl.where(pick, hi, 0), 0)
    return n, start, end


@triton.jit
def _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV: tl.constexpr):
    # one sub-chunk's log decays and beta (both 0 on padding: no decay, no write)
    valid = rows < end
    x = tl.load(a_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32) + tl.load(dtb_ptr + hv)
    # torch's softplus (threshold 20) as max(x, 0) + log1p(e^-|x|), log1p by its series when tiny
    e = tl.exp(-tl.abs(x))
    sp = tl.where(x > 20.0, x, tl.maximum(x, 0.0) + tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e)))
    lg = tl.where(valid, -tl.exp(tl.load(alog_ptr + hv)) * sp, 0.0)
    beta = tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * HV + hv, mask=valid, other=0.0).to(tl.float32)), 0.0)
    return lg, beta


@triton.jit
def _gram(x, y, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # x @ y^T of raw bf16 tiles: exact bf16 products, float32 sums
    if DOT and BF16_DOT:
        r = tl.dot(x, tl.trans(y))
    elif DOT:  # CONFIG["DOT_PATH_ON_CPU"]: the interpreter's tl.dot is wrong on bf16 operands
        r = tl.dot(x.to(tl.float32), tl.trans(y.to(tl.float32)))
    else:
        r = tl.sum(x.to(tl.float32)[:, None, :] * y.to(tl.float32)[None, :, :], axis=2)
    return r


@triton.jit
def _mm(x, y, DOT: tl.constexpr):
    # x @ y on float32 operands (tl.dot at Triton's default precision, as triton_chunk's products)
    if DOT:
        r = tl.dot(x, y)
    else:
        r = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    return r


@triton.jit
def _piece(x_ptr, lrows, h, kc, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    # columns kc .. kc + BK of a chunk's rows of q, k or v as stored (bf16). lrows are the rows clamped
    # to the sequence's last token: no mask (chunk2's reason: a masked load's zero fill costs registers),
    # and the duplicated rows past the end never reach a stored value (their beta is 0, so their A rows
    # and T's columns vanish; their own rows are not stored)
    oc = kc + tl.arange(0, BK)
    return tl.load(x_ptr + (lrows[:, None] * H + h) * K + oc[None, :])


@triton.jit
def _inv(a, BT: tl.constexpr, BC: tl.constexpr, DOT: tl.constexpr):
    # (I + a)^-1 for the strictly lower [BT, BT] a, BT = 4 BC, on whole BT x BT tiles (no sub-tile exists):
    # 1. the four BC x BC diagonal blocks' inverses at once by forward substitution (chunk2's / triton_split2's
    #    _inv_diag, one step per row position i of a block: rows i, BC + i, 2 BC + i, 3 BC + i together; the
    #    diagonal blocks are block diagonal, so one column sum gathers the four rows and one product updates
    #    all four);
    # 2. two merges of the stable blocked inverse, T <- T - T A_off T: 16 -> 32 (A's blocks (1, 0), (3, 2))
    #    and 32 -> 64 (its lower-left 32 x 32), two 64^3 products each; never powers of A.
    # One tile x carries both what is being inverted and what is still to merge: its diagonal blocks hold
    # the inverse in progress (minus I), the blocks below them A's (one 64 x 64 tile live, not two).
    tl.static_assert(BT == 4 * BC)
    r = tl.arange(0, BT)
    ri = r[:, None]
    rj = r[None, :]
    diag = (ri // BC) == (rj // BC)
    half = (ri // (2 * BC)) == (rj // (2 * BC))
    x = tl.where(diag, -a, a)  # diagonal rows not yet reached hold -a (rows 0 and 1 of each block are final)
    for i in tl.range(2, BC):
        sel = ((ri % BC) == i) & diag
        row = tl.sum(tl.where(sel, x, 0.0), 0)  # the four rows' -a, each in its own block's columns
        row = row + tl.sum(row[:, None] * tl.where(diag, x, 0.0), 0)
        x = tl.where(sel, row[None, :], x)
    d = tl.where(diag, x, 0.0) + (ri == rj).to(tl.float32)  # the four diagonal blocks' inverses
    t = d - _mm(_mm(d, tl.where(half & ~diag, x, 0.0), DOT), d, DOT)  # 16 -> 32: A's blocks (1, 0), (3, 2)
    x = tl.where(half, t, x)  # the two 32 x 32 inverses beside A's lower-left 32 x 32
    t = tl.where(half, x, 0.0)
    return t - _mm(_mm(t, tl.where(half, 0.0, x), DOT), t, DOT)  # 32 -> 64


@triton.jit
def _kkt(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr,
         sc_ptr, gl_ptr, tb_ptr, cw_ptr, qs_ptr, ks_ptr, scale, N,
         H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
         BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # Two programs per (value head, chunk), neighbours (the second reads the q / k tiles from L2, as do the
    # head's other value heads): the first forms A, T = (I + A)^-1 and stores T diag(beta) (float32, [T, HV,
    # BT], a chunk's row i at its token) with the per-token scales W's Gamma / ||k|| and kd's
    # exp(gamma_C - gamma) / ||k|| (float32, [T, HV]) for _wu, and exp(gamma_C) at the chunk's first token;
    # the second forms the scores S (stored, upper zeros) and qg's scale scale Gamma / ||q||. Both from the
    # gates (gamma = cumulative log decay, beta) and Gram matrices of the raw bf16 rows (exact products,
    # float32 sums; chunk2's scheme) over BK-column pieces in a loop, scaled by the norms afterwards.
    # Split so that neither holds the other's 64 x 64 tiles (registers) and the S half overlaps the
    # inverse's latency on the same SM.
    hv = tl.program_id(0) // 2
    c = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    # token indices as int32 (cu_seqlens is int64): T * HV * max(K, V, BT) < 2^31 (T < 2M tokens here)
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    r = tl.arange(0, BT)
    rows = start + r
    valid = rows < end
    lrows = tl.minimum(rows, end - 1)  # rows to load: clamped, unmasked (see _piece)
    lg, beta = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV)
    g = tl.cumsum(lg, 0)  # non-increasing (every log decay <= 0); padding keeps the last value
    ri = r[:, None]
    rj = r[None, :]
    if tl.program_id(0) % 2 == 0:
        glast = tl.min(g, 0)
        tl.store(gl_ptr + start * HV + hv, tl.exp(glast))  # at the chunk's first token
        kk = tl.zeros([BT, BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK):
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            kk += _gram(kx, kx, DOT, BF16_DOT)
        nk = 1.0 / tl.sqrt(ssk + 1e-6)  # k^ = k / sqrt(sum k^2 + 1e-6), q^ likewise
        tl.store(cw_ptr + rows * HV + hv, tl.exp(g) * nk, mask=valid)
        tl.store(ks_ptr + rows * HV + hv, nk * tl.exp(glast - g), mask=valid)
        low = ri > rj
        # exponents gamma_i - gamma_j <= 0 where kept
        a = tl.where(low, (beta * nk)[:, None] * kk * nk[None, :] * tl.exp(tl.where(low, g[:, None] - g[None, :], 0.0)), 0.0)
        t = _inv(a, BT, BC, DOT)
        tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + rj, t * beta[None, :], mask=valid[:, None])
    else:
        qk = tl.zeros([BT, BT], dtype=tl.float32)
        ssq = tl.zeros([BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK):
            qx = _piece(q_ptr, lrows, h, kc, H, K, BK)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            qf = qx.to(tl.float32)
            kf = kx.to(tl.float32)
            ssq += tl.sum(qf * qf, 1)
            ssk += tl.sum(kf * kf, 1)
            qk += _gram(qx, kx, DOT, BF16_DOT)
        nk = 1.0 / tl.sqrt(ssk + 1e-6)
        sq = scale / tl.sqrt(ssq + 1e-6)
        tl.store(qs_ptr + rows * HV + hv, sq * tl.exp(g), mask=valid)
        incl = ri >= rj
        dec = tl.where(incl, tl.exp(tl.where(incl, g[:, None] - g[None, :], 0.0)), 0.0)
        _st(sc_ptr, qk * sq[:, None] * nk[None, :] * dec, rows, end, hv, 0, HV, BT, CPU)


@triton.jit
def _wu(q_ptr, k_ptr, v_ptr, cu_ptr, tb_ptr, cw_ptr, qs_ptr, ks_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, N,
        H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
        BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr):
    # Columns kc .. kc + BK of W = T diag(beta Gamma / ||k||) k, U = T diag(beta) v (K == V), the decayed
    # queries qg = scale Gamma q^ and keys kd = exp(gamma_C - gamma) k^ (chunk2's values): one program per
    # (column block, value head, chunk), a chunk-head's blocks neighbouring programs, T diag(beta) loaded
    # once. W and U: float32 operands at Triton's default precision (TF32 on the GPU), as chunk2's.
    kc = tl.program_id(0) * BK
    hv = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, tl.program_id(2), N, BT, BN)
    if n >= N:
        return
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    r = tl.arange(0, BT)
    rows = start + r
    lrows = tl.minimum(rows, end - 1)  # rows to load: clamped (tb's columns past the end are 0)
    tb = tl.load(tb_ptr + (rows[:, None] * HV + hv) * BT + r[None, :], mask=(rows < end)[:, None], other=0.0)
    kx = _piece(k_ptr, lrows, h, kc, H, K, BK).to(tl.float32)
    _st(kd_ptr, kx * tl.load(ks_ptr + lrows * HV + hv)[:, None], rows, end, hv, kc, HV, K, CPU)
    _st(w_ptr, _mm(tb * tl.load(cw_ptr + lrows * HV + hv)[None, :], kx, DOT), rows, end, hv, kc, HV, K, CPU)
    vx = _piece(v_ptr, lrows, hv, kc, HV, V, BK).to(tl.float32)
    _st(u_ptr, _mm(tb, vx, DOT), rows, end, hv, kc, HV, V, CPU)
    qx = _piece(q_ptr, lrows, h, kc, H, K, BK).to(tl.float32)
    _st(qg_ptr, qx * tl.load(qs_ptr + lrows * HV + hv)[:, None], rows, end, hv, kc, HV, K, CPU)


@triton.jit
def _st(ptr, x, rows, end, hv, col0, HV: tl.constexpr, W: tl.constexpr, CPU: tl.constexpr):
    # a [rows, n] tile into a [T, HV, W] bf16 buffer at columns col0.., rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * HV + hv) * W + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])



@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O False: triton_chunk's fused recurrence + output, unchanged
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // HV
    hv = pid_nh % HV
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    # M = state[n, hv]^T restricted to these V columns: [K, BV], float32 for the whole sequence
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        tv = (rows[:, None] * HV + hv) * V + ov[None, :]
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        qg = tl.load(qg_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:
            # The interpreter's tl.dot multiplies bf16 storage bits as numbers, and skips BLAS:
            # bf16 values in fp32, products as broadcast sums (the state and the new values
            # stay fp32 here, a little more precise than the GPU's bf16 operands).
            w, qg, kd, sc = w.to(tl.float32), qg.to(tl.float32), kd.to(tl.float32), sc.to(tl.float32)
            delta = u - tl.sum(w[:, :, None] * m[None, :, :], axis=1)
            o = tl.sum(qg[:, :, None] * m[None, :, :], axis=1) + tl.sum(sc[:, :, None] * delta[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kd[:, :, None] * delta[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            delta = u - tl.dot(w, mb)
            db = delta.to(tl.bfloat16)
            o = tl.dot(qg, mb) + tl.dot(sc, db)
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.dot(tl.trans(kd), db)
    tl.store(ns_ptr + st, m)


@triton.jit
def _hstate(s_ptr, cu_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, hs_ptr, dn_ptr, ns_ptr,
            HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
            STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O True: the recurrence alone, two products per chunk. Stores, per chunk, the state
    # before it (bf16, [C, HV, K, V]: the operand the output's q-product takes) and delta = U - W M
    # (bf16, [T, HV, V]) for _out. Scratch chunk index of a sequence's j-th chunk: bos // BT + n + j,
    # unique and < cdiv(T, BT) + N (the chunk grid's size; kda's triton_intra3 has the argument)
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // HV
    hv = pid_nh % HV
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, hv]^T on these V columns: [K, BV], float32 throughout
    hoff = ok[:, None] * V + ov[None, :]  # within one (chunk, head) [K, V] block
    c0 = bos // BT + n
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        tv = (rows[:, None] * HV + hv) * V + ov[None, :]
        hb = ((c0 + (cs - bos) // BT) * HV + hv).to(tl.int64) * (K * V)
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds
            w, kd = w.to(tl.float32), kd.to(tl.float32)
            mb = _rne_bf16(m)
            tl.store(hs_ptr + hb + hoff, mb.to(tl.bfloat16))
            db = _rne_bf16(u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1))
            tl.store(dn_ptr + tv, db.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kd[:, :, None] * db[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            tl.store(hs_ptr + hb + hoff, mb)
            db = (u - tl.dot(w, mb)).to(tl.bfloat16)
            tl.store(dn_ptr + tv, db, mask=valid)
            m = tl.dot(tl.trans(kd), db, gl * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _out(cu_ptr, qg_ptr, sc_ptr, hs_ptr, dn_ptr, o_ptr, N,
         HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, CPU: tl.constexpr):
    # o = qg M_c + S delta per (V block, chunk, value head), every chunk in parallel; the V blocks of
    # one chunk are neighbouring programs (qg and S from L2 for the second)
    hv = tl.program_id(2)
    n, start, end = _locate(cu_ptr, tl.program_id(1), N, BT, BN)
    if n >= N:
        return
    ok = tl.arange(0, K)
    ov = tl.program_id(0) * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = (rows < end)[:, None]
    hb = ((start // BT + n) * HV + hv).to(tl.int64) * (K * V)
    tv = (rows[:, None] * HV + hv) * V + ov[None, :]
    qg = tl.load(qg_ptr + (rows[:, None] * HV + hv) * K + ok[None, :], mask=valid, other=0.0)
    sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
    mb = tl.load(hs_ptr + hb + ok[:, None] * V + ov[None, :])
    db = tl.load(dn_ptr + tv, mask=valid, other=0.0)
    if CPU:
        qg, sc, mb, db = qg.to(tl.float32), sc.to(tl.float32), mb.to(tl.float32), db.to(tl.float32)
        o = tl.sum(qg[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
        o = _rne_bf16(o)
    else:
        o = tl.dot(sc, db, tl.dot(qg, mb))
    tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)



# --- the sequence-parallel recurrence (CONFIG["SEG"] > 0): _seg, _xfer, _pscan -----------------------------

@triton.jit
def _plan(cu_ptr, N, BT: tl.constexpr, BN: tl.constexpr, SEG: tl.constexpr, SEG_TARGET: tl.constexpr,
          SEG_TOTAL: tl.constexpr):
    # The segmentation, the same in every program (a pure function of cu_seqlens): per sequence (lanes
    # < N of BN) its token bounds, the segment length L in chunks (one for all sequences:
    # max(SEG, cdiv(longest, SEG_TARGET), cdiv(all chunks, SEG_TOTAL)), a term off when its key is 0),
    # p1 = the segments phase 1 runs (P - 1 where P = cdiv(chunks, L) >= 3, else 0: the last segment's
    # end state is phase 3's) and p3 = the segments phase 3 runs (P, else 1: a sequence of <= 2 L chunks,
    # an empty one included, is one segment run from its initial state, as the serial scan).
    on = tl.arange(0, BN)
    live = on < N
    lo = tl.load(cu_ptr + on, mask=live, other=0).to(tl.int32)
    hi = tl.load(cu_ptr + on + 1, mask=live, other=0).to(tl.int32)
    nck = (hi - lo + BT - 1) // BT
    seg_len = tl.max(nck, 0) * 0 + SEG
    if SEG_TARGET > 0:
        seg_len = tl.maximum(seg_len, (tl.max(nck, 0) + SEG_TARGET - 1) // SEG_TARGET)
    if SEG_TOTAL > 0:
        seg_len = tl.maximum(seg_len, (tl.sum(nck, 0) + SEG_TOTAL - 1) // SEG_TOTAL)
    nseg = (nck + seg_len - 1) // seg_len
    split = nseg >= 3
    p1 = tl.where(split, nseg - 1, 0)
    p3 = tl.where(live, tl.where(split, nseg, 1), 0)
    return lo, hi, seg_len, p1, p3


@triton.jit
def _pick(cnt, s, on):
    # which sequence holds the s-th item when sequence n has cnt[n] of them: (n, j = the item's index
    # within n, the lane mask of n); n == N (no lane) when s is past the total
    incl = tl.cumsum(cnt, 0)
    n = tl.sum((incl <= s).to(tl.int32), 0)
    sel = on == n
    j = s - tl.sum(tl.where(sel, incl - cnt, 0), 0)
    return n, j, sel


@triton.jit
def _seg_steps(m, w_ptr, u_ptr, kd_ptr, gl_ptr, cs0, nrows, hv, oc,
               HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, HAS_U: tl.constexpr,
               SPLIT: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr):
    # _hstate's step M <- g M + kd^T (U - W M) over full chunks cs0 .. cs0 + nrows (no masks), U = 0
    # without HAS_U. SPLIT: M and the new values D = U - W M enter the products as bf16 pairs hi + lo
    # (hi = bf16(x), lo = bf16(x - hi): ~16 significant bits, four bf16 products a chunk instead of two)
    ok = tl.arange(0, K)
    ri = tl.arange(0, BT)
    for cs in tl.range(cs0, cs0 + nrows, BT, num_stages=STAGES):
        rows = cs + ri
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        w = tl.load(w_ptr + tk)
        kd = tl.load(kd_ptr + tk)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds (_hstate's)
            w, kd = w.to(tl.float32), kd.to(tl.float32)
            if SPLIT:
                mh = _rne_bf16(m)
                ml = _rne_bf16(m - mh)
                d = -(tl.sum(w[:, :, None] * mh[None, :, :], axis=1) + tl.sum(w[:, :, None] * ml[None, :, :], axis=1))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                dh = _rne_bf16(d)
                dl = _rne_bf16(d - dh)
                m = gl * m + (tl.sum(kd[:, :, None] * dh[:, None, :], axis=0) + tl.sum(kd[:, :, None] * dl[:, None, :], axis=0))
            else:
                d = -tl.sum(w[:, :, None] * _rne_bf16(m)[None, :, :], axis=1)
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                m = gl * m + tl.sum(kd[:, :, None] * _rne_bf16(d)[:, None, :], axis=0)
        else:
            if SPLIT:
                mh = m.to(tl.bfloat16)
                d = -tl.dot(w, (m - mh.to(tl.float32)).to(tl.bfloat16), tl.dot(w, mh))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                dh = d.to(tl.bfloat16)
                m = tl.dot(tl.trans(kd), (d - dh.to(tl.float32)).to(tl.bfloat16), tl.dot(tl.trans(kd), dh, gl * m))
            else:
                d = -tl.dot(w, m.to(tl.bfloat16))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                m = tl.dot(tl.trans(kd), d.to(tl.bfloat16), gl * m)
    return m


@triton.jit
def _seg(s_ptr, cu_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, hb_ptr, ab_ptr, N,
         HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, SEG: tl.constexpr, SEG_TARGET: tl.constexpr, SEG_TOTAL: tl.constexpr,
         T_SPLIT: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr):
    # Phase 1, one program per (column block of the augmented [K, V + K] state, phase-1 segment, value
    # head): the segment's chunks through _hstate's step M <- g M + kd^T (U - W M), which is affine in M:
    # M_end = A M_start + B with A = the product over the segment's chunks of (g I - kd^T W) and B the
    # end state from zero. Columns < V: the state's, from zero (B; from the sequence's initial state in
    # its first segment, whose end state is then the true one), bf16 operands as the serial scan's,
    # stored float32 to hb[s] ([K, V]); columns >= V: the identity with U = 0 (A's columns), bf16 hi + lo
    # operand pairs when T_SPLIT (A multiplies whole states in phase 2: its rounding would add a second
    # error stream as large as the state's own), stored as the bf16 pair A = hi + lo to ab[s] ([2, K, K]:
    # phase 2's operands as they are loaded). s = this program's phase-1 index = the slot. A sequence's
    # first segment has no A columns (its start state is known). Every chunk here is a full one inside
    # the sequence (a phase-1 segment is never a sequence's last), so no masks.
    c0 = tl.program_id(0) * BV
    s = tl.program_id(1)
    hv = tl.program_id(2)
    on = tl.arange(0, BN)
    lo, hi, seg_len, p1, p3 = _plan(cu_ptr, N, BT, BN, SEG, SEG_TARGET, SEG_TOTAL)
    n, j, sel = _pick(p1, s, on)
    if n >= N:
        return
    if (c0 >= V) & (j == 0):
        return
    cs0 = tl.sum(tl.where(sel, lo, 0), 0) + j * seg_len * BT
    ok = tl.arange(0, K)
    oc = c0 + tl.arange(0, BV)
    if c0 >= V:  # A's columns: the identity, no U
        m = tl.where(ok[:, None] + V == oc[None, :], 1.0, 0.0)
        m = _seg_steps(m, w_ptr, u_ptr, kd_ptr, gl_ptr, cs0, seg_len * BT, hv, oc, HV, K, V, BT, False, T_SPLIT,
                       STAGES, CPU)
        if CPU:
            mh = _rne_bf16(m)
            ml = _rne_bf16(m - mh)
        else:
            mh = m.to(tl.bfloat16)
            ml = m - mh.to(tl.float32)
        pa = ab_ptr + (s * HV + hv).to(tl.int64) * 2 * K * K + ok[:, None] * K + (oc[None, :] - V)
        tl.store(pa, mh.to(tl.bfloat16))
        tl.store(pa + K * K, ml.to(tl.bfloat16))
    else:
        if j == 0:  # M = state[n, hv]^T on these columns
            m = tl.load(s_ptr + (n * HV + hv).to(tl.int64) * V * K + oc[None, :] * K + ok[:, None])
        else:
            m = tl.zeros([K, BV], dtype=tl.float32)
        m = _seg_steps(m, w_ptr, u_ptr, kd_ptr, gl_ptr, cs0, seg_len * BT, hv, oc, HV, K, V, BT, True, False,
                       STAGES, CPU)
        tl.store(hb_ptr + ((s * HV + hv).to(tl.int64) * K + ok[:, None]) * V + oc[None, :], m)


@triton.jit
def _xfer(cu_ptr, hb_ptr, ab_ptr, N,
          HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          BN: tl.constexpr, SEG: tl.constexpr, SEG_TARGET: tl.constexpr, SEG_TOTAL: tl.constexpr,
          PREC: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr):
    # Phase 2, one program per (V block, sequence, value head), serial over a segmented sequence's
    # phase-1 slots b .. b + p1 - 1: hb[b] holds the true state after segment 0; then for j = 1 ..
    # p1 - 1, h <- A_j h + B_j (A_j = ab[b + j]'s hi + lo, B_j = hb[b + j]), written back over B_j:
    # afterwards hb[b + j] holds the state at the start of segment j + 1. A_j h on bf16 operands, float32
    # sums: PREC "bf16x3" = Ah hh + Ah hl + Al hh (h = hh + hl split here; ~16 significant bits, the
    # default), "bf16" = Ah hh alone. A's pair is loaded as stored (no register split of a [K, K] tile:
    # Triton's tf32x3 on float32 A took 255 registers and spilled under Triton 3.6).
    ov = tl.program_id(0) * BV + tl.arange(0, BV)
    n = tl.program_id(1)
    hv = tl.program_id(2)
    on = tl.arange(0, BN)
    lo, hi, seg_len, p1, p3 = _plan(cu_ptr, N, BT, BN, SEG, SEG_TARGET, SEG_TOTAL)
    cnt = tl.sum(tl.where(on == n, p1, 0), 0)
    if cnt < 2:  # not segmented
        return
    base = tl.sum(tl.where(on < n, p1, 0), 0)
    ok = tl.arange(0, K)
    ph = ok[:, None] * V + ov[None, :]
    pa = ok[:, None] * K + ok[None, :]
    h = tl.load(hb_ptr + (base * HV + hv).to(tl.int64) * K * V + ph)
    for j in tl.range(1, cnt, num_stages=STAGES):
        slot = ((base + j) * HV + hv).to(tl.int64)
        b = tl.load(hb_ptr + slot * K * V + ph)
        ah = tl.load(ab_ptr + slot * 2 * K * K + pa)
        if CPU:
            ah = ah.to(tl.float32)
            hh = _rne_bf16(h)
            if PREC == "bf16x3":
                al = tl.load(ab_ptr + slot * 2 * K * K + K * K + pa).to(tl.float32)
                hl = _rne_bf16(h - hh)
                b += tl.sum(ah[:, :, None] * hl[None, :, :] + al[:, :, None] * hh[None, :, :], axis=1)
            h = b + tl.sum(ah[:, :, None] * hh[None, :, :], axis=1)
        else:
            hh = h.to(tl.bfloat16)
            if PREC == "bf16x3":
                al = tl.load(ab_ptr + slot * 2 * K * K + K * K + pa)
                b = tl.dot(ah, (h - hh.to(tl.float32)).to(tl.bfloat16), b)
                b = tl.dot(al, hh, b)
            h = tl.dot(ah, hh, b)
        tl.store(hb_ptr + slot * K * V + ph, h)


@triton.jit
def _pscan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, hb_ptr, o_ptr, ns_ptr, N,
           HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
           BN: tl.constexpr, SEG: tl.constexpr, SEG_TARGET: tl.constexpr, SEG_TOTAL: tl.constexpr,
           STAGES: tl.constexpr, CPU: tl.constexpr):
    # Phase 3, one program per (V block, phase-3 segment, value head): _scan's fused step (the output
    # and the state, four products a chunk) over one segment, from its start state: the sequence's
    # initial state for segment 0 (every sequence has one, an empty one too), else hb's slot written by
    # phase 2. The last segment of a sequence stores new_state (an empty sequence's: its initial state,
    # bit for bit). On CPU the state and delta are rounded to bf16 where the GPU's operands are (as
    # _hstate's CPU path; _scan's CPU path keeps them float32).
    pid_v = tl.program_id(0)
    s = tl.program_id(1)
    hv = tl.program_id(2)
    on = tl.arange(0, BN)
    lo, hi, seg_len, p1, p3 = _plan(cu_ptr, N, BT, BN, SEG, SEG_TARGET, SEG_TOTAL)
    n, j, sel = _pick(p3, s, on)
    if n >= N:
        return
    eos = tl.sum(tl.where(sel, hi, 0), 0)
    last = j == tl.sum(tl.where(sel, p3, 0), 0) - 1
    cs0 = tl.sum(tl.where(sel, lo, 0), 0) + j * seg_len * BT
    ce = tl.where(last, eos, cs0 + seg_len * BT)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = (n * HV + hv).to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    if j == 0:
        m = tl.load(s_ptr + st)
    else:
        slot = tl.sum(tl.where(on < n, p1, 0), 0) + j - 1
        m = tl.load(hb_ptr + ((slot * HV + hv).to(tl.int64) * K + ok[:, None]) * V + ov[None, :])
    for cs in tl.range(cs0, ce, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < ce)[:, None]
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        tv = (rows[:, None] * HV + hv) * V + ov[None, :]
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        qg = tl.load(qg_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:
            w, qg, kd, sc = w.to(tl.float32), qg.to(tl.float32), kd.to(tl.float32), sc.to(tl.float32)
            mb = _rne_bf16(m)
            db = _rne_bf16(u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1))
            o = tl.sum(qg[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kd[:, :, None] * db[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            db = (u - tl.dot(w, mb)).to(tl.bfloat16)
            o = tl.dot(qg, mb) + tl.dot(sc, db)
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.dot(tl.trans(kd), db)
    if last:
        tl.store(ns_ptr + st, m)

_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 132  # the H200's (meta tensors in scripts/triton_regs.py; CPU runs take whole tiles)
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SMS:
        _SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SMS[idx]


def _segments(T, N):
    """(phase-1 slots, phase-3 segments) bounds for the sequence-parallel path, from the shapes only (no
    host sync); (0, 0) takes the serial path (chunk3's). A segmented sequence of n tokens runs P - 1
    segments of L full chunks in phase 1 with (P - 1) L BT < n, so all of them together fewer than
    T / (L BT) <= T / (SEG BT); with SEG_TOTAL, L >= cdiv(chunks, SEG_TOTAL) makes that <= SEG_TOTAL;
    with SEG_TARGET, L >= cdiv(longest, SEG_TARGET) makes P <= SEG_TARGET. Phase 3 runs each sequence's
    P segments (1 when not segmented). Serial when SEG is 0, when N > SEG_MAX_N (the serial scan already
    has N x HV x V / BV programs), or when no sequence can have P >= 3 segments (T <= 2 SEG BT)."""
    seg, target, total = CONFIG["SEG"], CONFIG["SEG_TARGET"], CONFIG["SEG_TOTAL"]
    if seg <= 0 or N > CONFIG["SEG_MAX_N"] or T <= 2 * seg * BT:
        return 0, 0
    slots = T // (seg * BT)
    if total > 0:
        slots = min(slots, total)
    if target > 0:
        slots = min(slots, N * (target - 1))
    if slots < 2:
        return 0, 0
    return slots, min(N + slots, N * target) if target > 0 else N + slots


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    dev = q.device
    cpu = dev.type == "cpu"
    dot = not cpu or CONFIG["DOT_PATH_ON_CPU"]
    out = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    w = torch.empty((T, HV, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, HV, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, HV), dtype=torch.float32, device=dev)
    tb = torch.empty((T, HV, BT), dtype=torch.float32, device=dev)  # T diag(beta), a chunk's row i at its token
    cw = torch.empty((T, HV), dtype=torch.float32, device=dev)  # W's column scale Gamma / ||k||
    qs = torch.empty_like(cw)  # qg's row scale: scale Gamma / ||q||
    ks = torch.empty_like(cw)  # kd's row scale: exp(gamma_C - gamma) / ||k||
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    _kkt[(2 * HV, nc)](
        q, k, A_log, a, dt_bias, b, cu_seqlens, sc, gl, tb, cw, qs, ks, float(scale), N,
        H=H, HV=HV, K=K, BT=BT, BC=BC, BK=min(CONFIG["KKT_BK"], K) if dot else K, BN=bn, CPU=cpu, DOT=dot,
        BF16_DOT=not cpu, num_warps=CONFIG["KKT_WARPS"],
        **({"maxnreg": CONFIG["KKT_MAXNREG"]} if CONFIG["KKT_MAXNREG"] and not cpu else {}),
    )
    assert K == V, "_wu forms W's and U's columns in one program"
    wbk = min(CONFIG["WU_BK"], K) if dot else K  # the interpreter's cost is per program and op
    _wu[(K // wbk, HV, nc)](
        q, k, v, cu_seqlens, tb, cw, qs, ks, w, u, qg, kd, N,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=wbk, BN=bn, CPU=cpu, DOT=dot, num_warps=CONFIG["WU_WARPS"],
    )
    nseg1, nseg3 = _segments(T, N)
    if nseg1:  # the sequence-parallel recurrence (a sequence of > 2 L chunks in P segments)
        tiles = not cpu or CONFIG["CPU_TILES"]  # the interpreter's cost is per program and per op
        assert K == V and V % CONFIG["SEG_BV"] == 0, "a _seg column block is the state's or A's, never both"
        sbv = CONFIG["SEG_BV"] if tiles else V
        xbv = CONFIG["XFER_BV"] if tiles else 32  # the CPU's broadcast [K, K, BV] product: <= 2^20 elements
        pbv = CONFIG["PAR_BV"]
        if pbv == 0:  # _pscan holds 128-144 KiB of shared memory (BV 32-64): one block per SM
            pbv = 32 if nseg3 * HV * (V // 32) <= _num_sms(dev) else 64
        pbv = min(pbv, V) if tiles else V
        plan = dict(BN=bn, SEG=CONFIG["SEG"], SEG_TARGET=CONFIG["SEG_TARGET"], SEG_TOTAL=CONFIG["SEG_TOTAL"],
                    STAGES=CONFIG["SCAN_STAGES"], CPU=cpu)
        # slot s (a phase-1 segment): its end state B (float32) and its transition A (bf16 pair hi, lo)
        hb = torch.empty((nseg1, HV, K, V), dtype=torch.float32, device=dev)
        ab = torch.empty((nseg1, HV, 2, K, K), dtype=torch.bfloat16, device=dev)
        _seg[((V + K) // sbv, nseg1, HV)](state, cu_seqlens, w, u, kd, gl, hb, ab, N, HV=HV, K=K, V=V, BT=BT, BV=sbv,
                                            T_SPLIT=CONFIG["SEG_T_SPLIT"], num_warps=CONFIG["SEG_WARPS"], **plan)
        _xfer[(V // xbv, N, HV)](cu_seqlens, hb, ab, N, HV=HV, K=K, V=V, BT=BT, BV=xbv, PREC=CONFIG["XFER_PRECISION"],
                                 num_warps=CONFIG["XFER_WARPS"], **plan)
        _pscan[(V // pbv, nseg3, HV)](state, cu_seqlens, w, u, qg, kd, sc, gl, hb, out, new_state, N,
                                      HV=HV, K=K, V=V, BT=BT, BV=pbv, num_warps=CONFIG["SCAN_WARPS"], **plan)
        return out, new_state
    split = CONFIG["SCAN_SPLIT_O"]
    bv = CONFIG["BV"]
    nh = N * HV
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        if split:  # _hstate fits 2-3 blocks per SM: BV 8 gives one sequence 128 programs, two 256
            bv = 8 if nh <= 16 else 16 if nh <= 32 else 32 if nh <= 64 else 64
        else:  # _scan: one block per SM (~120 KiB shared); BV 8 gives one sequence 128 programs
            bv = 8 if nh <= 8 else 16 if nh <= 64 else 32 if nh <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    if not split:
        _scan[(triton.cdiv(V, bv), nh)](
            state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
            HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
        )
        return out, new_state
    hs = torch.empty((nc, HV, K, V), dtype=torch.bfloat16, device=dev)  # state before each chunk
    dn = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)  # delta = U - W M
    _hstate[(triton.cdiv(V, bv), nh)](
        state, cu_seqlens, w, u, kd, gl, hs, dn, new_state,
        HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    obv = V if cpu else min(CONFIG["OUT_BV"], V)
    _out[(triton.cdiv(V, obv), nc, HV)](cu_seqlens, qg, sc, hs, dn, out, N, HV=HV, K=K, V=V, BT=BT, BV=obv,
                                         BN=bn, CPU=cpu, num_warps=CONFIG["OUT_WARPS"])
    return out, new_state
