"""How often a task's honest solutions are refused on fresh stress draws: a false-rejection rate.

The gauntlet re-runs `[generalization] stress` workloads with outliers and near-zero rows; an honest
kernel must pass every draw, whatever the seed. CI checks one seed per task; this draws many: each
draw is a new stress uuid at small axes, judged by the judge's own check (kernelcraft.gauntlet.judge,
the reference, the task's checkers and the stress error floors), on CPU (Triton interpreter).

Diagnostic only: the honest solution runs in this process as a trusted local subject (the task's
own solutions/, never a candidate; candidates are judged through `kernelcraft eval`'s runner).

    TRITON_INTERPRET=1 python benchmarks/stress_false_rejections.py tasks/balanced_kmeans_step \\
        --axes '{"num_points": 300, "dim": 33, "num_centroids": 7}' \\
        --axes '{"num_points": 500, "dim": 16, "num_centroids": 40}' --draws 150 --out results/cpu/FILE.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from kernelcraft import HARNESS_VERSION
from kernelcraft.gauntlet.judge import Judge, LocalSubject
from kernelcraft.measure.environment import environment
from kernelcraft.task import load_task
from kernelcraft.task.inputs import STRESS_PREFIX
from kernelcraft.task.taskcode import load_module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("--solution", type=Path, action="append", help="default: every solutions/*.py")
    ap.add_argument("--axes", action="append", required=True, help="JSON axes of a small stress shape")
    ap.add_argument("--draws", type=int, default=100, help="stress draws per shape and solution")
    ap.add_argument("--seed", type=int, default=185)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    task = load_task(a.task)
    ns: dict = {}
    exec(compile(task.definition.reference, "<reference>", "exec"), ns)  # noqa: S102 - the task's reference
    sols = a.solution or sorted((a.task / "solutions").glob("*.py"))
    rows = []
    t0 = time.time()
    for path in sols:
        judge = Judge(task, None, ns["run"], None, "cpu", a.seed, role="baseline")
        judge.subject = LocalSubject(load_module(path.parent, path.name).run, judge)
        for axes_text in a.axes:
            axes = json.loads(axes_text)
            refused, worst = [], []
            for i in range(a.draws):
                w = task.workloads[0].model_copy(update={"uuid": f"{STRESS_PREFIX}0-{i:08x}", "axes": axes})
                r = judge.check(w, draws=False)
                if r["status"] != "PASSED":
                    refused.append({"uuid": w.uuid, "status": r["status"], "reason": r.get("reason", "")[:400]})
                else:  # the checker's max_rel_error (element-wise: includes elements atol covers; k-means: the objective's excess)
                    worst.append((float(r.get("max_rel_error") or 0.0), w.uuid))
            worst.sort(reverse=True)
            rows.append({"solution": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                         "axes": axes, "draws": a.draws, "refused": len(refused), "refusals": refused,
                         "largest_rel_error_passed": [{"uuid": u, "max_rel_error": e} for e, u in worst[:3]]})
            print(f"{path.name} {axes}: {len(refused)} of {a.draws} refused ({time.time() - t0:.0f} s)", flush=True)
            for f in refused[:3]:
                print("   ", f["uuid"], f["status"], f["reason"][:200])
    if a.out:
        a.out.write_text(json.dumps({"task": str(a.task), "seed": a.seed, "command": " ".join(sys.argv),
                                     "results": rows, "environment": environment("cpu"),
                                     "harness_version": HARNESS_VERSION,
                                     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    return 0 if all(r["refused"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
