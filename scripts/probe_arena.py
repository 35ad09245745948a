"""Does a shared arena (kernelcraft.runner.shared) reach a process of another uid, another pid
namespace, and both? The parent makes the arena and fills it; each child maps it from the descriptor
it received over a Unix socket, reads it, and writes into it. ``python3 scripts/probe_arena.py cuda``."""

from __future__ import annotations

import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))
from probe_sandbox import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, drop, mount_proc_hidepid, unshare  # noqa: E402

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"


def run_child(setup, sock, size):
    pid = os.fork()
    if pid:
        return pid
    try:
        setup()
        msg, fds, _, _ = socket.recv_fds(sock, 100, 1)
        import torch

        from kernelcraft.runner.shared import Slot, open_arena

        a = open_arena(device, size, fds[0])
        t = a.view(Slot(0, (1024,), "float32"))
        out = {"read": float(t[3]), "uid": os.getuid()}
        t[1] = 99.0
        if device == "cuda":
            torch.cuda.synchronize()
        sock.send(json.dumps(out).encode())
    except BaseException as e:  # noqa: BLE001
        sock.send(json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
    os._exit(0)


def in_pidns():
    unshare(CLONE_NEWPID)
    if os.fork():
        os.wait()
        os._exit(0)


def drop_caps():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.syscall(126, hdr, data) != 0:  # capset
        raise OSError(ctypes.get_errno(), "capset")


def pidns_nocaps():
    unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET)
    if os.fork():
        os.wait()
        os._exit(0)
    mount_proc_hidepid()
    drop_caps()


setups = {
    "pidns_mnt_net_nocaps": pidns_nocaps,
    "same_uid": lambda: None,
    "other_uid": drop,
    "pidns": in_pidns,
    "mnt_net_hidepid_uid": lambda: (unshare(CLONE_NEWNS | CLONE_NEWNET), mount_proc_hidepid(), drop()),
}
results = {}
pids = {}
socks = {}
for name, setup in setups.items():
    a_sock, b_sock = socket.socketpair()
    socks[name] = a_sock
    pids[name] = run_child(setup, b_sock, 1 << 21)
    b_sock.close()

import torch  # noqa: E402  (after the forks: the children initialise CUDA themselves)

from kernelcraft.runner.shared import Slot, new_arena  # noqa: E402

for name in setups:
    arena = new_arena(device, 1 << 21)
    assert arena.size == 1 << 21, arena.size
    t = arena.view(Slot(0, (1024,), "float32"))
    t.copy_(torch.arange(1024, dtype=torch.float32, device=t.device) * 2)
    if device == "cuda":
        torch.cuda.synchronize()
    socket.send_fds(socks[name], [b"arena"], [arena.fd])
    reply = json.loads(socks[name].recv(4096) or b'{"error": "no reply"}')
    if device == "cuda":
        torch.cuda.synchronize()
    reply["parent_sees_write"] = float(t[1])
    results[name] = reply
    os.waitpid(pids[name], 0)
print(json.dumps({device: results}))
