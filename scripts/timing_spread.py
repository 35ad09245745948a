"""How spread the timing samples of evaluation records are: per row and workload the median, the
quartiles and p75/p25, and over all rows how many are *bimodal* (p75/p25 above ``--ratio``), by role and by
latency band. A design diagnostic for the timer (reads JSON, needs no GPU).

    python3 scripts/timing_spread.py results/h100/catalog-2026-12-06-s18/call*/catalog/*.json results/h100/*.json
    python3 scripts/timing_spread.py /tmp/out/rmsnorm_default.json --max-ms 0.02      # the rows under 20 us

A row whose quartiles are far apart mixes two populations of samples (a clean call and a disturbed one); its
median then lands on either, and two identical runs can disagree by that much. Over records of several files
the same row counts once per file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def rows(paths: list[Path]):
    for p in paths:
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            print(f"{p}: skipped ({e})", file=sys.stderr)
            continue
        if not isinstance(doc, dict) or "solutions" not in doc:
            continue
        for s in doc["solutions"]:
            for w in s.get("workloads") or []:
                t = w.get("timing") or {}
                if t.get("median_ms") and t.get("p25_ms") and t.get("p75_ms"):
                    axes = ",".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items())
                    yield {"file": str(p), "name": s["name"], "role": s.get("role") or "?", "axes": axes,
                           "median": t["median_ms"], "p25": t["p25_ms"], "p75": t["p75_ms"],
                           "spread": t["p75_ms"] / t["p25_ms"], "reps": t.get("reps")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--max-ms", type=float, help="only rows whose median is at most this")
    ap.add_argument("--ratio", type=float, default=1.3, help="p75/p25 above this counts as bimodal (default 1.3)")
    ap.add_argument("--bands", default="0.02,0.05", help="latency band edges in ms for the summary")
    ap.add_argument("--quiet", action="store_true", help="the summary only")
    a = ap.parse_args(argv)
    got = [r for r in rows(a.records) if a.max_ms is None or r["median"] <= a.max_ms]
    if not a.quiet:
        print(f"{'file':40} {'row':26} {'workload':34} {'median':>8} {'p25':>8} {'p75':>8} {'p75/p25':>7} {'reps':>5}")
        for r in got:
            flag = " *" if r["spread"] > a.ratio else ""
            print(f"{Path(r['file']).name[:40]:40} {r['name'][:26]:26} {r['axes'][:34]:34} {r['median']:8.4f} "
                  f"{r['p25']:8.4f} {r['p75']:8.4f} {r['spread']:7.2f} {r['reps'] or 0:5}{flag}")
    edges = [float(x) for x in a.bands.split(",") if x]
    bands = [(0.0, edges[0])] + list(zip(edges, edges[1:], strict=False)) + [(edges[-1], float("inf"))]
    print(f"\n{len(got)} rows; bimodal = p75/p25 > {a.ratio}")
    for lo, hi in bands:
        b = [r for r in got if lo <= r["median"] < hi]
        if b:
            n = sum(r["spread"] > a.ratio for r in b)
            print(f"  median in [{lo:g}, {hi:g}) ms: {n} of {len(b)} bimodal")
    for role in sorted({r["role"] for r in got}):
        b = [r for r in got if r["role"] == role and (r["median"] < edges[0])]
        if b:
            n = sum(r["spread"] > a.ratio for r in b)
            print(f"  role {role} under {edges[0]:g} ms: {n} of {len(b)} bimodal ({100 * n / len(b):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
