"""The judge's side of a runner: fork it, talk to it, freeze it between requests, end it.

Forked by the judge before the judge has read its job (so the runner's memory holds nothing of the
job), it lives until the job ends. Between requests it is *frozen* (SIGSTOP, with every process it
started): a thread or a child of the candidate cannot launch GPU work while the judge, or another
candidate on the same GPU, is being timed. Every reply is checked against the request it answers
(:func:`RunnerClient.request`); anything else ends the job ``REJECTED [protocol]``.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kernelcraft.runner import wire

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


class ProtocolError(Exception):
    """The runner said something that is not an answer to what it was asked."""


class RunnerDied(Exception):
    """The runner's process ended (crash, signal, os._exit) or stopped answering in time."""

    def __init__(self, what: str, timeout: bool = False):
        super().__init__(what)
        self.timeout = timeout


def sandbox_cache() -> Path:
    """The compile caches runners share (Triton's, nvcc's, torch extensions'): outside /tmp (each
    runner gets an empty one) and outside the home folder (which another uid cannot enter)."""
    root = Path(os.environ.get("KERNELCRAFT_SANDBOX_CACHE") or f"/var/tmp/kernelcraft-sandbox-{os.getuid()}")
    root.mkdir(parents=True, exist_ok=True, mode=0o755)
    return root


def _prctl(option: int, arg: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)


def _read_small(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from the kernel's children lists (no /proc scan).
    Plain ``os`` calls: it runs at every freeze, i.e. after every request (every timed call); through
    pathlib it took ~48 us for a two-process CPU runner, this way ~22 us."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                todo += [int(c) for c in _read_small(f"/proc/{p}/task/{t}/children").split()]
            except (OSError, ValueError):
                continue
    return out


LAUNCHER_EXIT_S = 60.0  # a launcher (ncu) writes its report once its target has exited; then it is killed


class RunnerClient:
    """One runner process and the socket to it: forked (the default), or started as a program under
    ``launcher`` (e.g. Nsight Compute's command line), whose output goes to ``launcher_output``."""

    def __init__(self, device: str, launcher: list[str] | None = None, launcher_output: Path | None = None):
        self.device = device
        self.popen: subprocess.Popen | None = None
        self.timed_out = False
        self.scratch = Path(tempfile.mkdtemp(prefix="kc_runner_"))
        os.chmod(self.scratch, 0o755)
        self.log_path = str(self.scratch / "runner.log")
        self.sandbox: dict = {}
        self._next_id = 0
        self._frozen = False
        self._stopped: list[int] = []  # what the last freeze stopped
        caches = [str(sandbox_cache())]
        judge_end, runner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the runner's processes orphan comes back to the judge
        if launcher is not None:
            fd = runner_end.fileno()
            os.set_inheritable(fd, True)
            argv = [*launcher, sys.executable, "-m", "kernelcraft.runner", "--fd", str(fd), "--device", device,
                    "--scratch", str(self.scratch), "--log", self.log_path, "--no-pid-namespace"]
            for c in caches:
                argv += ["--cache", c]
            out = open(launcher_output or os.devnull, "wb")  # noqa: SIM115 - the child's; closed below
            self.popen = subprocess.Popen(argv, pass_fds=(fd,), stdout=out, stderr=subprocess.STDOUT,
                                          preexec_fn=lambda: _prctl(PR_SET_PDEATHSIG, signal.SIGKILL))
            out.close()
            runner_end.close()
            self.pid, self.sock = self.popen.pid, judge_end
            _LIVE.add(self.pid)
            return
        pid = os.fork()
        if pid == 0:
            judge_end.close()
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the judge gone, the runner goes too
            from kernelcraft.runner.main import start

            start(runner_end, device, str(self.scratch), caches, self.log_path)  # never returns
        runner_end.close()
        self.pid, self.sock = pid, judge_end
        _LIVE.add(pid)

    # -- the process ---------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> None:
        """The runner's first word: it entered its sandbox (and which protections held)."""
        msg = self._recv(timeout)
        if msg.get("event") != "ready" or not isinstance(msg.get("sandbox"), dict):
            raise ProtocolError(f"the runner's first message was {str(msg)[:200]!r}, not its ready event")
        sb = msg["sandbox"]
        self.sandbox = {"held": [str(x)[:300] for x in sb.get("held", [])][:20],
                        "degraded": [str(x)[:300] for x in sb.get("degraded", [])][:20]}
        if self.popen is not None:
            self.sandbox["degraded"].append("not stopped between requests (a runner under Nsight Compute)")
        self.freeze()

    def _signal_all(self, sig: int, pids: list[int] | None = None) -> list[int]:
        pids = descendants(self.pid) if pids is None else pids
        _RUNNER_TREE.update(pids)  # what the candidate started, should it be orphaned before close
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, sig)
        return pids

    def freeze(self) -> None:
        """Stop the runner between requests (a forked runner only). A runner under a launcher is left
        running: Nsight Compute's tree tracker (a subreaper between ncu and the runner) and its injected
        library's threads exchange with ncu on their own schedule, and the profiled runner's calls feed
        no verdict but ncu's kernel durations (its record says it was not frozen)."""
        if self.popen is not None:
            return
        if not self._frozen:
            self._stopped = self._signal_all(signal.SIGSTOP)
            self._frozen = True

    def thaw(self) -> None:
        """SIGCONT to the processes the last freeze stopped: a stopped process cannot start another,
        so they are all there are (the tree is read again at the next freeze)."""
        if self._frozen:
            self._signal_all(signal.SIGCONT, self._stopped)
            self._frozen = False

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        if self.pid in _reaped:
            return False
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid:
            _reaped[pid] = os.waitstatus_to_exitcode(status)
        return pid == 0

    def _exit(self) -> str:
        """How the runner's process ended, once it has (a closed socket comes a moment earlier)."""
        deadline = time.monotonic() + 5.0
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.popen is not None:
            code = self.popen.returncode
            return describe_exit(code)
        return _exit_of(self.pid)

    def log_tail(self, n: int = 2500) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""
        # the candidate writes this text: no terminal control sequences reach a record or a screen
        text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text[-n:])
        return text.strip()

    def close(self, courtesy_s: float = 2.0) -> None:
        """End the runner and every process it started; remove its scratch folder. ``courtesy_s``: how
        long it may take to exit when asked (none after a timeout: the recording process's own deadline
        for this job is near, and a judge killed first would leave nothing to kill its runner)."""
        _RUNNER_TREE.update(descendants(self.pid))  # before it exits: then its children are no longer below it
        with contextlib.suppress(Exception):
            self.thaw()
            wire.send(self.sock, {"op": "exit"})
        deadline = time.monotonic() + (courtesy_s if not self.timed_out else 0.0)
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.popen is not None:
            # a launcher (a profiler) writes its report once its target has exited: give it that time
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=LAUNCHER_EXIT_S if not self.timed_out else 5.0)
        tree = descendants(self.pid)
        _RUNNER_TREE.update(tree)
        for p in reversed(tree):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait()
        else:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        _LIVE.discard(self.pid)
        _reap_orphans()
        self.sock.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- requests ------------------------------------------------------------------------------
    def _recv(self, timeout: float) -> dict:
        try:
            msg, fds = wire.recv(self.sock, timeout=timeout)
        except wire.Timeout:
            self.timed_out = True
            raise RunnerDied(f"made no progress within {timeout:g} s; it was killed", timeout=True) from None
        except wire.WireError as e:
            # bytes that are no message are a protocol violation whether or not the runner has exited since
            # (tests/fixtures/adversarial/forges_worker_stream.py writes them and exits at once: judged by
            # whether its exit was seen first, it was REJECTED or RUNTIME_ERROR by a race, session 30 under load);
            # only an end of the stream is a death
            if "closed" in str(e):
                raise RunnerDied(f"process {self._exit()}") from None
            raise ProtocolError(str(e)) from None
        for fd in fds:
            os.close(fd)
        return msg

    def request(self, op: str, timeout: float = math.inf, fds: list[int] | None = None,
                on_event: Callable[[str], None] | None = None, **payload) -> dict:
        """Send one request and return its reply, which must carry this request's id; events
        (``compiling``/``compiled``) go to ``on_event`` while it waits."""
        self._next_id += 1
        rid = self._next_id
        self.thaw()
        try:
            wire.send(self.sock, {"op": op, "id": rid, **payload}, fds)
        except OSError:
            raise RunnerDied(f"process {self._exit()}") from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                msg = self._recv(max(0.0, deadline - time.monotonic()))
                event = msg.get("event")
                if event in ("compiling", "compiled") and len(msg) == 1:
                    if on_event is not None:
                        on_event(event)
                    if event == "compiled":
                        wire.send(self.sock, {"op": "resume"})
                    continue
                if msg.get("id") != rid or event is not None:
                    raise ProtocolError(f"a reply {str(msg)[:200]!r} to request {rid} ({op})")
                if "harness_error" in msg:
                    raise ProtocolError(f"the runner reported a harness error: {str(msg['harness_error'])[-1500:]}")
                return msg
        finally:
            if self.alive():
                self.freeze()


_reaped: dict[int, int] = {}  # pid -> exit code, for a runner whose status alive() already collected


def describe_exit(code: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _exit_of(pid: int) -> str:
    if pid in _reaped:
        return describe_exit(_reaped[pid])
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "ended"
    if got == 0:
        return "stopped answering"
    _reaped[pid] = os.waitstatus_to_exitcode(status)
    return describe_exit(_reaped[pid])


_LIVE: set[int] = set()  # pids of this judge's runners still in use (a confirmation runs beside the main one)
# Every pid seen in a runner's tree (at each freeze and at close). An orphan of a runner is one of these, or is in
# a session other than this process's (every runner calls setsid first, so all it starts is). The rest of this
# process's children (the multiprocessing forkserver, a pool's workers) are left alone: killing every non-runner
# child killed the forkserver a later evaluate() in the same process needed (CI: "ChildProcessError: No child
# processes").
_RUNNER_TREE: set[int] = set()


def _session_of(pid: int) -> int | None:
    try:
        stat = _read_small(f"/proc/{pid}/stat")
        return int(stat[stat.rindex(b")") + 2:].split()[3])  # fields after "(comm)": state ppid pgrp session
    except (OSError, ValueError, IndexError):
        return None


def _reap_orphans() -> None:
    """Processes a runner left behind that the kernel handed to this subreaper (this process's children
    now, of a runner's session or tree, and no live runner): killed, with what they started, and reaped
    by pid (never ``waitpid(-1)``: that would take the exit status of a child someone else waits for)."""
    mine = os.getpid()
    children = []
    for t in os.listdir(f"/proc/{mine}/task"):
        with contextlib.suppress(OSError, ValueError):
            children += [int(c) for c in Path(f"/proc/{mine}/task/{t}/children").read_text().split()]
    own = os.getsid(0)
    killed = []
    for child in children:
        if child in _LIVE:
            continue
        sid = _session_of(child)
        # a runner's (its tree, its session), or detached into a session of its own (fork, setsid, fork
        # and exit before a freeze saw it: adversarial/orphan_rewrites_record.py outside a pid namespace);
        # a child in this process's own session that no runner tree held is the judge's own: left alone
        if not (child in _RUNNER_TREE or (sid is not None and sid != own)):
            continue
        for p in reversed(descendants(child)):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        killed.append(child)
    for child in killed:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)
