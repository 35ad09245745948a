"""``python -m kernelcraft.runner --fd N --device D --scratch DIR --cache DIR --log FILE``: a runner
started as a program rather than forked by its judge, so that another program can wrap it: Nsight
Compute, for the out-of-process timing confirmation (:mod:`kernelcraft.gauntlet.confirm`). It speaks
on the inherited socket ``N`` exactly as a forked runner does, and enters the same sandbox, except a
pid namespace (``--no-pid-namespace``: the profiler must see its target's processes)."""

from __future__ import annotations

import argparse
import os
import socket


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m kernelcraft.runner")
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--scratch", required=True)
    p.add_argument("--cache", action="append", default=[])
    p.add_argument("--log", required=True)
    p.add_argument("--no-pid-namespace", action="store_true")
    a = p.parse_args()
    extra = os.environ.get("KERNELCRAFT_PROFILED_SANDBOX_SKIP", "")
    if a.no_pid_namespace and extra:
        # a host where a mechanism breaks the profiler's injected library: only this runner skips it,
        # and its record names what was skipped (sandbox.skipped reads the merged list)
        merged = {x.strip() for x in (os.environ.get("KERNELCRAFT_SANDBOX_SKIP", "") + "," + extra).split(",")}
        os.environ["KERNELCRAFT_SANDBOX_SKIP"] = ",".join(sorted(x for x in merged if x))
    if not a.device.startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"  # before anything imports triton
    import torch  # noqa: F401 - what a forked runner inherits from its template
    import triton  # noqa: F401

    from kernelcraft.runner.main import start

    sock = socket.socket(fileno=a.fd)
    start(sock, a.device, a.scratch, a.cache, a.log, pid_namespace=not a.no_pid_namespace,
          profiled=a.no_pid_namespace)


if __name__ == "__main__":
    main()
