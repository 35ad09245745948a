"""Chunked gated delta rule prefill: candidates/triton_chunk4.py with its preparation kernel `_kkt` rebuilt so that
the inverse's forward substitution works on 16 x 16 blocks. Everything else is chunk4's, copied unchanged: `_wu`
(w, u, qg, kd), the sequence-parallel recurrence (`_seg`, `_xfer`, `_pscan`), the serial path (`_scan` /
`_hstate` + `_out`), the entry point, the buffers' layouts and formulas, the state convention (new_state
returned, `state` not written, an empty sequence's state bit for bit) and the path rule. chunk4's docstring
describes those; this one only the change.

Why (H100, session 24, torch.profiler, warm L2, device us per call): at 8192 x 1 chunk4 takes 278 in all,
`_kkt` 112 of it (`_wu` 54, `_seg` 48, `_pscan` 47, `_xfer` 16), where FLA 0.6.0's whole call is 260 and its
fused kkt_solve (A = beta k k^T with decays, then (I + A)^-1) 22, recompute_w_u 24. At 4096 x 4 `_kkt` is 71 of
147 (FLA 91 in all), at 5783 x 128 148 of 337 (FLA 293). chunk4's `_kkt` had two programs per (value head,
chunk) (2,064 at 8192 x 1, 162 registers, 3 blocks per SM); the even one built A as a 64 x 64 float32 tile and
inverted it on whole 64 x 64 tiles: the forward substitution of the four 16 x 16 diagonal blocks stepped 14 times,
each step two axis-0 reductions of the whole [64, 64] tile (each thread's 32 values, lane shuffles, then across
the 4 warps through shared memory with a barrier) and `tl.where`s over all of it: ~28 cross-warp reductions of
4,096 elements on one program's critical path, 16x the data the diagonal blocks hold. That path, not the
tensor-core work, is the likely cost (112 us / ~5 waves of programs = ~20 us a program).

What changed:
1. `_kkt` (KKT_MODE "tile3d", the default), one program per (value head, chunk) (1,032 at 8192 x 1): chunk4's
   `_inv` kept whole (the 64 x 64 Gram of the raw bf16 keys on tensor cores, A in chunk4's formula, the two
   merges of the stable blocked inverse T <- T - T A_off T as 64^3 tf32 products (Triton's default precision,
   as chunk4's `_mm`), never powers of A), except that the diagonal blocks' forward substitution runs on a
   [4, 16, 16] view of them: `tl.reshape(A, (4, 16, 4, 16))` with its diagonal (b, b') slices summed out, the
   14 steps on [4, 16, 16] (each step's two reductions over axis 1: 16 x 16 per block), and the result put back
   into the 64 x 64 tile the same way. Triton 3.6 lays the [4, 16, 16] view out as the 64 x 64 wgmma tile's own
   rows (warp w holds block w; the TTGIR's linear layout has warp bases along the block axis only), so the
   extraction is in-thread (the reshapes are layout-preserving in the TTGIR), and each step's two reductions
   are lane shuffles within a warp (~12 each) plus one [4, 16] layout conversion, none across warps. Stores
   exactly chunk4's even program's buffers (tb = T diag(beta) float32 [T, HV, 64] with zeros above the
   diagonal, cw, ks, gl); on CPU every buffer is chunk4's bit for bit (the same sums: the view only drops exact
   zeros).
2. `_sc`: chunk4's odd `_kkt` program (the scores S and qg's scale qs; now the helper `_scores`) as its own
   kernel, one program per (value head, chunk), with its own warps (SC_WARPS). CONFIG["KKT_S_ODD"] (default
   False) puts it back into `_kkt`'s odd programs as in chunk4 (grid (2 HV, chunks), no `_sc` launch: at 167
   registers the two halves share SMs as in chunk4).
3. Two other inverses behind CONFIG["KKT_MODE"], for timing: "blocks", FLA's layout: the ten lower 16 x 16
   Gram blocks as [16, BK] x [BK, 16] tensor-core products, A's blocks (chunk4's operation order, gamma and
   beta cut exactly from chunk4's 64-row vectors), the four diagonal [16, 16] substitutions in one loop, and
   chunk4's merges on 16 x 16 blocks with the zero blocks skipped, in chunk4's product order (X10 = -(T11 A10)
   T00, X32 likewise, X_BA = -(T_B A_BA) T_A: 16 products of 16^3); it needs 250 registers (FLA's own fused
   kkt_solve, compiled by the same ptxas, 232-252: a 16-row mma tile is replicated across the warps, 8
   registers a thread per [16, 16] tile at any warp count). "scratch": chunk4's 64 x 64 Gram and A, A stored
   into the program's own rows of tb, `tl.debug_barrier()`, read back as 16 x 16 blocks and single rows (the
   substitution loads row i instead of extracting it), "blocks"' merges, a second barrier before T diag(beta)
   overwrites it.
The buffers `_wu` and the recurrence read are chunk4's, so `_wu` onwards run unchanged.

Registers and spills for sm_90, no GPU (`PYTHONPATH=src python3 scripts/triton_regs.py tasks/gdn_prefill
<file> --axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,num_v_heads=8,
head_size=128`, likewise 4096 x 4 and 5783 x 128; the device's Triton 3.6 (`PYTHONPATH=/tmp/t36:src`) and 3.9,
2026-12-07):
                              warps  registers 3.6 / 3.9  spills 3.6 / 3.9  shared  blocks/SM 3.6 (3.9)  grid 8192 x 1
    _kkt ("tile3d")               4  167 / 163            0 / 0             32 KiB  3                    (8, 129)
    _kkt, KKT_WARPS 2             2  225 / 212            0 / 0             32 KiB  4
    _kkt, KKT_WARPS 8             8  138 / 152            0 / 0             48 KiB  1
    _kkt, KKT_S_ODD               4  167 / 163            0 / 0             32 KiB  3                    (16, 129)
    _sc                           4  120 / 96             0 / 0             32 KiB  4 (5)                (8, 129)
    _sc, SC_WARPS 8               8   64 / 62             0 / 0             32 KiB  4
    _kkt, "blocks"                4  250 / 250            0 / 0             16 KiB  2
    _kkt, "blocks", 2 warps       2  254 / 255            0 / 264 B         16 KiB  4
    _kkt, "scratch"               4  167 / 179            0 / 0             16 KiB  3 (2)
    _kkt, "scratch", 2 warps      2  161 / 255            0 / 8 B           16 KiB  6 (4)
    _kkt, "scratch", KKT_S_ODD    4  168 / 182            0 / 0             32 KiB  3 (2)                (16, 129)
    4096 x 4 (grid (8, 68)) and 5783 x 128 ((8, 219)), 3.6: _kkt 167 and 167, _sc 116 and 102.
    _wu, _seg, _xfer, _pscan: chunk4's (98; 211, 104, 204 under 3.6), no spills. chunk4's `_kkt`: 162 / 158.
"blocks" at 1 warp spills (416 B), as does KKT_WARPS 1 elsewhere: not in TUNABLES.

CPU check (Triton 3.9 interpreter, 2026-12-07; max |error| against the definition's float64 reference, output
/ new_state; tests/test_linear_attention.py::_prefill_inputs seed 3; "beta ~1": A_log -12 (no decay), b 12, keys
3 x a shared random row + N(0, 1) (cosine ~0.9); empty sequences keep their state bit for bit in every run).
CPU paths: "sums" = the default (broadcast sums), "dot" = CONFIG["DOT_PATH_ON_CPU"] (`_kkt`, `_sc`, `_wu` on
tl.dot, float32 operands: the GPU code path); chunk4 run on the same inputs and path:
    lengths (decay)              chunk4 sums       this, sums        chunk4 dot        this, dot         "blocks", dot
    0, 3, 70                     1.2e-3 / 7.1e-3   1.2e-3 / 7.1e-3   1.2e-3 / 7.1e-3   1.2e-3 / 7.1e-3   1.2e-3 / 7.1e-3
    130                          1.2e-3 / 8.9e-3   1.2e-3 / 8.9e-3   1.2e-3 / 8.9e-3   1.2e-3 / 8.9e-3   1.2e-3 / 8.9e-3
    1, 63, 64, 65, 0, 130        1.3e-3 / 8.0e-3   1.3e-3 / 8.0e-3   1.3e-3 / 8.0e-3   1.3e-3 / 8.0e-3   1.3e-3 / 8.0e-3
      the same, ~exp(-49)        3.7e-4 / 3.9e-3   3.7e-4 / 3.9e-3   3.7e-4 / 3.9e-3   3.7e-4 / 3.9e-3   3.7e-4 / 3.9e-3
    70 (~exp(-49))               2.9e-4 / 2.5e-3   2.9e-4 / 2.5e-3   2.9e-4 / 2.5e-3   2.9e-4 / 2.5e-3   2.9e-4 / 2.5e-3
    130, 70: beta ~1             2.4e-3 / 2.6e-2   2.4e-3 / 2.6e-2   2.4e-3 / 2.6e-2   2.4e-3 / 2.6e-2   2.4e-3 / 2.6e-2
    300, 0, 200                  1.4e-3 / 5.9e-3   1.4e-3 / 5.9e-3   1.4e-3 / 5.9e-3   1.4e-3 / 5.9e-3   1.4e-3 / 5.9e-3
    400: beta ~1                 2.4e-3 / 4.2e-2   2.4e-3 / 4.2e-2   2.4e-3 / 4.3e-2   2.4e-3 / 4.3e-2   2.3e-3 / 4.3e-2
The default ("tile3d", also with KKT_S_ODD): every buffer (tb, cw, ks, gl, qs, sc, w, u, qg, kd) and the output
and state equal chunk4's bit for bit, on both paths, every row. "blocks" and "scratch" (both paths; "scratch"
with and without KKT_S_ODD): cw, ks, gl, qs, sc, qg, kd bit for bit chunk4's; tb within 1.8e-7 (sums) / 7.2e-7
(dot) of chunk4's (<= 7e-7 of max |tb|: float32 rounding of the reordered merge products); w and u differ in
<= 0.04% of their elements, by bf16 rounding flips of those differences (<= 2.4e-4 on w, 7e-4 of max |w|;
<= 1.6e-2 on u, 3e-3 of max |u|, one bf16 unit where |u| ~ 5 on the beta ~1 rows); the output differs from
chunk4's by <= 2.0e-3 (one bf16 unit), the state by <= 6.8e-3; the errors above are chunk4's to two digits.
`kernelcraft eval` of a small copy (sequences 0, 3, 70 and 0, 3, 200: tests/test_linear_attention.py::_small_copy
with SMALL["gdn_prefill"] = [[0, 3, 70], [0, 3, 200]]; `TRITON_INTERPRET=1 PYTHONPATH=src python3 -m kernelcraft
eval <copy> <this file> --device cpu --no-timing`, seed 307139083546621570): PASSED, this file and its KKT_S_ODD, "blocks" and
"scratch" variants, each worst error 6.06e-3 / 6.22e-3 (workloads) and 5.94e-3 (holdout), chunk4's on the same seed.
scripts/gdn_prefill_fault.py finds the launches from `run`'s source (`_kkt[`, `_sc[`, ... by its regex; `_sc` is new
and needs no change there); its main() run on CPU tensors (a driver making torch.cuda.synchronize a no-op and its
JIT type check the interpreter's) printed ok for lengths 64 and 0,130,5: kernels _kkt, _sc, _wu, _hstate, _out
(with KKT_S_ODD: _kkt, _wu, _hstate, _out). scripts/gdn_prefill_split.py profiles whatever `run` launches (`_sc`
appears as its own row).

**Not yet run on a GPU**; estimate, not a measurement. chunk4's `_kkt`, 112 us at 8192 x 1, is taken to be mostly
its substitution (above); "tile3d" keeps the rest (the Gram, A's 4,096 exp, four 64^3 tf32 products, the 16 KiB
tb store) and replaces the 28 cross-warp 64 x 64 reductions by warp-local 16 x 16 ones (~8x fewer shuffles a
step, no cross-warp reduction). The merges' 64^3 products compile to wgmma (tf32, A from registers, B from shared
memory), as chunk4's. FLA's kkt_solve does the same work in 22 us. Estimate: `_kkt`
~20-35 us, `_sc` (1,032 programs of one 64 x 64 x 128 bf16 product, 4,096 exp and an 8 KiB store, ~24 MiB
moved) ~8-12 us: **~30-45 us against chunk4's 112**, a call at 8192 x 1 ~195-210 us against FLA's 260
(1.25-1.35x); at 4096 x 4 (`_kkt` 71 of 147) ~95-100 (FLA 91); at 5783 x 128 (148 of 337) ~230-245 (FLA 293).
If the substitution was not most of chunk4's 112 us, the gain is smaller: the first measurement settles it.
Variants to time first (scripts/gdn_prefill_split.py at 8192 x 1 and 4096 x 4, `_kkt` + `_sc` rows): (1) this
file; (2) KKT_S_ODD True (one launch, chunk4's program split); (3) KKT_MODE "blocks" (FLA's layout); (4)
KKT_MODE "scratch". Then KKT_WARPS 2 / 8, SC_WARPS 8, KKT_BK 32, WU_BK 128 (`_wu`, 54 us, is the next gap: it
writes qg and kd besides w and u, twice FLA's bytes, ~37 us at 3 TB/s for its ~112 MB). Not addressed here:
chunk4's H100 error tail (session 24: 3 of 8.4 M output elements past the tolerance at 8192 x 1); this file's
buffers are chunk4's, so it shares it.

**The race (session 26), and its fix.** On a GPU chunk3-5 gave different outputs from call to call (session 25,
H100: 10^4-10^5 elements at 8192 x 1). Cause, read in the TTGIR / PTX that Triton 3.6 makes for sm_90
(`scripts/triton_regs.py --dump`, `scripts/triton_pipeline_lint.py`): the Gram loops of `_kkt` and `_scores`
(`for kc in tl.range(0, K, BK)`, K 128, BK 64: two iterations) were software-pipelined into TWO shared buffers,
both filled before the loop; each iteration issued its wgmma asynchronously and waited with `pendings = 1`, then
issued the prefetch for iteration i + 2, which, past the loop's end, is a masked cp.async of source size 0: a
zero-fill of buffer (i + 2) mod 2 = i, the one the wgmma still in flight reads. Some launches saw k (or q) columns
as zeros. `bar.sync` does not wait for an async wgmma, so KKT_SYNC's barriers alone would not order it (they
happen to stop the pipelining in `_kkt`, not in `_scores`). Every such loop is now `tl.range(..., num_stages=1)`:
not pipelined, each wgmma waited with `pendings = 0`, no zero-fill (`_kkt` 158 registers instead of 167, `_sc` 95
instead of 120). The lint reports every loop of every kernel of this file SAFE; chunk2 and solutions/triton_chunk
(deterministic on the H100) had no such loop, chunk3 / chunk4 / chunk6 did.

On CPU (the Triton interpreter, whose tl.dot multiplies bf16 storage bits and skips BLAS) products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as chunk4;
CONFIG["DOT_PATH_ON_CPU"] runs `_kkt`'s, `_sc`'s and `_wu`'s GPU code path (tl.dot on float32 operands).
"""
import torch
import triton
import triton.language as tl

# chunk3's keys unchanged (SCAN_STAGES 1 left out: Triton 3.6 miscompiles the one-stage scan loop on sm_90,
# AGENTS.md; the segment loops have its shape); SEG*, XFER_*, PAR_BV: the sequence-parallel recurrence.
TUNABLES = {"BV": [8, 16, 32, 64], "KKT_WARPS": [2, 4, 8], "KKT_BK": [32, 64, 128], "KKT_MODE": ["tile3d", "blocks", "scratch"], "KKT_S_ODD": [False, True], "KKT_GRAM_T": [False, True], "KKT_SYNC": [False, True], "KKT_STAGES": [0, 1, 2], "SC_WARPS": [4, 8], "SC_BK": [32, 64, 128], "KKT_MAXNREG": [0, 168], "WU_BK": [32, 64, 128],
            "WU_WARPS": [4, 8], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [2, 3],
            "SCAN_SPLIT_O": [True, False], "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8],
            "SEG": [0, 4, 8, 16], "SEG_TARGET": [0, 4, 8, 16], "SEG_TOTAL": [0, 16, 32, 64], "SEG_MAX_N": [4, 16, 64],
            "SEG_BV": [16, 32, 64], "SEG_WARPS": [4, 8], "SEG_T_SPLIT": [True, False], "XFER_BV": [16, 32, 64], "XFER_WARPS": [4, 8],
            "XFER_PRECISION": ["bf16x3", "bf16"], "PAR_BV": [0, 16, 32, 64],
            "DOT_PATH_ON_CPU": [False], "CPU_TILES": [False]}
# KKT_MODE: _kkt's inverse ("tile3d": 64 x 64 tiles, the substitution on a [4, 16, 16] view; "blocks": ten 16 x 16
# Gram blocks, FLA's layout; "scratch": A through tb, read back as 16 x 16 blocks); KKT_S_ODD: the scores in _kkt's
# odd programs (chunk4's split, no _sc launch; _kkt's registers for both halves); KKT_SYNC: a tl.debug_barrier() after
# each 64 x 64 Gram piece and merge product (session 26's race hunt: is a wgmma's shared operand overwritten before it
# is read?); KKT_STAGES: _kkt's launch num_stages (0: Triton's default); SC_*: _sc
CONFIG = {"BV": 0, "KKT_WARPS": 4, "KKT_BK": 64, "KKT_MODE": "tile3d", "KKT_S_ODD": False, "KKT_GRAM_T": False, "KKT_SYNC": False, "KKT_STAGES": 0, "SC_WARPS": 4, "SC_BK": 64, "KKT_MAXNREG": 0, "WU_BK": 64, "WU_WARPS": 4,  # BV 0: chosen from N x heads in run()
          "SCAN_WARPS": 4, "SCAN_STAGES": 2, "SCAN_SPLIT_O": True, "OUT_BV": 64, "OUT_WARPS": 4,
          # segment length L = max(SEG, cdiv(longest, SEG_TARGET), cdiv(all chunks, SEG_TOTAL)) chunks (a 0 term is off;
          # SEG 0: always the serial scan); segmented only when N <= SEG_MAX_N
          "SEG": 8, "SEG_TARGET": 8, "SEG_TOTAL": 32, "SEG_MAX_N": 16,
          # PAR_BV 0: 32 where the (segment, head) pairs x V / 32 fit the SMs at one block each, else 64
          "SEG_BV": 64, "SEG_WARPS": 4, "SEG_T_SPLIT": True, "XFER_BV": 32, "XFER_WARPS": 8, "XFER_PRECISION": "bf16x3",
          "PAR_BV": 0,
          # tests only: run _kkt's, _sc's and _wu's GPU code path (tl.dot, float32 operands) on CPU tensors; CPU_TILES: the
          # GPU's column blocks (SEG_BV, XFER_BV, PAR_BV) on CPU too (else SEG_BV = PAR_BV = V, XFER_BV = 32: fewer programs)
          "DOT_PATH_ON_CPU": False, "CPU_TILES": False}

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
def _piece_t(x_ptr, lrows, h, kc, H: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    # _piece's tile loaded transposed ([BK, rows]) by its own pointer tensor: CONFIG["KKT_GRAM_T"]'s second operand
    oc = kc + tl.arange(0, BK)
    return tl.load(x_ptr + (lrows[None, :] * H + h) * K + oc[:, None])


@triton.jit
def _gram_t(x, yt, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # x @ yt for a transposed tile yt loaded apart from x (never the same tensor as both operands)
    if DOT and BF16_DOT:
        r = tl.dot(x, yt)
    elif DOT:
        r = tl.dot(x.to(tl.float32), yt.to(tl.float32))
    else:
        r = _gram(x, tl.trans(yt), DOT, BF16_DOT)  # the interpreter: _gram itself, bit for bit the same sums
    return r


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
def _sub(x, b: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    # entries b BC .. b BC + BC of a [BT] vector as a [BC] vector (exact: one term, the rest zeros)
    o = tl.arange(0, BC)
    r = tl.arange(0, BT)
    return tl.sum(tl.where(r[None, :] == b * BC + o[:, None], x[None, :], 0.0), 1)


@triton.jit
def _ablk(kk, bn_i, nk_j, g_i, g_j, DIAG: tl.constexpr, BC: tl.constexpr):
    # one [BC, BC] block of A = beta_i k^_i . k^_j exp(gamma_i - gamma_j) from the raw Gram block kk,
    # chunk4's operation order ((beta nk)_i kk) nk_j exp(.); strictly lower on the diagonal blocks
    # (exponents gamma_i - gamma_j <= 0 where kept: rows below the columns)
    if DIAG:
        o = tl.arange(0, BC)
        low = o[:, None] > o[None, :]
        a = tl.where(low, bn_i[:, None] * kk * nk_j[None, :] * tl.exp(tl.where(low, g_i[:, None] - g_j[None, :], 0.0)), 0.0)
    else:
        a = bn_i[:, None] * kk * nk_j[None, :] * tl.exp(g_i[:, None] - g_j[None, :])
    return a


@triton.jit
def _stb(tb_ptr, x, rows, end, hv, cb: tl.constexpr, HV: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    # a [BC, BC] block of T diag(beta) (x already scaled) into tb at column block cb, rows past the end skipped
    cols = cb * BC + tl.arange(0, BC)
    tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + cols[None, :], x, mask=(rows < end)[:, None])


@triton.jit
def _lblk(tb_ptr, rows, cb: tl.constexpr, end, hv, HV: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    # a [BC, BC] block of A from the tb scratch (KKT_MODE "scratch") at column block cb; rows past the end read as 0
    cols = cb * BC + tl.arange(0, BC)
    return tl.load(tb_ptr + (rows[:, None] * HV + hv) * BT + cols[None, :], mask=(rows < end)[:, None], other=0.0)


@triton.jit
def _lrow(tb_ptr, row, cb: tl.constexpr, end, hv, HV: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    # one row of A's diagonal block cb from the tb scratch (KKT_MODE "scratch"); 0 past the end
    cols = cb * BC + tl.arange(0, BC)
    return tl.load(tb_ptr + (row * HV + hv) * BT + cols, mask=(cols * 0 + row) < end, other=0.0)


@triton.jit
def _kkt(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, gl_ptr, tb_ptr, cw_ptr, ks_ptr, sc_ptr, qs_ptr,
         scale, N, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
         BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr,
         MODE: tl.constexpr, S_ODD: tl.constexpr, GRAM_T: tl.constexpr, SYNC: tl.constexpr):
    # One program per (value head, chunk): A = beta_i k^_i . k^_j exp(gamma_i - gamma_j) (strictly lower) and
    # T = (I + A)^-1. Stores what chunk4's even program stored: T diag(beta) (float32 [T, HV, BT], a chunk's row
    # i at its token, zeros above the diagonal), W's and kd's per-token scales cw = Gamma / ||k||,
    # ks = exp(gamma_C - gamma) / ||k|| and gl = exp(gamma_C) at the chunk's first token. MODE:
    # "tile3d" (default): chunk4's `_inv` (64 x 64 Gram and A, the two merges of the stable blocked inverse
    #    T <- T - T A_off T as 64^3 tf32 products; never powers of A), but the four 16 x 16 diagonal blocks'
    #    forward substitution runs on a [4, 16, 16] view of them (Triton gives each warp one block: every step's
    #    two reductions are over 16 x 16 inside a warp, where chunk4's crossed the warps over 64 x 64);
    # "blocks": everything on [BC, BC] = [16, 16] tiles, FLA's layout: 1. the ten lower Gram blocks kk_ij
    #    (i >= j), [16, BK] x [BK, 16] tensor-core products over BK-column pieces; 2. A's blocks in chunk4's
    #    operation order (gamma and beta cut exactly from chunk4's 64-row vectors); 3. the four diagonal
    #    blocks' substitution, the four chains in one loop; 4. chunk4's merges on 16 x 16 blocks, zero blocks
    #    skipped, in chunk4's product order: X10 = -(T11 A10) T00, X32 likewise, X_BA = -(T_B A_BA) T_A;
    # "scratch": chunk4's 64 x 64 Gram and A, A stored into this program's own tb rows and read back as
    #    16 x 16 blocks and rows for "blocks"' steps 3-4 (T diag(beta) overwrites it).
    # KKT_S_ODD: two programs per (value head, chunk) as chunk4's, the odd one `_scores` (no `_sc` launch).
    hv = tl.program_id(0) // 2 if S_ODD else tl.program_id(0)
    c = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    r = tl.arange(0, BT)
    rows = start + r
    lg, beta = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV)
    g = tl.cumsum(lg, 0)  # chunk4's gamma, bit for bit; padding keeps the last value
    if S_ODD:
        if tl.program_id(0) % 2 == 1:
            _scores(q_ptr, k_ptr, sc_ptr, qs_ptr, scale, rows, end, g, hv, h, H, HV, K, BT, BK, CPU, DOT, BF16_DOT)
            return
    glast = tl.min(g, 0)
    tl.store(gl_ptr + start * HV + hv, tl.exp(glast))  # at the chunk's first token
    o = tl.arange(0, BC)
    r0 = start + o
    r1 = r0 + BC
    r2 = r0 + 2 * BC
    r3 = r0 + 3 * BC
    b0 = _sub(beta, 0, BT, BC)
    b1 = _sub(beta, 1, BT, BC)
    b2 = _sub(beta, 2, BT, BC)
    b3 = _sub(beta, 3, BT, BC)
    if MODE == "tile3d":
        # chunk4's `_inv` on whole 64 x 64 tiles (Gram, A, the two merges' 64^3 tf32 products), but
        # the diagonal blocks' substitution on a [4, 16, 16] view (one 16 x 16 block per slice: each step's
        # reductions are over 16 x 16, not 64 x 64)
        valid = rows < end
        lrows = tl.minimum(rows, end - 1)
        ri = r[:, None]
        rj = r[None, :]
        kk = tl.zeros([BT, BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (see the docstring)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            if GRAM_T:
                kk += _gram_t(kx, _piece_t(k_ptr, lrows, h, kc, H, K, BK), DOT, BF16_DOT)
            else:
                kk += _gram(kx, kx, DOT, BF16_DOT)
            if SYNC:
                tl.debug_barrier()
        nk = 1.0 / tl.sqrt(ssk + 1e-6)
        tl.store(cw_ptr + rows * HV + hv, tl.exp(g) * nk, mask=valid)
        tl.store(ks_ptr + rows * HV + hv, nk * tl.exp(glast - g), mask=valid)
        low = ri > rj
        a = tl.where(low, (beta * nk)[:, None] * kk * nk[None, :] * tl.exp(tl.where(low, g[:, None] - g[None, :], 0.0)), 0.0)
        NB: tl.constexpr = BT // BC
        ob = tl.arange(0, NB)
        bsel = ob[:, None, None, None] == ob[None, None, :, None]
        x = -tl.sum(tl.where(bsel, tl.reshape(a, (NB, BC, NB, BC)), 0.0), 2)  # [NB, BC, BC]: -A's diagonal blocks
        for i in tl.range(2, BC):
            sel = (o == i)[None, :, None]
            w = tl.sum(tl.where(sel, x, 0.0), 1)
            w = w + tl.sum(w[:, :, None] * x, 1)
            x = tl.where(sel, w[:, None, :], x)
        diag = (ri // BC) == (rj // BC)
        half = (ri // (2 * BC)) == (rj // (2 * BC))
        xd = tl.reshape(tl.where(bsel, tl.broadcast_to(x[:, :, None, :], (NB, BC, NB, BC)), 0.0), (BT, BT))
        d = xd + (ri == rj).to(tl.float32)  # the four diagonal blocks' inverses
        if SYNC:
            t = _mm(d, tl.where(half & ~diag, a, 0.0), DOT)
            tl.debug_barrier()
            t = d - _mm(t, d, DOT)  # 16 -> 32
            tl.debug_barrier()
            t = tl.where(half, t, 0.0)
            p = _mm(t, tl.where(half, 0.0, a), DOT)
            tl.debug_barrier()
            t = t - _mm(p, t, DOT)  # 32 -> 64
        else:
            t = d - _mm(_mm(d, tl.where(half & ~diag, a, 0.0), DOT), d, DOT)  # 16 -> 32
            t = tl.where(half, t, 0.0)
            t = t - _mm(_mm(t, tl.where(half, 0.0, a), DOT), t, DOT)  # 32 -> 64
        tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + rj, t * beta[None, :], mask=valid[:, None])
        return
    SCRATCH: tl.constexpr = MODE == "scratch"
    if SCRATCH:
        # KKT_MODE "scratch": chunk4's Gram and A on whole [BT, BT] tiles (A bit for bit chunk4's), A stored to this
        # chunk-head's own rows of tb (overwritten by T diag(beta) below) and read back as [BC, BC] blocks and
        # single rows: no ten live Gram blocks and no row extraction by reduction
        valid = rows < end
        lrows = tl.minimum(rows, end - 1)
        ri = r[:, None]
        rj = r[None, :]
        kk = tl.zeros([BT, BT], dtype=tl.float32)
        ssk = tl.zeros([BT], dtype=tl.float32)
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (see the docstring)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            if GRAM_T:
                kk += _gram_t(kx, _piece_t(k_ptr, lrows, h, kc, H, K, BK), DOT, BF16_DOT)
            else:
                kk += _gram(kx, kx, DOT, BF16_DOT)
            if SYNC:
                tl.debug_barrier()
        nk = 1.0 / tl.sqrt(ssk + 1e-6)
        tl.store(cw_ptr + rows * HV + hv, tl.exp(g) * nk, mask=valid)
        tl.store(ks_ptr + rows * HV + hv, nk * tl.exp(glast - g), mask=valid)
        low = ri > rj
        a = tl.where(low, (beta * nk)[:, None] * kk * nk[None, :] * tl.exp(tl.where(low, g[:, None] - g[None, :], 0.0)), 0.0)
        tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + rj, a, mask=valid[:, None])
        tl.debug_barrier()  # A visible to the whole program (rows past the end read as 0: their A rows are 0)
        x0 = -_lblk(tb_ptr, r0, 0, end, hv, HV, BT, BC)
        x1 = -_lblk(tb_ptr, r1, 1, end, hv, HV, BT, BC)
        x2 = -_lblk(tb_ptr, r2, 2, end, hv, HV, BT, BC)
        x3 = -_lblk(tb_ptr, r3, 3, end, hv, HV, BT, BC)
        for i in tl.range(2, BC):
            sel = (o == i)[:, None]
            w0 = -_lrow(tb_ptr, start + i, 0, end, hv, HV, BT, BC)
            w1 = -_lrow(tb_ptr, start + BC + i, 1, end, hv, HV, BT, BC)
            w2 = -_lrow(tb_ptr, start + 2 * BC + i, 2, end, hv, HV, BT, BC)
            w3 = -_lrow(tb_ptr, start + 3 * BC + i, 3, end, hv, HV, BT, BC)
            w0 = w0 + tl.sum(w0[:, None] * x0, 0)
            w1 = w1 + tl.sum(w1[:, None] * x1, 0)
            w2 = w2 + tl.sum(w2[:, None] * x2, 0)
            w3 = w3 + tl.sum(w3[:, None] * x3, 0)
            x0 = tl.where(sel, w0[None, :], x0)
            x1 = tl.where(sel, w1[None, :], x1)
            x2 = tl.where(sel, w2[None, :], x2)
            x3 = tl.where(sel, w3[None, :], x3)
    else:
        l0 = tl.minimum(r0, end - 1)  # rows to load: clamped, unmasked (see _piece)
        l1 = tl.minimum(r1, end - 1)
        l2 = tl.minimum(r2, end - 1)
        l3 = tl.minimum(r3, end - 1)
        # 1. the Gram's ten lower blocks
        k00 = tl.zeros([BC, BC], dtype=tl.float32)
        k10 = tl.zeros([BC, BC], dtype=tl.float32)
        k11 = tl.zeros([BC, BC], dtype=tl.float32)
        k20 = tl.zeros([BC, BC], dtype=tl.float32)
        k21 = tl.zeros([BC, BC], dtype=tl.float32)
        k22 = tl.zeros([BC, BC], dtype=tl.float32)
        k30 = tl.zeros([BC, BC], dtype=tl.float32)
        k31 = tl.zeros([BC, BC], dtype=tl.float32)
        k32 = tl.zeros([BC, BC], dtype=tl.float32)
        k33 = tl.zeros([BC, BC], dtype=tl.float32)
        s0 = tl.zeros([BC], dtype=tl.float32)
        s1 = tl.zeros([BC], dtype=tl.float32)
        s2 = tl.zeros([BC], dtype=tl.float32)
        s3 = tl.zeros([BC], dtype=tl.float32)
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (see the docstring)
            x0 = _piece(k_ptr, l0, h, kc, H, K, BK)
            x1 = _piece(k_ptr, l1, h, kc, H, K, BK)
            x2 = _piece(k_ptr, l2, h, kc, H, K, BK)
            x3 = _piece(k_ptr, l3, h, kc, H, K, BK)
            f0 = x0.to(tl.float32)
            f1 = x1.to(tl.float32)
            f2 = x2.to(tl.float32)
            f3 = x3.to(tl.float32)
            s0 += tl.sum(f0 * f0, 1)
            s1 += tl.sum(f1 * f1, 1)
            s2 += tl.sum(f2 * f2, 1)
            s3 += tl.sum(f3 * f3, 1)
            k00 += _gram(x0, x0, DOT, BF16_DOT)
            k10 += _gram(x1, x0, DOT, BF16_DOT)
            k11 += _gram(x1, x1, DOT, BF16_DOT)
            k20 += _gram(x2, x0, DOT, BF16_DOT)
            k21 += _gram(x2, x1, DOT, BF16_DOT)
            k22 += _gram(x2, x2, DOT, BF16_DOT)
            k30 += _gram(x3, x0, DOT, BF16_DOT)
            k31 += _gram(x3, x1, DOT, BF16_DOT)
            k32 += _gram(x3, x2, DOT, BF16_DOT)
            k33 += _gram(x3, x3, DOT, BF16_DOT)
        # 2. the per-token scales and A's blocks
        nk0 = 1.0 / tl.sqrt(s0 + 1e-6)  # k^ = k / sqrt(sum k^2 + 1e-6)
        nk1 = 1.0 / tl.sqrt(s1 + 1e-6)
        nk2 = 1.0 / tl.sqrt(s2 + 1e-6)
        nk3 = 1.0 / tl.sqrt(s3 + 1e-6)
        g0 = _sub(g, 0, BT, BC)
        g1 = _sub(g, 1, BT, BC)
        g2 = _sub(g, 2, BT, BC)
        g3 = _sub(g, 3, BT, BC)
        tl.store(cw_ptr + r0 * HV + hv, tl.exp(g0) * nk0, mask=r0 < end)
        tl.store(cw_ptr + r1 * HV + hv, tl.exp(g1) * nk1, mask=r1 < end)
        tl.store(cw_ptr + r2 * HV + hv, tl.exp(g2) * nk2, mask=r2 < end)
        tl.store(cw_ptr + r3 * HV + hv, tl.exp(g3) * nk3, mask=r3 < end)
        tl.store(ks_ptr + r0 * HV + hv, nk0 * tl.exp(glast - g0), mask=r0 < end)
        tl.store(ks_ptr + r1 * HV + hv, nk1 * tl.exp(glast - g1), mask=r1 < end)
        tl.store(ks_ptr + r2 * HV + hv, nk2 * tl.exp(glast - g2), mask=r2 < end)
        tl.store(ks_ptr + r3 * HV + hv, nk3 * tl.exp(glast - g3), mask=r3 < end)
        a10 = _ablk(k10, b1 * nk1, nk0, g1, g0, False, BC)
        a20 = _ablk(k20, b2 * nk2, nk0, g2, g0, False, BC)
        a21 = _ablk(k21, b2 * nk2, nk1, g2, g1, False, BC)
        a30 = _ablk(k30, b3 * nk3, nk0, g3, g0, False, BC)
        a31 = _ablk(k31, b3 * nk3, nk1, g3, g1, False, BC)
        a32 = _ablk(k32, b3 * nk3, nk2, g3, g2, False, BC)
        # 3. the diagonal blocks: x holds -a in rows not yet reached (rows 0 and 1 are final), T - I in the others
        x0 = -_ablk(k00, b0 * nk0, nk0, g0, g0, True, BC)
        x1 = -_ablk(k11, b1 * nk1, nk1, g1, g1, True, BC)
        x2 = -_ablk(k22, b2 * nk2, nk2, g2, g2, True, BC)
        x3 = -_ablk(k33, b3 * nk3, nk3, g3, g3, True, BC)
        for i in tl.range(2, BC):
            sel = (o == i)[:, None]
            w0 = tl.sum(tl.where(sel, x0, 0.0), 0)
            w1 = tl.sum(tl.where(sel, x1, 0.0), 0)
            w2 = tl.sum(tl.where(sel, x2, 0.0), 0)
            w3 = tl.sum(tl.where(sel, x3, 0.0), 0)
            w0 = w0 + tl.sum(w0[:, None] * x0, 0)
            w1 = w1 + tl.sum(w1[:, None] * x1, 0)
            w2 = w2 + tl.sum(w2[:, None] * x2, 0)
            w3 = w3 + tl.sum(w3[:, None] * x3, 0)
            x0 = tl.where(sel, w0[None, :], x0)
            x1 = tl.where(sel, w1[None, :], x1)
            x2 = tl.where(sel, w2[None, :], x2)
            x3 = tl.where(sel, w3[None, :], x3)
    eye = (o[:, None] == o[None, :]).to(tl.float32)
    d0 = x0 + eye
    d1 = x1 + eye
    d2 = x2 + eye
    d3 = x3 + eye
    # 4. 16 -> 32, then 32 -> 64: X_BA = -(T_B A_BA) T_A with T_A = [[d0, 0], [x10, d1]], T_B = [[d2, 0], [x32, d3]]
    if SCRATCH:  # A's off-diagonal blocks read back where they are used (fewer live tiles)
        a10 = _lblk(tb_ptr, r1, 0, end, hv, HV, BT, BC)
    x10 = -_mm(_mm(d1, a10, DOT), d0, DOT)
    if SCRATCH:
        a32 = _lblk(tb_ptr, r3, 2, end, hv, HV, BT, BC)
    x32 = -_mm(_mm(d3, a32, DOT), d2, DOT)
    if SCRATCH:
        a20 = _lblk(tb_ptr, r2, 0, end, hv, HV, BT, BC)
        a21 = _lblk(tb_ptr, r2, 1, end, hv, HV, BT, BC)
    q20 = _mm(d2, a20, DOT)
    q21 = _mm(d2, a21, DOT)
    if SCRATCH:
        a30 = _lblk(tb_ptr, r3, 0, end, hv, HV, BT, BC)
        a31 = _lblk(tb_ptr, r3, 1, end, hv, HV, BT, BC)
        tl.debug_barrier()  # every read of A done before T diag(beta) overwrites it
    q30 = _mm(x32, a20, DOT) + _mm(d3, a30, DOT)
    q31 = _mm(x32, a21, DOT) + _mm(d3, a31, DOT)
    x20 = -(_mm(q20, d0, DOT) + _mm(q21, x10, DOT))
    x21 = -_mm(q21, d1, DOT)
    x30 = -(_mm(q30, d0, DOT) + _mm(q31, x10, DOT))
    x31 = -_mm(q31, d1, DOT)
    # T diag(beta), row block by row block, zeros above the diagonal
    zero = tl.zeros([BC, BC], dtype=tl.float32)
    _stb(tb_ptr, d0 * b0[None, :], r0, end, hv, 0, HV, BT, BC)
    _stb(tb_ptr, zero, r0, end, hv, 1, HV, BT, BC)
    _stb(tb_ptr, zero, r0, end, hv, 2, HV, BT, BC)
    _stb(tb_ptr, zero, r0, end, hv, 3, HV, BT, BC)
    _stb(tb_ptr, x10 * b0[None, :], r1, end, hv, 0, HV, BT, BC)
    _stb(tb_ptr, d1 * b1[None, :], r1, end, hv, 1, HV, BT, BC)
    _stb(tb_ptr, zero, r1, end, hv, 2, HV, BT, BC)
    _stb(tb_ptr, zero, r1, end, hv, 3, HV, BT, BC)
    _stb(tb_ptr, x20 * b0[None, :], r2, end, hv, 0, HV, BT, BC)
    _stb(tb_ptr, x21 * b1[None, :], r2, end, hv, 1, HV, BT, BC)
    _stb(tb_ptr, d2 * b2[None, :], r2, end, hv, 2, HV, BT, BC)
    _stb(tb_ptr, zero, r2, end, hv, 3, HV, BT, BC)
    _stb(tb_ptr, x30 * b0[None, :], r3, end, hv, 0, HV, BT, BC)
    _stb(tb_ptr, x31 * b1[None, :], r3, end, hv, 1, HV, BT, BC)
    _stb(tb_ptr, x32 * b2[None, :], r3, end, hv, 2, HV, BT, BC)
    _stb(tb_ptr, d3 * b3[None, :], r3, end, hv, 3, HV, BT, BC)


@triton.jit
def _scores(q_ptr, k_ptr, sc_ptr, qs_ptr, scale, rows, end, g, hv, h, H: tl.constexpr, HV: tl.constexpr,
            K: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr,
            BF16_DOT: tl.constexpr):
    # chunk4's odd `_kkt` program: the scores S = scale Gamma_i / Gamma_j q^_i . k^_j (lower, diagonal included;
    # stored bf16 with the upper zeros) and qg's scale qs = scale Gamma / ||q||, from the Gram of the raw bf16 rows
    r = tl.arange(0, BT)
    valid = rows < end
    lrows = tl.minimum(rows, end - 1)
    ri = r[:, None]
    rj = r[None, :]
    qk = tl.zeros([BT, BT], dtype=tl.float32)
    ssq = tl.zeros([BT], dtype=tl.float32)
    ssk = tl.zeros([BT], dtype=tl.float32)
    for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (see the docstring)
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
def _sc(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, sc_ptr, qs_ptr, scale, N,
        H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr,
        BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr, BF16_DOT: tl.constexpr):
    # `_scores` as its own kernel (its own warps), one program per (value head, chunk) (KKT_S_ODD False)
    hv = tl.program_id(0)
    c = tl.program_id(1)
    h = hv // (HV // H)
    n, start, end = _locate(cu_ptr, c, N, BT, BN)
    if n >= N:
        return
    start = start.to(tl.int32)
    end = end.to(tl.int32)
    rows = start + tl.arange(0, BT)
    lg, beta = _gates(alog_ptr, a_ptr, dtb_ptr, b_ptr, rows, end, hv, HV)
    _scores(q_ptr, k_ptr, sc_ptr, qs_ptr, scale, rows, end, tl.cumsum(lg, 0), hv, h, H, HV, K, BT, BK, CPU, DOT,
            BF16_DOT)


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
    s_odd = CONFIG["KKT_S_ODD"]
    kbk = min(CONFIG["KKT_BK"], K) if dot else K
    _kkt[(2 * HV if s_odd else HV, nc)](
        q, k, A_log, a, dt_bias, b, cu_seqlens, gl, tb, cw, ks, sc, qs, float(scale), N,
        H=H, HV=HV, K=K, BT=BT, BC=BC, BK=kbk, BN=bn, CPU=cpu, DOT=dot, BF16_DOT=not cpu,
        MODE=CONFIG["KKT_MODE"], S_ODD=s_odd, GRAM_T=CONFIG["KKT_GRAM_T"], SYNC=CONFIG["KKT_SYNC"],
        num_warps=CONFIG["KKT_WARPS"], **({"maxnreg": CONFIG["KKT_MAXNREG"]} if CONFIG["KKT_MAXNREG"] and not cpu else {}),
        **({"num_stages": CONFIG["KKT_STAGES"]} if CONFIG["KKT_STAGES"] and not cpu else {}),
    )
    if not s_odd:
        _sc[(HV, nc)](
            q, k, A_log, a, dt_bias, b, cu_seqlens, sc, qs, float(scale), N,
            H=H, HV=HV, K=K, BT=BT, BK=min(CONFIG["SC_BK"], K) if dot else K, BN=bn, CPU=cpu, DOT=dot,
            BF16_DOT=not cpu, num_warps=CONFIG["SC_WARPS"],
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
