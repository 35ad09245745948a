"""Find Triton 3.6's pipelined-loop race on sm_90 in TTGIR: a multi-buffered load refilled while an async wgmma may
still read the same buffer.

Found in session 26 (gdn_prefill candidates/triton_chunk5.py `_kkt`, Triton 3.6, sm_90): the 64 x 64 Gram loop
`for kc in tl.range(0, 128, 64)` was software-pipelined into TWO shared buffers, both filled before the loop
(prefetch distance 2). Each iteration issues its wgmma asynchronously, waits with `pendings = 1` (so that wgmma
may still be running), then issues the next prefetch, which for a trip count of 2 is masked off: a cp.async of
source size 0, i.e. a ZERO-FILL of the buffer index (i + 2) % 2 = i, the very buffer the in-flight wgmma reads.
The Gram then sees some k rows as zeros on some launches: gdn_prefill's 10^4-10^5 output elements that changed
from call to call on an H100 (session 25). `bar.sync` between them does not wait for an async wgmma.

The rule checked, per scf.for in each kernel: for every shared allocation of B buffers that the loop fills with
`ttg.async_copy_global_to_local` (D of them issued before the loop: the prefetch distance) and that an async
`ttng.warp_group_dot` reads, followed by `ttng.warp_group_dot_wait {pendings = P}`: a refill in iteration i
writes buffer (i + D) mod B while the wgmmas of iterations i - P + 1 .. i may still read (i - j) mod B; they
collide when (D + j) mod B == 0 for some j in 0 .. P - 1. Triton's usual matmul pipeline (B 3, D 2, P 1) is
safe; the B 2, D 2, P 1 loop above is not.

    PYTHONPATH=/tmp/t36:src python3 scripts/triton_regs.py tasks/gdn_prefill FILE --axes ... --dump /tmp/ir
    python3 scripts/triton_pipeline_lint.py /tmp/ir/*.ttgir

Prints one line per loop with an async wgmma on a multi-buffered operand: SAFE or RACE with B, D and P; exits 1
when any RACE is found. A static reading of one compiler's output, not a proof: confirm on the GPU with
scripts/stage_determinism.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelcraft.measure.triton_static import lint_ttgir as lint  # noqa: E402  (the rule: that module's docstring)


def main() -> int:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bad = 0
    for p in map(Path, sys.argv[1:]):
        for f in lint(p.read_text()):
            verdict = "RACE" if f["race"] else "SAFE"
            bad += f["race"]
            print(f"{p.name}: loop at line {f['line']}: {verdict}: {f['alloc']} has {f['buffers']} buffers, prefetch "
                  f"distance {f['distance']}, async wgmma waited with pendings {f['pendings']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
