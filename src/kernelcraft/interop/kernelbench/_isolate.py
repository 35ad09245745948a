"""Each problem converted in a process of its own, under a memory limit, with a deadline.

One problem that allocates without bound (KernelBench level 1 has inputs of several GB) or hangs
costs only its own conversion: the limit (``RLIMIT_DATA``, :mod:`kernelcraft._memlimit` says why
that one) turns an allocation past it into an error inside that process, and a kill or a crash is
that problem's reason. The parent writes
each problem's outcome to the report as soon as it is known, and removes whatever temporary folder a
dead child left in ``out_dir``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft._memlimit import limit_data, signal_name

_LIVE: set[subprocess.Popen] = set()  # children now running, so an interrupted import can end them all
TEMP_MARK = ".kc-import-"  # temporary folders are out_dir/.<stem>.kc-import-<random>
OLD_MARK = ".kc-old-"  # a replaced folder, between the swap and its removal
# The interpreter's start and torch's import are not the problem's time: on a loaded 2-core machine they
# took longer than a 12 s --timeout by themselves (CI, 2026-12-02: two plain problems "timed out"). The
# deadline counts from the child's ready mark; the start itself gets this long.
START_S = 180.0


@dataclass
class Outcome:
    path: Path
    folder: Path | None = None
    reason: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    peak_mb: float | None = None  # the child's peak resident memory

    def to_json(self) -> dict:
        return {"problem": str(self.path), "status": "converted" if self.folder else "not converted",
                "task": str(self.folder) if self.folder else None, "reason": self.reason, "warnings": self.warnings,
                "seconds": round(self.seconds, 2), "peak_mb": self.peak_mb}


def remove_leftovers(out_dir: Path, stem: str) -> list[Path]:
    """Temporary and half-swapped folders of this problem (named by the importer, never anything else)."""
    gone = []
    if out_dir.is_dir():
        for p in out_dir.iterdir():
            if p.name.startswith(f".{stem}{TEMP_MARK}") or p.name.startswith(f".{stem}{OLD_MARK}"):
                if p.name.startswith(f".{stem}{OLD_MARK}") and not (out_dir / stem).exists():
                    os.replace(p, out_dir / stem)  # the swap died between its two renames: put the good one back
                    continue
                shutil.rmtree(p, ignore_errors=True)
                gone.append(p)
    return gone


def _limit(max_mb: int):
    def apply() -> None:
        os.setsid()  # its own process group: a timeout kills the child and anything it started
        limit_data(max_mb)
    return apply


def _wait(proc: subprocess.Popen, ready: Path, timeout_s: float) -> str:
    """The child's output once it exits; TimeoutExpired (its ``timeout`` says which) when it has not
    started within START_S or has run timeout_s past its ready mark."""
    start = time.monotonic()
    while not ready.exists():
        try:
            return proc.communicate(timeout=0.05)[0]
        except subprocess.TimeoutExpired:
            if time.monotonic() - start > START_S:
                raise subprocess.TimeoutExpired(proc.args, START_S) from None
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        raise subprocess.TimeoutExpired(proc.args, timeout_s) from None


def run_isolated(path: Path, out_dir: Path, seed: int, device: str, max_mb: int, timeout_s: float) -> Outcome:
    """Convert one problem in a child process; whatever happens to the child becomes the outcome."""
    t0 = time.monotonic()
    fd, result_file = tempfile.mkstemp(prefix="kc_kb_", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "kernelcraft.interop.kernelbench._child", str(path), str(out_dir), str(seed),
           device, result_file]
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # the machine's cores are shared; one problem, one thread
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=_limit(max_mb))
    _LIVE.add(proc)
    ready = Path(result_file + ".ready")
    try:
        try:
            tail = _wait(proc, ready, timeout_s)
        except subprocess.TimeoutExpired as e:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            why = (f"timed out after {timeout_s:g} s (--timeout)" if e.timeout == timeout_s
                   else f"did not start within {START_S:g} s (the interpreter and torch's import; the machine is overloaded)")
            return Outcome(path, reason=why, seconds=time.monotonic() - t0)
        except BaseException:  # interrupted: the child goes with us
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        try:
            data = json.loads(Path(result_file).read_text())
        except (OSError, ValueError):
            data = None
        if data is None:
            last = (tail or "").strip().splitlines()[-3:]
            how = (f"was killed by {signal_name(proc.returncode)}" if proc.returncode < 0
                   else f"exited with status {proc.returncode}")
            hint = ""
            if proc.returncode == -signal.SIGKILL:
                hint = f" (as the kernel's out-of-memory killer sends; the import's limit is {max_mb} MB)"
            elif any("memory" in ln.lower() for ln in last):
                hint = f" (the memory limit is {max_mb} MB: --max-memory-mb raises it)"
            return Outcome(path, reason=f"the conversion {how}{hint}" + (": " + " | ".join(last) if last else ""),
                           seconds=time.monotonic() - t0)
        folder = Path(data["folder"]) if data.get("folder") else None
        return Outcome(path, folder, data.get("reason", ""), data.get("warnings", []), time.monotonic() - t0,
                       data.get("peak_mb"))
    finally:
        _LIVE.discard(proc)
        Path(result_file).unlink(missing_ok=True)
        ready.unlink(missing_ok=True)
        remove_leftovers(out_dir, path.stem)


def kill_all() -> None:
    """End every child still running (their own process groups, started by this import)."""
    for proc in list(_LIVE):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
