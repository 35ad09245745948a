"""Which part of the runner's sandbox keeps CUDA from starting on this host? Forks one child per
configuration (the whole sandbox, then each mechanism switched off through KERNELCRAFT_SANDBOX_SKIP),
enters the sandbox exactly as a runner does, then initialises CUDA, runs a kernel and maps a shared
arena the parent made. One JSON line per configuration. ``python3 scripts/probe_runner_cuda.py``"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import torch  # noqa: E402,F401
import triton  # noqa: E402,F401

from kernelcraft.runner.sandbox import Sandbox, enter, isolate  # noqa: E402

CONFIGS = ["", "landlock", "tmpfs", "pidns", "uid", "mounts", "landlock,tmpfs", "rlimits", "pidns,uid",
           "pidns,landlock", "netns"]


def child(skip: str, sock: socket.socket) -> None:
    os.environ["KERNELCRAFT_SANDBOX_SKIP"] = skip
    scratch = Path(tempfile.mkdtemp(prefix="kc_probe_"))
    cache = Path(tempfile.mkdtemp(prefix="kc_probe_cache_", dir="/var/tmp"))
    box = Sandbox(scratch, [cache], "cuda")
    out = {"skip": skip}
    try:
        if isolate(box):
            if os.fork():
                os.wait()
                os._exit(0)
        enter(box, namespaced=any("namespace" in h for h in box.held))
        out["held"], out["degraded"] = box.held, box.degraded
        import torch as t

        t.cuda.set_device(0)
        out["sum"] = float(t.ones(1024, device="cuda").sum())
        msg, fds, _, _ = socket.recv_fds(sock, 100, 1)
        from kernelcraft.runner.shared import Slot, open_arena

        a = open_arena("cuda", 1 << 21, fds[0])
        out["arena_read"] = float(a.view(Slot(0, (4,), "float32"))[3])
    except BaseException as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        out["where"] = traceback.format_exc()[-600:]
    sock.send(json.dumps(out).encode())
    os._exit(0)


pairs = []
for skip in CONFIGS:
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        child(skip, b)
    b.close()
    pairs.append((skip, a, pid))
from kernelcraft.runner.shared import Slot, new_arena  # noqa: E402

arena = new_arena("cuda", 1 << 21)
arena.view(Slot(0, (4,), "float32")).copy_(torch.arange(4, dtype=torch.float32, device="cuda"))
torch.cuda.synchronize()
for skip, a, pid in pairs:
    a.settimeout(60)
    try:
        socket.send_fds(a, [b"arena"], [arena.fd])
        print(json.dumps(json.loads(a.recv(65536))), flush=True)
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"skip": skip, "error": f"parent: {e}"}), flush=True)
    os.waitpid(pid, 0)
