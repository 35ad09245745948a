"""Pick, from scripts/catalog_sweep.py's JSON, the implementations worth a `kernelcraft eval`: the N with the best
geometric mean of (best peer's time / its time) over the swept workloads, counting only implementations that
PASSED at every one of them. A workload whose sweep measured no peer is ranked against the task's baseline row
instead (session 17: gelu_tanh_mul's sweep had no peer installed, and picking against peers alone left it with no
pick at all). A design step, never a verdict: the eval decides.

    python3 scripts/sweep_pick.py SWEEP.json VARIANTS_DIR [-n 2]   -> prints the picked files, one a line
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("sweep")
    p.add_argument("variants")
    p.add_argument("-n", type=int, default=2)
    args = p.parse_args()
    d = json.loads(Path(args.sweep).read_text())
    scores: dict[str, list[float]] = {}
    dead: set[str] = set()
    for w in d["workloads"]:
        bp = w.get("best_peer")
        against = bp[0] if bp else w["results"].get("baseline", {}).get("ms")
        for name, r in w["results"].items():
            if name == "baseline" or name.startswith("peer:") or name == "torch.compile":
                continue
            if "ms" not in r or not against:
                dead.add(name)
                continue
            scores.setdefault(name, []).append(against / r["ms"])
    ranked = sorted(((math.exp(sum(map(math.log, v)) / len(v)), n) for n, v in scores.items() if n not in dead),
                    reverse=True)
    for g, name in ranked[: args.n]:
        f = Path(args.variants) / f"{name}.py"
        if f.is_file():
            print(f)
        print(f"# {name}: {g:.3f}x best peer (else baseline) over {len(scores[name])} workloads", flush=True)


if __name__ == "__main__":
    main()
