"""Registers, spills and shared memory of a Triton solution's kernels for the H200 (sm_90), on a machine
without a GPU: ptxas's resource report, one line per kernel launch. A generic form of
scripts/kda_prefill_regs.py, which uses its helpers.

    PYTHONPATH=src python scripts/triton_regs.py tasks/softmax tasks/softmax/candidates/triton_split.py \\
        --axes num_rows=4096,width=32768 --axes num_rows=1,width=32000

What is compiled is what the solution's launcher passes: its `run` is called on meta tensors of the
definition's input shapes (axes from --axes; scalar inputs get 1.0 / 1) with every Triton kernel of
the module replaced by a recorder, so dtypes, constexprs, grid and num_warps / num_stages are the
launcher's own. A destination-passing-style solution (the project's rule: a solution folder whose
solution.json spec does not set destination_passing_style false; a bare .py is value-returning) also
gets meta tensors of the definition's outputs after the inputs. A module function `_num_sms(device)`
is replaced by one returning --sms (meta tensors have no device properties). A launcher that branches
on `x.is_cuda` sees False on meta tensors: write GPU branches as `not x.is_cpu` (a branch on
`x.device.type != "cuda"` takes its non-CUDA side here). --real-inputs builds zero-filled CPU tensors
instead, for a launcher whose host code needs data, e.g. torch.nonzero (no meta kernel: its output size
depends on the data). Only that host code runs: the kernels are recorders, so buffers they would fill
stay as allocated, and torch.empty / empty_like are made to zero-fill meanwhile; the launches recorded
are those of the control flow zeros give (a data-dependent loop's first pass, not a real run's
rounds); `x.is_cpu` is True there, so `not x.is_cpu` GPU branches are not taken either. Each recorded launch is compiled for GPUTarget("cuda", 90, 32)
with the specialisation Triton's JIT makes (pointers 16-byte aligned, ints equal to 1 constexpr,
ints divisible by 16 marked so), and its PTX assembled as Triton's make_cubin does (Triton's own
ptxas, `-lineinfo -v --regAllocOptLevel=2 --gpu-name=sm_90a`).

Prints per launch: axes, kernel, grid, num_warps, registers, spill stores / loads (bytes), stack frame,
shared memory, and the CTAs per SM the registers allow (65536 registers per SM, 2048 threads at most,
registers allocated per warp in units of 256).
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


def _inputs(definition: dict, axes: dict, device: str = "meta", key: str = "inputs") -> list:
    """The tensors (and scalars) of the definition's `key` ("inputs" or "outputs"): meta tensors, or
    zero-filled ones on `device` ("cpu" for --real-inputs)."""
    import torch

    out = []
    for _name, spec in definition[key].items():
        dt = getattr(torch, spec["dtype"])  # definition dtype names are torch's
        shape = spec.get("shape")
        if shape is None:  # a scalar input
            out.append(1.0 if dt.is_floating_point else 1)
            continue
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", type=Path, help="task folder (its definition.json gives the inputs)")
    ap.add_argument("solution", type=Path)
    ap.add_argument("--axes", action="append", required=True,
                    help="one workload as name=value,...; repeat for several")
    ap.add_argument("--sms", type=int, default=132, help="what _num_sms(device) returns (H200: 132)")
    ap.add_argument("--dump", type=Path, help="write each launch's TTGIR and PTX here (<kernel>_<workload #>.ttgir/.ptx)")
    ap.add_argument("--kernel", action="append", help="only these kernels (by name; repeat)")
    ap.add_argument("--real-inputs", action="store_true",
                    help="zero-filled CPU tensors instead of meta ones (a launcher that needs data, e.g. torch.nonzero)")
    args = ap.parse_args()
    definition = json.loads((args.task / "definition.json").read_text())
    mod = _load(args.solution.resolve())
    device = "cpu" if args.real_inputs else "meta"
    dps = _is_dps(args.solution.resolve(), definition)
    for n, wl in enumerate(args.axes):
        axes = {k: int(v) for k, v in (kv.split("=") for kv in wl.split(","))}
        inputs = _inputs(definition, axes, device)
        if dps:
            inputs += _inputs(definition, axes, device, "outputs")
        for fn, grid, a, kw in _launches(mod, inputs, args.sms, zero_empty=args.real_inputs):
            if args.kernel and fn.__name__ not in args.kernel:
                continue
            k, opts = _compile(fn, a, kw)
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                for ext in ("ttgir", "ptx"):
                    (args.dump / f"{fn.__name__}_{n}.{ext}").write_text(k.asm[ext])
            r = _ptxas(k.asm["ptx"])
            warps = opts.get("num_warps", 4)
            smem = k.metadata.shared
            g = grid(kw) if callable(grid) else grid
            print(f"{args.solution.name} {wl} {fn.__name__} grid={tuple(g)} warps={warps} "
                  f"regs={r['regs']} spill_st={r['spill_st']}B spill_ld={r['spill_ld']}B stack={r['stack']}B "
                  f"smem={smem}B ctas/sm={_ctas_per_sm(r['regs'], warps, smem)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
