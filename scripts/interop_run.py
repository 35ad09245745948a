"""Import a real dataset and evaluate what it holds, one `kernelcraft eval` per task (issue 27).

    python scripts/interop_run.py fib DATASET --out DIR [--device cpu|cuda] [--jobs N] [--workloads-per-task K]
    python scripts/interop_run.py kernelbench PROBLEMS_DIR... --out DIR [--device cpu] [--jobs N]

Writes DIR/tasks/ (the imported task folders), DIR/records/<task>.json (each eval's record),
DIR/summary.json (per task: imported or why not, each row's verdict) and prints the counts. Checks
only (--no-timing) unless --timing. With --workloads-per-task K, each eval runs K workloads spread
over the task's sizes (the smallest, the largest, evenly between), which keeps a GPU run of every
FlashInfer-Trace solution to minutes. Evals run --jobs at a time, each a process of its own (a GPU
is shared only for checks, never for timings: --timing runs one at a time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kc(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "kernelcraft", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def spread(task_dir: Path, k: int) -> list[str]:
    """Uuids of k workloads from the smallest to the largest (by bytes moved)."""
    sys.path.insert(0, str(ROOT / "src"))
    from kernelcraft.task import load_task

    task = load_task(task_dir)
    ws = sorted(task.workloads, key=lambda w: task.io_bytes(w.axes))
    if k <= 0 or len(ws) <= k:
        return []
    picks = sorted({round(i * (len(ws) - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    return [ws[i].uuid for i in picks]


def evaluate(task_dir: Path, rec: Path, args) -> dict:
    # no peers and no torch.compile rows (on by default on a GPU): the verdicts of the task's own rows only
    cmd = ["eval", str(task_dir), "--device", args.device, "--json", str(rec), "--cpu-max-mb", str(args.cpu_max_mb),
           "--no-peers"]
    if not args.timing:
        cmd += ["--no-timing", "--no-calibrate"]  # checks only: no device ceilings needed
    else:
        cmd += ["--budget-ms", str(args.budget_ms)]
    for uuid in spread(task_dir, args.workloads_per_task):
        cmd += ["--workload", uuid]
    t0 = time.monotonic()
    try:
        proc = kc(*cmd, timeout=args.eval_timeout)
    except subprocess.TimeoutExpired:
        return {"task": task_dir.name, "error": f"eval timed out after {args.eval_timeout:g} s"}
    out: dict = {"task": task_dir.name, "seconds": round(time.monotonic() - t0, 1)}
    if proc.returncode != 0 or not rec.is_file():
        out["error"] = f"eval exited {proc.returncode}: {(proc.stdout + proc.stderr)[-600:]}"
        return out
    r = json.loads(rec.read_text())
    out["rows"] = [{"name": s["name"], "role": s.get("role"), "status": s["status"], "gate": s.get("gate"),
                    "reason": (s.get("reason") or "")[:400],
                    "workloads": {k: sum(w["status"] == k for w in s["workloads"]) for k in
                                  sorted({w["status"] for w in s["workloads"]})}} for s in r["solutions"]]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["fib", "kernelbench"])
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--workloads-per-task", type=int, default=0, help="0: every workload")
    ap.add_argument("--cpu-max-mb", type=float, default=16.0)
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--budget-ms", type=float, default=50.0)
    ap.add_argument("--eval-timeout", type=float, default=600.0)
    ap.add_argument("--import-only", action="store_true")
    ap.add_argument("--skip-import", action="store_true", help="evaluate the tasks already in OUT/tasks")
    ap.add_argument("--import-device", default=None,
                    help="kernelbench: where the importer's check runs (default: cpu; cuda for problems too large here)")
    ap.add_argument("--import-max-memory-mb", type=int, default=None,
                    help="kernelbench: the importer's per-problem memory limit (0: none)")
    args = ap.parse_args()
    tasks, recs = args.out / "tasks", args.out / "records"
    recs.mkdir(parents=True, exist_ok=True)
    summary: dict = {"kind": args.kind, "sources": [str(s) for s in args.sources], "device": args.device}
    if not args.skip_import:
        t0 = time.monotonic()
        extra = ["--workers", str(args.jobs)] if args.kind == "kernelbench" else []
        if args.kind == "kernelbench" and args.import_device:
            extra += ["--device", args.import_device]
        if args.kind == "kernelbench" and args.import_max_memory_mb is not None:
            extra += ["--max-memory-mb", str(args.import_max_memory_mb)]
        proc = kc("import", args.kind, *map(str, args.sources), "--out", str(tasks), *extra, timeout=6 * 3600)
        summary["import_seconds"] = round(time.monotonic() - t0, 1)
        summary["import_log"] = proc.stdout[-20000:]
        (args.out / "import.log").write_text(proc.stdout + proc.stderr)
        print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:], flush=True)
    if args.import_only:
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return 0
    dirs = sorted(p for p in tasks.iterdir() if p.is_dir() and not p.name.startswith("."))
    results: list[dict] = []
    jobs = 1 if args.timing else args.jobs
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(evaluate, d, recs / f"{d.name}.json", args): d for d in dirs}
        for fut in as_completed(futs):
            r = fut.result()
            results.append(r)
            rows = r.get("rows") or []
            line = ", ".join(f"{x['name'][:40]} {x['status']}" for x in rows) or r.get("error", "")[:200]
            print(f"{r['task']}: {line}", flush=True)
            write_summary(args.out, summary, results, len(dirs))  # after every task: a cut-off run keeps its part
    counts = write_summary(args.out, summary, results, len(dirs))
    print(json.dumps(counts))
    return 0


def write_summary(out: Path, summary: dict, results: list[dict], planned: int) -> dict:
    results = sorted(results, key=lambda r: r["task"])
    base = [next((x for x in r.get("rows", []) if x["name"] == "baseline"), None) for r in results]
    cands = [x for r in results for x in r.get("rows", []) if x["role"] == "candidate"]
    counts = {"tasks": planned, "evaluated": len(results),
              "baseline_passed": sum(b is not None and b["status"] == "PASSED" for b in base)}
    for x in cands:
        counts[f"candidates_{x['status']}"] = counts.get(f"candidates_{x['status']}", 0) + 1
    tmp = out / "summary.json.partial"
    tmp.write_text(json.dumps({**summary, "counts": counts, "tasks": results}, indent=2) + "\n")
    tmp.replace(out / "summary.json")
    return counts


if __name__ == "__main__":
    sys.exit(main())
