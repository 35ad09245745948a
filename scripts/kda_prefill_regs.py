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
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

H, K, V = 32, 128, 128


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


def _launches(mod, T: int, N: int) -> list:
    import torch
    import triton

    log: list = []
    kernels = {n: o for n, o in vars(mod).items() if isinstance(o, triton.runtime.jit.JITFunction)}
    for name, obj in kernels.items():
        setattr(mod, name, _Recorder(obj, log))
    m = lambda *s, dt=torch.bfloat16: torch.empty(*s, dtype=dt, device="meta")  # noqa: E731
    f32 = torch.float32
    mod.run(m(T, H, K), m(T, H, K), m(T, H, V), m(N, H, V, K, dt=f32), m(H, dt=f32), m(T, H, K),
            m(H, K, dt=f32), m(T, H), m(N + 1, dt=torch.int64), K ** -0.5)
    for name, obj in kernels.items():  # the kernels' cache keys read the module's globals
        setattr(mod, name, obj)
    return log


def _compile(fn, args, kwargs):
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
        ty, spec = native_specialize_impl(BaseBackend, val, False, True, True)
        signature[name] = ty
        if ty == "constexpr":  # an int equal to 1, as the JIT specialises it
            constexprs[name] = val
        elif spec == "D":
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options), options


def _ptxas_path() -> str:
    # the ptxas Triton itself runs for sm_90 (its bundled one: it reads Triton's PTX version, the
    # system's ptxas of an older CUDA may not), with the flags Triton's make_cubin passes
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("solution", type=Path)
    ap.add_argument("--seqs", default="8192:1")
    args = ap.parse_args()
    mod = _load(args.solution.resolve())
    for wl in args.seqs.split(","):
        t, _, n = wl.partition(":")
        T, N = int(t), int(n or 1)
        for fn, _grid, a, kw in _launches(mod, T, N):
            k, opts = _compile(fn, a, kw)
            r = _ptxas(k.asm["ptx"])
            print(f"{args.solution.name} T={T} N={N} {fn.__name__:8s} warps={opts.get('num_warps', 4)} "
                  f"regs={r['regs']} spill_st={r['spill_st']}B spill_ld={r['spill_ld']}B stack={r['stack']}B "
                  f"smem={k.metadata.shared}B", flush=True)


if __name__ == "__main__":
    sys.exit(main())
