"""Every task's Triton solutions and candidates through scripts/triton_pipeline_lint.py: compile each file's kernels
for sm_90 on this GPU-less machine (scripts/triton_regs.py, Triton 3.6 from /tmp/t36, the GPU machine's version)
and report, per file, the pipelined wgmma loops that are SAFE and those that RACE.

Why: session 26 found Triton 3.6's pipeliner race (two shared buffers, prefetch distance 2, async wgmma waited
with pendings 1: a masked zero-fill overwrites the buffer an in-flight wgmma reads) in gdn_prefill
candidates/triton_chunk3-6.py `_kkt`, the nondeterminism of session 25. The race is a property of the compiled
loop, not of the source, so any kernel with a `tl.dot` in a short pipelined loop may have it: this sweep looks
at all of them.

    python scripts/triton_lint_tasks.py [--tasks gdn_prefill,kda_prefill] [--timeout 240] [--jobs 2]

Files: tasks/*/solutions/*.py and tasks/*/candidates/*.py that import triton, and solution folders whose
solution.json says language "triton" (their entry point); CUDA folders, non-Python files and the solutions/wrong/
fixtures are skipped. Each file is compiled for two workloads of workloads.jsonl, the one with the largest
product of var axes and the one with the smallest (the definition's const axes added), in one triton_regs.py
subprocess with --dump into a temporary folder; every dumped TTGIR is linted. One line per file: kernels
compiled (distinct names; launches), loops SAFE and RACE (counted per loop and multi-buffered wgmma operand, as
triton_pipeline_lint.py prints them), the RACEs with the kernels (`name_<workload #>@<TTGIR line of
the loop>(B buffers, D prefetch distance, P pendings)`, workload 0 the largest, 1 the smallest, as the `#` line
before each task's files gives them), or `compile failed: <last line of stderr>` (reported, not fixed). A file
whose launcher fails on meta tensors with NotImplementedError (torch.nonzero has no meta kernel) is tried again
with triton_regs.py --real-inputs (zero-filled CPU tensors; see its docstring for what that records), its line
marked `[real inputs]`. Exits 1
when any RACE is found. A static reading of one compiler's output, not a proof: confirm on the GPU with
scripts/stage_determinism.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from triton_pipeline_lint import lint  # noqa: E402

T36 = "/tmp/t36"


def _solution_files(task: Path) -> list[Path]:
    """The Triton Python files of a task's solutions/ and candidates/ (not solutions/wrong/)."""
    out = []
    for sub in ("solutions", "candidates"):
        folder = task / sub
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            if p.name == "wrong":
                continue
            if p.is_dir():  # a solution folder: its entry point if solution.json says Triton
                meta = p / "solution.json"
                if not meta.is_file():
                    continue
                try:
                    spec = json.loads(meta.read_text()).get("spec", {})
                except ValueError:
                    continue
                entry = spec.get("entry_point", "").split("::")[0]
                if spec.get("language") == "triton" and entry.endswith(".py") and (p / entry).is_file():
                    out.append(p / entry)
            elif p.suffix == ".py" and "import triton" in p.read_text(errors="replace"):
                out.append(p)
    return out


def _axes_strings(task: Path) -> list[str]:
    """--axes strings of the largest and the smallest workload (product of var axes), const axes added."""
    definition = json.loads((task / "definition.json").read_text())
    const = {k: v["value"] for k, v in definition["axes"].items() if v.get("type") == "const"}
    var = [k for k, v in definition["axes"].items() if v.get("type") == "var"]
    workloads = []
    for line in (task / "workloads.jsonl").read_text().splitlines():
        if line.strip():
            axes = json.loads(line)["workload"]["axes"]
            workloads.append((math.prod(int(axes[k]) for k in var if k in axes), axes))
    if not workloads:
        return []
    big = max(workloads, key=lambda w: w[0])[1]
    small = min(workloads, key=lambda w: w[0])[1]
    out = []
    for axes in (big, small):
        s = ",".join(f"{k}={v}" for k, v in {**axes, **const}.items())
        if s not in out:
            out.append(s)
    return out


def _check(task: Path, path: Path, timeout: float) -> tuple[str, bool]:
    """One file's report line, and whether it has a RACE."""
    rel = path.relative_to(task)
    head = f"{task.name:20s} {str(rel):45s}"
    axes = _axes_strings(task)
    if not axes:
        return f"{head} no workloads", False
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([T36, str(ROOT / "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory(prefix="kc_lint_") as d:
        cmd = [sys.executable, str(ROOT / "scripts" / "triton_regs.py"), str(task), str(path), "--dump", d]
        for a in axes:
            cmd += ["--axes", a]
        real = ""
        for attempt in (cmd, cmd + ["--real-inputs"]):
            t0 = time.time()
            try:
                proc = subprocess.run(attempt, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
            except subprocess.TimeoutExpired:
                return f"{head} compile failed: timeout after {timeout:.0f} s{real}", False
            secs = time.time() - t0
            lines = [x for x in proc.stderr.strip().splitlines() if x.strip()] or ["(no stderr)"]
            if not (proc.returncode and lines[-1].startswith("NotImplementedError") and not real):
                break
            real = "  [real inputs]"  # meta tensors lack a kernel the launcher's host code needs: CPU ones
            for p in Path(d).iterdir():  # what the meta attempt dumped before it failed
                p.unlink()
        if proc.returncode:
            return f"{head} compile failed: {lines[-1].strip()[:200]}{real}", False
        launches = sum(1 for x in proc.stdout.splitlines() if " grid=" in x)
        dumps = sorted(Path(d).glob("*.ttgir"))
        names = {p.stem.rsplit("_", 1)[0] for p in dumps}
        safe, races = 0, []
        for p in dumps:
            for f in lint(p.read_text()):
                if f["race"]:
                    races.append(f"{p.stem}@{f['line']}(B{f['buffers']} D{f['distance']} P{f['pendings']})")
                else:
                    safe += 1
    line = (f"{head} kernels {len(names)} (launches {launches}), loops SAFE {safe}, RACE {len(races)}"
            + (f": {' '.join(races)}" if races else "") + f"  [{secs:.0f} s]{real}")
    return line, bool(races)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", help="comma-separated task names (default: every folder of tasks/)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per file (default 240)")
    ap.add_argument("--jobs", type=int, default=1, help="files compiled at once (default 1)")
    args = ap.parse_args()
    if not Path(T36, "triton").is_dir():
        sys.exit(f"{T36}/triton not found: Triton 3.6 (the GPU machine's version) is expected there")
    if args.tasks:
        tasks = [ROOT / "tasks" / t.strip() for t in args.tasks.split(",") if t.strip()]
    else:
        tasks = sorted(p.parent for p in (ROOT / "tasks").glob("*/definition.json"))
    jobs = [(t, f) for t in tasks for f in _solution_files(t)]
    t0 = time.time()
    bad = 0
    shown = None
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        for (task, _), (line, race) in zip(jobs, ex.map(lambda j: _check(*j, args.timeout), jobs), strict=True):
            if task != shown:
                shown = task
                print(f"# {task.name}: " + "; ".join(f"workload {i}: {a}" for i, a in enumerate(_axes_strings(task))))
            print(line, flush=True)
            bad += race
    print(f"# {len(jobs)} files, {bad} with RACE, {time.time() - t0:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
