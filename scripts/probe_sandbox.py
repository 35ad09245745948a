"""Which sandbox mechanisms hold on this machine, and does CUDA IPC survive each? (issue 19)

Prints one JSON line per probe. Run as root on the device machine and here:
``python3 scripts/probe_sandbox.py [--cuda]``. A probe that fails says why; nothing here changes the
machine (namespaces are the child's own, the uid is dropped in a forked child).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time

NOBODY = 65534
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000


def unshare(flags):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), f"unshare({flags:#x}) failed: {os.strerror(ctypes.get_errno())}")


def child(fn, *args):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = fn(*args)
        except BaseException as e:  # noqa: BLE001
            out = {"error": f"{type(e).__name__}: {e}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    try:
        return json.loads(data or b'{"error": "no output"}')
    except ValueError:
        return {"error": data.decode(errors="replace")[:300]}


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    v = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return v if v >= 0 else -ctypes.get_errno()


def drop(uid=NOBODY):
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def nested(flags, then):
    """unshare(flags) then fork (a new pid namespace applies to children), run ``then`` in the grandchild."""
    unshare(flags)
    return child(then)


def mount_proc_hidepid():
    libc = ctypes.CDLL(None, use_errno=True)
    # a private mount namespace first, so the new /proc is this process tree's only
    if libc.mount(b"none", b"/", None, 0x40000 | 0x4000, None) != 0:  # MS_REC | MS_PRIVATE
        return f"make-private errno {ctypes.get_errno()}"
    if libc.mount(b"proc", b"/proc", b"proc", 0x2 | 0x4 | 0x8, b"hidepid=invisible") != 0:  # nosuid,nodev,noexec
        return f"mount proc errno {ctypes.get_errno()}"
    return "ok"


def probe_basic():
    res = {"uid": os.getuid(), "kernel": os.uname().release, "landlock_abi": landlock_abi()}
    res["drop_uid"] = child(lambda: (drop(), {"uid": os.getuid(), "kill_parent": _try_kill(os.getppid())})[1])
    for name, flags in [("userns", CLONE_NEWUSER), ("pidns", CLONE_NEWPID), ("netns", CLONE_NEWNET),
                        ("mntns", CLONE_NEWNS)]:
        res[name] = child(lambda f=flags: nested(f, lambda: {"pid": os.getpid()}))
    res["hidepid"] = child(lambda: (unshare(CLONE_NEWNS), {"mount": mount_proc_hidepid(),
                                     "then_drop_sees": _visible_after_drop()})[1])
    return res


def _visible_after_drop():
    drop()
    return len([p for p in os.listdir("/proc") if p.isdigit()])


def _try_kill(pid):
    try:
        os.kill(pid, 0)
        return "allowed"
    except PermissionError:
        return "EPERM"


def probe_cuda():
    import torch

    res = {}
    # The parent process must not init CUDA before forking: a spawned exporter instead.
    code = r"""
import sys, json, torch, os, time
t = torch.arange(1024, dtype=torch.float32, device='cuda') * 2
s = t.untyped_storage()
h = s._share_cuda_()
print(json.dumps([h[0], h[1].hex(), h[2], h[3], h[4].hex(), h[5], h[6].hex(), h[7]]), flush=True)
sys.stdin.readline()
print(float(t.sum()), flush=True)
"""
    exp = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    handle = json.loads(exp.stdout.readline())

    def open_ipc():
        import torch as T

        dev, h, size, off, rc, rco, ev, evs = handle
        st = T.UntypedStorage._new_shared_cuda(dev, bytes.fromhex(h), size, off, bytes.fromhex(rc), rco,
                                               bytes.fromhex(ev), evs)
        x = T.empty(0, dtype=T.float32, device="cuda").set_(st, 0, (1024,), (1,))
        v = float(x[3])
        x[0] = 7.0  # a write through the mapping
        T.cuda.synchronize()
        return {"read": v}

    res["ipc_same_uid"] = child(open_ipc)
    res["ipc_other_uid"] = child(lambda: (drop(), open_ipc())[1])
    res["ipc_pidns"] = child(lambda: nested(CLONE_NEWPID, open_ipc))
    res["ipc_netns_mntns_hidepid_uid"] = child(lambda: (unshare(CLONE_NEWNS | CLONE_NEWNET),
                                                        mount_proc_hidepid(), drop(), open_ipc())[3])
    exp.stdin.write("\n")
    exp.stdin.flush()
    res["exporter_sum_after"] = exp.stdout.readline().strip()
    exp.wait()
    # ncu as another uid, and ncu following a process that drops its uid
    prog = "import torch,os;x=torch.ones(1<<20,device='cuda');torch.cuda.synchronize();(x*2).sum().item()"
    for name, cmd in [
        ("ncu_root", ["ncu", "--metrics", "gpu__time_duration.sum", "--csv", "--clock-control", "none",
                      sys.executable, "-c", prog]),
        ("ncu_child_drops_uid", ["ncu", "--metrics", "gpu__time_duration.sum", "--csv", "--clock-control", "none",
                                 "--target-processes", "all", sys.executable, "-c",
                                 "import os;os.setgid(65534);os.setuid(65534);" + prog]),
    ]:
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            lines = [ln for ln in p.stdout.splitlines() if "gpu__time_duration" in ln]
            res[name] = {"rc": p.returncode, "rows": len(lines), "s": round(time.time() - t0, 1),
                         "tail": (p.stdout + p.stderr)[-400:] if not lines else lines[-1][-200:]}
        except Exception as e:  # noqa: BLE001
            res[name] = {"error": str(e)}
    res["torch"] = torch.__version__
    return res


if __name__ == "__main__":
    print(json.dumps({"basic": probe_basic()}))
    if "--cuda" in sys.argv:
        print(json.dumps({"cuda": probe_cuda()}))
