"""Chunked Kimi Delta Attention prefill without the `_gate` launch: candidates/triton_intra7.py (`_recur`, `_inv`,
`_hstate`, `_out`, run()'s short path and CONFIG / TUNABLES mechanism unchanged; its docstring follows below) whose
two readers of the cumulative decay, `_intra` and `_wu`, form it themselves from the raw gate input `a`.
(`_hstate` and `_out` never read gamma: they take exp(gamma_C) from `gl` and the decayed kd / qg from `_wu`.)

Why: on an H100 (session 24's split at 8192 x 1) `_gate` takes 95 us of intra7's 1,190: it reads a (bf16, 67 MB)
and writes gamma2 (float32 [T, H, K], 134 MB) that `_intra` and `_wu` read back (134 MB each).

What changed
1. `_gate` is not launched (CONFIG INTRA_FROM_A and WU_FROM_A, both True; either False launches intra7's `_gate` and
   that reader loads gamma2 as intra7 did: both False is intra7 bit for bit on CPU). `_gt` forms
   g = -exp(A_log) softplus(a + dt_bias) on a tile (0 on padded rows, so cumulative sums stay flat past a
   sequence's end), with log(1 + e) by `lg2.approx` (inline PTX, the MUFU) on the GPU: tl.log / tl.log2 are
   libdevice routines (~30 instructions each); the interpreter keeps tl.log (intra7's arithmetic).
2. `_intra`, `_diag` (INTRA_FROM_A): one [16, BKI] tile of `a` per channel slice instead of five float32 tiles
   (gamma2 at the rows and at the four levels' reference rows). The diagonal block only takes differences inside
   the sub-chunk, so gs = the sub-chunk's own inclusive cumsum (no carry from earlier sub-chunks: not bit for bit
   intra7's, slightly more exact); each level's reference row (r // 2L) 2L + L is picked in registers (`_rowref`:
   reshape to [16 / 2L, 2L, BKI], a masked sum over the middle axis, broadcast back; exact; checked against the
   index formula for L = 8, 4, 2, 1 in the interpreter). intra7's clamp to end - 1 is implicit (gs flat past end).
3. `_intra`, `_offd_row`: gamma2 of the chunk's rows 0 .. I's last in 16-row steps with intra7's `_gate` carry
   (`carry + cumsum(g) * log2 e`, carry = the last row; CPU: bit for bit `_gate`'s values), J = 0 .. I - 1 tiles
   kept for `_offd` (+3 [16, 16] tiles), r = gamma2 at I's first row by a one-term masked sum.
4. `_wu` (WU_FROM_A): a [64, BK] tile of `a`, one 64-row tl.cumsum (not `_gate`'s 16-row steps: CPU results differ
   from intra7 by rounding only), gamma2 at the last row by a one-term masked sum (padded rows add 0, so this is
   the last valid row's value, what intra7 loaded). 126 -> 134 registers (3 blocks per SM): new WU_MAXNREG 128
   (default; 0: no cap) gives 128, no spills, 4 blocks per SM again.
5. Nothing else merged: `_inv` into `_intra` was intra6 (serialised the inverse); `_hstate` / `_out` reading
   kd / qg from k, q and `a` would put the decay on `_hstate`'s serial path or double `_out`'s reads.
   `gl` is still allocated [T, H, K] (only chunk starts written: allocation only, no traffic).

Bytes at 8192 x 1 (32 heads, K 128; DRAM, each tensor once): `_gate` gone (-67 MB a read, -134 MB gamma2 write);
`_intra` -134 + 67 (gamma2 -> a); `_wu` -134 + 67. In all ~ -335 MB of ~1.2 GB and one launch (~100 us at H100
bandwidth, where `_gate` took 95 and `_wu` is memory-bound: ~ -20 us there). But the work moves: static PTX
(Triton 3.6, sm_90) per `_intra` channel slice, diagonal-block loop 803 -> 1,253 instructions, off-diagonal loop
~590 -> ~1,850 (four softplus tiles and cumsums at I = 3), shfl.sync 61 -> 469 in the kernel (the row cumsums,
carries and `_rowref`; shuffles issue at a quarter rate); `_wu` 965 -> 2,465 (shfl 9 -> 125). `_intra` is
latency-bound with ~40% issue use (447 us); doubling its instructions may cost it more than the 95 us saved.
That is why INTRA_FROM_A / WU_FROM_A are knobs: time (True, True), (False, True) and intra7.

CPU check (Triton 3.9 interpreter, 2026-12-08; `TRITON_INTERPRET=1 PYTHONPATH=src python3
scripts/kda_prefill_cpu_check.py a a_s b c c_s e g f h j intra7 intra8 intra8_chunked intra8_gate
intra8_wu_from_a`): every element within the contract (output atol 5e-3, state 5e-2, rtol 1.6e-2), empty
sequences bit for bit in every row; max |error| output / new_state, and intra8's largest difference from intra7:
    case  lengths (decays)               intra7             intra8 (CONFIG)    intra8 - intra7
    a     0, 3, 70                       7.95e-4 / 5.52e-3  7.95e-4 / 5.52e-3  1.5e-5 / 7.9e-5
    a_s   0, 3, 70 (~exp(-49))           2.53e-4 / 2.38e-3  2.53e-4 / 2.38e-3  0 / 0
    b     130                            7.69e-4 / 5.57e-3  7.69e-4 / 5.57e-3  3.8e-6 / 3.1e-5
    c     1, 63, 64, 65, 0, 130          1.19e-3 / 7.25e-3  1.19e-3 / 7.25e-3  1.2e-4 / 9.1e-5
    c_s   c's (~exp(-49))                4.02e-4 / 5.36e-3  4.02e-4 / 5.36e-3  1.5e-5 / 1.3e-7
    e     130, 70 (beta ~1, no decay)    2.55e-3 / 2.39e-2  2.55e-3 / 2.39e-2  0 / 0
    g     3, 70, 0, 130                  1.06e-3 / 5.06e-3  1.06e-3 / 5.06e-3  1.5e-5 / 1.6e-4
    f     1 (32 heads)                   9.63e-4 / 3.17e-6  = intra7 (_recur)  chunked: 1.02e-3 / 5.95e-3
    h     0, 1, 5, 0, 7                  8.49e-4 / 5.47e-6  = intra7 (_recur)  chunked: 1.10e-3 / 4.44e-3
    j     3, 13                          4.87e-4 / 4.61e-6  = intra7 (_recur)  chunked: 7.81e-4 / 3.85e-3
intra8_gate (both knobs False) equals intra7 bit for bit (0 / 0) in every row; intra8_wu_from_a (`_gate` for
`_intra` only) differs by <= 1.2e-4 / 9.6e-5. f, h, j (T <= 64) run `_recur`, unchanged (0 / 0); `chunked:` is intra8_chunked
(RECUR_MAX_T 0), the chunked path on them. With INTRA_ / PREP_GPU_PATH_ON_CPU (`intra8_gpupath`, cases a a_s b c c_s e g, a
first run before item 5's refactor of the buffer path): within the contract, e.g. e 2.55e-3 / 2.39e-2.

Registers for sm_90 at 8192 x 1 (`PYTHONPATH=/tmp/t36:src python3 scripts/triton_regs.py tasks/kda_prefill FILE
--axes total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_heads=32,head_size=128`, Triton 3.6; other CONFIGs by
`scripts/kda_prefill_cpu_check.py --regs`): no spills anywhere.
    kernel   intra7                          intra8 (this CONFIG)               intra8 knob off
    _gate    80 / 4096 B / 12 blocks         not launched                       80 / 4096 B / 12
    _intra   168 / 2560 B / 12 (1 warp)      168 / 3072 B / 12                  168 / 2560 B / 12 (INTRA_FROM_A F)
    _wu      126 / 16384 B / 4 (4 warps)     128 (capped) / 16384 B / 4         134 / 16384 B / 3 (WU_MAXNREG 0)
    _inv, _hstate, _out unchanged (185 / 10, 85 / 2, 75 / 4).

**Not run on a GPU; estimate, not a measurement.** Best case ~ -115 us at 8192 x 1 (`_gate` 95 gone, `_wu` ~20
faster), 1,190 -> ~1,075 (~1.11x FLA); the risk is `_intra` (latency-bound, 1-warp programs) growing by more than
that. To time: `gdn_prefill_split.py --task kda_prefill` at the shipped CONFIG, INTRA_FROM_A False (`_gate` kept
for `_intra` alone), WU_MAXNREG 0, and intra7. Run its first GPU call under compute-sanitizer (inline PTX).

intra7's docstring:

Chunked Kimi Delta Attention prefill for long inputs, one token-by-token launch for short ones:
solutions/triton_intra5.py (every kernel, helper and buffer unchanged but `_wu`'s bf16 products, item 3; its
run() unchanged past the new branch) plus `_recur`, which runs the whole KDA recurrence in one launch. run() sends
T = q.shape[0] <= RECUR_MAX_T (default 64 since session 30; 0: never) to `_recur` alone, anything longer to intra5's six
launches (_gate, _intra, _inv, _wu, _hstate, _out). T is the host's (a shape): no device sync. intra5's
description is in its own docstring.

Why: on an H100 intra5 is ahead of FLA's chunk_kda at long sequences but takes 0.0533 ms at the single_token
workload (total_seq_len 1, num_seqs 1) against FLA's chunked 0.0387 ms: six launches and their scratch buffers
for one token. A peer now being added (FLA's fused recurrent kernel) is one launch; a chunked algorithm cannot
get there, a recurrence can.

What changed
1. `_recur`, grid (V / BV, N * H): one program per (V-block, sequence, head) loads its tile of the k-last state,
   S[n, h, v-block, :] as [BV, K] float32 (K along the 32 lanes, 4 per thread, so S k and S q are reductions
   within a warp), loops t over [cu_seqlens[n], cu_seqlens[n + 1]) and per token, as the definition's reference
   orders it: q^, k^ = x / sqrt(sum x^2 + 1e-6) (float32, sqrt_rn and div_rn: correctly rounded, as torch's);
   g = exp(-exp(A_log[h]) * softplus(a + dt_bias[h])) with intra5's `_softplus` (torch's threshold 20:
   x > 20 gives x, else max(x, 0) + log1p(e^-|x|), = log1p(e^x)); beta = sigmoid(b); S <- S diag(g) (decay
   first); pred = S k^; delta = beta v - beta pred (the reference's addcmul); S <- S + delta k^T; o = scale (S q^),
   stored bf16 at [t, h, v-block] (rounded to nearest; on CPU by `_rne_bf16`, the interpreter truncates). After
   the loop S is stored to new_state as float32: a sequence of length 0 stores the tile it loaded, bit for bit.
   The state never leaves float32 (the chunked path rounds it to bf16 for its products). RECUR_PREFETCH (default
   on): token t + 1's q, k, a, v, b loads are issued before token t's arithmetic (masked past the end), so only
   the first token waits on global memory inside the loop.
2. run(): `if T <= CONFIG["RECUR_MAX_T"]: return _run_recur(...)` before intra5's allocations. CONFIG / TUNABLES
   gain RECUR_MAX_T (16; 0, 16, 32, 64), RECUR_BV (0 = automatic; 8, 16, 32, 64), RECUR_WARPS (1; 1, 2, 4),
   RECUR_PREFETCH (True; False), and the test-only RECUR_BV_ON_CPU (keep the GPU's BV on CPU; by default the
   interpreter takes BV = V, one program per (sequence, head), as intra5's scans do).
3. WU_BF16 (new CONFIG / TUNABLES key, default True) and TB_BF16 (intra5's knob) now True, the long path's only
   change: `_wu`'s W = T diag(beta) (exp(gamma) k^) and U = T diag(beta) v are bf16 x bf16 tensor-core products
   with float32 sums (T diag(beta) stored bf16 by `_inv`, exp(gamma) k^ rounded to bf16, v bf16 as given) instead
   of float32 operands (TF32) with a float32 tb. kd, qg, gl as before. Why: on an H100 intra5's `_wu` takes 250 us
   at 8192 x 1 against FLA's recompute_w_u 181 us, which does these products in bf16; gdn_prefill's triton_chunk7
   / chunk8 made the same change (WU_BF16, TB_BF16) and went ~1.01x -> 1.17x FLA. W and U are stored bf16 either
   way. CPU: the operands are rounded to nearest bf16 (`_rne_bf16`) and multiplied in float32 (the interpreter's
   bf16 tl.dot is wrong), so the CPU error is the GPU's rounding. `_wu`'s GPU branch loads v after storing W (one
   bf16 tile fewer live across the first dot: 136 -> 126 registers at this CONFIG). WU_BF16 False with TB_BF16
   False is intra5.
   CPU check (2026-12-07, `TRITON_INTERPRET=1 PYTHONPATH=src python3 scripts/kda_prefill_cpu_check.py a a_s b c
   c_s e g intra5 intra7_tf32wu intra7 intra5_tf32emu intra7_wubf16_tf32emu`): every element within the contract,
   empty sequences bit for bit; max |error| output / new_state (2 heads; `_tf32emu`: CPU_TF32, the other kernels'
   TF32 operands truncated as well, intra5's GPU estimate):
       case  lengths (decays)               intra5            intra7 (CONFIG)   intra5 tf32emu    intra7 tf32emu
       a     0, 3, 70                       7.95e-4 / 5.62e-3 7.95e-4 / 5.52e-3 7.95e-4 / 5.64e-3 7.95e-4 / 5.74e-3
       a_s   0, 3, 70 (~exp(-49))           2.55e-4 / 2.04e-3 2.53e-4 / 2.38e-3 2.55e-4 / 2.18e-3 2.53e-4 / 2.38e-3
       b     130                            7.69e-4 / 5.51e-3 7.69e-4 / 5.57e-3 7.69e-4 / 5.04e-3 7.69e-4 / 6.15e-3
       c     1, 63, 64, 65, 0, 130          1.19e-3 / 6.32e-3 1.19e-3 / 7.25e-3 1.19e-3 / 6.66e-3 1.19e-3 / 8.08e-3
       c_s   c's (~exp(-49))                2.97e-4 / 2.86e-3 4.02e-4 / 5.36e-3 3.59e-4 / 2.70e-3 4.02e-4 / 5.36e-3
       e     130, 70 (beta ~1, no decay)    2.03e-3 / 2.39e-2 2.55e-3 / 2.39e-2 2.41e-3 / 2.39e-2 2.11e-3 / 2.28e-2
       g     3, 70, 0, 130                  1.06e-3 / 4.53e-3 1.06e-3 / 5.06e-3 1.06e-3 / 4.75e-3 1.06e-3 / 5.08e-3
   (contract: output atol 5e-3, state 5e-2, rtol 1.6e-2). intra7_tf32wu (WU_BF16 False, TB_BF16 False) equals
   intra5 bit for bit (0 / 0) in every row; with _intra / _inv / _wu's GPU code paths on CPU (INTRA_ /
   PREP_GPU_PATH_ON_CPU) b and e also pass. Strong decay (c_s) roughly doubles the state error (still ~1/10 of
   atol); beta ~1 (e) raises the output error 2.0e-3 -> 2.6e-3 (half of atol).
   Registers for sm_90 at 8192 x 1 (scripts/triton_regs.py, Triton 3.6; `_wu` never spills):
       WU_BF16 TB_BF16   _wu registers / shared / blocks per SM   _inv registers / spills / shared / blocks per SM
       False   False     125 / 32768 B / 4   (intra5)              168 / 8 B st, 8 B ld / 3136 B / 12  (intra5)
       False   True      128 / 24576 B / 4                         185 / 0 / 7168 B / 10
       True    False     133 / 16384 B / 3                         168 / 8 B st, 8 B ld / 3136 B / 12
       True    True      126 / 16384 B / 4   (this CONFIG)         185 / 0 / 7168 B / 10  (this CONFIG)
   (TB_BF16's bf16 stores cost `_inv` 17 registers and 4 KiB of shared memory, and drop its 8 B spill: one-warp
   programs, 12 -> 10 blocks per SM.) **Not run on a GPU**: the expected gain is in `_wu` (half the tb bytes, bf16
   MMA at twice TF32's rate, half the operand shared memory), to be timed against WU_BF16 False / TB_BF16 False.

Defaults, from the register report below (no GPU run yet):
* RECUR_WARPS 1. At one warp the [K] vectors' default blocked layout (4 consecutive channels a thread, 32
  lanes) is the state tile's column slice, so Triton's layout conversions are register no-ops and the l2 norms
  reduce within the warp: 1 bar.sync in the PTX. At 2 or 4 warps the [K] loads are spread over the warps and
  every token pays shared-memory round trips with barriers (14 bar.sync in the PTX: the two norms' cross-warp
  reductions and the conversions of q^, k^, g and o), on the token-serial path.
* RECUR_BV 0 -> 8 when N * H <= 32, else 16: at the task's 32 heads that is >= 512 one-warp programs (single
  token: 16 x 32 = 512, ~3.9 per SM of the H200's 132 and the H100's 132, i.e. about one warp per SM
  sub-partition, each with 8 x 16 B of state loads in flight per thread); 116 registers at BV 8, 162 at BV 16;
  BV 32 at one warp is 238 (too near 255 to be a default); BV 16 keeps N * H >= 64 at >= 512 programs.
* RECUR_MAX_T 64 (16 as first briefed): session 30's H100 sweep (scripts/la_s30.sh, do_bench, us) had `_recur`
  at 6.8 / 19.7 / 33.2 / 60.3 at 1 / 16 / 32 / 64 tokens and FLA's fused recurrent at 39.9-99.1 there; intra5's
  six launches cost >= 0.053 ms of device time even at one token (session 28's graph replays), so `_recur` is
  at least level with the chunked path up to 64 tokens on the device and ahead in an eager host's view.

CPU check (Triton 3.9 interpreter, 2026-12-07; `TRITON_INTERPRET=1 PYTHONPATH=src python3
scripts/kda_prefill_cpu_check.py CASES intra5 intra7 intra7_chunked`): max |error| against the definition's
float64 reference, output / new_state; every element within the contract (output atol 5e-3, state 5e-2, rtol
1.6e-2) and empty sequences bit for bit in every row. intra7 = shipped CONFIG (these T <= 16 go to `_recur`);
intra7_chunked = RECUR_MAX_T 0, identical to intra5 (0 / 0) in every row (this table predates item 3: with
WU_BF16 / TB_BF16 True, intra7_chunked is item 3's path; `_recur`'s column is unchanged, j rechecked).
    case   lengths (heads)            decays      intra5 (= intra7_chunked)   intra7 (_recur)
    f      1 (32)                     ordinary    1.0e-3 / 5.2e-3             9.6e-4 / 3.2e-6
    k32_s  1 (32)                     ~exp(-49)   2.3e-4 / 4.5e-3             1.2e-4 / 1.9e-7
    h      0, 1, 5, 0, 7 (2)          ordinary    1.1e-3 / 5.2e-3             8.5e-4 / 5.5e-6
    h32    0, 1, 5, 0, 7 (32)         ordinary    1.3e-3 / 6.6e-3             9.7e-4 / 6.9e-6
    h32_s  0, 1, 5, 0, 7 (32)         ~exp(-49)   3.3e-4 / 3.8e-3             1.6e-4 / 2.2e-7
    i      16 (2)                     ordinary    8.1e-4 / 3.8e-3             8.1e-4 / 2.1e-6
    i32    16 (32)                    ordinary    1.1e-3 / 7.8e-3             9.6e-4 / 9.8e-6
    j      3, 13 (2)                  ordinary    7.8e-4 / 3.2e-3             4.9e-4 / 4.6e-6
    j_s    3, 13 (2)                  ~exp(-49)   2.0e-4 / 3.4e-3             1.1e-4 / 7.0e-8
    j_e    3, 13 (2): beta ~1, no     -           1.2e-3 / 1.1e-2             9.5e-4 / 8.4e-7
             decay, keys at cosine ~0.9
`_recur`'s output error is the bf16 rounding of the output (|output| <= ~0.4), its state error float32's.
With the GPU's V-blocks on CPU (RECUR_BV_ON_CPU: the automatic BV 8, 16 or 32 x 32 programs; and BV 16 with
RECUR_PREFETCH off) the results equal the BV = V run bit for bit (0 / 0) on f, h, j, j_e, k32_s. The T > 16 path
is intra5's: intra7 (shipped CONFIG then) against intra5 0 / 0 on `a` (0, 3, 70; 2 heads) and `c_s` (1, 63, 64, 65,
0, 130; ~exp(-49)); since item 3 that holds with WU_BF16 and TB_BF16 False (item 3's table).
The gauntlet on a small copy of the task (tests/test_linear_attention.py::_small_copy with kda_prefill's
workloads set to lengths [1], [0, 1, 5, 0, 7], [16], [3, 13] and [0, 40] at 32 heads; `TRITON_INTERPRET=1
PYTHONPATH=src python3 -m kernelcraft eval <copy> tasks/kda_prefill/candidates/triton_intra7.py --device cpu
--no-timing --cpu-max-mb 32`, the default 16 MB limit skips the 22 MB 5-sequence workload): PASSED, 5 of 5;
worst |error| 8.8e-4, 9.7e-4, 9.6e-4, 9.7e-4 on the four `_recur` workloads, 6.8e-3 on [0, 40] (intra5's path);
~4-5 min on this loaded 2-core machine. (With the default limit: PASSED, 4 of 5, the 5-sequence one skipped.)

Registers for sm_90, no GPU (`PYTHONPATH=/tmp/t36:src python3 scripts/triton_regs.py tasks/kda_prefill <file>
--axes total_seq_len=1,num_seqs=1,len_cu_seqlens=2,num_heads=32,head_size=128 --axes total_seq_len=16,
num_seqs=4,len_cu_seqlens=5,num_heads=32,head_size=128`, the device's Triton 3.6; the other BV / warps through
scripts/kda_prefill_cpu_check.py --regs with the same axes): no spills anywhere; blocks per SM by registers,
shared memory and threads; bar.sync / shfl.sync counted in the PTX (static):
    BV   warps  registers  shared  blocks/SM  bar.sync  shfl   grid at 1 token
    8    1      116        16 B    17         1         90     (16, 32)      <- default at N * H <= 32
    8    2      96         512 B   10         14        52
    8    4      71         512 B   7          14        34
    16   1      162        32 B    12         1         170    (8, 32)       <- default above (T 16, N 4: (8, 128))
    16   2      128        512 B   8          14        92
    16   4      87         512 B   5          14        54
    32   1      238        64 B    8          2         330    (4, 32)
    32   2      230        512 B   4          14        172
    32   4      128        512 B   4          14        94
    64   4      217        512 B   2          14        174    (2, 32)
RECUR_PREFETCH off: 96 (BV 8, 1 warp), 79 (BV 16, 4 warps). intra5's kernels are unchanged (its table holds) but
`_wu` and `_inv` under item 3's defaults (item 3's table).

**Not yet run on a GPU; estimate, not a measurement.** Single token: one launch that reads and writes the 2 MiB
state once (~1.3 us of DRAM time at H100 bandwidth) plus one token's dependent arithmetic (a few hundred
instructions per warp): likely launch- and latency-bound at ~5-10 us against intra5's 53.3 us and FLA chunked's
38.7 us (H100). Per further token ~0.2-0.4 us of serial work per program (decay, S k reduction, write, S q
reduction), so a 16-token sequence ~ +3-6 us; the crossover with the chunked path (whose floor is its six
launches, ~50 us) is probably well above 16 tokens for one sequence, which is what RECUR_MAX_T 32 / 64 timings
will show. To time: single_token with the shipped CONFIG, RECUR_MAX_T 0 (= intra5), FLA's fused recurrent and
chunked kernels; RECUR_BV 8 / 16 / 32 x RECUR_WARPS 1 / 2 / 4; RECUR_PREFETCH off; and ad-hoc workloads of
16, 32, 64 and 128 tokens (one sequence, and 4 x 16) at RECUR_MAX_T 0 / 16 / 32 / 64 (/ 128) for the crossover.
Run its first GPU call under compute-sanitizer (scripts/gdn_prefill_fault.py) as intra5's docstring advises.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [16, 32, 64], "INTRA_FROM_A": [True, False], "WU_FROM_A": [True, False],
            "GATE_BK": [32, 64, 128], "GATE_BC": [16, 32, 64], "GATE_STAGES": [1, 2, 3],
            "GATE_WARPS": [1, 2, 4], "INTRA_WARPS": [1, 2, 4], "INTRA_MAXNREG": [0, 128, 152, 168],
            "INTRA_BK": [16, 32, 64], "INTRA_STAGES": [1, 2], "DIAG_PREC": ["tf32", "tf32x3"],
            "INV_WARPS": [1, 2, 4], "TB_BF16": [False, True], "WU_BF16": [True, False], "WU_BK": [32, 64, 128],
            "WU_MAXNREG": [0, 128],
            "WU_WARPS": [4, 8],
            "SCAN_WARPS": [4, 8], "SCAN_STAGES": [2, 3], "SCAN_SPLIT_O": [True, False],
            "OUT_BV": [32, 64, 128], "OUT_WARPS": [4, 8],
            "RECUR_MAX_T": [0, 16, 32, 64], "RECUR_BV": [0, 8, 16, 32, 64], "RECUR_WARPS": [1, 2, 4],
            "RECUR_PREFETCH": [True, False]}
CONFIG = {"BV": 0,
          # new in intra8: _intra / _wu form the cumulative decay from a themselves (True; no _gate launch when
          # both are), or read intra7's _gate buffer (False: _gate runs, GATE_* below)
          "INTRA_FROM_A": True, "WU_FROM_A": True,
          "GATE_BK": 64, "GATE_BC": 16, "GATE_STAGES": 2, "GATE_WARPS": 2,
          "INTRA_WARPS": 1, "INTRA_MAXNREG": 0, "INTRA_BK": 16, "INTRA_STAGES": 1, "DIAG_PREC": "tf32",
          "INV_WARPS": 1, "WU_BK": 64, "WU_WARPS": 4,
          # new in intra8: _wu capped at 128 registers (forming gamma2 from a takes it from 126 to 134: 3 blocks
          # per SM instead of 4); 0: no cap
          "WU_MAXNREG": 128,
          # new in intra7: T diag(beta) stored bf16 (intra5's knob, default False there) and _wu's W / U products
          # bf16 x bf16 with float32 sums (WU_BF16; False: intra5's float32 operands, TF32 on the GPU)
          "TB_BF16": True, "WU_BF16": True,
          "SCAN_WARPS": 4, "SCAN_STAGES": 3, "SCAN_SPLIT_O": True, "OUT_BV": 64, "OUT_WARPS": 4,
          # new in intra7: T <= RECUR_MAX_T runs _recur alone (0: never); RECUR_BV 0 picks from N * H (see run)
          "RECUR_MAX_T": 64, "RECUR_BV": 0, "RECUR_WARPS": 1, "RECUR_PREFETCH": True,
          # tests only: keep RECUR_BV (or its automatic choice) on CPU too, several V-blocks per (sequence, head)
          "RECUR_BV_ON_CPU": False,
          # tests only: run _intra's GPU code path (reference-point levels, tl.dot on fp32) on CPU tensors too
          "INTRA_GPU_PATH_ON_CPU": False,
          # tests only: run _inv's and _wu's GPU code path (tl.dot on fp32 tiles) on CPU tensors too
          "PREP_GPU_PATH_ON_CPU": False,
          # tests only: on CPU, truncate the operands of every product the GPU forms in TF32 (off the CPU tl.dot
          # paths above): an estimate of the GPU's rounding, which the interpreter's float32 products do not have
          "CPU_TF32": False}

BT = 64  # chunk
BC = 16  # sub-chunk


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16-valued fp32, rounded to nearest even (the interpreter's .to(tl.bfloat16) truncates)
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _tf32(x, EMU: tl.constexpr):
    # tests only (CONFIG["CPU_TF32"]): an operand as a TF32 product sees it on the GPU, low 13 mantissa bits
    # dropped (truncation, the pessimistic reading of the hardware's conversion); else x itself
    if EMU:
        x = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return x


@triton.jit
def _softplus(x):
    # torch's softplus (threshold 20) as max(x, 0) + log1p(e^-|x|), log1p by its series when tiny
    e = tl.exp(-tl.abs(x))
    lp = tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e))
    return tl.where(x > 20.0, x, tl.maximum(x, 0.0) + lp)


@triton.jit
def _chunk(cu_ptr, N, c, BT: tl.constexpr, BN: tl.constexpr):
    # global chunk c -> (sequence, first token, end of the sequence); n == N when c is past the last
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


LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _gate(alog_ptr, a_ptr, dtb_ptr, cu_ptr, gam_ptr, N,
          H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BCG: tl.constexpr, BK: tl.constexpr,
          BN: tl.constexpr, STAGES: tl.constexpr):
    # per (chunk, head, K-block of BK channels): gamma2, the chunk-local inclusive cumulative log2
    # decay, BCG rows per step of a loop that is not unrolled, the cumulative sum carried across steps. intra8:
    # launched only when INTRA_FROM_A or WU_FROM_A is False (gamma2 read back, as in intra7)
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    rr = tl.arange(0, BCG)
    ok = tl.program_id(2) * BK + tl.arange(0, BK)
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    dtb = tl.load(dtb_ptr + h * K + ok)
    carry = tl.zeros([BK], dtype=tl.float32)  # gamma2 at the last row of the steps before
    last = (rr == BCG - 1)[:, None]
    for s in tl.range(0, tl.minimum(end - start, BT), BCG, num_stages=STAGES):  # padded steps skipped
        rows = start + s + rr
        m2 = (rows < end)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        x = tl.load(a_ptr + tk, mask=m2, other=0.0).to(tl.float32) + dtb[None, :]
        g = tl.where(m2, neg_a * _softplus(x), 0.0)  # padding rows: no decay
        gam = carry[None, :] + tl.cumsum(g, 0) * 1.4426950408889634  # log2 units: exp(gamma) = exp2(gam)
        tl.store(gam_ptr + tk, gam, mask=m2)
        carry = tl.sum(tl.where(last, gam, 0.0), axis=0)


@triton.jit
def _ln(x, CPU: tl.constexpr):
    # log x: on the GPU lg2.approx (the MUFU, ~2^-22 relative) times ln 2, where tl.log / tl.log2 are
    # libdevice's software routines (~30 instructions each); in the interpreter (no inline assembly) tl.log,
    # intra7's _gate's arithmetic, so that the CPU check compares like with like
    if CPU:
        y = tl.log(x)
    else:
        y = tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                      pack=1) * 0.6931471805599453
    return y


@triton.jit
def _gt(a_ptr, offs, m2, neg_a, dtb, CPU: tl.constexpr):
    # per-token log decay g = -exp(A_log) softplus(a + dt_bias) of an [rows, channels] tile, natural units, 0 on
    # masked rows (no decay: a cumulative sum stays flat past a sequence's end): intra7's _gate's arithmetic but
    # log(1 + e) for e >= 1e-4 by the MUFU on the GPU (_ln; _softplus's series below 1e-4)
    x = tl.load(a_ptr + offs, mask=m2, other=0.0).to(tl.float32) + dtb[None, :]
    e = tl.exp(-tl.abs(x))
    lp = tl.where(e < 1e-4, e * (1.0 - 0.5 * e), _ln(1.0 + e, CPU))
    sp = tl.where(x > 20.0, x, tl.maximum(x, 0.0) + lp)
    return tl.where(m2, neg_a * sp, 0.0)


@triton.jit
def _lastrow(x, R: tl.constexpr):
    # row R - 1 of an [R, n] tile as [n] (one term per column: exact)
    return tl.sum(tl.where((tl.arange(0, R) == R - 1)[:, None], x, 0.0), axis=0)


@triton.jit
def _rowref(gs, L: tl.constexpr, BC: tl.constexpr):
    # per row r of the [BC, n] tile gs, gs at row (r // 2L) 2L + L (the first row of the odd L-block of r's pair
    # of L-blocks), in registers: the rows as [BC / 2L, 2L, n], one row picked per group (a masked sum: exact),
    # broadcast back. Replaces intra7's reload of gamma at the reference rows
    G: tl.constexpr = BC // (2 * L)
    x = tl.reshape(gs, [G, 2 * L, gs.shape[1]])
    sel = (tl.arange(0, 2 * L) == L)[None, :, None]
    ref = tl.sum(tl.where(sel, x, 0.0), axis=1)
    return tl.reshape(tl.broadcast_to(ref[:, None, :], [G, 2 * L, gs.shape[1]]), [BC, gs.shape[1]])


@triton.jit
def _rn(ss):
    # 1 / ||x|| from the row's sum of squares, eps 1e-6 inside the root (FLA's use_qk_l2norm_in_kernel)
    return 1.0 / tl.sqrt(ss + 1e-6)



@triton.jit
def _put(akk_ptr, sc_ptr, kk, qk, rows, valid, h, col0, scale, H: tl.constexpr, BT: tl.constexpr,
         BC: tl.constexpr, CPU: tl.constexpr):
    # a 16 x 16 block at the sub-chunk's rows, chunk columns col0 .. col0 + 15: A float32, S bf16
    offs = (rows[:, None] * H + h) * BT + col0 + tl.arange(0, BC)[None, :]
    m = valid[:, None]
    tl.store(akk_ptr + offs, kk, mask=m)
    sc = qk * scale
    if CPU:
        sc = _rne_bf16(sc)
    tl.store(sc_ptr + offs, sc.to(tl.bfloat16), mask=m)


@triton.jit
def _dot_t(x, y, CPU: tl.constexpr, PREC: tl.constexpr, EMU: tl.constexpr):
    # x @ y^T for [BC, BKI] float32 tiles: a broadcast sum on CPU (the interpreter), tl.dot at PREC on the GPU
    if CPU:
        x = _tf32(x, EMU and PREC == "tf32")
        y = _tf32(y, EMU and PREC == "tf32")
        r = tl.sum(x[:, None, :] * y[None, :, :], axis=2)
    else:
        r = tl.dot(x, tl.trans(y), input_precision=PREC)
    return r


@triton.jit
def _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, L: tl.constexpr, H: tl.constexpr, K: tl.constexpr,
           BC: tl.constexpr, CPU: tl.constexpr, PREC: tl.constexpr, EMU: tl.constexpr, FROM_A: tl.constexpr):
    # Channels oc of the diagonal block's pairs (i, j), j < i, whose indices first differ at bit L
    # (i // L odd, j // L = i // L - 1), through the reference row m = (i // L) L between them (j < m <= i):
    # exp2(g_i - g_j) = exp2(g_i - g_m) exp2(g_m - g_j), both factors <= 1. Row r's reference: the first row
    # of its own L-block if that block is odd (r as a row i), else of the next one (r as a column j); so one
    # tile of exponentials per level serves both sides, and one product gives the level's pairs (the other
    # entries are masked off). Every exponent <= 0 (clamped: rows past the end, rounding). FROM_A (intra8): gs
    # is the sub-chunk's own cumulative log2 decay (_diag), flat past the sequence's end, so a reference row past
    # the end has the last row's value (intra7's clamp), picked in registers (_rowref); else intra7's reload
    rr = tl.arange(0, BC)
    blk = rr // L
    odd = (blk % 2) == 1
    if FROM_A:
        gref = _rowref(gs, L, BC)
    else:
        ref = tl.minimum(first + tl.where(odd, blk * L, blk * L + L), end - 1)  # clamped into the sequence
        gref = tl.load(gam_ptr + (ref[:, None] * H + h) * K + oc[None, :])
    e = tl.exp2(tl.minimum(tl.where(odd[:, None], gs - gref, gref - gs), 0.0))
    ke = ks * e
    keep = odd[:, None] & ((rr[None, :] // L) == (blk[:, None] - 1))
    kk = kk + tl.where(keep, _dot_t(ke, ke, CPU, PREC, EMU), 0.0)
    qk = qk + tl.where(keep, _dot_t(qs * e, ke, CPU, PREC, EMU), 0.0)
    return kk, qk


@triton.jit
def _offd(kk, qk, ss, lk, lq, r, gj, gam_ptr, k_ptr, start, h, oc, d: tl.constexpr, H: tl.constexpr,
          K: tl.constexpr, BC: tl.constexpr, CPU: tl.constexpr, EMU: tl.constexpr, FROM_A: tl.constexpr):
    # channels oc of block (I, J = d < I) through r = gamma2 at I's first row (triton_intra4's scheme):
    # lk, lq = I's raw rows times exp2(g_i - r) <= 1; J's raw rows times exp2(r - g_j) <= 1 here. Unnormalised:
    # the accumulated squares ss give J's 1 / ||k|| after the channel loop. gj: gamma2 at J's rows (FROM_A,
    # formed by _offd_row), else loaded here from _gate's buffer (intra7)
    rr = tl.arange(0, BC)
    toff = ((start + d * BC + rr)[:, None] * H + h) * K + oc[None, :]  # all of J's rows are valid
    kj = tl.load(k_ptr + toff).to(tl.float32)
    ss = ss + tl.sum(kj * kj, axis=1)
    if not FROM_A:
        gj = tl.load(gam_ptr + toff)
    rj = kj * tl.exp2(r[None, :] - gj)
    if CPU:
        lk, lq, rj = _tf32(lk, EMU), _tf32(lq, EMU), _tf32(rj, EMU)
        kk = kk + tl.sum(lk[:, None, :] * rj[None, :, :], axis=2)
        qk = qk + tl.sum(lq[:, None, :] * rj[None, :, :], axis=2)
    else:
        kk = tl.dot(lk, tl.trans(rj), kk)
        qk = tl.dot(lq, tl.trans(rj), qk)
    return kk, qk, ss


@triton.jit
def _diag(q_ptr, k_ptr, a_ptr, dtb_ptr, neg_a, gam_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, scale, sub, first, end, h,
          H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr, DIAG_PREC: tl.constexpr,
          EMU: tl.constexpr, FROM_A: tl.constexpr):
    # sub-chunk I's diagonal block of A and S by four levels of reference-point products (_level), S's zeros
    # right of it, and 1 / ||q||, 1 / ||k|| of its rows (for _wu). Products on raw rows, the norms applied
    # once at the end (they factor out of the channel sums)
    rr = tl.arange(0, BC)
    rows = first + rr
    valid = rows < end
    m2 = valid[:, None]
    # S's columns right of the diagonal block: zeros (_scan / _out read whole rows of S)
    ot = tl.arange(0, BT)
    tl.store(sc_ptr + (rows[:, None] * H + h) * BT + ot[None, :], tl.zeros([BC, BT], dtype=tl.bfloat16),
             mask=m2 & (ot[None, :] >= (sub + 1) * BC))
    kk = tl.zeros([BC, BC], dtype=tl.float32)
    qk = tl.zeros([BC, BC], dtype=tl.float32)
    ssk = tl.zeros([BC], dtype=tl.float32)
    ssq = tl.zeros([BC], dtype=tl.float32)
    dqk = tl.zeros([BC], dtype=tl.float32)  # q_i . k_i: S's diagonal (exponent 0)
    for c0 in tl.range(0, K, BKI, num_stages=STAGES):
        oc = c0 + tl.arange(0, BKI)
        tk = (rows[:, None] * H + h) * K + oc[None, :]
        if FROM_A:  # the sub-chunk's own cumulative log2 decay (only differences inside the sub-chunk enter)
            gs = tl.cumsum(_gt(a_ptr, tk, m2, neg_a, tl.load(dtb_ptr + h * K + oc), CPU_STORE), 0) * LOG2E
        else:  # _gate's gamma2 (intra7's loads)
            gs = tl.load(gam_ptr + tk, mask=m2, other=0.0)
        ks = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        qs = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        ssk += tl.sum(ks * ks, axis=1)
        ssq += tl.sum(qs * qs, axis=1)
        dqk += tl.sum(qs * ks, axis=1)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 8, H, K, BC, CPU, DIAG_PREC, EMU,
                        FROM_A)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 4, H, K, BC, CPU, DIAG_PREC, EMU,
                        FROM_A)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 2, H, K, BC, CPU, DIAG_PREC, EMU,
                        FROM_A)
        kk, qk = _level(kk, qk, ks, qs, gs, gam_ptr, first, end, h, oc, 1, H, K, BC, CPU, DIAG_PREC, EMU,
                        FROM_A)
    rki = _rn(ssk)  # padded rows: 1 / sqrt(1e-6), times zeros
    rqi = _rn(ssq)
    tl.store(rk_ptr + rows * H + h, rki, mask=valid)
    tl.store(rq_ptr + rows * H + h, rqi, mask=valid)
    # A's diagonal and upper entries stay 0 (_inv reads A's strictly lower part only)
    qk = tl.where(rr[:, None] == rr[None, :], dqk[:, None], qk)
    rkc = rki[None, :]
    _put(akk_ptr, sc_ptr, kk * rki[:, None] * rkc, qk * rqi[:, None] * rkc, rows, valid, h, sub * BC, scale,
         H, BT, BC, CPU_STORE)


@triton.jit
def _offd_row(q_ptr, k_ptr, a_ptr, dtb_ptr, neg_a, gam_ptr, akk_ptr, sc_ptr, scale, sub, start, first, end, h,
              H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
              STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr,
              FROM_A: tl.constexpr):
    # sub-chunk I's blocks (I, J) for J < I (sub >= 1) through r = gamma2 at I's first row (triton_intra4's
    # scheme): raw rows, I's and J's norms from squares accumulated alongside, applied at the end
    rr = tl.arange(0, BC)
    rows = first + rr
    valid = rows < end
    m2 = valid[:, None]
    zb = tl.zeros([BC, BC], dtype=tl.float32)
    zr = tl.zeros([BC], dtype=tl.float32)
    ssk, ssq = zr, zr
    kk0, qk0, ss0 = zb, zb, zr  # blocks (I, 0), (I, 1), (I, 2) and the squares of J's keys
    kk1, qk1, ss1 = zb, zb, zr
    kk2, qk2, ss2 = zb, zb, zr
    for c0 in tl.range(0, K, BKI, num_stages=STAGES):
        oc = c0 + tl.arange(0, BKI)
        tk = (rows[:, None] * H + h) * K + oc[None, :]
        g0 = tl.zeros([BC, BKI], dtype=tl.float32)  # FROM_A: gamma2 at J = 0, 1, 2's rows (else unused)
        g1, g2 = g0, g0
        if FROM_A:
            # gamma2 of the chunk's rows up to I's last, 16-row steps with the carry (intra7's _gate, step for step):
            # J = 0 .. sub - 1 (all rows valid), then I's rows
            dtb = tl.load(dtb_ptr + h * K + oc)
            ones = rr[:, None] >= 0
            rj0 = ((start + rr)[:, None] * H + h) * K + oc[None, :]  # J = 0's rows
            g0 = tl.cumsum(_gt(a_ptr, rj0, ones, neg_a, dtb, CPU_STORE), 0) * LOG2E
            carry = _lastrow(g0, BC)
            if sub > 1:
                g1 = carry[None, :] + tl.cumsum(_gt(a_ptr, rj0 + BC * H * K, ones, neg_a, dtb, CPU_STORE), 0) * LOG2E
                carry = _lastrow(g1, BC)
                if sub > 2:
                    g2 = carry[None, :] + tl.cumsum(_gt(a_ptr, rj0 + 2 * BC * H * K, ones, neg_a, dtb, CPU_STORE),
                                                    0) * LOG2E
                    carry = _lastrow(g2, BC)
            gs = carry[None, :] + tl.cumsum(_gt(a_ptr, tk, m2, neg_a, dtb, CPU_STORE), 0) * LOG2E
            r = tl.sum(tl.where((rr == 0)[:, None], gs, 0.0), axis=0)  # gamma2 at I's first row (one term: exact)
        else:  # _gate's gamma2 (intra7's loads; J's in _offd)
            gs = tl.load(gam_ptr + tk, mask=m2, other=0.0)
            r = tl.load(gam_ptr + (first * H + h) * K + oc)
        ks = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        qs = tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        ssk += tl.sum(ks * ks, axis=1)
        ssq += tl.sum(qs * qs, axis=1)
        li = tl.where(m2, tl.exp2(tl.where(m2, gs - r[None, :], 0.0)), 0.0)  # <= 1
        lk = ks * li
        lq = qs * li
        kk0, qk0, ss0 = _offd(kk0, qk0, ss0, lk, lq, r, g0, gam_ptr, k_ptr, start, h, oc, 0, H, K, BC, CPU, EMU, FROM_A)
        if sub > 1:
            kk1, qk1, ss1 = _offd(kk1, qk1, ss1, lk, lq, r, g1, gam_ptr, k_ptr, start, h, oc, 1, H, K, BC, CPU,
                                      EMU, FROM_A)
            if sub > 2:
                kk2, qk2, ss2 = _offd(kk2, qk2, ss2, lk, lq, r, g2, gam_ptr, k_ptr, start, h, oc, 2, H, K, BC,
                                          CPU, EMU, FROM_A)
    rki = _rn(ssk)[:, None]
    rqi = _rn(ssq)[:, None]
    _put(akk_ptr, sc_ptr, kk0 * rki * _rn(ss0)[None, :], qk0 * rqi * _rn(ss0)[None, :], rows, valid, h, 0, scale,
         H, BT, BC, CPU_STORE)
    if sub > 1:
        _put(akk_ptr, sc_ptr, kk1 * rki * _rn(ss1)[None, :], qk1 * rqi * _rn(ss1)[None, :], rows, valid, h, BC,
             scale, H, BT, BC, CPU_STORE)
        if sub > 2:
            _put(akk_ptr, sc_ptr, kk2 * rki * _rn(ss2)[None, :], qk2 * rqi * _rn(ss2)[None, :], rows, valid, h,
                 2 * BC, scale, H, BT, BC, CPU_STORE)


@triton.jit
def _intra(q_ptr, k_ptr, alog_ptr, a_ptr, dtb_ptr, gam_ptr, cu_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, scale, N,
           H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BKI: tl.constexpr,
           BN: tl.constexpr, STAGES: tl.constexpr, CPU: tl.constexpr, CPU_STORE: tl.constexpr,
           DIAG_PREC: tl.constexpr, EMU: tl.constexpr, FROM_A: tl.constexpr):
    # A's and S's 16 x 16 blocks (I, J <= I): seven programs per (chunk, head), neighbours: four diagonal-
    # block programs (sub-chunk I = 0..3, _diag) and three of the blocks left of the diagonal (I = 1..3,
    # _offd_row), so that neither kind holds the other's accumulators (registers). The K = 128 contraction
    # in slices of BKI channels, a loop that is not unrolled
    tl.static_assert(BC == 16)
    tl.static_assert(BT == 4 * BC)
    NSUB: tl.constexpr = BT // BC
    h = tl.program_id(1)
    task = tl.program_id(0) % (2 * NSUB - 1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0) // (2 * NSUB - 1), BT, BN)
    sub = tl.where(task < NSUB, task, task - (NSUB - 1))
    first = start + sub * BC
    if (n >= N) | (first >= end):  # past the last chunk, or a sub-chunk past its sequence's end
        return
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    if task < NSUB:
        _diag(q_ptr, k_ptr, a_ptr, dtb_ptr, neg_a, gam_ptr, akk_ptr, sc_ptr, rq_ptr, rk_ptr, scale, sub, first, end, h,
              H, K, BT, BC, BKI, STAGES, CPU, CPU_STORE, DIAG_PREC, EMU, FROM_A)
    else:
        _offd_row(q_ptr, k_ptr, a_ptr, dtb_ptr, neg_a, gam_ptr, akk_ptr, sc_ptr, scale, sub, start, first, end, h,
                  H, K, BT, BC, BKI, STAGES, CPU, CPU_STORE, EMU, FROM_A)


@triton.jit
def _mm(x, y, acc, DOT: tl.constexpr, EMU: tl.constexpr = False):
    # acc + x @ y (acc None: x @ y); off the dot path a broadcast sum (the interpreter's tl.dot skips BLAS)
    if DOT:
        r = tl.dot(x, y, acc)
    else:
        x = _tf32(x, EMU)
        y = _tf32(y, EMU)
        r = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
        if acc is not None:
            r = acc + r
    return r


@triton.jit
def _beta(b_ptr, rows, end, h, H: tl.constexpr):
    # sigmoid(b) of one sub-chunk's rows, 0 on padding
    valid = rows < end
    return tl.where(valid, tl.sigmoid(tl.load(b_ptr + rows * H + h, mask=valid, other=0.0).to(tl.float32)), 0.0)


@triton.jit
def _ablk(akk_ptr, rows, end, beta, h, J: tl.constexpr, DIAG: tl.constexpr, H: tl.constexpr,
          BT: tl.constexpr, BC: tl.constexpr):
    # block (I, J) of A = beta_i A_kk[i, j] (rows: sub-chunk I's), strictly lower on the diagonal; the
    # entries _intra did not write (J > I, j >= i in the diagonal block, padded rows) are masked off
    rc = tl.arange(0, BC)
    m = (rows < end)[:, None]
    if DIAG:
        m = m & (rc[:, None] > rc[None, :])
    kk = tl.load(akk_ptr + (rows[:, None] * H + h) * BT + J * BC + rc[None, :], mask=m, other=0.0)
    return beta[:, None] * kk


@triton.jit
def _inv_diag(a, BC: tl.constexpr):
    # (I + a)^-1 for strictly lower a by forward substitution (gdn_prefill's triton_split2): row i of
    # T - I is -a_i - sum_{j<i} a_ij (T - I)_j; rows not yet reached hold -a (rows 0 and 1 already final)
    r = tl.arange(0, BC)
    rc = r[:, None]
    t = -a
    for i in tl.static_range(2, BC):
        sel = rc == i
        row = tl.sum(tl.where(sel, t, 0.0), 0)  # -a_i
        row = row + tl.sum(row[:, None] * t, 0)
        t = tl.where(sel, row[None, :], t)
    return t + (rc == r[None, :]).to(tl.float32)


@triton.jit
def _tst(tb_ptr, t, beta_j, rows, end, h, J: tl.constexpr, H: tl.constexpr, BT: tl.constexpr,
         BC: tl.constexpr, CPU_STORE: tl.constexpr):
    # block (I, J) of T diag(beta) (rows: sub-chunk I's, beta_j: sub-chunk J's) into tb, [T, H, BT], float32
    # (or bf16: CONFIG["TB_BF16"], the buffer's dtype)
    rc = tl.arange(0, BC)
    x = t * beta_j[None, :]
    if tb_ptr.dtype.element_ty == tl.bfloat16:
        if CPU_STORE:
            x = _rne_bf16(x)
    tl.store(tb_ptr + (rows[:, None] * H + h) * BT + J * BC + rc[None, :], x.to(tb_ptr.dtype.element_ty),
             mask=(rows < end)[:, None])


@triton.jit
def _inv(akk_ptr, b_ptr, cu_ptr, tb_ptr, N, H: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr,
         BN: tl.constexpr, DOT: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr):
    # per (chunk, head): T = (I + A)^-1 by 16 x 16 blocks (triton_intra4's _prep, unchanged: diagonal
    # blocks by forward substitution, merged 16 -> 32 -> 64), stored as T diag(beta) (float32, its ten
    # lower blocks; _wu masks the rest). Nothing wider than 16 x 16 is live: a lean program of many
    tl.static_assert(BT == 4 * BC)
    h = tl.program_id(1)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(0), BT, BN)
    if n >= N:
        return
    rc = tl.arange(0, BC)
    r0 = start + rc
    r1 = start + BC + rc
    r2 = start + 2 * BC + rc
    r3 = start + 3 * BC + rc
    b0 = _beta(b_ptr, r0, end, h, H)
    b1 = _beta(b_ptr, r1, end, h, H)
    b2 = _beta(b_ptr, r2, end, h, H)
    b3 = _beta(b_ptr, r3, end, h, H)
    # diagonal blocks, inverted by forward substitution
    t00 = _inv_diag(_ablk(akk_ptr, r0, end, b0, h, 0, True, H, BT, BC), BC)
    t11 = _inv_diag(_ablk(akk_ptr, r1, end, b1, h, 1, True, H, BT, BC), BC)
    t22 = _inv_diag(_ablk(akk_ptr, r2, end, b2, h, 2, True, H, BT, BC), BC)
    t33 = _inv_diag(_ablk(akk_ptr, r3, end, b3, h, 3, True, H, BT, BC), BC)
    _tst(tb_ptr, t00, b0, r0, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, t11, b1, r1, end, h, 1, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, t22, b2, r2, end, h, 2, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, t33, b3, r3, end, h, 3, H, BT, BC, CPU_STORE)
    # merged 16 -> 32: T10 = -T11 A10 T00, T32 = -T33 A32 T22 (left factors negated)
    n11 = -t11
    n22 = -t22
    n33 = -t33
    t10 = _mm(n11, _mm(_ablk(akk_ptr, r1, end, b1, h, 0, False, H, BT, BC), t00, None, DOT, EMU), None, DOT, EMU)
    t32 = _mm(n33, _mm(_ablk(akk_ptr, r3, end, b3, h, 2, False, H, BT, BC), t22, None, DOT, EMU), None, DOT, EMU)
    _tst(tb_ptr, t10, b0, r1, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, t32, b2, r3, end, h, 2, H, BT, BC, CPU_STORE)
    # 32 -> 64: the lower 32 x 32 block is -T_b X T_a, X = [[A20, A21], [A30, A31]],
    # T_a = [[T00, 0], [T10, T11]], T_b = [[T22, 0], [T32, T33]]; P = X T_a first
    a21 = _ablk(akk_ptr, r2, end, b2, h, 1, False, H, BT, BC)
    a31 = _ablk(akk_ptr, r3, end, b3, h, 1, False, H, BT, BC)
    p20 = _mm(a21, t10, _mm(_ablk(akk_ptr, r2, end, b2, h, 0, False, H, BT, BC), t00, None, DOT, EMU), DOT, EMU)
    p30 = _mm(a31, t10, _mm(_ablk(akk_ptr, r3, end, b3, h, 0, False, H, BT, BC), t00, None, DOT, EMU), DOT, EMU)
    p21 = _mm(a21, t11, None, DOT, EMU)
    p31 = _mm(a31, t11, None, DOT, EMU)
    n32 = -t32
    _tst(tb_ptr, _mm(n22, p20, None, DOT, EMU), b0, r2, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n22, p21, None, DOT, EMU), b1, r2, end, h, 1, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n33, p30, _mm(n32, p20, None, DOT, EMU), DOT, EMU), b0, r3, end, h, 0, H, BT, BC, CPU_STORE)
    _tst(tb_ptr, _mm(n33, p31, _mm(n32, p21, None, DOT, EMU), DOT, EMU), b1, r3, end, h, 1, H, BT, BC, CPU_STORE)


@triton.jit
def _stc(ptr, x, rows, end, h, col0, H: tl.constexpr, D: tl.constexpr, CPU_STORE: tl.constexpr):
    # a [rows, n] tile into columns col0 .. col0 + n of a [T, H, D] bf16 buffer, rows past the end skipped
    cols = col0 + tl.arange(0, x.shape[1])
    if CPU_STORE:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
        x = _rne_bf16(x)
    tl.store(ptr + (rows[:, None] * H + h) * D + cols[None, :], x.to(tl.bfloat16), mask=(rows < end)[:, None])


@triton.jit
def _wu(q_ptr, k_ptr, v_ptr, alog_ptr, a_ptr, dtb_ptr, gam_ptr, cu_ptr, rq_ptr, rk_ptr, tb_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, gl_ptr,
        scale, N, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
        BN: tl.constexpr, DOT: tl.constexpr, CPU_STORE: tl.constexpr, EMU: tl.constexpr,
        WU_BF16: tl.constexpr, FROM_A: tl.constexpr):
    # columns kc .. kc + BK of W = T diag(beta) (exp(gamma) k^) and U = T diag(beta) v (K == V), of
    # kd = k^ exp(gamma_C - gamma), qg = scale q^ exp(gamma) (the exp(gamma) tile W's keys take) and
    # exp(gamma_C): one program per (column block, chunk, head), a chunk-head's blocks neighbouring programs;
    # [BT, BT] x [BT, BK] products (float32 operands at Triton's default precision, as triton_intra4's W and
    # U; WU_BF16: bf16 x bf16, float32 sums, see the docstring). 1 / ||q||, 1 / ||k|| from _intra
    kc = tl.program_id(0) * BK
    h = tl.program_id(2)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(1), BT, BN)
    if n >= N:
        return
    r = tl.arange(0, BT)
    rows = start + r
    valid = rows < end
    m2 = valid[:, None]
    ok = kc + tl.arange(0, BK)
    tk = (rows[:, None] * H + h) * K + ok[None, :]
    # gamma2, the chunk-local cumulative log2 decay, from a (intra8: no _gate); flat past the sequence's end, so
    # its last row is gamma2 at the chunk's last valid token
    if FROM_A:
        gam = tl.cumsum(_gt(a_ptr, tk, m2, -tl.exp(tl.load(alog_ptr + h)), tl.load(dtb_ptr + h * K + ok), CPU_STORE),
                        0) * LOG2E
        gam_last = _lastrow(gam, BT)
    else:  # _gate's gamma2 (intra7's loads)
        gam_last = tl.load(gam_ptr + ((tl.minimum(end, start + BT) - 1) * H + h) * K + ok)
        gam = tl.load(gam_ptr + tk, mask=m2, other=0.0)
    tl.store(gl_ptr + (start * H + h) * K + ok, tl.exp2(gam_last))  # exp(gamma_C), at the chunk's first token
    kn = tl.load(k_ptr + tk, mask=m2, other=0.0).to(tl.float32)
    kn = kn * tl.load(rk_ptr + rows * H + h, mask=valid, other=0.0)[:, None]
    _stc(kd_ptr, kn * tl.exp2(gam_last[None, :] - gam), rows, end, h, kc, H, K, CPU_STORE)  # exponents <= 0
    eg = tl.exp2(gam)  # <= 1
    qs = tl.load(rq_ptr + rows * H + h, mask=valid, other=0.0) * scale
    _stc(qg_ptr, tl.load(q_ptr + tk, mask=m2, other=0.0).to(tl.float32) * qs[:, None] * eg, rows, end, h, kc, H, K,
         CPU_STORE)
    kb = kn * eg
    # T diag(beta): its lower blocks (_inv wrote J <= I; the diagonal blocks' upper parts are 0)
    tb = tl.load(tb_ptr + (rows[:, None] * H + h) * BT + r[None, :],
                 mask=m2 & ((r[None, :] // BC) <= (r[:, None] // BC)), other=0.0)
    if WU_BF16:  # CONFIG["WU_BF16"]: bf16 operands (tb already bf16 with TB_BF16, v bf16), float32 sums (FLA's)
        if DOT and not CPU_STORE:
            tb = tb.to(tl.bfloat16)
            _stc(w_ptr, tl.dot(tb, kb.to(tl.bfloat16)), rows, end, h, kc, H, K, CPU_STORE)
            vx = tl.load(v_ptr + tk, mask=m2, other=0.0).to(tl.bfloat16)
            _stc(u_ptr, tl.dot(tb, vx), rows, end, h, kc, H, K, CPU_STORE)
        else:  # the interpreter's tl.dot is wrong on bf16 operands: bf16-valued float32 (rounded to nearest)
            tb = _rne_bf16(tb.to(tl.float32))
            _stc(w_ptr, _mm(tb, _rne_bf16(kb), None, DOT), rows, end, h, kc, H, K, CPU_STORE)
            vx = _rne_bf16(tl.load(v_ptr + tk, mask=m2, other=0.0).to(tl.float32))
            _stc(u_ptr, _mm(tb, vx, None, DOT), rows, end, h, kc, H, K, CPU_STORE)
    else:
        tb = tb.to(tl.float32)
        _stc(w_ptr, _mm(tb, kb, None, DOT, EMU), rows, end, h, kc, H, K, CPU_STORE)
        vb = tl.load(v_ptr + tk, mask=m2, other=0.0).to(tl.float32)
        _stc(u_ptr, _mm(tb, vb, None, DOT, EMU), rows, end, h, kc, H, K, CPU_STORE)


@triton.jit
def _scan(s_ptr, cu_ptr, w_ptr, u_ptr, qg_ptr, kd_ptr, sc_ptr, gl_ptr, o_ptr, ns_ptr,
          H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
          STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O False: triton_intra2's fused recurrence + output
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // H
    h = pid_nh % H
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, h]^T on these V columns: [K, BV], float32 throughout
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        tv = (rows[:, None] * H + h) * V + ov[None, :]
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        qg = tl.load(qg_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        sc = tl.load(sc_ptr + (rows[:, None] * H + h) * BT + ri[None, :], mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + (cs * H + h) * K + ok)  # exp(gamma_C) per key channel
        if CPU:
            # bf16 values in fp32 (the interpreter's tl.dot multiplies bf16 storage bits), products
            # as broadcast sums; the state and the new values stay fp32 here
            w, qg, kd, sc = w.to(tl.float32), qg.to(tl.float32), kd.to(tl.float32), sc.to(tl.float32)
            delta = u - tl.sum(w[:, :, None] * m[None, :, :], axis=1)
            o = tl.sum(qg[:, :, None] * m[None, :, :], axis=1) + tl.sum(sc[:, :, None] * delta[None, :, :], axis=1)
            tl.store(o_ptr + tv, _rne_bf16(o).to(tl.bfloat16), mask=valid)
            m = gl[:, None] * m + tl.sum(kd[:, :, None] * delta[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            delta = u - tl.dot(w, mb)
            db = delta.to(tl.bfloat16)
            o = tl.dot(sc, db, tl.dot(qg, mb))
            tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)
            m = tl.dot(tl.trans(kd), db, gl[:, None] * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _hstate(s_ptr, cu_ptr, w_ptr, u_ptr, kd_ptr, gl_ptr, hs_ptr, dn_ptr, ns_ptr,
            H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
            STAGES: tl.constexpr, CPU: tl.constexpr):
    # SCAN_SPLIT_O True: the recurrence alone, two products per chunk. Stores, per chunk c, the state
    # before the chunk (bf16, [C, H, K, V], the operand the output's q-product takes) and
    # delta = U - W S (bf16, [T, H, V]) for _out. Scratch chunk index of a sequence's j-th chunk:
    # bos // BT + n + j, unique and < cdiv(T, BT) + N (the chunk grid's size)
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // H
    h = pid_nh % H
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    st = pid_nh.to(tl.int64) * V * K + ov[None, :] * K + ok[:, None]
    m = tl.load(s_ptr + st)  # M = state[n, h]^T on these V columns: [K, BV], float32 throughout
    hoff = ok[:, None] * V + ov[None, :]  # within one (chunk, head) [K, V] block
    c0 = bos // BT + n
    for cs in tl.range(bos, eos, BT, num_stages=STAGES):
        rows = cs + ri
        valid = (rows < eos)[:, None]
        tk = (rows[:, None] * H + h) * K + ok[None, :]
        tv = (rows[:, None] * H + h) * V + ov[None, :]
        hb = ((c0 + (cs - bos) // BT) * H + h).to(tl.int64) * (K * V)
        w = tl.load(w_ptr + tk, mask=valid, other=0.0)
        kd = tl.load(kd_ptr + tk, mask=valid, other=0.0)
        u = tl.load(u_ptr + tv, mask=valid, other=0.0).to(tl.float32)
        gl = tl.load(gl_ptr + (cs * H + h) * K + ok)  # exp(gamma_C) per key channel
        if CPU:  # broadcast sums on bf16-valued fp32, rounded where the GPU path rounds
            w, kd = w.to(tl.float32), kd.to(tl.float32)
            mb = _rne_bf16(m)
            tl.store(hs_ptr + hb + hoff, mb.to(tl.bfloat16))
            db = _rne_bf16(u - tl.sum(w[:, :, None] * mb[None, :, :], axis=1))
            tl.store(dn_ptr + tv, db.to(tl.bfloat16), mask=valid)
            m = gl[:, None] * m + tl.sum(kd[:, :, None] * db[:, None, :], axis=0)
        else:
            mb = m.to(tl.bfloat16)
            tl.store(hs_ptr + hb + hoff, mb)
            db = (u - tl.dot(w, mb)).to(tl.bfloat16)
            tl.store(dn_ptr + tv, db, mask=valid)
            m = tl.dot(tl.trans(kd), db, gl[:, None] * m)
    tl.store(ns_ptr + st, m)


@triton.jit
def _out(cu_ptr, qg_ptr, sc_ptr, hs_ptr, dn_ptr, o_ptr, N,
         H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
         BN: tl.constexpr, CPU: tl.constexpr):
    # o = qg S_c + S_intra delta per (V-block, chunk, head), every chunk in parallel; V-blocks of one
    # chunk are neighbouring programs (qg and S from L2 for the second)
    h = tl.program_id(2)
    n, start, end = _chunk(cu_ptr, N, tl.program_id(1), BT, BN)
    if n >= N:
        return
    ok = tl.arange(0, K)
    ov = tl.program_id(0) * BV + tl.arange(0, BV)
    ri = tl.arange(0, BT)
    rows = start + ri
    valid = (rows < end)[:, None]
    hb = ((start // BT + n) * H + h).to(tl.int64) * (K * V)
    tv = (rows[:, None] * H + h) * V + ov[None, :]
    qg = tl.load(qg_ptr + (rows[:, None] * H + h) * K + ok[None, :], mask=valid, other=0.0)
    sc = tl.load(sc_ptr + (rows[:, None] * H + h) * BT + ri[None, :], mask=valid, other=0.0)
    mb = tl.load(hs_ptr + hb + ok[:, None] * V + ov[None, :])
    db = tl.load(dn_ptr + tv, mask=valid, other=0.0)
    if CPU:
        qg, sc, mb, db = qg.to(tl.float32), sc.to(tl.float32), mb.to(tl.float32), db.to(tl.float32)
        o = tl.sum(qg[:, :, None] * mb[None, :, :], axis=1) + tl.sum(sc[:, :, None] * db[None, :, :], axis=1)
        o = _rne_bf16(o)
    else:
        o = tl.dot(sc, db, tl.dot(qg, mb))
    tl.store(o_ptr + tv, o.to(tl.bfloat16), mask=valid)



@triton.jit
def _recur_load(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, t, live, h, ok, ov, H: tl.constexpr, K: tl.constexpr,
                V: tl.constexpr):
    # token t's q, k, a rows ([K], bf16), its v block ([BV], bf16) and b (scalar, bf16); zeros when not live
    tk = (t * H + h) * K + ok
    mk = ok < tl.where(live, K, 0)  # the scalar predicate as a [K] mask (the interpreter rejects live & (ok < K))
    q = tl.load(q_ptr + tk, mask=mk, other=0.0)
    k = tl.load(k_ptr + tk, mask=mk, other=0.0)
    a = tl.load(a_ptr + tk, mask=mk, other=0.0)
    v = tl.load(v_ptr + (t * H + h) * V + ov, mask=ov < tl.where(live, V, 0), other=0.0)
    b = tl.load(b_ptr + t * H + h, mask=live, other=0.0)
    return q, k, a, v, b


@triton.jit
def _recur_step(s, q, k, a, v, b, neg_a, dtb, scale):
    # one token of the reference's loop on the state tile s = S[v-block, :] ([BV, K], float32): l2 norms
    # (x / sqrt(sum x^2 + 1e-6), correctly rounded), gate and beta as the reference forms them, then decay,
    # predict, write, read with q
    q = q.to(tl.float32)
    k = k.to(tl.float32)
    qn = tl.div_rn(q, tl.sqrt_rn(tl.sum(q * q, 0) + 1e-6))
    kn = tl.div_rn(k, tl.sqrt_rn(tl.sum(k * k, 0) + 1e-6))
    g = tl.exp(neg_a * _softplus(a.to(tl.float32) + dtb))  # [K], per key channel
    beta = tl.sigmoid(b.to(tl.float32))
    s = s * g[None, :]  # decay each key channel first
    pred = tl.sum(s * kn[None, :], 1)  # [BV]: S k
    delta = beta * v.to(tl.float32) - beta * pred  # the reference's addcmul(beta v, beta, pred, value=-1)
    s = s + delta[:, None] * kn[None, :]  # rank-1 delta-rule write
    o = scale * tl.sum(s * qn[None, :], 1)  # the updated state @ q, scaled
    return s, o


@triton.jit
def _recur(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, o_ptr, ns_ptr, scale,
           H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr, PREFETCH: tl.constexpr,
           CPU_STORE: tl.constexpr):
    # the whole recurrence token by token in one launch (short inputs): one program per (V-block, sequence,
    # head) holds S[n, h, v-block, :] ([BV, K], k-last, K along the lanes: S k and S q reduce within a warp)
    # in float32 registers through the sequence's tokens; a sequence of length 0 stores its state as loaded
    pid_v = tl.program_id(0)
    pid_nh = tl.program_id(1)
    n = pid_nh // H
    h = pid_nh % H
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)
    st = pid_nh.to(tl.int64) * V * K + ov[:, None] * K + ok[None, :]
    s = tl.load(s_ptr + st)
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    dtb = tl.load(dtb_ptr + h * K + ok)
    if PREFETCH:  # token t + 1's loads issued before token t's arithmetic
        q, k, a, v, b = _recur_load(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, bos, bos < eos, h, ok, ov, H, K, V)
        for t in range(bos, eos):
            q1, k1, a1, v1, b1 = _recur_load(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, t + 1, t + 1 < eos, h, ok, ov,
                                             H, K, V)
            s, o = _recur_step(s, q, k, a, v, b, neg_a, dtb, scale)
            if CPU_STORE:  # round to nearest as the GPU's conversion does (the interpreter's truncates)
                o = _rne_bf16(o)
            tl.store(o_ptr + (t * H + h) * V + ov, o.to(tl.bfloat16))
            q, k, a, v, b = q1, k1, a1, v1, b1
    else:
        for t in range(bos, eos):
            q, k, a, v, b = _recur_load(q_ptr, k_ptr, v_ptr, a_ptr, b_ptr, t, t < eos, h, ok, ov, H, K, V)
            s, o = _recur_step(s, q, k, a, v, b, neg_a, dtb, scale)
            if CPU_STORE:
                o = _rne_bf16(o)
            tl.store(o_ptr + (t * H + h) * V + ov, o.to(tl.bfloat16))
    tl.store(ns_ptr + st, s)


def _run_recur(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, T, H, K, V, N):
    cpu = q.device.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=q.device)
    new_state = torch.empty_like(state)
    bv = CONFIG["RECUR_BV"]
    if bv == 0:  # one-warp programs: >= 512 at the task's 32 heads (~4 per SM: one per SM sub-partition of the
        bv = 8 if N * H <= 32 else 16  # H200's 132 SMs), at most 162 registers (BV 32: 238); see the docstring
    if cpu and not CONFIG["RECUR_BV_ON_CPU"]:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    assert V % bv == 0 and bv == triton.next_power_of_2(bv)
    _recur[(V // bv, N * H)](q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, out, new_state, float(scale),
                              H=H, K=K, V=V, BV=bv, PREFETCH=CONFIG["RECUR_PREFETCH"], CPU_STORE=cpu,
                              num_warps=CONFIG["RECUR_WARPS"])
    return out, new_state

def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    assert K == V, "_wu forms W and U in one program per column block"
    N = cu_seqlens.shape[0] - 1
    if T <= CONFIG["RECUR_MAX_T"]:  # short inputs: one launch, token by token (T is the host's: no sync)
        return _run_recur(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, T, H, K, V, N)
    dev = q.device
    cpu = dev.type == "cpu"
    out = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    new_state = torch.empty_like(state)
    akk = torch.empty((T, H, BT), dtype=torch.float32, device=dev)
    tb = torch.empty((T, H, BT), dtype=torch.bfloat16 if CONFIG["TB_BF16"] else torch.float32,
                     device=dev)  # T diag(beta), _inv -> _wu
    rk = torch.empty((T, H), dtype=torch.float32, device=dev)  # 1 / ||k||, _intra -> _wu
    rq = torch.empty((T, H), dtype=torch.float32, device=dev)  # 1 / ||q||, _intra -> _wu
    w = torch.empty((T, H, K), dtype=torch.bfloat16, device=dev)
    qg = torch.empty_like(w)
    kd = torch.empty_like(w)
    u = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)
    sc = torch.empty((T, H, BT), dtype=torch.bfloat16, device=dev)
    gl = torch.empty((T, H, K), dtype=torch.float32, device=dev)
    nc = triton.cdiv(T, BT) + N  # each sequence adds at most one partial chunk
    bn = triton.next_power_of_2(N + 1)
    ia, wa = CONFIG["INTRA_FROM_A"], CONFIG["WU_FROM_A"]
    gam = a  # placeholder pointer, never read when both consumers form gamma2 from a
    if not (ia and wa):  # intra7's _gate and its [T, H, K] float32 buffer
        gam = torch.empty((T, H, K), dtype=torch.float32, device=dev)
        bk = min(CONFIG["GATE_BK"], K)
        _gate[(nc, H, triton.cdiv(K, bk))](A_log, a, dt_bias, cu_seqlens, gam, N, H=H, K=K, BT=BT,
                                            BCG=min(CONFIG["GATE_BC"], BT), BK=bk, BN=bn,
                                            STAGES=CONFIG["GATE_STAGES"], num_warps=CONFIG["GATE_WARPS"])
    intra_cpu = cpu and not CONFIG["INTRA_GPU_PATH_ON_CPU"]
    intra_grid = (nc * (2 * (BT // BC) - 1), H)  # seven programs per (chunk, head): four diagonal, three left
    cap = {"maxnreg": CONFIG["INTRA_MAXNREG"]} if CONFIG["INTRA_MAXNREG"] and not cpu else {}
    bki = K if intra_cpu else min(CONFIG["INTRA_BK"], K)  # the interpreter: one whole-row step
    _intra[intra_grid](q, k, A_log, a, dt_bias, gam, cu_seqlens, akk, sc, rq, rk, float(scale), N, H=H, K=K, BT=BT,
                       BC=BC, BKI=bki, BN=bn, STAGES=CONFIG["INTRA_STAGES"], CPU=intra_cpu, CPU_STORE=cpu,
                       DIAG_PREC=CONFIG["DIAG_PREC"], EMU=cpu and CONFIG["CPU_TF32"], FROM_A=ia,
                       num_warps=CONFIG["INTRA_WARPS"], **cap)
    dot = not cpu or CONFIG["PREP_GPU_PATH_ON_CPU"]
    _inv[(nc, H)](akk, b, cu_seqlens, tb, N, H=H, BT=BT, BC=BC, BN=bn, DOT=dot, CPU_STORE=cpu,
                  EMU=cpu and CONFIG["CPU_TF32"], num_warps=CONFIG["INV_WARPS"])
    wbk = min(CONFIG["WU_BK"], K)
    wcap = {"maxnreg": CONFIG["WU_MAXNREG"]} if CONFIG["WU_MAXNREG"] and not cpu else {}
    _wu[(triton.cdiv(K, wbk), nc, H)](q, k, v, A_log, a, dt_bias, gam, cu_seqlens, rq, rk, tb, w, u, qg, kd, gl,
                                       float(scale), N, H=H, K=K, BT=BT, BC=BC, BK=wbk, BN=bn, DOT=dot,
                                       CPU_STORE=cpu, EMU=cpu and CONFIG["CPU_TF32"], WU_BF16=CONFIG["WU_BF16"],
                                       FROM_A=wa, **wcap,
                                       num_warps=CONFIG["WU_WARPS"])
    bv = CONFIG["BV"]
    split = CONFIG["SCAN_SPLIT_O"]
    if bv == 0:  # enough programs for the H200's 132 SMs, the widest tiles that still give them
        if split:  # _hstate fits 2-3 blocks per SM (72-97 KiB shared): the widest BV in one wave of 264
            bv = 16 if N * H <= 32 else 32 if N * H <= 64 else 64
        else:
            bv = 16 if N * H <= 64 else 32 if N * H <= 256 else 64
    if cpu:  # the interpreter's cost is per program and per op, not per element
        bv = V
    bv = min(bv, V)
    if not split:
        _scan[(triton.cdiv(V, bv), N * H)](
            state, cu_seqlens, w, u, qg, kd, sc, gl, out, new_state,
            H=H, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
        )
        return out, new_state
    hs = torch.empty((nc, H, K, V), dtype=torch.bfloat16, device=dev)  # state before each chunk
    dn = torch.empty((T, H, V), dtype=torch.bfloat16, device=dev)  # delta = U - W S
    _hstate[(triton.cdiv(V, bv), N * H)](
        state, cu_seqlens, w, u, kd, gl, hs, dn, new_state,
        H=H, K=K, V=V, BT=BT, BV=bv, STAGES=CONFIG["SCAN_STAGES"], CPU=cpu, num_warps=CONFIG["SCAN_WARPS"],
    )
    obv = V if cpu else min(CONFIG["OUT_BV"], V)
    _out[(triton.cdiv(V, obv), nc, H)](cu_seqlens, qg, sc, hs, dn, out, N, H=H, K=K, V=V, BT=BT, BV=obv, BN=bn,
                                        CPU=cpu, num_warps=CONFIG["OUT_WARPS"])
    return out, new_state
