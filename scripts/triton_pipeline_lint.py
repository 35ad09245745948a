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

import re
import sys
from pathlib import Path

ALLOC = re.compile(r"(%[\w.]+) = ttg\.local_alloc : \(\) -> !ttg\.memdesc<(\d+)x")
INDEX = re.compile(r"(%[\w.]+) = ttg\.memdesc_index (%[\w.]+)\[")
COPY = re.compile(r"ttg\.async_copy_global_to_local %[\w.]+, (%[\w.]+)")
DOT = re.compile(r"(%[\w.]+) = ttng\.warp_group_dot (%[\w.]+), (%[\w.]+),.*isAsync = true")
TRANS = re.compile(r"(%[\w.]+) = ttg\.memdesc_trans (%[\w.]+)")
WAIT = re.compile(r"ttng\.warp_group_dot_wait (%[\w.]+).*pendings = (\d+)")
FOR = re.compile(r"scf\.for ")


def _loops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of every scf.for body, by brace depth."""
    out = []
    for i, line in enumerate(lines):
        if not FOR.search(line):
            continue
        depth = 0
        for j in range(i, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0 and j > i:
                out.append((i, j))
                break
    return out


def lint(text: str) -> list[dict]:
    lines = text.splitlines()
    allocs = {m.group(1): int(m.group(2)) for line in lines if (m := ALLOC.search(line))}
    index_of = {m.group(1): m.group(2) for line in lines if (m := INDEX.search(line))}  # buffer view -> alloc
    trans_of = {m.group(1): m.group(2) for line in lines if (m := TRANS.search(line))}
    root = lambda v: index_of.get(trans_of.get(v, v), index_of.get(v))  # noqa: E731 - a dot operand -> its alloc
    found = []
    for first, last in _loops(lines):
        body = lines[first:last + 1]
        filled = {index_of.get(m.group(1)) for line in body if (m := COPY.search(line))} - {None}
        for k, line in enumerate(body):
            m = DOT.search(line)
            if not m:
                continue
            wait = next((WAIT.search(x) for x in body[k + 1:] if WAIT.search(x)), None)
            pend = int(wait.group(2)) if wait else 0
            for operand in (m.group(2), m.group(3)):
                alloc = root(operand)
                if alloc not in filled or alloc not in allocs or any(
                        f["line"] == first + 1 and f["alloc"] == alloc for f in found):
                    continue
                b = allocs[alloc]
                d = sum(1 for x in lines[:first] if (c := COPY.search(x)) and index_of.get(c.group(1)) == alloc)
                race = any((d + j) % b == 0 for j in range(pend))
                found.append({"line": first + 1, "alloc": alloc, "buffers": b, "distance": d, "pendings": pend,
                              "race": race})
    return found


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
