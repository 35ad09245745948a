"""The runner's sandbox: what a candidate's process cannot reach, and what this machine allowed.

The runner is the one process that imports candidate code (:mod:`kernelcraft.runner.main`). Before
it does, it enters a sandbox made of existing Linux mechanisms, each applied where the OS allows it
and named in the record either way (``held`` / ``degraded``):

- **its own pid namespace** (``unshare(CLONE_NEWPID)``; as root, or inside a new user namespace when
  not): the judge, the recording process and every other process are invisible, so they can be
  neither signalled nor traced, and when the runner (the namespace's pid 1) dies the kernel kills
  every process it left behind: a detached grandchild cannot outlive the job;
- **its own mount namespace**: a fresh ``/proc`` of that pid namespace (``hidepid=invisible``), empty
  tmpfs over ``/tmp`` and ``/dev/shm`` (other processes' sockets and files there are gone) with the
  runner's scratch folder bound back in;
- **its own network namespace**: no network at all, and no abstract Unix socket of another process
  (the multiprocessing forkserver listens on one);
- **another uid** (as root, where the Python installation is world-readable, e.g. the H200 image's
  /opt venv) or else **no capabilities** (uid 0 kept, every capability dropped from the bounding,
  effective, permitted and inheritable sets, securebits locked so an exec regains none);
- **landlock** (the ``landlock`` binding): reads only of the Python installation, the packages on
  ``sys.path``, the system's libraries and tools, ``/dev``, ``/proc``, ``/sys``; writes only of the
  scratch folder and the shared compile caches. Not the project folder, the home directory, the
  ledger, the calibration cache, records, nor anything under ``/tmp`` but its own;
- **resource limits**: no core files, bounded file sizes, open files and (on CPU) address space;
- **an environment from an allowlist**: no API keys, database URLs or ``KERNELCRAFT_*`` settings.

Called in the runner's own process, single-threaded, before anything of the candidate is imported.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x1000, 0x4000, 0x40000
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 24, 28, 38
# SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | ..._LOCKED | SECBIT_KEEP_CAPS_LOCKED
# | SECBIT_NO_CAP_AMBIENT_RAISE | ..._LOCKED: an exec by uid 0 gains no capability back
SECUREBITS_LOCKED = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80
SYS_CAPSET = 126  # x86_64
SANDBOX_UID = 2147480000  # an id no account uses: files it creates belong to nobody real

CACHE_SUBDIRS = ("triton", "build", "torch_extensions")

# What a candidate's process may keep of the environment it was started with.
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
               "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "TRITON_INTERPRET",
               "TRITON_PTXAS_PATH", "TORCH_CUDA_ARCH_LIST", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
               "CC", "CXX", "CUDAHOSTCXX", "MAX_JOBS", "OMP_NUM_THREADS",
               # the device machines keep NVLink multicast off in every program (device/KINDS.md)
               "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
               # FlashInfer from its prebuilt modules only, no JIT build (a peer timed in a runner of its own,
               # --trusted-timing runner, reads FlashInfer as the judge does: scripts/h200_s19_chain1.sh)
               "FLASHINFER_DISABLE_JIT")
# /etc entries compilers, the dynamic loader and Python read; not /etc as a whole (shadow, ssh keys)
ETC_ALLOWED = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group",
               "hosts", "host.conf", "resolv.conf", "alternatives", "os-release", "debian_version", "mime.types",
               "ssl", "ca-certificates", "gai.conf", "timezone", "nvidia", "OpenCL", "vulkan", "glvnd", "terminfo")


class SandboxError(RuntimeError):
    """A mechanism the policy requires could not be applied (``KERNELCRAFT_SANDBOX=strict``)."""


@dataclass
class Sandbox:
    """What the runner asks for and, after :func:`enter`, what it got."""

    scratch: Path  # the runner's one writable folder of its own
    caches: list[Path] = field(default_factory=list)  # shared compile caches it may write
    device: str = "cpu"
    writable: list[Path] = field(default_factory=list)  # more paths landlock lets it write
    # under Nsight Compute: its injected library talks to ncu through files under /tmp (the target
    # exited with code 18 otherwise on the H200), so /tmp stays shared and writable
    profiled: bool = False
    held: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)

    def record(self) -> dict:
        return {"held": list(self.held), "degraded": list(self.degraded)}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _err(what: str) -> str:
    e = ctypes.get_errno()
    return f"{what}: {os.strerror(e)}"


def unshare(flags: int) -> None:
    if _libc().unshare(ctypes.c_int(flags)) != 0:
        raise OSError(ctypes.get_errno(), _err(f"unshare({flags:#x})"))


def skipped(name: str) -> bool:
    """A mechanism switched off by ``KERNELCRAFT_SANDBOX_SKIP`` (comma-separated: pidns, netns,
    mounts, tmpfs, uid, caps, landlock, rlimits, env): for a host where one breaks something the runner
    needs; the record names it as degraded."""
    global _SKIP
    if _SKIP is None:  # read once: the runner's environment is replaced from an allowlist on the way
        _SKIP = {x.strip() for x in os.environ.get("KERNELCRAFT_SANDBOX_SKIP", "").split(",") if x.strip()}
    return name in _SKIP


_SKIP: set[str] | None = None


def mode() -> str:
    """The policy this process can have: ``off`` (KERNELCRAFT_SANDBOX=off, a test or a machine that
    refuses everything), else ``root`` or ``user`` by who is asking."""
    if os.environ.get("KERNELCRAFT_SANDBOX", "on") == "off":
        return "off"
    return "root" if os.geteuid() == 0 else "user"


def _world_readable(path: Path) -> bool:
    """Every directory from / down to ``path`` lets others in, and ``path`` lets them read."""
    try:
        p = path.resolve()
        for parent in [*reversed(p.parents), p]:
            st = parent.stat()
            need = stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else stat.S_IROTH
            if not st.st_mode & need:
                return False
        return True
    except OSError:
        return False


def python_world_readable() -> bool:
    """Could a process of another uid import what this one imports (the interpreter's library,
    torch, triton, kernelcraft)? On this workplace's CPU machines Python lives under /root (0700)."""
    import torch
    import triton  # noqa: F401 - the runner needs both

    import kernelcraft

    mods = [Path(sys.modules["triton"].__file__), Path(torch.__file__), Path(kernelcraft.__file__), Path(os.__file__)]
    return all(_world_readable(m) for m in mods)


def isolate(box: Sandbox, pid_namespace: bool = True) -> bool:
    """Namespaces (call in the runner *before* forking its pid-1 child): True when the caller must
    fork, the child becoming pid 1 of a new pid namespace and the one to :func:`enter` the rest.
    Without ``pid_namespace`` (a runner under a profiler), only the mount and network namespaces."""
    m = mode()
    if m == "off":
        box.degraded.append("sandbox off (KERNELCRAFT_SANDBOX=off): the candidate runs with the judge's privileges")
        return False
    pid_namespace = pid_namespace and not skipped("pidns")
    # a profiled runner keeps the host's network: Nsight Compute's injected library reaches ncu over
    # loopback sockets, which a network namespace of its own would not have
    own_net = not (skipped("netns") or box.profiled)
    flags = (CLONE_NEWPID if pid_namespace else 0) | CLONE_NEWNS | (CLONE_NEWNET if own_net else 0)
    if m == "user":
        flags |= CLONE_NEWUSER
        uid, gid = os.getuid(), os.getgid()
    try:
        unshare(flags)
    except OSError as e:
        box.degraded.append(f"namespaces refused ({e}): the candidate's process can see and signal this "
                            "machine's processes of its uid, and has the network")
        return False
    if m == "user":
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError as e:
            box.degraded.append(f"user namespace id maps refused: {e}")
        box.held.append("user namespace")
    if pid_namespace:
        box.held.append("pid namespace (no other process visible; its descendants die with it)")
    else:
        box.degraded.append("no pid namespace (a profiler watches this runner, or KERNELCRAFT_SANDBOX_SKIP): "
                            "other processes are visible")
    if not own_net:
        box.degraded.append("no network namespace (a profiled runner, or KERNELCRAFT_SANDBOX_SKIP): the "
                            "network is reachable")
    else:
        box.held.append("network namespace (no network, no other process's abstract sockets)")
    return pid_namespace


def _mount(source: bytes, target: bytes, fstype: bytes | None, flags: int, data: bytes | None) -> None:
    if _libc().mount(source, target, fstype, ctypes.c_ulong(flags), data) != 0:
        raise OSError(ctypes.get_errno(), _err(f"mount {target.decode()}"))


def _mounts(box: Sandbox) -> None:
    """A private /proc, and /tmp and /dev/shm emptied, with what the runner needs of them (its
    scratch folder, import paths under /tmp) bound back in at the same paths. Why /tmp: Python 3.11's
    multiprocessing forkserver listens on a socket file there, and connecting to it is not something
    landlock mediates; whoever can connect can have the forkserver run code with its privileges."""
    try:
        _mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
        _mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=invisible")
    except OSError as e:
        box.degraded.append(f"private /proc refused ({e}): other processes' /proc entries stay readable")
        return
    box.held.append("private /proc (only the sandbox's processes)")
    if box.profiled:
        return  # /tmp stays the host's: see _profiled
    if skipped("tmpfs"):
        box.degraded.append("no tmpfs over /tmp (KERNELCRAFT_SANDBOX_SKIP)")
        return
    keep = [box.scratch, *box.caches, *(Path(e) for e in sys.path if e and Path(e).is_dir())]
    fds: dict[Path, int] = {}
    try:
        for top in (Path("/tmp"), Path("/dev/shm")):
            if not top.is_dir():
                continue
            inside = [p.resolve() for p in keep if p.resolve().is_relative_to(top) and p.resolve() != top]
            fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in inside if p not in fds}
            _mount(b"tmpfs", str(top).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777,size=8g")
            for p, fd in fds.items():
                p.mkdir(parents=True, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}".encode(), str(p).encode(), None, MS_BIND, None)
                os.close(fd)
            fds = {}
        box.held.append("empty /tmp and /dev/shm (its scratch folder and import paths bound back in)")
    except OSError as e:
        box.degraded.append(f"tmpfs over /tmp refused ({e}): other processes' files under /tmp stay reachable")
    finally:
        for fd in fds.values():
            os.close(fd)


def _limits(box: Sandbox) -> None:
    pairs = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 16 << 30), (resource.RLIMIT_NOFILE, 4096)]
    if not box.device.startswith("cuda"):
        # CUDA reserves terabytes of address space: an address-space limit only suits a CPU runner.
        try:
            pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            pairs.append((resource.RLIMIT_AS, int(pages * 0.75)))
        except (ValueError, OSError):
            pass
    done = []
    for what, value in pairs:
        try:
            soft, hard = resource.getrlimit(what)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(what, (value, value))
            done.append(what)
        except (ValueError, OSError) as e:
            box.degraded.append(f"rlimit {what} refused: {e}")
    box.held.append("resource limits (no core files, file size 16 GiB, 4096 open files"
                    + (", address space 3/4 of RAM" if resource.RLIMIT_AS in done else "") + ")")


def _drop_uid(box: Sandbox) -> None:
    for p in (box.scratch, *box.caches, *(c / sub for c in box.caches for sub in CACHE_SUBDIRS)):
        os.chown(p, SANDBOX_UID, SANDBOX_UID)
    os.setgroups([])
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    box.held.append(f"uid {SANDBOX_UID} (no file of the judge's user is writable)")


def _drop_caps(box: Sandbox) -> None:
    libc = _libc()
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability: ignored
    if libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED, 0, 0, 0) != 0:
        box.degraded.append(_err("securebits"))
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
    if libc.syscall(SYS_CAPSET, header, data) != 0:
        box.degraded.append(_err("capset"))
        return
    box.held.append("no capabilities (uid 0 kept: the Python installation is readable by root only)")


def _readable_roots() -> list[Path]:
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    for entry in sys.path:
        if entry and Path(entry).is_dir() and Path(entry).resolve() != Path.cwd().resolve():
            roots.add(Path(entry))
    for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt", "/dev", "/proc", "/sys",
              os.environ.get("CUDA_HOME", "/usr/local/cuda"), "/usr/local/cuda", "/run/nvidia-persistenced"):
        roots.add(Path(p))
    for name in ETC_ALLOWED:
        roots.add(Path("/etc") / name)
    for m in ("torch", "triton", "kernelcraft", "numpy"):
        mod = sys.modules.get(m)
        if mod is not None and getattr(mod, "__file__", None):
            roots.add(Path(mod.__file__).resolve().parent.parent)
    return sorted(r for r in roots if r.exists())


def _landlock(box: Sandbox) -> None:
    try:
        import landlock
        from landlock.plumbing import FSAccess
    except ImportError:
        box.degraded.append("landlock binding not installed (pip install landlock): no filesystem allowlist")
        return
    # The binding decides success by errno alone (landlock 1.0.0.dev5, plumbing.syscall_errcheck): a
    # stale errno from an earlier call (prctl's EINVAL past the last capability) fails a syscall that
    # succeeded. Each call starts with errno 0.
    clear = functools.partial(ctypes.set_errno, 0)
    try:
        clear()
        ruleset = landlock.Ruleset()
        read = FSAccess.EXECUTE | FSAccess.READ_FILE | FSAccess.READ_DIR
        for root in _readable_roots():
            try:
                clear()
                # a file may only get file rights; a directory both
                ruleset.allow(str(root), rules=read if root.is_dir() else FSAccess.EXECUTE | FSAccess.READ_FILE)
            except Exception:  # noqa: BLE001, S112 - a path that vanished or refuses O_PATH: not readable then
                continue
        dev_rules = FSAccess.READ_FILE | FSAccess.WRITE_FILE
        ioctl = getattr(FSAccess, "IOCTL_DEV", None)
        if ioctl is not None and ioctl in ruleset.restrict_rules:
            dev_rules |= ioctl
        for dev in Path("/dev").iterdir():
            if dev.name.startswith(("nvidia", "null", "zero", "urandom", "random", "full", "tty")):
                try:
                    clear()
                    ruleset.allow(str(dev), rules=dev_rules)
                except Exception:  # noqa: BLE001, S112
                    continue
        # The CUDA driver writes to its own process's /proc entries: with /proc read-only under landlock,
        # cudaGetDeviceCount failed with error 304 on the H200 (scripts/probe_landlock_cuda.py,
        # 2026-12-01). A process the runner starts (a request's [validate] command: a new CUDA context)
        # needs its own entry too, which does not exist yet when the rules are made: under a private
        # /proc (hidepid=invisible: only the sandbox's processes) and the dropped uid, files of /proc
        # are writable, which that uid limits to the sandbox's own entries; otherwise only this
        # process's folder (a child then cannot start CUDA: cudaGetDeviceCount error 304, the H200's
        # [validate] runs of 2026-12-01). All three are needed: without the pid namespace (a profiled
        # runner) other sandboxes' entries of the same uid show; with uid 0 kept, /proc/sys is writable.
        private_proc = all(any(h.startswith(k) for h in box.held)
                           for k in ("pid namespace", "private /proc", f"uid {SANDBOX_UID}"))
        own_proc = Path("/proc") if private_proc else Path(os.path.realpath("/proc/self"))
        for w in (box.scratch, *box.caches, *box.writable):
            clear()
            ruleset.allow(str(w))
        clear()
        ruleset.allow(str(own_proc))  # every right, as the runner has had on its own entry
        clear()
        ruleset.apply()
    except Exception as e:  # noqa: BLE001 - an old kernel or a refused syscall: said in the record
        box.degraded.append(f"landlock refused: {type(e).__name__}: {e}")
        return
    box.held.append("landlock (reads: the Python installation, system libraries, /dev, /proc, /sys; "
                    "writes: its scratch folder, the compile caches and "
                    + ("the sandbox's /proc entries)" if private_proc else "its own /proc entry)"))


# What Nsight Compute puts in its target's environment for its injected library (CUDA_INJECTION64_PATH,
# LD_PRELOAD, NV_* / NVTX_* settings): a profiled runner keeps them, or the library cannot reach ncu
PROFILER_ENV_PREFIXES = ("CUDA_INJECTION", "NVTX_INJECTION", "LD_PRELOAD", "NV_", "NVTX_", "NSIGHT", "NCU_", "TPS_")


def _profiled(box: Sandbox) -> None:
    """A runner under Nsight Compute: ncu's injected library talks to ncu through files under /tmp and
    /dev/shm (the target exited with code 18 on the H200 while landlock kept them read-only), so those
    stay the host's and writable; the record says so."""
    for p in (Path("/tmp"), Path("/dev/shm")):
        if p.is_dir():
            box.writable.append(p)
    box.degraded.append("/tmp and /dev/shm shared with Nsight Compute and writable (a profiled runner)")


def _environment(box: Sandbox) -> None:
    if skipped("env"):
        box.degraded.append("environment kept as inherited (KERNELCRAFT_SANDBOX_SKIP)")
        return
    keep = {k: os.environ[k] for k in ENV_ALLOWED if k in os.environ}
    if box.profiled:
        keep.update({k: v for k, v in os.environ.items() if k.startswith(PROFILER_ENV_PREFIXES)})
        if "TMPDIR" in os.environ:
            keep["TMPDIR"] = os.environ["TMPDIR"]
    os.environ.clear()
    os.environ.update(keep)
    home = box.scratch / "home"
    home.mkdir(exist_ok=True)
    tmp = box.scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    # USER/LOGNAME: the sandbox uid has no passwd entry, and getpass.getuser() (torch._inductor's cache
    # folder, at torch._dynamo's import) raises without them (seen under ncu on the H200)
    os.environ.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                      USER="kernelcraft-sandbox", LOGNAME="kernelcraft-sandbox",
                      TORCHINDUCTOR_CACHE_DIR=str(home / ".cache" / "torchinductor"))
    if not box.profiled:  # under ncu, TMPDIR stays ncu's: its library finds its files by it
        os.environ["TMPDIR"] = str(tmp)
    if box.caches:
        os.environ["TRITON_CACHE_DIR"] = str(box.caches[0] / "triton")
        os.environ["KERNELCRAFT_CACHE"] = str(box.caches[0] / "build")
        os.environ["TORCH_EXTENSIONS_DIR"] = str(box.caches[0] / "torch_extensions")
    import tempfile

    tempfile.tempdir = None  # recomputed from TMPDIR on next use
    box.held.append("environment from an allowlist (no keys, database URLs or harness settings)")


def enter(box: Sandbox, namespaced: bool) -> Sandbox:
    """Everything after the namespaces, in the runner (pid 1 of its namespace when ``namespaced``).
    Order matters: mounts and chown need privileges the uid or capability drop takes away; landlock
    comes last (it also sets no_new_privs)."""
    if mode() == "off":
        return box
    if box.profiled:
        _profiled(box)
    if namespaced and not skipped("mounts"):
        _mounts(box)
    for c in box.caches:
        for sub in CACHE_SUBDIRS:
            (c / sub).mkdir(parents=True, exist_ok=True)
    if not skipped("rlimits"):
        _limits(box)
    if os.geteuid() == 0:
        if python_world_readable() and not skipped("uid"):
            try:
                _drop_uid(box)
            except OSError as e:
                box.degraded.append(f"uid drop refused ({e})")
                _drop_caps(box)
        elif not skipped("caps"):
            _drop_caps(box)
    _environment(box)
    if skipped("landlock"):
        box.degraded.append("no landlock (KERNELCRAFT_SANDBOX_SKIP): no filesystem allowlist")
    else:
        _landlock(box)
    if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        box.degraded.append(_err("no_new_privs"))
    if os.environ.get("KERNELCRAFT_SANDBOX_STRICT") == "1" and box.degraded:
        raise SandboxError("; ".join(box.degraded))
    return box
