"""Which kernel of a gdn_prefill solution faults on the GPU, and at which lengths: runs the solution's `run`
with CUDA_LAUNCH_BLOCKING semantics (a synchronize after every Triton launch, the launches wrapped) on
inputs drawn like tests/test_linear_attention.py's, smallest lengths first, and prints one line per
(lengths, kernel) with ok / the error. For compute-sanitizer: `compute-sanitizer --tool memcheck python3
scripts/gdn_prefill_fault.py SOLUTION --lens 130`.

    python3 scripts/gdn_prefill_fault.py tasks/gdn_prefill/candidates/triton_split.py --lens 64 130 8192
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import re
import sys

import torch
import triton


def _load(path: str):
    spec = importlib.util.spec_from_file_location("kc_fault_solution", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Synced:
    def __init__(self, fn, name: str, log: list):
        self.fn, self.name, self.log = fn, name, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.fn[grid](*args, **kwargs)
            torch.cuda.synchronize()
            self.log.append(self.name)
        return launch


def _inputs(lens: list[int], dev: str) -> list:
    g = torch.Generator().manual_seed(1)
    T, N, H, HV, K = sum(lens), len(lens), 4, 8, 128
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)
    args = [r(T, H, K).bfloat16(), r(T, H, K).bfloat16(), r(T, HV, K).bfloat16(), r(N, HV, K, K),
            torch.rand(HV, generator=g) * 2.7, r(T, HV).bfloat16(), -2.25 - 4.6 * torch.rand(HV, generator=g),
            (2 * r(T, HV)).bfloat16(), cu]
    return [a.to(dev) for a in args] + [K ** -0.5]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("solution")
    ap.add_argument("--lens", nargs="+", default=["64", "130", "8192"],
                    help="one workload per argument: comma-separated sequence lengths")
    args = ap.parse_args()
    mod = _load(args.solution)
    # only the kernels `run` launches (`name[grid](...)`): a @triton.jit helper they call must stay itself
    launched = set(re.findall(r"(\w+)\[", inspect.getsource(mod.run)))
    kernels = {n: o for n, o in vars(mod).items() if isinstance(o, triton.runtime.jit.JITFunction) and n in launched}
    for spec in args.lens:
        lens = [int(x) for x in spec.split(",")]
        log: list = []
        for n, o in kernels.items():
            setattr(mod, n, _Synced(o, n, log))
        try:
            out, st = mod.run(*_inputs(lens, "cuda"))
            torch.cuda.synchronize()
            print(f"lens {spec}: ok, kernels {log}, out finite {bool(torch.isfinite(out.float()).all())}", flush=True)
        except Exception as e:  # noqa: BLE001 - report and stop: a fault poisons the context
            print(f"lens {spec}: FAULT after kernels {log}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
            sys.exit(1)
        finally:
            for n, o in kernels.items():
                setattr(mod, n, o)


if __name__ == "__main__":
    main()
