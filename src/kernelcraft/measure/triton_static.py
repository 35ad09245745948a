"""Triton kernels compiled and read without a GPU: registers, spills, shared memory and pipeline hazards.

A solution's `run` is called on meta tensors of the definition's shapes (or zero-filled CPU tensors,
`real_inputs`) with every @triton.jit kernel of its module swapped for a recorder, so each launch's dtypes,
constexprs, grid, num_warps and num_stages are the launcher's own; each launch is then compiled for an NVIDIA
target (sm_90 by default) with the specialisation Triton's JIT makes, and its PTX assembled by Triton's own ptxas
for the resource report. `lint_ttgir` reads the TTGIR for session 26's pipelined-loop race: a multi-buffered load
refilled while an async wgmma may still read the same buffer (knowledge/triton-short-pipelined-dot-loop-race.md).

Used by `kernelcraft profile` (a Triton solution's compiler report, with or without a GPU; run in a subprocess:
`python -m kernelcraft.measure.triton_static TASK SOLUTION --axes name=value,... --json`) and by the scripts
scripts/triton_regs.py, scripts/triton_pipeline_lint.py and scripts/triton_lint_tasks.py. The solution's module
is imported here: call it in a process of its own, never in one that judges.

Lint rule, per scf.for: for every shared allocation of B buffers that the loop fills with
`ttg.async_copy_global_to_local` (D of them issued before the loop: the prefetch distance) and that an async
`ttng.warp_group_dot` reads, followed by `ttng.warp_group_dot_wait {pendings = P}`: a refill in iteration i writes
buffer (i + D) mod B while the wgmmas of iterations i - P + 1 .. i may still read (i - j) mod B; they collide when
(D + j) mod B == 0 for some j in 0 .. P - 1 (Triton's usual matmul pipeline, B 3, D 2, P 1, is safe; the B 2, D 2,
P 1 loop of gdn_prefill's `_kkt` was not). A static reading of one compiler's output, not a proof.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelcraft.solution.model import Solution
    from kernelcraft.task.loader import Task
    from kernelcraft.task.workload import Workload


class _Recorder:
    """Stands in for a @triton.jit function: kernel[grid](*args, **kwargs) records the launch."""

    def __init__(self, fn, log: list):
        self.fn, self.log = fn, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append((self.fn, grid, args, kwargs))
        return launch


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kc_regs_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class AxesError(ValueError):
    """--axes misses a var axis of the definition, or contradicts a const one (the launcher's own errors are not this)."""


def _inputs(definition: dict, axes: dict, device: str = "meta", key: str = "inputs") -> list:
    """The tensors (and scalars) of the definition's `key` ("inputs" or "outputs"): meta tensors, or
    zero-filled ones on `device` ("cpu" for --real-inputs)."""
    import torch

    consts = {n: int(a["value"]) for n, a in definition.get("axes", {}).items() if a.get("type") == "const"}
    axes = {**consts, **axes}  # a const axis needs no --axes entry (given, it must agree)
    for n, v in consts.items():
        if axes[n] != v:
            raise AxesError(f"--axes {n}={axes[n]}: the definition fixes {n} = {v} (a const axis)")
    out = []
    for _name, spec in definition[key].items():
        dt = getattr(torch, spec["dtype"])  # definition dtype names are torch's
        shape = spec.get("shape")
        if shape is None:  # a scalar input
            out.append(1.0 if dt.is_floating_point else 1)
            continue
        missing = [d for d in shape if isinstance(d, str) and d not in axes]
        if missing:
            raise AxesError(f"{key} {_name!r} has shape {shape}: give --axes {','.join(f'{d}=N' for d in missing)} "
                             f"(the definition's var axes: "
                             f"{[n for n, a in definition.get('axes', {}).items() if a.get('type') != 'const']})")
        dims = [axes[d] if isinstance(d, str) else int(d) for d in shape]
        out.append(torch.zeros(*dims, dtype=dt, device=device))
    return out


def _is_dps(solution: Path, definition: dict) -> bool:
    """Whether `run` takes the outputs after the inputs: as the project loads the solution
    (kernelcraft.solution.model.load_solution), the folder's solution.json when its entry point is this
    file (spec.destination_passing_style, default true), else a bare .py, value-returning."""
    from kernelcraft.solution.model import load_solution

    folder = solution.parent
    record = folder / "solution.json"
    if record.is_file():
        spec = json.loads(record.read_text()).get("spec", {})
        if spec.get("entry_point", "").split("::")[0] == solution.name:
            return load_solution(folder, definition["name"]).spec.destination_passing_style
    return False


def _launches(mod, inputs: list, sms: int, zero_empty: bool = False) -> list:
    """The launches `run` makes, as (kernel, grid, args, kwargs). zero_empty (--real-inputs): torch.empty and
    torch.empty_like give zero-filled tensors meanwhile, so host code that reads buffers the recorded kernels
    never fill (torch.nonzero of a flag array) sees zeros, not leftover memory: one deterministic pass, where
    leftover bytes made the rounds loop of balanced_kmeans_step's launchers run on (or forever)."""
    import torch
    import triton

    log: list = []
    saved_empty = torch.empty, torch.empty_like
    if zero_empty:
        torch.empty, torch.empty_like = torch.zeros, torch.zeros_like
    kernels = {n: o for n, o in vars(mod).items() if isinstance(o, triton.runtime.jit.JITFunction)}
    for name, obj in kernels.items():
        setattr(mod, name, _Recorder(obj, log))
    saved_sms = getattr(mod, "_num_sms", None)
    if saved_sms is not None:
        mod._num_sms = lambda device: sms
    try:
        mod.run(*inputs)
    finally:
        for name, obj in kernels.items():  # the kernels' cache keys read the module's globals
            setattr(mod, name, obj)
        if saved_sms is not None:
            mod._num_sms = saved_sms
        torch.empty, torch.empty_like = saved_empty
    return log


def _compile(fn, args, kwargs):
    import torch
    import triton
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.compiler import ASTSource

    names = [p.name for p in fn.params]
    const_names = {p.name for p in fn.params if p.is_constexpr}
    bound = dict(zip(names, args, strict=False))  # the rest by keyword
    bound.update({k: v for k, v in kwargs.items() if k in names})
    options = {k: v for k, v in kwargs.items() if k not in names}
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(names):
        val = bound[name]
        if name in const_names:
            signature[name], constexprs[name] = "constexpr", val
            continue
        if isinstance(val, torch.Tensor):  # a meta (--real-inputs: CPU) tensor: a pointer, 16-byte aligned
            # as allocations are; fp8 as Triton (3.6 and 3.9) names them
            ty = "*" + {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
                        torch.float64: "fp64", torch.int32: "i32", torch.int64: "i64", torch.int8: "i8",
                        torch.uint8: "u8", torch.bool: "i1", torch.float8_e4m3fn: "fp8e4nv",
                        torch.float8_e5m2: "fp8e5"}[val.dtype]
            signature[name] = ty
            attrs[(i,)] = [["tt.divisibility", 16]]
            continue
        ty, spec = native_specialize_impl(BaseBackend, val, False, True, True)
        signature[name] = ty
        if ty == "constexpr":  # an int equal to 1, as the JIT specialises it
            constexprs[name] = val
        elif spec == "D":
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options), options


def _ptxas_path() -> str:
    from triton.backends.nvidia.compiler import get_ptxas

    return get_ptxas(90).path


def _ptxas(ptx: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "k.ptx"
        p.write_text(ptx)
        proc = subprocess.run([_ptxas_path(), "-lineinfo", "-v", "--regAllocOptLevel=2", "--gpu-name=sm_90a",
                               str(p), "-o", str(Path(d) / "k.cubin")], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    text = proc.stdout + proc.stderr
    num = lambda pat: int(m.group(1)) if (m := re.search(pat, text)) else -1  # noqa: E731
    return {"regs": num(r"Used (\d+) registers"), "spill_st": num(r"(\d+) bytes spill stores"),
            "spill_ld": num(r"(\d+) bytes spill loads"), "stack": num(r"(\d+) bytes stack frame")}


def _ctas_per_sm(regs: int, warps: int, smem: int) -> int:
    per_warp = -(-regs * 32 // 256) * 256
    by_regs = 65536 // max(1, per_warp * warps)
    by_threads = 2048 // (32 * warps)
    by_smem = (227 * 1024) // smem if smem else 32
    return min(by_regs, by_threads, by_smem, 32)


ALLOC = re.compile(r"(%[\w.]+) = ttg\.local_alloc : \(\) -> !ttg\.memdesc<(\d+)x")
INDEX = re.compile(r"(%[\w.]+) = ttg\.memdesc_index (%[\w.]+)\[")
COPY = re.compile(r"ttg\.async_copy_global_to_local %[\w.]+, (%[\w.]+)")
DOT = re.compile(r"(%[\w.]+) = ttng\.warp_group_dot (%[\w.]+), (%[\w.]+),.*isAsync = true")
TRANS = re.compile(r"(%[\w.]+) = ttg\.memdesc_trans (%[\w.]+)")
WAIT = re.compile(r"ttng\.warp_group_dot_wait (%[\w.]+).*pendings = (\d+)")
FOR = re.compile(r"scf\.for ")


def _loops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of every scf.for body, by brace depth."""
    out = []
    for i, line in enumerate(lines):
        if not FOR.search(line):
            continue
        depth = 0
        for j in range(i, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0 and j > i:
                out.append((i, j))
                break
    return out


def lint_ttgir(text: str) -> list[dict]:
    lines = text.splitlines()
    allocs = {m.group(1): int(m.group(2)) for line in lines if (m := ALLOC.search(line))}
    index_of = {m.group(1): m.group(2) for line in lines if (m := INDEX.search(line))}  # buffer view -> alloc
    trans_of = {m.group(1): m.group(2) for line in lines if (m := TRANS.search(line))}
    root = lambda v: index_of.get(trans_of.get(v, v), index_of.get(v))  # noqa: E731 - a dot operand -> its alloc
    found = []
    for first, last in _loops(lines):
        body = lines[first:last + 1]
        filled = {index_of.get(m.group(1)) for line in body if (m := COPY.search(line))} - {None}
        for k, line in enumerate(body):
            m = DOT.search(line)
            if not m:
                continue
            wait = next((WAIT.search(x) for x in body[k + 1:] if WAIT.search(x)), None)
            pend = int(wait.group(2)) if wait else 0
            for operand in (m.group(2), m.group(3)):
                alloc = root(operand)
                if alloc not in filled or alloc not in allocs or any(
                        f["line"] == first + 1 and f["alloc"] == alloc for f in found):
                    continue
                b = allocs[alloc]
                d = sum(1 for x in lines[:first] if (c := COPY.search(x)) and index_of.get(c.group(1)) == alloc)
                race = any((d + j) % b == 0 for j in range(pend))
                found.append({"line": first + 1, "alloc": alloc, "buffers": b, "distance": d, "pendings": pend,
                              "race": race})
    return found


def analyse(task_dir: Path, solution: Path, axes_list: list[dict[str, int]], sms: int = 132,
            real_inputs: bool = False, dump: Path | None = None, kernels: list[str] | None = None,
            resources: bool = True, input_device: str | None = None) -> list[dict]:
    """One dict per recorded launch and workload: kernel, grid, warps, registers, spills, stack, shared memory,
    CTAs per SM and the pipeline lint's findings (each: line, alloc, buffers, distance, pendings, race).
    resources=False skips the second ptxas run (registers, spills: -1), for the lint alone. input_device: "meta"
    (the default), "cpu" (= real_inputs) or "cuda": zero-filled tensors there, so a launcher that branches on the
    device type takes its GPU side (on meta or CPU tensors `x.is_cuda` is False: the CPU variant is compiled)."""
    definition = json.loads((Path(task_dir) / "definition.json").read_text())
    mod = _load(Path(solution).resolve())
    device = input_device or ("cpu" if real_inputs else "meta")
    dps = _is_dps(Path(solution).resolve(), definition)
    rows = []
    for n, axes in enumerate(axes_list):
        inputs = _inputs(definition, axes, device)
        if dps:
            inputs += _inputs(definition, axes, device, "outputs")
        for fn, grid, a, kw in _launches(mod, inputs, sms, zero_empty=device != "meta"):
            if kernels and fn.__name__ not in kernels:
                continue
            k, opts = _compile(fn, a, kw)
            if dump is not None:
                dump.mkdir(parents=True, exist_ok=True)
                for ext in ("ttgir", "ptx"):
                    (dump / f"{fn.__name__}_{n}.{ext}").write_text(k.asm[ext])
            r = _ptxas(k.asm["ptx"]) if resources else {"regs": -1, "spill_st": -1, "spill_ld": -1, "stack": -1}
            warps = opts.get("num_warps", 4)
            smem = k.metadata.shared
            g = grid(kw) if callable(grid) else grid
            rows.append({"workload": n, "axes": axes, "kernel": fn.__name__, "grid": list(g), "warps": warps,
                         "registers": r["regs"], "spill_store_bytes": r["spill_st"], "spill_load_bytes": r["spill_ld"],
                         "stack_bytes": r["stack"], "shared_bytes": smem,
                         "ctas_per_sm": _ctas_per_sm(r["regs"], warps, smem), "pipeline": lint_ttgir(k.asm["ttgir"])})
    return rows


def _cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def static_report(task: Task, solution: Solution, path: Path, w: Workload, timeout: float,
                  lint_only: bool = False) -> dict:
    """The Triton kernels the solution launches at this workload, compiled for sm_90 without running them
    (registers, spills, shared memory, the pipeline lint), in a process of its own: the solution's module is
    imported there (the judge and `profile` call this; nothing of the solution runs in their process). On failure
    {"launches": [], "error": why}."""
    entry = path if path.is_file() else path / solution.spec.entry_file
    axes = ",".join(f"{k}={v}" for k, v in task.definition.axis_values(dict(w.axes)).items())
    cmd = [sys.executable, "-m", "kernelcraft.measure.triton_static", str(task.root), str(entry), "--axes", axes, "--json"]
    if lint_only:
        cmd.append("--lint-only")
    why = ""
    # zero-filled CUDA tensors where a GPU is visible (a launcher's branch on the device type then takes its GPU
    # side, as it does when judged); else meta tensors, then zero-filled CPU ones for host code needing data
    tries = [["--input-device", "cuda"]] if _cuda_visible() else [["--input-device", "meta"], ["--input-device", "cpu"]]
    for extra in tries:
        try:
            proc = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=min(timeout, 300))
            if proc.returncode == 0:
                report = json.loads(proc.stdout.strip().splitlines()[-1])
                if isinstance(report, dict):
                    return report
                why = "the report is not a JSON object"
            else:
                why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as e:
            why = type(e).__name__
        if not why.startswith("NotImplementedError"):
            break
    return {"launches": [], "error": f"the static compile failed: {why[:500]}"}


def race_lines(report: dict | None) -> list[str]:
    """One line per racy loop of a `static_report` (which came from a process that imported candidate code: only
    well-formed findings count, names cut to 200 characters)."""
    out: list[str] = []
    launches = (report or {}).get("launches")
    for r in launches if isinstance(launches, list) else []:
        if not isinstance(r, dict) or not isinstance(r.get("kernel"), str):
            continue
        for f in r.get("pipeline") or []:
            if not (isinstance(f, dict) and f.get("race") is True):
                continue
            nums = [f.get(k) for k in ("line", "buffers", "distance", "pendings")]
            if all(isinstance(x, int) for x in nums):
                line = (f"{r['kernel'][:200]} (TTGIR line {nums[0]}: {nums[1]} shared buffers, prefetch distance "
                        f"{nums[2]}, async wgmma waited with pendings {nums[3]})")
                if line not in out:
                    out.append(line)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("solution", type=Path)
    ap.add_argument("--axes", action="append", required=True, help="one workload as name=value,...; repeat")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--real-inputs", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (else one line each)")
    ap.add_argument("--lint-only", action="store_true", help="no ptxas resource report (registers, spills: -1)")
    ap.add_argument("--input-device", choices=("meta", "cpu", "cuda"),
                    help="where the launcher's zero-filled inputs live (default meta; cpu = --real-inputs; cuda: a "
                         "launcher branching on the device type takes its GPU side)")
    args = ap.parse_args()
    axes_list = [{k: int(v) for k, v in (kv.split("=") for kv in wl.split(","))} for wl in args.axes]
    device = args.input_device or ("cpu" if args.real_inputs else "meta")
    try:
        rows = analyse(args.task, args.solution, axes_list, args.sms, resources=not args.lint_only, input_device=device)
    except AxesError as e:  # a missing or contradicting axis: name it, no traceback
        ap.error(f"{args.task / 'definition.json'}: {e}")
    if args.json:
        print(json.dumps({"triton": _triton_version(), "target": "sm_90", "input_device": device, "launches": rows}))
    else:
        for r in rows:
            races = sum(f["race"] for f in r["pipeline"])
            print(f"{r['kernel']} grid={tuple(r['grid'])} warps={r['warps']} regs={r['registers']} "
                  f"spills={r['spill_store_bytes']}/{r['spill_load_bytes']}B smem={r['shared_bytes']}B "
                  f"pipeline RACE {races} of {len(r['pipeline'])}")
    return 0


def _triton_version() -> str:
    import triton

    return triton.__version__


if __name__ == "__main__":
    sys.exit(main())
