"""Gated delta rule prefill: solutions/triton_chunk8.py (every kernel and the long path unchanged) plus `_recur`, a
single-launch token-by-token kernel for short inputs (CONFIG "RECUR_MAX_T": T <= 16 by default).
What changed: for T <= RECUR_MAX_T (T = q.shape[0], known on the host: no device sync) `run` launches `_recur`
alone and returns; otherwise chunk8's path, byte for byte (every chunk8 kernel is unchanged). New CONFIG keys:
RECUR_MAX_T (16; 0: never), RECUR_BV (0: chosen from N x HV by `_recur_tile`), RECUR_WARPS (0: 1 warp),
RECUR_PREFETCH (True); all in TUNABLES. CPU_TILES also makes `_recur` use the GPU's BV on CPU (else BV = V).
Why: chunk8 at one token is 0.0228 ms on an H100 (KKT + _wu + _hstate + _out: four launches, each a latency chain,
for one token); FLA's fused recurrent kernel (a new peer) does one launch. Short prefills (a chat turn's first
tokens, speculative/extend steps) are the decode problem with a token loop: gdn_decode's design, per token.
`_recur` (new; not copied from FLA): grid (cdiv(V, BV), N x HV), one warp per program holding a [BV, K] float32
tile of the k-last state in registers (rows are contiguous 512-byte lines, K along the warp's 32 lanes, 4 each:
every K reduction is in-thread adds plus 5 shuffles, inside the warp); it loops t over [bos, eos) of its sequence
and per token follows the reference's order exactly: q^, k^ = x / sqrt(sum x^2 + 1e-6) (eps inside the root, a
division as `_l2norm`), g = exp(-exp(A_log) softplus(a + dt_bias)) (torch's softplus, threshold 20, chunk8's
`_gates` formula), beta = sigmoid(b), S = g S, pred = S k^, delta = beta v - beta pred (the reference's addcmul
of bv = beta v), S += delta k^T, o = scale (S q^) stored as bf16 (rounded to nearest on CPU too: `_rne_bf16`);
after the loop S goes to new_state. An empty sequence skips the loop and stores the tile it loaded: its initial
state bit for bit. RECUR_PREFETCH: token t + 1's q, k, v, a and b (none depends on the state) are loaded before
token t's update (row clamped to T - 1), so their global latency overlaps the update instead of heading each
token's chain; Triton's pipeliner does not do it here (the sm_90 TTGIR has no async copies, no shared buffers;
scripts/triton_pipeline_lint.py: no wgmma loops). q / k come in as [1, K] rows and v as [BV, 1], in the state
tile's own layout: no layout conversion in the loop except the [BV] output store's (16-32 B of shared memory).

Tile choice (`_recur_tile`; registers below). A token is a chain of dependent steps (two norms, then S k, then
S q: three shuffle reductions in series plus exp / log / sqrt), so a program's time is latency, and the choice
is about filling the SMs without lengthening the chain. One warp: with 2 or 4 warps Triton 3.6 puts the warps
along K (the [1, K] rows' layout wins), the state tile is converted to that layout before and after the loop,
and every K reduction crosses warps through 2 KiB of shared memory and a barrier (3 convert_layout ops, smem
2048 B in every multi-warp variant). BV 8 (96 registers) below nh = N x HV 512, BV 4 (64 registers) from there
(gdn_decode's H200 optimum: BV 8 / 1 warp at small batch, BV 4 / 1 warp from batch 64 up). The first form took
BV 4 at one sequence (nh 8: 256 programs instead of 128 for 132 SMs, half the FMAs per step); session 30's H100
sweep (scripts/la_s30.sh, do_bench, us) had BV 8 ahead at every shape timed: 1 token 5.47 vs 6.03, 16 tokens
17.2 vs 19.6, 64 tokens 54.8 vs 65.5, 64 tokens in 8 sequences 22.5 vs 25.5. BV 16 / 1 warp (168 registers, 12 CTAs/SM) and up only by RECUR_BV. RECUR_MAX_T 16: the chain
is ~T x (0.3-0.5 us); chunk8's four launches cost ~17-23 us at one token, so the crossover is expected between
T 32 and 64 (RECUR_MAX_T 32 / 64 to be timed, see below).

Registers for sm_90, no GPU (Triton 3.6 compile-only, `PYTHONPATH=/tmp/t36:src python3 scripts/triton_regs.py
tasks/gdn_prefill <file> --axes total_seq_len=1,num_seqs=1,len_cu_seqlens=2 --axes
total_seq_len=16,num_seqs=4,len_cu_seqlens=5`, CONFIG overrides by edited copies; grid at 16 x 4 = nh 32):
    `_recur` BV / warps   registers   spill   shared    CTAs/SM (by registers)   grid 16 x 4
    4 / 1  (default nh<=8)   64        0       16 B      32                       (32, 32)
    8 / 1  (default nh>=16)  96        0       32 B      21                       (16, 32)
    16 / 1                  168        0       64 B      12                       (8, 32)
    32 / 1                  255      222 B   4096 B       8   SPILLS              (4, 32)
    4 / 2, 4 / 4          56, 48       0     2048 B    18, 10                     warps along K
    8 / 2, 8 / 4          72, 56       0     2048 B    14, 9
    16 / 2, 16 / 4        96, 72     0, 20 B 2048 B    10, 7  (16 / 4 spills)
    32 / 2, 32 / 4       226, 162      0     2048 B     4, 3
    defaults: one token (1 x 1): BV 4, grid (32, 8), 64 registers; 16 x 4: BV 8, grid (16, 32), 96; 16 x 2: BV 8,
    grid (16, 16), 96. RECUR_PREFETCH False: 64 (BV 4) / 80 (BV 8). The chunked path's kernels are chunk8's.

CPU check (Triton 3.9 interpreter, 2026-12-07, `TRITON_INTERPRET=1 PYTHONPATH=src python3
scripts/gdn_prefill_recur_check.py`, seed 7; max |error| against the definition's float64 reference, output /
new_state; every row meets the contract and keeps empty sequences' states bit for bit; "tiles" = CPU_TILES, i.e.
`_recur` at the GPU's BV (4 or 8, 32-16 programs per (sequence, head)); "no-pf" = RECUR_PREFETCH False; both gave
results bit for bit equal to the default's in every case; chunk8 = solutions/triton_chunk8.py on the same inputs):
    lengths, gates              this file (_recur)    tiles, no-pf       chunk8 (chunked)      |chunk8 - this|
    [1] ordinary                7.0e-04 / 2.4e-06     = this             7.1e-04 / 4.7e-03     9.8e-04 / 4.7e-03
    [0, 1, 5, 0, 7] ordinary    9.5e-04 / 1.8e-06     = this             9.5e-04 / 6.2e-03     9.8e-04 / 6.2e-03
    [16] ordinary               9.2e-04 / 1.4e-06     = this             1.3e-03 / 5.2e-03     2.0e-03 / 5.2e-03
    [3, 13] ordinary            9.7e-04 / 1.5e-06     = this             1.0e-03 / 4.9e-03     2.0e-03 / 4.9e-03
    [1] ~exp(-49)               1.1e-04 / 6.6e-08     = this             2.1e-04 / 3.1e-03     2.4e-04 / 3.1e-03
    [0, 1, 5, 0, 7] ~exp(-49)   9.4e-05 / 9.0e-08     = this             2.2e-04 / 3.2e-03     2.4e-04 / 3.2e-03
    [16] ~exp(-49)              1.2e-04 / 1.0e-07     = this             2.6e-04 / 4.8e-03     2.4e-04 / 4.8e-03
    [3, 13] ~exp(-49)           1.2e-04 / 6.7e-08     = this             2.5e-04 / 3.0e-03     2.4e-04 / 3.0e-03
    [16] beta ~1                9.8e-04 / 9.8e-07     = this             1.4e-03 / 1.5e-02     2.0e-03 / 1.5e-02
    [3, 13] beta ~1             9.5e-04 / 9.5e-07     = this             1.1e-03 / 1.5e-02     2.0e-03 / 1.5e-02
    [5, 0, 70] (T 75: chunked)  9.5e-04 / 6.8e-03     = this             9.5e-04 / 6.8e-03     0.0e+00 / 0.0e+00
The state error drops from chunk8's 3-15e-3 (bf16 tensor-core operands) to 1e-7-2e-6 (float32 throughout); the
output's is its final bf16 rounding (<= 9.8e-4 = half a bf16 unit at |o| in [0.25, 0.5)). The T 75 case runs
chunk8's path and equals chunk8 bit for bit (output and state). The whole script: ~5.5 min on 2 cores, most of it
the CPU_TILES rows (256-512 interpreted programs).
`kernelcraft eval` of a small copy (tests/test_linear_attention.py::_small_copy with SMALL["gdn_prefill"] = [[1],
[0, 1, 5, 0, 7], [3, 13], [0, 3, 70]]; `TRITON_INTERPRET=1 PYTHONPATH=src python3 -m kernelcraft eval <copy> <this
file> --device cpu --no-timing`, seed 2444539530068403293; the last workload, 73 tokens, takes chunk8's path):
PASSED, 4/4 workloads; max |error| 9.2e-4 (1 token), 9.2e-4 (0, 1, 5, 0, 7), 9.4e-4 (3, 13), 7.9e-3 (0, 3, 70:
the chunked path's state).

**Not yet run on a GPU; estimate, not a measurement.** One token, one sequence: one launch of 256 one-warp
programs, each reading a 2 KiB state tile and ~0.5 KiB of inputs and writing 2 KiB: ~2-4 us of kernel plus the
launch, against chunk8's 22.8 us (H100): expected ~4-6x faster there, at par with FLA's fused recurrent kernel
(same one-launch shape) within its launch overhead. At 16 tokens: ~6-10 us. Not affected: every workload with
T > RECUR_MAX_T (all of the task's workloads but the 1-token one), which run chunk8's kernels unchanged.
To time next (H100, beside chunk8, FLA's fused_recurrent_gated_delta_rule and chunk_gated_delta_rule, on the
same warm machine): the 1-token workload and extra short ones (T 4, 16, 32, 64 at N 1 and 4) at RECUR_MAX_T
0 / 16 / 32 / 64; RECUR_BV 4 / 8 / 16 (1 warp) at N 1 and 4; RECUR_PREFETCH False; RECUR_WARPS 2 at BV 8 / 16
(expected worse: cross-warp reductions). Set RECUR_MAX_T at the measured crossover with chunk8.
chunk8's docstring follows.

Chunked gated delta rule prefill: solutions/triton_chunk7.py (1.19x FLA on an H100, session 27) with T diag(beta)
stored in bf16 (CONFIG "TB_BF16", tunable back to chunk7's float32).
Why: chunk7's `_wu` rounds T diag(beta) to bf16 before its products anyway, so `_kkt` can store it rounded: the tb
buffer ([T, HV, 64]) is half the bytes written by `_kkt` and read by `_wu` (4 MiB each way less at 4 x 1024 tokens,
8 at 8192 x 1: an estimate of 2-5 us of chunk7's 93-195 us on the H100, not measured). U's operand is the same bf16
value as chunk7's; W's is bf16(bf16(T diag(beta)) x cw) instead of bf16(T diag(beta) x cw): one more rounding of
2^-9 relative on one operand. Only KKT_MODE "tile3d" (the default) writes tb once; "blocks" and "scratch" use it as
float32 scratch, so TB_BF16 asserts tile3d. CPU: `_rne_bf16` before the store (the interpreter truncates).
KKT_S_ODD True (chunk7: False): the scores in `_kkt`'s odd programs, no `_sc` launch (an existing knob of chunk4-7).
H100, session 27 (`results/h100/catalog-2026-12-07-s27/call2/`, `scripts/gdn_s27_tb.sh`, warm L2, torch.profiler,
all nine workloads beside chunk7 and FLA): `_wu` 29.0 -> 21.3 us at 8192 x 1 and 13.3 -> 10.4 at 4 x 1024 (FLA's
recompute_w_u 24.3 / 11.6); geometric mean against FLA by this profile: this file's CONFIG (then variant v0) 1.206,
TB_BF16 alone 1.178, KKT_S_ODD alone 1.182, chunk7 1.152. S_ODD costs `_kkt` 37 -> 54 us at 8192 x 1 and saves
`_sc`'s 16 (a wash there) and a launch (17.3 against 20.6 us at one token). The eval that was to judge it ran out of
the call's time after its holdouts (correctness and holdouts done, no verdict recorded): not yet judged.
chunk7's docstring follows.

Chunked gated delta rule prefill: solutions/triton_chunk6.py (promoted in session 26, ~1.0x FLA on an H100) with
a leaner `_wu`. Everything else is chunk6's bytes; chunk6's docstring (kept below) describes it.

Why (session 26's split on the H100, warm L2, 4 sequences of 1024 tokens): the recurrence was at par with FLA
(`_pscan` + `_seg` + `_xfer` ~49 us against FLA's h + o kernels 45), the preparation was not: `_wu` 23-27 us against
FLA's recompute_w_u 12. chunk6's `_wu` multiplies float32 T diag(beta) by float32 copies of the k / v tiles at
TF32 (two [64, 64] float32 operands in shared memory per dot, half the MMA rate of bf16) in two programs per
chunk-head, each reading all of tb (float32 [T, HV, 64]).
What changed (two CONFIG keys, both tunable back to chunk6's form):
1. WU_BF16 True: T diag(beta) (for W also scaled by cw) rounded to bf16, multiplied with the raw bf16 k / v rows,
   float32 sums: FLA's own precision for this product (its solve_tril output A is bf16 and recompute_w_u's dots
   take bf16 operands). W and U are stored as bf16 either way, so one more bf16 rounding of the T operand is the
   only change in arithmetic (relative 2^-9 per term of a 64-term sum, where the stored result carries 2^-9 too).
2. WU_BK 128 (chunk6: 64): one program per (value head, chunk) reads tb once instead of twice.
CPU (the interpreter): the bf16 operands are emulated by round-to-nearest bf16 values in float32 (`_rne_bf16`),
as the GPU's conversion rounds; the interpreter's own bf16 tl.dot is wrong (chunk6's `_gram` says why).
Not yet run on a GPU: the expected gain is `_wu` 23-27 -> ~12-15 us at 4 x 1024 (~10% of the call), if `_wu` is
not latency-bound. `scripts/gdn_chunk6_prep_variants.txt` times chunk6's own WU_* knobs beside it.

chunk6's docstring:
Chunked gated delta rule prefill: candidates/triton_chunk5.py without its qg and kd buffers. `_wu` writes only
w and u; the recurrence kernels (`_seg`, `_pscan`, `_scan`, `_hstate`, `_out`) read the raw bf16 q and k rows and
the per-token float32 scales qs and ks (which `_sc` and `_kkt` already store) and apply each scale on the other
side of its product. Everything else is chunk5's, copied unchanged: `_kkt` ("tile3d"), `_sc`, the w and u
formulas, `_xfer`, the segmentation, the entry point, the state convention (new_state returned, `state` not
written, an empty sequence's state kept bit for bit) and the path rule. chunk5's and chunk4's docstrings describe
those; this one describes only the change.

Why: bytes at 8192 x 1 (T 8192, 4 q/k heads, 8 value heads, K = V = 128, 129 chunks; MiB = 2^20 B; DRAM-unique,
each buffer counted once):
    chunk5 `_wu`  reads  tb (float32 [T, 8, 64]) 16, v 16, k 8, q 8, cw / qs / ks 0.75      = 48.75 MiB
                  writes w, u, qg, kd (bf16 [T, 8, 128]) 4 x 16                              = 64    MiB
                  112.75 MiB = 118 MB: 35 us at the H100's 3.35 TB/s (25 us at the H200's 4.8 TB/s). Session 24
                  measured 54 us on an H100, about 65% of DRAM peak. L2 requests are larger (~145 MiB): each of
                  the two column blocks reads all of tb, and each q/k row is read by two value heads.
    this `_wu`    reads  tb 16, v 16, k 8, cw 0.25 = 40.25; writes w, u 32                   = 72.25 MiB
                  75.8 MB: 22.6 us at 3.35 TB/s (15.8 us at 4.8 TB/s), 36% fewer bytes.
What was wasted: qg = bf16(scale Gamma / ||q|| * q) and kd = bf16(exp(gamma_C - gamma) / ||k|| * k) are
row-scaled copies of q and k, one per value head. They cost 32 MiB written, then 32 MiB read back by the
recurrence, where q and k together hold 16 MiB (two value heads share each row). For the whole call that is
32 MiB less written and 32 MiB less scratch allocated at 8192 x 1, and the recurrence's DRAM-unique q / k reads
are 16 MiB instead of 32. Per program and step, though, the recurrence requests as many bytes as before: a
[64, 128] bf16 tile of k is as large as one of kd, plus a 256 B row of scales. FLA 0.6.0 folds the same way
(read, not copied). recompute_w_u_fwd (fla/ops/gated_delta_rule/wy_fast.py) writes only w and u. chunk_delta_h
scales the new values v_new by exp(g_last - g) before its k^T v_new product. chunk_o multiplies q h by exp(g)
after the product, and the scale enters there too.

What changed:
1. `_wu` writes w and u only (q, qs, ks and the qg / kd stores are gone). Its grid, formulas and rounding are
   chunk5's, so w and u are chunk5's bit for bit. 95 registers instead of 98: 5 blocks per SM instead of 4.
2. The recurrence kernels take q, k, qs and ks instead of qg and kd (helper `_rows`; rows at the q/k head
   h = hv // (HV / H); unmasked in `_seg`, which runs full chunks only; elsewhere masked rows read 0, as before).
   With M the state and D = U - W M (float32):
     output  qg M = bf16(diag(qs) q) bf16(M)   ->  diag(qs) (q bf16(M)): q's bf16 rows are exact operands, and
             the row scale multiplies the float32 product (one float32 rounding instead of qg's bf16 rounding);
     state   kd^T bf16(D) = bf16(diag(ks) k)^T bf16(D)  ->  k^T bf16(diag(ks) D): each product term has one bf16
             rounding instead of two. In `_seg` the hi / lo split (SEG_T_SPLIT) is taken of diag(ks) D.
   `_pscan` and `_hstate` still round D itself to bf16 for S D and for the stored dn (chunk5's values).
   These are fewer rounding points, not the same ones, so the result is not chunk5's bit for bit: it differs by
   up to one bf16 unit on the output (2e-3) and up to 3.7e-2 on the state (the beta ~1 rows, where chunk5's own
   state error is 4e-2). Against the reference the RMS errors are lower in every run (table).
3. Tried and dropped (not in this file): forming chunk5's qg / kd operands bit for bit inside the recurrence
   kernels (load q / k, multiply by the scale, round to bf16). On CPU that gave every output and state bit equal
   to chunk5's on all paths (serial split and fused, segmented, DOT_PATH_ON_CPU). But the [64, 128] tiles then
   pass through registers instead of going straight to shared memory for wgmma: `_pscan` took 255 registers and
   spilled 112 B (3.6) / 180 B (3.9), and `_seg` took 255 and spilled 28 B (3.9).
Not done: one program per value-head pair sharing a q/k head. After this change, k is the only per-q/k-head
read left in `_wu` (8 MiB, and the second value head's read is an L2 hit), so pairing would save L2 traffic
but no DRAM bytes.

Registers and spills for sm_90, no GPU (`PYTHONPATH=src python3 scripts/triton_regs.py tasks/gdn_prefill <file>
--axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,num_v_heads=8,head_size=128`,
likewise 4096 x 4 and 5783 x 128; the device's Triton 3.6 (`PYTHONPATH=/tmp/t36:src`) and 3.9, 2026-12-07; no
spills anywhere below):
                      registers 3.6 / 3.9   chunk5 (3.6)   shared (chunk5)      blocks/SM   grid 8192 x 1
    _wu                95 / 95              98             32 KiB               5 (4)       (2, 8, 129)
    _seg              223 / 207             211            96 KiB (96)          2           (4, 7, 8)
    _xfer             104 / 100             104            160 KiB              1           (4, 1, 8)
    _pscan            248 / 254             204            137 KiB (144)        1           (2, 8, 8)
    4096 x 4 (3.6 / 3.9): _seg 222 / 187, _xfer 106 / 117, _pscan 248 / 240. 5783 x 128 (serial path):
    _hstate 248 / 246 (chunk5 244), _out 71 / 71 (64). _kkt and _sc are chunk5's (167 / 163, 120 / 96).
    Variants, 3.6, 8192 x 1: WU_BK 128 `_wu` 146 registers, 49 KiB, 3 blocks/SM, grid (1, 8, 129); WU_WARPS 8:
    82 (2 blocks); both: 91 (2 blocks). PAR_BV 32: `_pscan` 158, grid (4, 8, 8). SCAN_SPLIT_O False: `_scan` 222
    (5783 x 128) and 150 (4096 x 32).
`_pscan` gains 44 registers (D stays float32 until both of its roundings), but it already runs one block per SM
because of its shared memory, so occupancy does not change.

CPU check (Triton 3.9 interpreter, 2026-12-07). Max |error| against the definition's float64 reference, output /
new_state, chunk5 and this file on the same inputs and path (tests/test_linear_attention.py::_prefill_inputs
seed 3; "beta ~1": A_log -12, b 12, keys 3 x a shared row + N(0, 1), seed 5, as chunk5's table; empty sequences
keep their state bit for bit in every run). "serial" = the default CONFIG, which at these lengths is the serial
split path `_hstate` + `_out` (2100, 0, 700 is segmented by the default rule). "seg" = SEG 1, SEG_TARGET 0,
SEG_TOTAL 0, i.e. `_seg` / `_xfer` / `_pscan` wherever a sequence has >= 3 chunks. "fused" = SCAN_SPLIT_O False
(`_scan`).
    units of 1e-3                serial: chunk5 this           seg: chunk5    this           fused: chunk5  this
    0, 3, 70                     1.2 / 7.1      1.3 / 6.4      1.2 / 7.1      1.3 / 6.4      1.1 / 5.7      1.1 / 4.4
    130                          1.2 / 8.9      1.2 / 6.9      1.2 / 7.7      1.2 / 8.1      1.2 / 5.7      0.98 / 5.9
    1, 63, 64, 65, 0, 130        1.3 / 8.0      1.2 / 7.1      1.3 / 7.4      1.2 / 6.4      1.4 / 7.2      1.0 / 4.5
      the same, ~exp(-49)        0.37 / 3.9     0.37 / 3.7     0.37 / 3.9     0.37 / 3.7     0.37 / 2.8     0.37 / 2.2
    70 (~exp(-49))               0.29 / 2.5     0.29 / 2.3
    130, 70: beta ~1             2.4 / 26       2.4 / 11       2.4 / 25       2.4 / 11       1.8 / 24       2.0 / 7.0
    300, 0, 200                  1.4 / 5.9      1.1 / 5.1      1.4 / 5.4      1.1 / 5.2      1.4 / 4.7      0.92 / 3.7
    400: beta ~1                                               2.7 / 40       2.9 / 18       2.2 / 38       2.1 / 10
    2100, 0, 700 (default: seg)  1.5 / 8.7      1.5 / 6.8
A few single maxima are higher: output by at most 2e-4 (0, 3, 70; 400 beta ~1 seg; 130, 70 beta ~1 fused),
state by at most 4e-4 (130 seg; 130 fused). The output maxima sit at its final bf16 rounding. Over seeds 0-2
of 0, 3, 70 / 130 / 130, 70 beta ~1 / 400 beta ~1 (serial and seg) the RMS errors are lower in every run:
output 13-25% lower (e.g. 3.3e-4 -> 2.8e-4 on 130, 70 beta ~1), state 3-46% lower (2.4e-3 -> 1.3e-3 on
130, 70 beta ~1; 4.4e-3 -> 2.5e-3 on 400 beta ~1). The max output errors over the 3 seeds, chunk5 / this, are
1.3e-3 / 1.3e-3 (0, 3, 70) and 3.3e-3 / 2.6e-3 (400 beta ~1, serial). DOT_PATH_ON_CPU (130; 1, 63, 64, 65,
0, 130) gives the serial column's numbers. seg with CPU_TILES, SEG_T_SPLIT False and XFER_PRECISION "bf16" on
130, 70 beta ~1: chunk5 2.4e-3 / 2.6e-2, this 2.4e-3 / 1.9e-2.
scripts/la_gpu_errors.py --device cpu --seeds 1 (chunk5 and this file; worst fraction of the contract's
tolerance, output / new_state, over its 7 scenarios): --tokens 130, default CONFIG: chunk5 0.32 / 0.24, this
0.26 / 0.21, every scenario no worse except the contract [130] state (0.13 -> 0.14). --tokens 400, SEG 1
variants of both: chunk5 0.30 / 0.24, this 0.28 / 0.21, every scenario no worse. No element fails in either run.
`kernelcraft eval` of a small copy (sequences 0, 3, 70 and 0, 3, 200: tests/test_linear_attention.py::_small_copy
with SMALL["gdn_prefill"] = [[0, 3, 70], [0, 3, 200]]; `TRITON_INTERPRET=1 PYTHONPATH=src python3 -m kernelcraft
eval <copy> <this file> --device cpu --no-timing`, seed 6717776229027788608; this file again at seed
2946355457835104403): PASSED, this file and its SEG 1 variant (the 200-token sequence in 4 segments).
scripts/gdn_prefill_fault.py's main() on CPU tensors (chunk5's driver) printed ok for lengths 64 and 0,130,5: kernels _kkt, _sc, _wu, _hstate, _out.

**Not yet run on a GPU**: everything below is an estimate, not a measurement. `_wu` moves 0.64x chunk5's bytes.
At chunk5's achieved ~65% of DRAM peak that is ~35 us on the H100 instead of 54: **~33-38 us**. The recurrence
(`_seg` 48, `_pscan` 47, serial `_hstate` / `_out`) is latency-bound over dependent chunk steps. Its per-step
requests are the same size as before, plus one elementwise scale and bf16 conversion of a [64, BV] tile, and
`_pscan` has 44 more registers (same occupancy): assumed -2 to +4 us together. A call at 8192 x 1 should be
~15-20 us faster than chunk5 (itself not yet measured; estimated 195-210 us). At 4096 x 4 and 5783 x 128,
`_wu`'s bytes shrink in the same ratio. If `_wu` turns out latency-bound rather than bandwidth-bound, the gain
is smaller; the first measurement settles it.
Variants to time first (scripts/gdn_prefill_split.py at 8192 x 1 and 4096 x 4, rows `_wu`, `_seg`, `_pscan`,
beside chunk5 on the same warm machine): (1) this file; (2) WU_BK 128 (one program per (value head, chunk):
tb and the scales read once; 146 registers, 3 blocks/SM); (3) WU_WARPS 8; (4) PAR_BV 32 (whether `_pscan`'s
register increase costs at BV 64). If `_seg` / `_pscan` lose more than `_wu` gains, the fallback is chunk5's
recurrence with this `_wu` plus a kd-only store (kd back, qg dropped).
Not addressed: chunk4's H100 error tail (session 24: 3 of 8.4 M output elements past the tolerance at
8192 x 1). The state path has fewer roundings here, so the tail may shrink, but that is unmeasured.

On CPU (the Triton interpreter, whose tl.dot multiplies bf16 storage bits and skips BLAS), products are
broadcast sums on bf16-valued float32 and bf16 stores round to nearest (`_rne_bf16`), as in chunk5; each CPU
path rounds where its GPU code rounds (`_scan`'s CPU path keeps D float32, as before).

Session 26: the Gram loops of `_kkt` and `_scores` run unpipelined (`num_stages=1`): Triton 3.6's two-buffer
pipeline zero-filled a buffer an async wgmma still read (chunk5's docstring, "The race").
"""
import torch
import triton
import triton.language as tl

# chunk3's keys unchanged (SCAN_STAGES 1 left out: Triton 3.6 miscompiles the one-stage scan loop on sm_90,
# AGENTS.md; the segment loops have its shape); SEG*, XFER_*, PAR_BV: the sequence-parallel recurrence.
TUNABLES = {"BV": [8, 16, 32, 64], "KKT_WARPS": [2, 4, 8], "KKT_BK": [32, 64, 128], "KKT_MODE": ["tile3d", "blocks", "scratch"], "KKT_S_ODD": [False, True], "SC_WARPS": [4, 8], "SC_BK": [32, 64, 128], "KKT_MAXNREG": [0, 168], "WU_BK": [32, 64, 128],
            "WU_WARPS": [4, 8], "WU_BF16": [False, True], "TB_BF16": [False, True], "SCAN_WARPS": [2, 4, 8], "SCAN_STAGES": [2, 3],
            "SCAN_SPLIT_O": [True, False], "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8],
            "SEG": [0, 4, 8, 16], "SEG_TARGET": [0, 4, 8, 16], "SEG_TOTAL": [0, 16, 32, 64], "SEG_MAX_N": [4, 16, 64],
            "SEG_BV": [16, 32, 64], "SEG_WARPS": [4, 8], "SEG_T_SPLIT": [True, False], "XFER_BV": [16, 32, 64], "XFER_WARPS": [4, 8],
            "XFER_PRECISION": ["bf16x3", "bf16"], "PAR_BV": [0, 16, 32, 64],
            "DOT_PATH_ON_CPU": [False], "CPU_TILES": [False],
            "RECUR_MAX_T": [0, 16, 32, 64], "RECUR_BV": [0, 4, 8, 16, 32], "RECUR_WARPS": [0, 1, 2, 4],
            "RECUR_PREFETCH": [True, False]}
# KKT_MODE: _kkt's inverse ("tile3d": 64 x 64 tiles, the substitution on a [4, 16, 16] view; "blocks": ten 16 x 16
# Gram blocks, FLA's layout; "scratch": A through tb, read back as 16 x 16 blocks); KKT_S_ODD: the scores in _kkt's
# odd programs (chunk4's split, no _sc launch; _kkt's registers for both halves); SC_*: _sc
CONFIG = {"BV": 0, "KKT_WARPS": 4, "KKT_BK": 64, "KKT_MODE": "tile3d", "KKT_S_ODD": True, "SC_WARPS": 4, "SC_BK": 64, "KKT_MAXNREG": 0, "WU_BK": 128, "WU_WARPS": 4, "WU_BF16": True, "TB_BF16": True,  # BV 0: chosen from N x heads in run()
          "SCAN_WARPS": 4, "SCAN_STAGES": 2, "SCAN_SPLIT_O": True, "OUT_BV": 64, "OUT_WARPS": 4,
          # segment length L = max(SEG, cdiv(longest, SEG_TARGET), cdiv(all chunks, SEG_TOTAL)) chunks (a 0 term is off;
          # SEG 0: always the serial scan); segmented only when N <= SEG_MAX_N
          "SEG": 8, "SEG_TARGET": 8, "SEG_TOTAL": 32, "SEG_MAX_N": 16,
          # PAR_BV 0: 32 where the (segment, head) pairs x V / 32 fit the SMs at one block each, else 64
          "SEG_BV": 64, "SEG_WARPS": 4, "SEG_T_SPLIT": True, "XFER_BV": 32, "XFER_WARPS": 8, "XFER_PRECISION": "bf16x3",
          "PAR_BV": 0,
          # tests only: run _kkt's, _sc's and _wu's GPU code path (tl.dot, float32 operands) on CPU tensors; CPU_TILES: the
          # GPU's column blocks (SEG_BV, XFER_BV, PAR_BV, `_recur`'s BV) on CPU too (else SEG_BV = PAR_BV = V, XFER_BV = 32,
          # `_recur`'s BV = V: fewer programs)
          "DOT_PATH_ON_CPU": False, "CPU_TILES": False,
          # the token-by-token `_recur` (one launch) when T <= RECUR_MAX_T (0: never); RECUR_BV / RECUR_WARPS 0: chosen
          # from N x HV in run(); RECUR_PREFETCH: token t + 1's inputs loaded while token t's state update runs
          "RECUR_MAX_T": 16, "RECUR_BV": 0, "RECUR_WARPS": 0, "RECUR_PREFETCH": True}

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
         MODE: tl.constexpr, S_ODD: tl.constexpr):
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
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (chunk5's docstring)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            kk += _gram(kx, kx, DOT, BF16_DOT)
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
        t = d - _mm(_mm(d, tl.where(half & ~diag, a, 0.0), DOT), d, DOT)  # 16 -> 32
        t = tl.where(half, t, 0.0)
        t = t - _mm(_mm(t, tl.where(half, 0.0, a), DOT), t, DOT)  # 32 -> 64
        tb = t * beta[None, :]
        if CPU:  # a bf16 tb (CONFIG["TB_BF16"]): the interpreter's conversion truncates, the GPU's rounds
            tb = _rne_bf16(tb)
        tl.store(tb_ptr + (rows[:, None] * HV + hv) * BT + rj, tb.to(tb_ptr.dtype.element_ty), mask=valid[:, None])
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
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (chunk5's docstring)
            kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
            kf = kx.to(tl.float32)
            ssk += tl.sum(kf * kf, 1)
            kk += _gram(kx, kx, DOT, BF16_DOT)
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
        for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (chunk5's docstring)
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
    for kc in tl.range(0, K, BK, num_stages=1):  # never pipelined: Triton 3.6's race (chunk5's docstring)
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
def _wu(k_ptr, v_ptr, cu_ptr, tb_ptr, cw_ptr, w_ptr, u_ptr, N,
        H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
        BK: tl.constexpr, BN: tl.constexpr, CPU: tl.constexpr, DOT: tl.constexpr, BF16: tl.constexpr):
    # Columns kc .. kc + BK of W = T diag(beta Gamma / ||k||) k, U = T diag(beta) v (K == V): one program per
    # (column block, value head, chunk), a chunk-head's blocks neighbouring programs, T diag(beta) loaded
    # once. W and U: float32 operands at Triton's default precision (TF32 on the GPU), as chunk2's. chunk5's
    # qg and kd are no longer formed here: the recurrence reads q, k and the scales qs, ks (the docstring).
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
    tb = tb.to(tl.float32)  # a bf16 tb (CONFIG["TB_BF16"]): exact
    aw = tb * tl.load(cw_ptr + lrows * HV + hv)[None, :]
    if BF16:  # CONFIG["WU_BF16"]: T diag(beta) (and its W scaling) rounded to bf16, bf16 x bf16 products, float32
        # sums: FLA's recompute_w_u precision (its A is bf16), half the shared memory and twice the MMA rate of TF32
        kx = _piece(k_ptr, lrows, h, kc, H, K, BK)
        vx = _piece(v_ptr, lrows, hv, kc, HV, V, BK)
        if DOT and not CPU:
            wt = tl.dot(aw.to(tl.bfloat16), kx)
            ut = tl.dot(tb.to(tl.bfloat16), vx)
        else:  # the interpreter's tl.dot is wrong on bf16 operands: bf16-valued float32 instead
            wt = _mm(_rne_bf16(aw), kx.to(tl.float32), DOT)
            ut = _mm(_rne_bf16(tb), vx.to(tl.float32), DOT)
        _st(w_ptr, wt, rows, end, hv, kc, HV, K, CPU)
        _st(u_ptr, ut, rows, end, hv, kc, HV, V, CPU)
    else:
        kx = _piece(k_ptr, lrows, h, kc, H, K, BK).to(tl.float32)
        _st(w_ptr, _mm(aw, kx, DOT), rows, end, hv, kc, HV, K, CPU)
        vx = _piece(v_ptr, lrows, hv, kc, HV, V, BK).to(tl.float32)
        _st(u_ptr, _mm(tb, vx, DOT), rows, end, hv, kc, HV, V, CPU)


@triton.jit
def _st(ptr, x, rows, end, hv, col0, HV: tl.constexpr, W: tl.constexpr, CPU: tl.constexpr):
    # a [rows, n] tile into a [T, HV, W] bf16 buffer at columns col0.., rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * HV + hv) * W + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])


@triton.jit
def _rows(x_ptr, s_ptr, rows, valid, hv, h, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr,
          CPU: tl.constexpr):
    # the raw bf16 rows of q or k (head h) and their per-token float32 scale (qs or ks, value head hv) that
    # chunk5's `_wu` multiplied into qg / kd; the scale is applied to the product's other side instead (see
    # the docstring). valid: [BT] row mask (masked rows read 0, as chunk5's masked qg / kd loads); None: all
    ok = tl.arange(0, K)
    if valid is None:
        x = tl.load(x_ptr + (rows[:, None] * H + h) * K + ok[None, :])
        sv = tl.load(s_ptr + rows * HV + hv)
    else:
        x = tl.load(x_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid[:, None], other=0.0)
        sv = tl.load(s_ptr + rows * HV + hv, mask=valid, other=0.0)
    if CPU:
        x = x.to(tl.float32)
    return x, sv



@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, q_ptr, k_ptr, qs_ptr, ks_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
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
        qx, qs = _rows(q_ptr, qs_ptr, rows, rows < eos, hv, hv // (HV // H), H, HV, K, CPU)
        kx, ks = _rows(k_ptr, ks_ptr, rows, rows < eos, hv, hv // (HV // H), H, HV, K, CPU)
        sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:
            # The interpreter's tl.dot multiplies bf16 storage bits as numbers, and skips BLAS:
            # bf16 values in fp32, products as broadcast sums (the state and the new values
            # stay fp32 here, a little more precise than the GPU's bf16 operands).
            w, sc = w.to(tl.float32), sc.to(tl.float32)
            delta = u - tl.sum(w[:, :, None] * m[None, :, :], axis=1)
            o = qs[:, None] * tl.sum(qx[:, :, None] * m[None, :, :], axis=1) + tl.sum(sc[:, :, None] * delta[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kx[:, :, None] * (ks[:, None] * delta)[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            delta = u - tl.dot(w, mb)
            db = delta.to(tl.bfloat16)
            o = qs[:, None] * tl.dot(qx, mb) + tl.dot(sc, db)
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.dot(tl.trans(kx), (ks[:, None] * delta).to(tl.bfloat16))
    tl.store(ns_ptr + st, m)


@triton.jit
def _hstate(s_ptr, cu_ptr, w_ptr, u_ptr, k_ptr, ks_ptr, gl_ptr, hs_ptr, dn_ptr, ns_ptr,
            H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
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
        kx, ks = _rows(k_ptr, ks_ptr, rows, rows < eos, hv, hv // (HV // H), H, HV, K, CPU)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds
            w = w.to(tl.float32)
            mb = _rne_bf16(m)
            tl.store(hs_ptr + hb + hoff, mb.to(tl.bfloat16))
            d = u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1)
            tl.store(dn_ptr + tv, _rne_bf16(d).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kx[:, :, None] * _rne_bf16(ks[:, None] * d)[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            tl.store(hs_ptr + hb + hoff, mb)
            d = u - tl.dot(w, mb)
            tl.store(dn_ptr + tv, d.to(tl.bfloat16), mask=valid)
            m = tl.dot(tl.trans(kx), (ks[:, None] * d).to(tl.bfloat16), gl * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _out(cu_ptr, q_ptr, qs_ptr, sc_ptr, hs_ptr, dn_ptr, o_ptr, N,
         H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, CPU: tl.constexpr):
    # o = diag(qs) (q M_c) + S delta per (V block, chunk, value head), every chunk in parallel; the V blocks of
    # one chunk are neighbouring programs (q and S from L2 for the second)
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
    qx, qs = _rows(q_ptr, qs_ptr, rows, rows < end, hv, hv // (HV // H), H, HV, K, CPU)
    sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
    mb = tl.load(hs_ptr + hb + ok[:, None] * V + ov[None, :])
    db = tl.load(dn_ptr + tv, mask=valid, other=0.0)
    if CPU:
        sc, mb, db = sc.to(tl.float32), mb.to(tl.float32), db.to(tl.float32)
        o = qs[:, None] * tl.sum(qx[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
        o = _rne_bf16(o)
    else:
        o = tl.dot(sc, db, qs[:, None] * tl.dot(qx, mb))
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
def _seg_steps(m, w_ptr, u_ptr, k_ptr, ks_ptr, gl_ptr, cs0, nrows, hv, oc,
               H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, HAS_U: tl.constexpr,
               SPLIT: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr):
    # _hstate's step M <- g M + k^T diag(ks) (U - W M) over full chunks cs0 .. cs0 + nrows (no masks), U = 0
    # without HAS_U. SPLIT: M and the new values D = diag(ks) (U - W M) enter the products as bf16 pairs hi +
    # lo (hi = bf16(x), lo = bf16(x - hi): ~16 significant bits, four bf16 products a chunk instead of two)
    ok = tl.arange(0, K)
    ri = tl.arange(0, BT)
    for cs in tl.range(cs0, cs0 + nrows, BT, num_stages=STAGES):
        rows = cs + ri
        tk = (rows[:, None] * HV + hv) * K + ok[None, :]
        w = tl.load(w_ptr + tk)
        kx, ks = _rows(k_ptr, ks_ptr, rows, None, hv, hv // (HV // H), H, HV, K, CPU)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds (_hstate's)
            w = w.to(tl.float32)
            if SPLIT:
                mh = _rne_bf16(m)
                ml = _rne_bf16(m - mh)
                d = -(tl.sum(w[:, :, None] * mh[None, :, :], axis=1) + tl.sum(w[:, :, None] * ml[None, :, :], axis=1))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                d = ks[:, None] * d
                dh = _rne_bf16(d)
                dl = _rne_bf16(d - dh)
                m = gl * m + (tl.sum(kx[:, :, None] * dh[:, None, :], axis=0) + tl.sum(kx[:, :, None] * dl[:, None, :], axis=0))
            else:
                d = -tl.sum(w[:, :, None] * _rne_bf16(m)[None, :, :], axis=1)
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                m = gl * m + tl.sum(kx[:, :, None] * _rne_bf16(ks[:, None] * d)[:, None, :], axis=0)
        else:
            if SPLIT:
                mh = m.to(tl.bfloat16)
                d = -tl.dot(w, (m - mh.to(tl.float32)).to(tl.bfloat16), tl.dot(w, mh))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                d = ks[:, None] * d
                dh = d.to(tl.bfloat16)
                m = tl.dot(tl.trans(kx), (d - dh.to(tl.float32)).to(tl.bfloat16), tl.dot(tl.trans(kx), dh, gl * m))
            else:
                d = -tl.dot(w, m.to(tl.bfloat16))
                if HAS_U:
                    d += tl.load(u_ptr + (rows[:, None] * HV + hv) * V + oc[None, :]).to(tl.float32)
                m = tl.dot(tl.trans(kx), (ks[:, None] * d).to(tl.bfloat16), gl * m)
    return m


@triton.jit
def _seg(s_ptr, cu_ptr, w_ptr, u_ptr, k_ptr, ks_ptr, gl_ptr, hb_ptr, ab_ptr, N,
         H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
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
        m = _seg_steps(m, w_ptr, u_ptr, k_ptr, ks_ptr, gl_ptr, cs0, seg_len * BT, hv, oc, H, HV, K, V, BT, False, T_SPLIT,
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
        m = _seg_steps(m, w_ptr, u_ptr, k_ptr, ks_ptr, gl_ptr, cs0, seg_len * BT, hv, oc, H, HV, K, V, BT, True, False,
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
def _pscan(s_ptr, cu_ptr, w_ptr, u_ptr, q_ptr, k_ptr, qs_ptr, ks_ptr, sc_ptr, gl_ptr, hb_ptr, o_ptr, ns_ptr, N,
           H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
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
        qx, qs = _rows(q_ptr, qs_ptr, rows, rows < ce, hv, hv // (HV // H), H, HV, K, CPU)
        kx, ks = _rows(k_ptr, ks_ptr, rows, rows < ce, hv, hv // (HV // H), H, HV, K, CPU)
        sc = tl.load(sc_ptr + (rows[:, None] * HV + hv) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + cs * HV + hv)
        if CPU:
            w, sc = w.to(tl.float32), sc.to(tl.float32)
            mb = _rne_bf16(m)
            d = u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1)
            db = _rne_bf16(d)
            o = qs[:, None] * tl.sum(qx[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl * m + tl.sum(kx[:, :, None] * _rne_bf16(ks[:, None] * d)[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            d = u - tl.dot(w, mb)
            o = qs[:, None] * tl.dot(qx, mb) + tl.dot(sc, d.to(tl.bfloat16))
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = gl * m + tl.dot(tl.trans(kx), (ks[:, None] * d).to(tl.bfloat16))
    if last:
        tl.store(ns_ptr + st, m)


@triton.jit
def _softplus(x):
    # torch's softplus (threshold 20), as `_gates`' (and gdn_decode's): max(x, 0) + log1p(e^-|x|), log1p by its
    # series where e^-|x| is tiny
    e = tl.exp(-tl.abs(x))
    return tl.where(x > 20.0, x, tl.maximum(x, 0.0) + tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e)))


@triton.jit
def _recur_in(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, t, hv, h, ov, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr,
              V: tl.constexpr):
    # token t's raw inputs for one program: q and k rows of q/k head h as [1, K] and v's BV columns as [BV, 1], so
    # that they come in the state tile's own layout (every warp holds the whole q / k row: no layout conversion
    # through shared memory, no cross-warp reduction for the norms); a and b of value head hv. int32 offsets: the
    # largest, T HV V, is < 2^26 for T <= 65536.
    ok = tl.arange(0, K)[None, :]
    qx = tl.load(q_ptr + (t * H + h) * K + ok)
    kx = tl.load(k_ptr + (t * H + h) * K + ok)
    vx = tl.load(v_ptr + (t * HV + hv) * V + ov[:, None])
    ax = tl.load(a_ptr + t * HV + hv)
    bx = tl.load(b_ptr + t * HV + hv)
    return qx, kx, vx, ax, bx


@triton.jit
def _recur(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, o_ptr, ns_ptr, scale, T,
           H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr,
           PREFETCH: tl.constexpr, CPU: tl.constexpr):
    # The gated delta rule token by token in one launch (short inputs): one program per (BV rows of the k-last
    # state, sequence n, value head hv), the [BV, K] state tile in float32 registers for the whole sequence
    # (gdn_decode's tile: rows contiguous 128-float lines, every reduction along K inside a warp). Per token, in
    # the reference's order of operations: q^, k^ = x / sqrt(sum x^2 + 1e-6); g = exp(-exp(A_log) softplus(a +
    # dt_bias)); beta = sigmoid(b); S = g S; pred = S k^; delta = beta v - beta pred; S += delta k^T;
    # o = scale (S q^) (bf16). An empty sequence stores its initial state as loaded (bit for bit).
    # PREFETCH: token t + 1's inputs (none of which depend on the state) are loaded before token t's update, so
    # their global-memory latency overlaps it; the index is clamped to T - 1 (a valid row: T >= 1), the values
    # past the sequence's end are never used.
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)  # sequence * HV + value head
    n = pid_nh // HV
    hv = pid_nh % HV
    h = hv // (HV // H)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    bos = tl.load(cu_ptr + n).to(tl.int32)
    eos = tl.load(cu_ptr + n + 1).to(tl.int32)
    offs = pid_nh.to(tl.int64) * V * K + ov[:, None] * K + ok[None, :]
    s = tl.load(s_ptr + offs)
    na = -tl.exp(tl.load(alog_ptr + hv))
    dtb = tl.load(dtb_ptr + hv)
    if PREFETCH:
        qx, kx, vx, ax, bx = _recur_in(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, tl.minimum(bos, T - 1), hv, h, ov,
                                       H, HV, K, V)
    for t in tl.range(bos, eos):
        if PREFETCH:
            qc, kc, vc, ac, bc = qx, kx, vx, ax, bx
            qx, kx, vx, ax, bx = _recur_in(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, tl.minimum(t + 1, T - 1), hv, h, ov,
                                           H, HV, K, V)
        else:
            qc, kc, vc, ac, bc = _recur_in(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, t, hv, h, ov, H, HV, K, V)
        qf = qc.to(tl.float32)
        kf = kc.to(tl.float32)
        qn = qf / tl.sqrt(tl.sum(qf * qf, 1, keep_dims=True) + 1e-6)  # [1, K]
        kn = kf / tl.sqrt(tl.sum(kf * kf, 1, keep_dims=True) + 1e-6)
        g = tl.exp(na * _softplus(ac.to(tl.float32) + dtb))
        beta = tl.sigmoid(bc.to(tl.float32))
        s = s * g
        pred = tl.sum(s * kn, 1, keep_dims=True)  # [BV, 1]
        d = beta * vc.to(tl.float32) - beta * pred
        s = s + d * kn
        o = scale * tl.sum(s * qn, 1, keep_dims=True)
        if CPU:  # the interpreter's bf16 conversion truncates, the GPU's rounds
            o = _rne_bf16(o)
        tl.store(o_ptr + (t * HV + hv) * V + ov[:, None], o.to(tl.bfloat16))
    tl.store(ns_ptr + offs, s)

_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 132  # the H200's (meta tensors in scripts/triton_regs.py; CPU runs take whole tiles)
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SMS:
        _SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SMS[idx]


def _recur_tile(nh, V, sms):
    """(BV, num_warps) of `_recur` for nh = N x HV (sequence, value head) pairs. A program's per-token work is a
    chain of dependent steps (two norms, decay, S k, the rank-1 write, S q: three warp-shuffle reductions in
    series), so a token costs latency, not throughput; programs are one warp each (gdn_decode's H200 sweep: BV 8 /
    1 warp at small batch, BV 4 / 1 warp from batch 64 up). With more warps Triton 3.6 lays the loop out with
    warps along K (the [1, K] q / k rows' layout), so every reduction crosses warps through shared memory (2 KiB,
    a barrier each) and the state tile is converted before and after the loop. BV 4: 64 registers, 256 programs
    at one sequence (nh 8: ~2 per SM of the H200's 132, each SM's pair on different schedulers); BV 8: 96
    registers, for nh >= 16 (256 programs and up). A smaller BV halves the per-token FMAs (16 state elements a
    thread instead of 32) and adds only L2 reads of the same q / k rows; the reduction chain is the same.
    Session 30 (H100 sweep): BV 8 led BV 4 at every nh timed (8-64), so BV 8 up to nh 512, BV 4 above."""
    bv = CONFIG["RECUR_BV"]
    if bv == 0:
        # H100, session 30 (scripts/la_s30.sh, do_bench): BV 8 led BV 4 at every nh timed, 8 to 64 (1 token
        # 5.47 vs 6.03 us, 16 tokens 17.2 vs 19.6, 64 x 8 sequences 22.5 vs 25.5); BV 4 kept for nh >= 512
        # (gdn_decode's H200 optimum from batch 64 up), not timed here
        bv = 8 if nh < 512 else 4
    bv = min(bv, V)
    warps = CONFIG["RECUR_WARPS"] or 1
    return bv, warps


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
    if T <= CONFIG["RECUR_MAX_T"]:  # short input: `_recur` alone, token by token (T from the shape: no sync)
        rbv, rw = _recur_tile(N * HV, V, _num_sms(dev))
        if cpu and not CONFIG["CPU_TILES"]:  # the interpreter's cost is per program and per op, not per element
            rbv = V
        assert V % rbv == 0, "`_recur` has no column masks"
        _recur[(V // rbv, N * HV)](
            q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, out, new_state, float(scale), T,
            H=H, HV=HV, K=K, V=V, BV=rbv, PREFETCH=CONFIG["RECUR_PREFETCH"], CPU=cpu, num_warps=rw,
        )
        return out, new_state
    w = torch.empty((T, HV, K), dtype=torch.bfloat16, device=dev)
    u = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, HV, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, HV), dtype=torch.float32, device=dev)
    # T diag(beta), a chunk's row i at its token; bf16 with TB_BF16 (only "tile3d" writes it once, the other modes
    # use it as float32 scratch)
    assert not CONFIG["TB_BF16"] or CONFIG["KKT_MODE"] == "tile3d", "TB_BF16 needs KKT_MODE tile3d"
    tb = torch.empty((T, HV, BT), dtype=torch.bfloat16 if CONFIG["TB_BF16"] else torch.float32, device=dev)
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
        MODE=CONFIG["KKT_MODE"], S_ODD=s_odd, num_warps=CONFIG["KKT_WARPS"],
        **({"maxnreg": CONFIG["KKT_MAXNREG"]} if CONFIG["KKT_MAXNREG"] and not cpu else {}),
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
        k, v, cu_seqlens, tb, cw, w, u, N,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=wbk, BN=bn, CPU=cpu, DOT=dot, BF16=CONFIG["WU_BF16"],
        num_warps=CONFIG["WU_WARPS"],
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
        _seg[((V + K) // sbv, nseg1, HV)](state, cu_seqlens, w, u, k, ks, gl, hb, ab, N, H=H, HV=HV, K=K, V=V, BT=BT, BV=sbv,
                                            T_SPLIT=CONFIG["SEG_T_SPLIT"], num_warps=CONFIG["SEG_WARPS"], **plan)
        _xfer[(V // xbv, N, HV)](cu_seqlens, hb, ab, N, HV=HV, K=K, V=V, BT=BT, BV=xbv, PREC=CONFIG["XFER_PRECISION"],
                                 num_warps=CONFIG["XFER_WARPS"], **plan)
        _pscan[(V // pbv, nseg3, HV)](state, cu_seqlens, w, u, q, k, qs, ks, sc, gl, hb, out, new_state, N,
                                      H=H, HV=HV, K=K, V=V, BT=BT, BV=pbv, num_warps=CONFIG["SCAN_WARPS"], **plan)
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
            state, cu_seqlens, w, u, q, k, qs, ks, sc, gl, out, new_state,
            H=H, HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
        )
        return out, new_state
    hs = torch.empty((nc, HV, K, V), dtype=torch.bfloat16, device=dev)  # state before each chunk
    dn = torch.empty((T, HV, V), dtype=torch.bfloat16, device=dev)  # delta = U - W M
    _hstate[(triton.cdiv(V, bv), nh)](
        state, cu_seqlens, w, u, k, ks, gl, hs, dn, new_state,
        H=H, HV=HV, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    obv = V if cpu else min(CONFIG["OUT_BV"], V)
    _out[(triton.cdiv(V, obv), nc, HV)](cu_seqlens, q, qs, sc, hs, dn, out, N, H=H, HV=HV, K=K, V=V, BT=BT, BV=obv,
                                         BN=bn, CPU=cpu, num_warps=CONFIG["OUT_WARPS"])
    return out, new_state
