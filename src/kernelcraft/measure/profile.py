"""``kernelcraft profile``: what limits one solution on one workload, condensed for an agent.

Two sources, each where it can run:

- **Nsight Compute** (a CUDA device and ``ncu``): the solution runs in its own process
  (:mod:`kernelcraft.measure._profile_target`) under ``ncu``, which profiles only the calls made
  after the warm-up. The full report (``report.ncu-rep``, for ``ncu-ui``) and its raw CSV
  (``raw.csv``) stay in the output folder; the summary gives per kernel: launches, duration, DRAM
  and SM throughput as % of peak, achieved and theoretical occupancy and its limiter, registers,
  shared memory, local-memory (spill) traffic, the top warp-stall reasons, and a diagnosis.
- **ptxas** (nvcc, no GPU needed), CUDA solutions: registers, spills, shared and constant
  memory and stack per kernel, straight from the compiler (:mod:`kernelcraft.measure._ptxas`).
- **Triton's compiler** (no GPU needed), Triton solutions: every kernel the launcher makes at the
  workload compiled for sm_90 without a run, Triton's ptxas report, and the pipeline lint on its TTGIR
  (:mod:`kernelcraft.measure.triton_static`, in a process of its own): a short pipelined ``tl.dot``
  loop that refills a buffer an async wgmma may still read is named first in the diagnosis.

ncu locks clocks to base and flushes caches between its replay passes, so its durations are for
comparing kernels, not the gauntlet's latencies.

Output folder (default ``.kernelcraft/profiles/<task>/<solution>-<source hash>/``): ``summary.txt``,
``summary.json``, ``report.ncu-rep``, ``raw.csv``, ``ncu.log`` (what ncu and the solution printed),
``solution.json``, ``target.json`` (the profiled process's own result).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import kernelcraft
from kernelcraft._target import kill_group
from kernelcraft.errors import InputError, Problem
from kernelcraft.measure import _ncu
from kernelcraft.measure._ptxas import CompileFailed, PtxasReport, nvcc_resource_report
from kernelcraft.measure.triton_static import race_lines, static_report
from kernelcraft.solution.model import Solution, load_solution
from kernelcraft.task.loader import Task, load_task
from kernelcraft.task.workload import Workload

__all__ = ["Profile", "ProfileError", "profile", "render"]

NCU_FIX = ("install Nsight Compute (it ships with the CUDA toolkit as `ncu`) and put its folder on PATH, "
           "or point KERNELCRAFT_NCU at the binary")
# Files of an earlier profile in the same folder: removed first, so nothing stale is read back.
_OUTPUTS = ("summary.txt", "summary.json", "report.ncu-rep", "raw.csv", "ncu.log", "target.json", "ptxas.txt")


class ProfileError(Exception):
    """Nothing useful can be reported. ``exit_code`` 2: this machine or the input lacks something
    (the message says what and the fix); 1: the solution failed to build or run."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Profile:
    task: str
    solution: str
    language: str
    device: str
    workload: dict  # uuid, axes, io_bytes
    out_dir: str
    ptxas: PtxasReport | None = None
    kernels: list[_ncu.KernelProfile] = field(default_factory=list)
    ncu: dict = field(default_factory=dict)  # ran, message, commands, report
    target: dict = field(default_factory=dict)  # device name, output check, Triton kernels
    notes: list[str] = field(default_factory=list)
    triton_static: dict | None = None  # a Triton solution compiled without running it (measure/triton_static.py)

    @property
    def races(self) -> list[str]:
        """The Triton kernels whose compiled loops the pipeline lint reads as racy, one line each."""
        return race_lines(self.triton_static)

    @property
    def diagnosis(self) -> str:
        if self.races:
            return ("pipeline race: a multi-buffered load is refilled while an async wgmma may still read it, in "
                    + "; ".join(self.races) + ". Results can change from call to call: run that loop with "
                    "tl.range(..., num_stages=1) (knowledge page triton-short-pipelined-dot-loop-race)")
        if self.kernels:
            k = self.kernels[0]
            share = f" ({k.time_share:.0%} of kernel time)" if k.time_share is not None and len(self.kernels) > 1 else ""
            return f"{k.short_name}{share}: {k.diagnosis}"
        static = (self.triton_static or {}).get("launches")
        if static:
            spills = sorted({r["kernel"] for r in static if r["spill_store_bytes"] + r["spill_load_bytes"] > 0})
            return (f"registers spill in {', '.join(spills)}: expect local-memory traffic" if spills
                    else "compiler report only (no run-time profile): no spills, no pipeline race")
        if self.ptxas:
            spills = [k for k in self.ptxas.kernels if (k.spill_store_bytes or 0) + (k.spill_load_bytes or 0) > 0]
            if spills:
                names = ", ".join(k.to_dict()["short_name"] for k in spills)
                return f"registers spill in {names}: expect local-memory traffic"
            return "compiler report only (no run-time profile): no spills"
        return ""

    def to_dict(self) -> dict:
        return {"task": self.task, "solution": self.solution, "language": self.language, "device": self.device,
                "workload": self.workload, "out_dir": self.out_dir, "ncu": self.ncu,
                "kernels": [k.to_dict() for k in self.kernels],
                "ptxas": self.ptxas.to_dict() if self.ptxas else None,
                "output_check": self.target.get("check"), "triton_kernels": self.target.get("triton_kernels", []),
                "device_name": self.target.get("device_name"), "triton_static": self.triton_static,
                "notes": self.notes, "diagnosis": self.diagnosis}


# -- inputs -----------------------------------------------------------------------------------------

def pick_workload(task: Task, prefix: str | None) -> Workload:
    """The workload with this uuid prefix; by default the one that moves the most bytes."""
    if prefix is None:
        return max(task.workloads, key=lambda w: task.io_bytes(w.axes))
    hits = [w for w in task.workloads if w.uuid.startswith(prefix)]
    if len(hits) == 1:
        return hits[0]
    available = "; ".join(f"{w.uuid[:8]} ({', '.join(f'{k}={v}' for k, v in w.axes.items())})" for w in task.workloads)
    raise InputError(Problem(task.root / "workloads.jsonl", "workload.uuid",
                             f"{len(hits)} workloads match {prefix!r}; available: {available}",
                             "give a unique uuid prefix from the list"))


def _gpu_problem(device: str) -> str | None:
    """Why ncu cannot run on ``device`` here, or None."""
    if device == "cpu":
        return "--device cpu was given (ncu profiles CUDA devices only)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device is visible here (torch.cuda.is_available() is False)"
    return None


def default_out(task: Task, solution: Solution) -> Path:
    return Path(".kernelcraft") / "profiles" / task.name / f"{solution.name}-{solution.source_hash[:12]}"


# -- the two sources --------------------------------------------------------------------------------

def _ptxas(solution: Solution, device: str, gpu_ok: bool, out: Path) -> PtxasReport | None:
    from kernelcraft.solution.build import CUDA_SUFFIXES, _arch_for, write_sources

    src_dir = write_sources(solution, out / "src")
    cu = [src_dir / s.path for s in solution.sources if s.path.endswith(CUDA_SUFFIXES)]
    if not cu:
        return None
    # the device's own compute capability; without one, the solution's target hardware (sm_90 default)
    arch = _arch_for(device if gpu_ok else "cpu", solution)
    try:
        report = nvcc_resource_report(cu, src_dir, arch, out / "ptxas")
    except FileNotFoundError:
        return None
    except CompileFailed as e:
        raise ProfileError(f"the solution failed to build:\n{e}", 1) from None
    return report


def _run_ncu(prof: Profile, ncu: str, task: Task, solution: Solution, w: Workload, device: str, out: Path,
             full: bool, timeout: float) -> None:
    (out / "solution.json").write_text(json.dumps(solution.to_json_dict(), indent=2) + "\n")
    job = {"task_root": str(task.root.resolve()), "solution_path": str((out / "solution.json").resolve()),
           "workload_uuid": w.uuid, "device": device, "seed": 0, "result_path": str((out / "target.json").resolve())}
    (out / "job.json").write_text(json.dumps(job, indent=2) + "\n")
    target = [sys.executable, "-m", "kernelcraft.measure._profile_target", str((out / "job.json").resolve())]
    # The profiled process imports this same kernelcraft, whatever an install elsewhere points at.
    src = str(Path(kernelcraft.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    report_base = str((out / "report").resolve())
    log_text = ""
    commands = []
    for with_metrics in (True, False):
        cmd = _ncu.collect_command(ncu, report_base, target, full=full, with_metrics=with_metrics)
        commands.append(cmd)
        with open(out / "ncu.log", "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(proc)  # ncu and the profiled process it started
                proc.wait()
                raise ProfileError(f"ncu did not finish within {timeout:.0f} s (--timeout); its log: {out / 'ncu.log'}",
                                   1) from None
        log_text = (out / "ncu.log").read_text(errors="replace")
        errors = "\n".join(ln for ln in log_text.splitlines() if ln.startswith("==ERROR=="))
        # A metric name this ncu version does not know fails the collection: retry with the
        # sections alone, which always name metrics the installed version has.
        if (out / "report.ncu-rep").exists() or "metric" not in errors.lower():
            break
        (out / "target.json").unlink(missing_ok=True)
    prof.ncu.update(ran=True, commands=commands)
    result = json.loads((out / "target.json").read_text()) if (out / "target.json").exists() else None
    prof.target = result or {}
    hint = ""
    if "ERR_NVGPUCTRPERM" in log_text:
        hint = (" (fix: GPU performance counters are restricted to admin users: run as root or set the "
                "nvidia module option NVreg_RestrictProfilingToAdminUsers=0)")
    if result is None:
        tail = "\n".join(log_text.splitlines()[-40:])
        raise ProfileError(f"the profiled process left no result{hint}; ncu's log ({out / 'ncu.log'}):\n{tail}", 1)
    if result["status"] in ("COMPILE_ERROR", "SKIPPED"):
        raise ProfileError(f"the solution failed to build:\n{result.get('reason', '')}", 1)
    if result["status"] != "PROFILED":
        raise ProfileError(f"the solution failed to run ({result['status']}):\n{result.get('reason', '')}", 1)
    report = out / "report.ncu-rep"
    if not report.exists():
        why = "no kernel ran inside the profiled range" if "No kernels were profiled" in log_text else errors
        raise ProfileError(f"ncu wrote no report{hint}: {why or 'see ' + str(out / 'ncu.log')}", 1)
    prof.ncu["report"] = str(report)
    imp = _ncu.import_command(ncu, str(report))
    prof.ncu["commands"].append(imp)
    proc = subprocess.run(imp, capture_output=True, text=True, timeout=300)
    (out / "raw.csv").write_text(proc.stdout)
    try:
        prof.kernels = _ncu.summarize(_ncu.parse_raw_csv(proc.stdout))
    except ValueError as e:
        raise ProfileError(f"could not read ncu's report back ({e}); `{' '.join(imp)}` printed:\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}", 1) from None
    check = result.get("check") or {}
    if check.get("status") not in (None, "PASSED"):
        prof.notes.append(f"the output does NOT match the reference ({check.get('status')}): "
                          f"{(check.get('reason') or '')[:300]}")


def profile(task_dir: str | Path, solution_path: str | Path, workload: str | None = None, device: str = "auto",
            out: str | Path | None = None, full: bool = False, timeout: float = 600.0) -> Profile:
    """Profile one solution on one workload; writes the output folder and returns the summary.

    Raises InputError for a bad task, solution or workload prefix, ProfileError when nothing can be
    reported (the message says what is missing, or what the compiler said).
    """
    task = load_task(task_dir)
    solution = load_solution(solution_path, task.definition.name)
    w = pick_workload(task, workload)
    if not (device in ("auto", "cpu") or device.startswith("cuda")):
        raise InputError(Problem("--device", "", f"{device!r} is not a device", "use cpu, cuda, cuda:N or auto"))
    gpu_problem = _gpu_problem(device)
    if device == "auto":
        device = "cpu" if gpu_problem else "cuda"
    out_dir = Path(out) if out else default_out(task, solution)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in _OUTPUTS:
        (out_dir / name).unlink(missing_ok=True)
    lang = solution.spec.language
    prof = Profile(task.name, solution.name, lang, device,
                   {"uuid": w.uuid, "axes": dict(w.axes), "io_bytes": task.io_bytes(w.axes)}, str(out_dir))
    ncu = _ncu.find_ncu()
    if lang == "cuda":
        prof.ptxas = _ptxas(solution, device, gpu_problem is None, out_dir)
        if prof.ptxas is None:
            prof.notes.append("no compiler report: nvcc is not on PATH (or the solution has no .cu source)")
    if lang == "triton":
        prof.triton_static = static_report(task, solution, Path(solution_path), w, timeout)
    missing = gpu_problem or (None if ncu else f"Nsight Compute's `ncu` is not on PATH (fix: {NCU_FIX})")
    if missing:
        if prof.ptxas is None and not (prof.triton_static or {}).get("launches"):
            static = (prof.triton_static or {}).get("error")
            raise ProfileError(f"cannot profile the {lang} solution {solution.name!r}: {missing}. The run-time "
                               "profile needs a CUDA device and Nsight Compute (`ncu`); without them only CUDA "
                               "solutions (nvcc's report) and Triton solutions (compiled for sm_90 without a run) "
                               "get a report" + (f"; for this one {static}" if static else ""), 2)
        prof.ncu = {"ran": False, "message": f"ncu needs a CUDA device and Nsight Compute: {missing}; "
                                             "this is the compiler's report only"}
    else:
        _run_ncu(prof, ncu, task, solution, w, device, out_dir, full, timeout)
    _save(prof, out_dir)
    return prof


# -- output -----------------------------------------------------------------------------------------

def _bytes(x: float | None) -> str:
    if x is None:
        return "?"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if x >= size:
            return f"{x / size:.1f} {unit}"
    return f"{x:.0f} B"


def _num(x: float | None, spec: str = ".0f") -> str:
    return "?" if x is None else format(x, spec)


def _us(x: float | None) -> str:
    return "?" if x is None else (f"{x:.2f} us" if x < 100 else f"{x:.1f} us")


def render(prof: Profile) -> str:
    """The summary as text: the same facts as summary.json, a few lines per kernel."""
    w = prof.workload
    axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items())
    lines = [f"profile of {prof.solution} ({prof.language}) for {prof.task} on "
             f"{prof.target.get('device_name') or prof.device}",
             f"workload {w['uuid'][:8]} ({axes}; {_bytes(w['io_bytes'])} in+out); output folder {prof.out_dir}"]
    check = prof.target.get("check")
    if check:
        err = f", max abs error {check['max_abs_error']:.3g}" if check.get("max_abs_error") is not None else ""
        lines.append(f"output check against the reference: {check['status']}{err}")
    if prof.ncu.get("ran"):
        lines.append(f"Nsight Compute report: {prof.ncu.get('report')} (clocks locked to base: compare kernels "
                     "with these durations, not with eval's latencies)")
    elif prof.ncu.get("message"):
        lines.append(prof.ncu["message"])
    for k in prof.kernels:
        v = k.values
        share = f", {k.time_share:.0%} of kernel time" if k.time_share is not None else ""
        lines += ["", f"kernel {k.short_name}: {k.launches} launches, grid {k.grid or '?'} x block {k.block or '?'}",
                  f"  duration      {_us(k.duration_us)} per launch{share}",
                  f"  throughput    DRAM {_num(v.get('dram_pct'), '.1f')}% of peak, SM {_num(v.get('sm_pct'), '.1f')}%"
                  + (f", memory units {_num(v.get('memory_pct'), '.1f')}%" if v.get("memory_pct") is not None else ""),
                  f"  occupancy     achieved {_num(v.get('achieved_occupancy_pct'), '.1f')}% of peak warps, "
                  f"theoretical {_num(v.get('theoretical_occupancy_pct'), '.1f')}%"
                  + (f", limited by {k.limiter} ({min(k.occupancy_limits.values()):.0f} blocks/SM)" if k.limiter else ""),
                  f"  resources     {_num(v.get('registers_per_thread'))} registers/thread, shared "
                  f"{_bytes(v.get('shared_static_bytes'))} static + {_bytes(v.get('shared_dynamic_bytes'))} dynamic "
                  f"per block, local (spill) traffic {_bytes(v.get('local_load_bytes'))} loaded / "
                  f"{_bytes(v.get('local_store_bytes'))} stored",
                  "  stalls        " + (", ".join(f"{r} {s:.0%}" for r, s in k.stalls[:3]) or "not collected"),
                  f"  diagnosis     {k.diagnosis}"]
    tk = prof.target.get("triton_kernels") or []
    if tk:
        lines += ["", "Triton compiled kernels:"]
        lines += [f"  {t['name']}: {_num(t.get('n_regs'))} registers, {_num(t.get('n_spills'))} spilled, "
                  f"{_bytes(t.get('shared_bytes'))} shared, {_num(t.get('num_warps'))} warps" for t in tk]
    ts = prof.triton_static or {}
    if ts.get("launches"):
        seen = ("CUDA tensors" if ts.get("input_device") == "cuda" else
                f"{ts.get('input_device') or 'meta'} tensors, so a branch on x.is_cuda took its CPU side")
        lines += ["", f"Triton compiled without a run (Triton {ts.get('triton')}, {ts.get('target')}; registers from "
                      f"Triton's ptxas, pipeline lint on the TTGIR; the launcher saw {seen}):"]
        for r in ts["launches"]:
            races = sum(f["race"] for f in r["pipeline"])
            lines.append(f"  {r['kernel']}: grid {tuple(r['grid'])}, {r['warps']} warps, {r['registers']} registers, "
                         f"spills {_bytes(r['spill_store_bytes'])} / {_bytes(r['spill_load_bytes'])}, "
                         f"{_bytes(r['shared_bytes'])} shared, {r['ctas_per_sm']} blocks/SM, pipelined wgmma loops "
                         f"{len(r['pipeline'])}" + (f", RACE {races}" if races else ""))
    elif ts.get("error"):
        lines.append(ts["error"])
    if prof.ptxas:
        lines += ["", f"compiler report (nvcc -Xptxas -v, sm_{prof.ptxas.arch}):"]
        for p in prof.ptxas.kernels:
            cmem = f", {_bytes(p.cmem_bytes)} cmem" if p.cmem_bytes is not None else ""
            lines.append(f"  {p.to_dict()['short_name']}: {_num(p.registers)} registers, spill stores "
                         f"{_bytes(p.spill_store_bytes)}, spill loads {_bytes(p.spill_load_bytes)}, "
                         f"{_bytes(p.smem_bytes)} smem{cmem}, stack {_bytes(p.stack_bytes)}")
        lines += [f"  {x}" for x in prof.ptxas.warnings]
    lines += [f"note: {n}" for n in prof.notes]
    if prof.diagnosis:
        lines += ["", f"diagnosis: {prof.diagnosis}"]
    return "\n".join(lines) + "\n"


def _save(prof: Profile, out: Path) -> None:
    (out / "summary.txt").write_text(render(prof))
    (out / "summary.json").write_text(json.dumps(prof.to_dict(), indent=2) + "\n")
    if prof.ptxas:
        (out / "ptxas.txt").write_text(prof.ptxas.text)
