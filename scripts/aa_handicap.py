"""The candidate's handicap, read from A/A records: a peer's own code evaluated as a candidate
(``scripts/aa_candidate.py`` names the copy ``aa_<peer>``, e.g. ``aa_liger``; ``aa_liger2`` is a second copy)
against the same code as the trusted row ``peer:<peer>``, per workload. With ``--peers-beside`` the peer's time
in the A/A copy's own rotation (``beside_ms``) is used; otherwise the peer's own row. A second copy is also compared
with the first (two runners, the same process path), and ``--pair CAND=ROW`` adds any other pair (e.g.
``triton_rowwise=peer:self`` for a solution written as a peer with ``aa_candidate.py --to-peer self``).

    python3 scripts/aa_handicap.py results/h100/catalog-2026-12-06-s22/beside/*_{alone,beside}.json

Prints one line per pair and record (each workload's difference in us, their median, the median relative
difference) and the median over every pair's workloads. Reads JSON only: no GPU, no kernelcraft import.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path


def _latencies(row: dict) -> dict[str, float]:
    return {w["uuid"]: w["latency_ms"] for w in row.get("workloads") or [] if w.get("latency_ms")}


def pairs_of(rows: dict[str, dict], extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for name in rows:
        m = re.fullmatch(r"aa_([A-Za-z][\w-]*?)(\d*)", name)
        if m and f"peer:{m.group(1)}" in rows:
            out.append((name, f"peer:{m.group(1)}"))
            first = f"aa_{m.group(1)}"
            if m.group(2) and first in rows:
                out.append((name, first))
    return out + [(a, b) for a, b in extra if a in rows and b in rows]


def differences(rows: dict[str, dict], cand: str, other: str) -> list[tuple[float, float]]:
    """(us, relative) per workload: ``cand`` minus ``other`` (the peer timed beside ``cand`` where recorded)."""
    mine = {w["uuid"]: w for w in rows[cand].get("workloads") or []}
    theirs = _latencies(rows[other])
    out = []
    for uuid, w in mine.items():
        a = w.get("latency_ms")
        b = (w.get("beside_ms") or {}).get(other) or theirs.get(uuid)
        if a and b:
            out.append(((a - b) * 1e3, a / b - 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--pair", action="append", default=[], metavar="CAND=ROW", help="another pair to compare")
    args = ap.parse_args()
    extra = [tuple(p.split("=", 1)) for p in args.pair]
    every: list[float] = []
    for path in args.records:
        rows = {s["name"]: s for s in json.loads(path.read_text())["solutions"]}
        for cand, other in pairs_of(rows, extra):
            d = differences(rows, cand, other)
            if not d:
                continue
            us = [x for x, _ in d]
            every += us
            beside = any(other in (w.get("beside_ms") or {}) for w in rows[cand].get("workloads") or [])
            print(f"{path.name}: {cand} - {other}{' (beside)' if beside else ''}: "
                  f"{' '.join(f'{x:+.2f}' for x in us)} us; median {statistics.median(us):+.2f} us, "
                  f"{100 * statistics.median(r for _, r in d):+.1f}%")
    if not every:
        print("no A/A pair in these records (a candidate aa_<peer> beside the row peer:<peer>, or --pair)")
        return 1
    print(f"all: {len(every)} workloads, median {statistics.median(every):+.2f} us, "
          f"{sum(x > 0 for x in every)} of {len(every)} slower as a candidate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
