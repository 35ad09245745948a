"""How much slower the baseline runs beside a candidate than alone, in records already written.

Every run times the baseline twice: alone, in its own row (the judge, its own copies of the inputs, beside
nothing but the reference), and beside each candidate (the judge, the candidate's shared arena, interleaved
with the candidate's runner: each candidate workload's ``baseline_latency_ms``). The same code under the two
conditions: whatever separates them also separates a candidate from a peer timed alone, the comparison issue
21's targets rest on (kernelcraft/measure/stability.py reads it per workload).

    PYTHONPATH=src python scripts/harness_asymmetry.py results/h100/catalog-2026-12-06-s19b/chain*/catalog/*.json
    PYTHONPATH=src python scripts/harness_asymmetry.py RECORDS --short-ms 0.02   # baseline under 20 us (default)

Prints, per record, the beside-minus-alone differences (us) over the candidates' workloads where the baseline
alone is under ``--short-ms``, then over all records: median, mean, and how many are positive.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from kernelcraft.measure import stability


def differences(record: dict, short_ms: float) -> list[float]:
    """Beside minus alone (us) over every candidate's workloads (kernelcraft.measure.stability.asymmetry_pairs)."""
    rows = record.get("solutions", [])
    return [d * 1e3 for s in rows if s.get("role") == "candidate"
            for d in stability.asymmetry_pairs(s.get("workloads") or [], rows, short_ms)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--short-ms", type=float, default=0.02)
    args = ap.parse_args()
    every: list[float] = []
    for path in args.records:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"{path}: not a record ({e})", file=sys.stderr)
            continue
        d = differences(record, args.short_ms)
        if d:
            every += d
            print(f"{path}: n={len(d)} beside-minus-alone median {statistics.median(d):+.3f} us, "
                  f"min {min(d):+.3f}, max {max(d):+.3f}")
    if not every:
        print("no candidate workload with a short baseline row in these records")
        return 1
    print(f"all: n={len(every)} median {statistics.median(every):+.3f} us, mean {statistics.mean(every):+.3f} us, "
          f"{sum(x > 0 for x in every)} of {len(every)} slower beside a candidate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
