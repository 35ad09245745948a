"""Can a worker be forked from a warm template (torch, triton, the gauntlet imported; no CUDA yet) and
then use its GPU? Times a spawned cold start against forks of a warm template, CPU seconds included.

    python3 scripts/fork_probe.py   # on a GPU machine
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CHILD = """
import torch, triton, triton.language as tl
@triton.jit
def k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
x = torch.arange(1000, device="cuda", dtype=torch.float32); y = torch.empty_like(x)
k[(4,)](x, y, 1000, B=256); torch.cuda.synchronize()
assert torch.equal(y, x * 2), "wrong"
"""


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    t, c = time.monotonic(), cpu()
    subprocess.run([sys.executable, "-c", "import kernelcraft.gauntlet.runner, kernelcraft.solution.build, triton\n"
                    "from kernelcraft.gauntlet.integrity import prime_dispatch_modes; prime_dispatch_modes()\n" + CHILD],
                   env=env, check=True)
    print(f"cold process: imports + CUDA + one Triton kernel: wall {time.monotonic() - t:.2f} s cpu {cpu() - c:.2f} s", flush=True)
    t, c = time.monotonic(), cpu()
    import triton  # noqa: F401

    import kernelcraft.gauntlet.runner  # noqa: F401
    import kernelcraft.solution.build  # noqa: F401
    from kernelcraft.gauntlet.integrity import prime_dispatch_modes

    prime_dispatch_modes()
    print(f"template imports: wall {time.monotonic() - t:.2f} s cpu {cpu() - c:.2f} s; threads {len(os.listdir('/proc/self/task'))}", flush=True)
    for i, gpu in enumerate(["0", "1", "0", "1"]):
        t, c = time.monotonic(), cpu()
        pid = os.fork()
        if pid == 0:
            try:
                os.environ["CUDA_VISIBLE_DEVICES"] = gpu
                exec(CHILD, {})  # noqa: S102
                import torch

                print(f"  fork {i}: GPU {gpu} -> {torch.cuda.get_device_name()} count {torch.cuda.device_count()}", flush=True)
                os._exit(0)
            except BaseException as e:  # noqa: BLE001
                print(f"  fork {i} failed: {type(e).__name__}: {e}", flush=True)
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print(f"fork {i}: exit {status}, wall {time.monotonic() - t:.2f} s cpu {cpu() - c:.2f} s", flush=True)


if __name__ == "__main__":
    main()
