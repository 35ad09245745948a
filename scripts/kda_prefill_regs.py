"""Registers and spills of a kda_prefill solution's Triton kernels for the H200 (sm_90), on a machine
without a GPU: ptxas's resource usage, one line per kernel.

    PYTHONPATH=src python scripts/kda_prefill_regs.py tasks/kda_prefill/solutions/triton_chunk.py
    PYTHONPATH=src python scripts/kda_prefill_regs.py tasks/kda_prefill/candidates/triton_intra.py --seqs 1,1024:32

What is compiled is what the solution's launcher passes: its `run` is called on meta tensors of
the task's shapes (H = 32, K = V = 128, definition.json) with every Triton kernel of the module
replaced by a recorder, so the arguments' dtypes, the constexprs (BN from the number of sequences,
BV from the launcher's choice for the GPU, CPU False: meta is not "cpu") and num_warps / num_stages
are the launcher's own. Each recorded launch is then compiled for GPUTarget("cuda", 90, 32) with the
specialisation Triton's JIT would make (pointers 16-byte aligned, ints equal to 1 constexpr, ints
divisible by 16 marked so), and the PTX is assembled as Triton's make_cubin assembles it (Triton's own
ptxas, `-lineinfo -v --regAllocOptLevel=2 --gpu-name=sm_90a`), whose -v report is read here.
Set TRITON_DEFAULT_FP_FUSION=1 to silence Triton 3.9's warning (fusion is on either way).

--seqs: comma-separated workloads as TOKENS:SEQUENCES (or TOKENS: one sequence); default 8192:1.
Prints: workload, kernel, num_warps, registers, spill stores / loads (bytes), stack frame, shared memory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import triton_regs  # noqa: E402  the recorder, the JIT-faithful compile and ptxas's report, shared

H, K, V = 32, 128, 128


def _launches(mod, T: int, N: int) -> list:
    import torch

    m = lambda *s, dt=torch.bfloat16: torch.empty(*s, dtype=dt, device="meta")  # noqa: E731
    f32 = torch.float32
    inputs = [m(T, H, K), m(T, H, K), m(T, H, V), m(N, H, V, K, dt=f32), m(H, dt=f32), m(T, H, K),
              m(H, K, dt=f32), m(T, H), m(N + 1, dt=torch.int64), K ** -0.5]
    return triton_regs._launches(mod, inputs, sms=132)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("solution", type=Path)
    ap.add_argument("--seqs", default="8192:1")
    args = ap.parse_args()
    mod = triton_regs._load(args.solution.resolve())
    for wl in args.seqs.split(","):
        t, _, n = wl.partition(":")
        T, N = int(t), int(n or 1)
        for fn, _grid, a, kw in _launches(mod, T, N):
            k, opts = triton_regs._compile(fn, a, kw)
            r = triton_regs._ptxas(k.asm["ptx"])
            print(f"{args.solution.name} T={T} N={N} {fn.__name__:8s} warps={opts.get('num_warps', 4)} "
                  f"regs={r['regs']} spill_st={r['spill_st']}B spill_ld={r['spill_ld']}B stack={r['stack']}B "
                  f"smem={k.metadata.shared}B", flush=True)


if __name__ == "__main__":
    sys.exit(main())
