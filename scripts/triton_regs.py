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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

# the recorder, the JIT-faithful compile and ptxas's report live in the package (kernelcraft profile uses them);
# re-exported under their old names for scripts/kda_prefill_regs.py and scripts/kda_prefill_cpu_check.py
from kernelcraft.measure.triton_static import (  # noqa: E402, F401
    AxesError,
    _compile,
    _ctas_per_sm,
    _inputs,
    _launches,
    _load,
    _ptxas,
    analyse,
)


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
    axes_list = [{k: int(v) for k, v in (kv.split("=") for kv in wl.split(","))} for wl in args.axes]
    try:
        rows = analyse(args.task, args.solution, axes_list, args.sms, args.real_inputs, args.dump, args.kernel)
    except AxesError as e:  # a missing or contradicting axis
        ap.error(f"{args.task / 'definition.json'}: {e}")
    for r in rows:
        print(f"{args.solution.name} {args.axes[r['workload']]} {r['kernel']} grid={tuple(r['grid'])} warps={r['warps']} "
              f"regs={r['registers']} spill_st={r['spill_store_bytes']}B spill_ld={r['spill_load_bytes']}B "
              f"stack={r['stack_bytes']}B smem={r['shared_bytes']}B ctas/sm={r['ctas_per_sm']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
