#!/usr/bin/env python3
"""The solution with the best geometric mean against FLA in a scripts/gdn_prefill_split.py profile (split.json):
prints every solution's mean to stderr, best first, and the best one's path to stdout (solutions named by
--exclude left out of the pick; an empty line when none is left, or when none beats --must-beat's mean). Used by
scripts/gdn_variants_judge.sh."""

import argparse
import json
import math
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("split", type=Path)
    ap.add_argument("--exclude", action="append", default=[], help="a solution name not to pick (repeat)")
    ap.add_argument("--must-beat", default="", help="a solution name whose mean the pick must exceed")
    args = ap.parse_args()
    d = json.loads(args.split.read_text())
    scores = {}
    for name in d["solutions"]:
        r = [w["fla"]["total_us_per_call"] / w[name]["total_us_per_call"]
             for w in d["workloads"].values() if name in w and "fla" in w]
        if r:
            scores[name] = math.exp(sum(map(math.log, r)) / len(r))
    for n, s in sorted(scores.items(), key=lambda x: -x[1]):
        print(f"{n} {s:.3f}", file=sys.stderr)
    left = {n: s for n, s in scores.items() if n not in args.exclude and s > scores.get(args.must_beat, 0.0)}
    print(d["solutions"][max(left, key=left.get)] if left else "")


if __name__ == "__main__":
    main()
