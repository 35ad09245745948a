"""Which landlock rule does CUDA need? (the runner's sandbox broke cudaGetDeviceCount on the H200 with
landlock on, error 304). One child per variant: the whole sandbox with the landlock policy widened in
one way. ``python3 scripts/probe_landlock_cuda.py``"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import torch  # noqa: E402,F401
import triton  # noqa: E402,F401

from kernelcraft.runner import sandbox  # noqa: E402

VARIANTS = {
    "as-is": ([], [], True),
    "write /tmp /dev/shm": (["/tmp", "/dev/shm"], [], True),
    "write /dev": (["/dev"], [], True),
    "write /proc": (["/proc"], [], True),
    "write /sys": (["/sys"], [], True),
    "read /": ([], ["/"], True),
    "no ioctl handling": ([], [], False),
    "write /": (["/"], [], True),
    "write /var /run": (["/var", "/run"], [], True),
}


def child(name: str, w: int) -> None:
    extra_w, extra_r, ioctl = VARIANTS[name]
    import landlock
    from landlock.plumbing import FSAccess

    orig_roots = sandbox._readable_roots
    sandbox._readable_roots = lambda: orig_roots() + [Path(p) for p in extra_r]
    if not ioctl:
        orig = landlock.Ruleset.__init__

        def init(self, restrict_rules=None):
            orig(self, (restrict_rules or FSAccess.all()) & ~FSAccess.IOCTL_DEV)
        landlock.Ruleset.__init__ = init
    box = sandbox.Sandbox(Path(tempfile.mkdtemp(prefix="kc_probe_")),
                          [Path(tempfile.mkdtemp(prefix="kc_probe_c_", dir="/var/tmp"))], "cuda",
                          writable=[Path(p) for p in extra_w])
    out = {"variant": name}
    try:
        if sandbox.isolate(box):
            if os.fork():
                os.wait()
                os._exit(0)
        sandbox.enter(box, namespaced=True)
        out["degraded"] = box.degraded
        import torch as t

        t.cuda.set_device(0)
        out["sum"] = float(t.ones(1024, device="cuda").sum())
    except BaseException as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {str(e)[:160]}"
    os.write(w, (json.dumps(out) + "\n").encode())
    os._exit(0)


for name in VARIANTS:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(name, w)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    print(data.decode().strip() or json.dumps({"variant": name, "error": "no output"}), flush=True)
