"""Benchmark of the harness itself (issue 4): timing spread across processes, agreement with Nsight
Compute, turnaround of one evaluation, candidates per GPU-minute. Prints the figures and writes them,
with the environment, to a JSON file.

    python benchmarks/harness.py --device cuda --out results/h200/harness.json   # on the H200
    python benchmarks/harness.py --device cpu --quick --out /tmp/harness_cpu.json  # a smoke run

Targets (issue 4): timing_spread_pct <= 1% at 50 us and 2 ms, <= 3% at 5 us; ncu_agreement_pct <= 5%;
turnaround_s cuda_cold <= 5, cuda_cached <= 2, triton_cold <= 5, triton_cached <= 2;
candidates_per_gpu_minute >= 20.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# Elements of a float32 `y = x + 1` (one kernel: read 4 B + write 4 B each) sized for each target
# duration at about 4.2 TB/s; on a CPU the same sizes simply take longer.
SPREAD_SIZES = {"5us": 2_500_000, "50us": 25_000_000, "2ms": 1_000_000_000}
WARM_WAIT_S = 10.0  # before each timed turnaround: the spare worker finishes starting
NCU_SIZES = [10_000_000, 50_000_000, 250_000_000]  # about 20 us, 100 us, 500 us on the H200


def _child_time(numel: int, device: str, budget_ms: float) -> float:
    import torch

    from kernelcraft.measure.timing import time_interleaved

    x = torch.randn(numel, device=device)
    y = torch.empty_like(x)
    t = time_interleaved({"k": lambda: torch.add(x, 1, out=y)}, device, budget_ms=budget_ms,
                         min_reps=10, max_reps=2000)
    return t["k"].median_ms


def timing_spread(device: str, quick: bool) -> dict:
    out = {}
    for label, numel in SPREAD_SIZES.items():
        if quick:
            numel = min(numel, 2_000_000)
        medians = []
        for _ in range(3 if quick else 5):
            proc = subprocess.run([sys.executable, __file__, "--child-time", str(numel), "--device", device],
                                  capture_output=True, text=True, timeout=600, env=_env())
            medians.append(float(proc.stdout.strip().splitlines()[-1]))
        med = statistics.median(medians)
        out[label] = {"spread_pct": 100 * (max(medians) - min(medians)) / med, "medians_ms": medians}
        print(f"timing spread {label}: {out[label]['spread_pct']:.2f}% over {len(medians)} processes {medians}")
    return out


def ncu_agreement(device: str) -> dict:
    ncu = shutil.which("ncu")
    if not device.startswith("cuda") or not ncu:
        return {"error": "needs a CUDA device and ncu on PATH"}
    ours = {n: float(subprocess.run([sys.executable, __file__, "--child-time", str(n), "--device", device],
                                    capture_output=True, text=True, timeout=600, env=_env()).stdout.split()[-1])
            for n in NCU_SIZES}
    with tempfile.TemporaryDirectory() as d:
        rep = Path(d) / "r"
        # --clock-control none: ncu otherwise locks clocks to base, which our timer does not do.
        subprocess.run([ncu, "--clock-control", "none", "--cache-control", "all", "--metrics",
                        "gpu__time_duration.sum", "--profile-from-start", "off", "-o", str(rep), "-f",
                        sys.executable, __file__, "--child-ncu", "--device", device],
                       capture_output=True, text=True, timeout=600, env=_env())
        csv = subprocess.run([ncu, "--import", str(rep) + ".ncu-rep", "--csv", "--page", "raw", "--metrics",
                              "gpu__time_duration.sum", "--print-units", "base"],
                             capture_output=True, text=True, timeout=300).stdout
    rows = [r for r in csv.splitlines() if r.startswith('"')]
    header = [h.strip('"') for h in rows[0].split('","')]
    col = header.index("gpu__time_duration.sum")
    durations = [float(r.split('","')[col].strip('"').replace(",", "")) / 1e6 for r in rows[2:]]  # ns -> ms
    per_size = len(durations) // len(NCU_SIZES)
    result = {}
    for i, n in enumerate(NCU_SIZES):
        ncu_ms = statistics.median(durations[i * per_size:(i + 1) * per_size])
        result[str(n)] = {"ours_ms": ours[n], "ncu_ms": ncu_ms, "diff_pct": 100 * abs(ours[n] - ncu_ms) / ncu_ms}
        print(f"ncu agreement numel={n}: ours {ours[n]:.4f} ms, ncu {ncu_ms:.4f} ms ({result[str(n)]['diff_pct']:.2f}%)")
    result["worst_pct"] = max(v["diff_pct"] for v in result.values() if isinstance(v, dict))
    return result


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))


def _three_workload_task(dest: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import small_task

    return small_task("rmsnorm", dest, [{"batch_size": 1}, {"batch_size": 128}, {"batch_size": 4096}])


def turnaround(device: str) -> tuple[dict, dict]:
    from kernelcraft.gauntlet import Options, evaluate
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    out, phases = {}, {}
    with tempfile.TemporaryDirectory() as d:
        task = load_task(_three_workload_task(Path(d)))
        # warm_spare: every evaluation leaves a started worker behind for the next, as in an agent's loop
        opts = Options(device=device, timing={"budget_ms": 20}, warm_spare=True)
        sols = {"triton": ROOT / "tasks/rmsnorm/solutions/triton_rowwise.py",
                "cuda": ROOT / "tasks/rmsnorm/solutions/cuda_cubin"}
        # a warm worker: one evaluation first, so the spare for the device exists
        evaluate(task, [("candidate", load_solution(sols["triton"], task.definition.name), "warm-up")], opts)
        for kind, path in sols.items():
            if kind == "cuda" and not device.startswith("cuda"):
                continue
            os.environ["KERNELCRAFT_CACHE"] = tempfile.mkdtemp(prefix="kc_cold_")
            os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton_cold_")
            from kernelcraft.worker.pool import shutdown_spares

            shutdown_spares()  # a spare spawned before the cache moved would use the old one
            evaluate(task, [("candidate", load_solution(sols["triton"], task.definition.name), "warm-up")], opts)
            sol = load_solution(path, task.definition.name)
            for state in ("cold", "cached"):
                # "with a warm worker": the previous evaluation left a spare, which needs ~5 s to import
                # torch and start CUDA; an agent thinking between candidates gives it that time
                time.sleep(WARM_WAIT_S)
                t0 = time.monotonic()
                rep = evaluate(task, [("candidate", sol, str(path))], opts)
                out[f"{kind}_{state}"] = time.monotonic() - t0
                phases[f"{kind}_{state}"] = rep.solutions[0].phases_s  # where the seconds went
                print(f"turnaround {kind}_{state}: {out[f'{kind}_{state}']:.2f} s ({rep.solutions[0].status}), "
                      f"phases {phases[f'{kind}_{state}']}")
    return out, phases


def candidates_per_minute(device: str, n: int) -> dict:
    from kernelcraft.agent.tuner import with_config
    from kernelcraft.gauntlet import Options, evaluate
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task

    task = load_task(ROOT / "tasks/rmsnorm")
    text = (ROOT / "tasks/rmsnorm/solutions/triton_tunable.py").read_text()
    configs = [{"BLOCK_M": m, "num_warps": w} for m in (1, 2, 4) for w in (2, 4, 8, 16)][:n]
    entries = []
    with tempfile.TemporaryDirectory() as d:
        for i, cfg in enumerate(configs):
            f = Path(d) / f"cand_{i}.py"
            f.write_text(with_config(text, cfg))
            entries.append(("candidate", pack_python_file(f, task.definition.name, name=f"cand_{i}"), str(f)))
        opts = Options(device=device, timing={"budget_ms": 50})
        from kernelcraft.worker.executor import make_executor

        # the pool as a design loop has it after its first round: spares started and warm
        with make_executor("local", device) as ex:
            start_s = ex.prestart()
            t0 = time.monotonic()
            rep = evaluate(task, entries, opts, executor=ex)
            wall = time.monotonic() - t0
    per_min = len(entries) / (wall / 60)
    print(f"candidates per GPU-minute: {per_min:.1f} ({len(entries)} candidates, {wall:.1f} s, "
          f"{sum(s.status == 'PASSED' for s in rep.solutions)} PASSED)")
    per_candidate = [{"name": s.name, "status": s.status, "wall_s": s.wall_s, "phases_s": s.phases_s,
                      "reps": [w.timing.get("reps") if w.timing else None for w in s.workloads],
                      # why each workload's rotation ended and which rows (candidate, baseline, reference)
                      # had not converged then: what keeps a wall-bound timing phase long
                      "stop": [w.timing.get("stop") if w.timing else None for w in s.workloads],
                      "unconverged": [w.timing.get("unconverged") if w.timing else None for w in s.workloads]}
                     for s in rep.solutions]
    for c in per_candidate:
        print(f"  {c['name']}: {c['status']} {c['wall_s']:.2f} s, phases {c['phases_s']}, reps per workload {c['reps']}, "
              f"stop {c['stop']}, unconverged {c['unconverged']}")
    return {"value": per_min, "candidates": len(entries), "wall_s": wall, "pool_start_s": start_s,
            "workers": ex.describe(), "per_candidate": per_candidate}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="small sizes and counts: a smoke run")
    ap.add_argument("--parts", default="spread,ncu,turnaround,throughput",
                    help="which measurements, comma-separated; with --out, an existing file keeps the others")
    ap.add_argument("--child-time", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_time:
        print(_child_time(args.child_time, args.device, 300))
        return
    if args.child_ncu:
        import torch

        for n in NCU_SIZES:
            x = torch.randn(n, device=args.device)
            y = torch.empty_like(x)
            torch.add(x, 1, out=y)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            for _ in range(5):
                torch.add(x, 1, out=y)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        return
    from kernelcraft.measure.environment import environment

    parts = set(args.parts.split(","))
    result = {}
    if args.out and args.out.exists() and parts != {"spread", "ncu", "turnaround", "throughput"}:
        result = json.loads(args.out.read_text())  # a partial rerun replaces only the parts it measures
    result |= {"environment": environment(args.device), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "command": " ".join([Path(sys.executable).name, *sys.argv])}
    if "spread" in parts:
        spread = timing_spread(args.device, args.quick)
        result["timing_spread_pct"] = {k: v["spread_pct"] for k, v in spread.items()}
        result["timing_spread_detail"] = spread
    if "ncu" in parts:
        ncu = ncu_agreement(args.device)
        result["ncu_agreement_pct"] = ncu.get("worst_pct")
        result["ncu_agreement_detail"] = ncu
    if "turnaround" in parts:
        result["turnaround_s"], result["turnaround_phases_s"] = turnaround(args.device)
    if "throughput" in parts:
        per_min = candidates_per_minute(args.device, 4 if args.quick else 12)
        result["candidates_per_gpu_minute"] = per_min["value"]
        result["candidates_per_gpu_minute_detail"] = per_min
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        print(f"wrote {args.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()
