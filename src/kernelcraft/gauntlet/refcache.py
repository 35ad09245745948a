"""The judge's cache of slow reference outputs, keyed by the exact inputs.

Linear-attention references run token by token in float64: one gdn_prefill or kda_prefill workload
costs the judge seconds to tens of seconds on an H200, and every solution of an evaluation (the
baseline, the peers, each candidate of a tuner's batch) is checked on the same inputs (one seed per
run), so the same reference call was repeated per solution: kda_prefill's 2026-12-02 run spent 131 s
of FLA's correctness phase and 210 s of triton_chunk's mostly there. A reference call that took at
least ``KERNELCRAFT_REFCACHE_MIN_S`` seconds (default 1; ``inf`` turns the cache off) is stored;
the next call with byte-identical inputs reads it back instead of running the reference again.

Trust: the entry's key is a SHA-256 of the reference's source, the precision path (float64 or the
inputs' own), the device type, torch's version and every input's dtype, shape and bytes, so only the
very same call can hit. Entries live in the judge's cache (``KERNELCRAFT_CACHE``/refcache), which a
candidate's runner cannot read or write (another uid or landlock: docs/integrity.md), and each is
signed with the judge's key (the calibration's, 0600): an entry changed outside kernelcraft fails
its signature, is removed and the reference runs again. An entry is one file (its signature, a newline,
then torch.save's bytes, written to a temporary name and renamed): parallel judges read a whole entry or
none. Loaded with ``torch.load(weights_only=True)``.
Hashing costs ~20-60 ms for tens of MB of inputs, so it is done only for calls whose shapes already
had a slow reference call (an in-process marker plus a marker file for the next process).
Parallel judges (the pool's jobs, each solution of one evaluation, started together and walking the
same workloads in the same order) would otherwise all run the same slow call at once and none hit:
kda_prefill's 2026-12-02 session 9 run stored 2 entries and hit none. A call holds an advisory lock
on its shape key (``flock``, released when the process dies) while it looks up and computes, so the
second judge waits for the first one's entry instead of recomputing it; a wait longer than
``LOCK_WAIT_S`` gives up and computes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import io
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

VERSION = b"kc-refcache/1"
CAP_BYTES = 4 << 30  # the folder is trimmed (oldest first) past this
MAX_ENTRY_BYTES = 1 << 30  # larger outputs are not stored
LOCK_WAIT_S = 600.0  # the longest a judge waits for another's call of the same shape
_slow: set[str] = set()  # shape keys whose reference call was slow, in this process
stats = {"hits": 0, "stored": 0, "rejected": 0}


def min_seconds() -> float:
    raw = os.environ.get("KERNELCRAFT_REFCACHE_MIN_S", "1")
    try:
        return float(raw)
    except ValueError:
        return 1.0


def _root() -> Path:
    from kernelcraft.solution.build import cache_root

    d = cache_root() / "refcache"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _base(reference_source: str, native: bool, device: str) -> hashlib._Hash:
    h = hashlib.sha256(VERSION)
    for part in (reference_source, "native" if native else "float64", torch.device(device).type, torch.__version__):
        h.update(part.encode())
        h.update(b"\0")
    return h


def _shape_key(base: hashlib._Hash, inputs: list[Any]) -> str:
    h = base.copy()
    for x in inputs:
        if isinstance(x, torch.Tensor):
            h.update(f"T{x.dtype}{tuple(x.shape)};".encode())
        else:
            h.update(f"S{type(x).__name__};".encode())
    return h.hexdigest()


def _content_key(base: hashlib._Hash, inputs: list[Any]) -> str:
    h = base.copy()
    for x in inputs:
        if isinstance(x, torch.Tensor):
            h.update(f"T{x.dtype}{tuple(x.shape)};".encode())
            flat = x.detach().contiguous().reshape(-1)
            h.update(flat.view(torch.uint8).cpu().numpy() if flat.numel() else b"")
        else:
            h.update(f"S{type(x).__name__}:{x!r};".encode())
    return h.hexdigest()


def _sign(data: bytes) -> str:
    from kernelcraft.measure.calibrate import _key

    return hmac.new(_key(), data, hashlib.sha256).hexdigest()


def _load(root: Path, key: str, device: str) -> tuple[list[Any], str] | None:
    path = root / f"{key}.pt"
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    want, _, data = raw.partition(b"\n")  # one file: its signature, then what torch.save wrote
    if not hmac.compare_digest(want, _sign(data).encode()):
        stats["rejected"] += 1
        import sys

        print(f"kernelcraft: {path} was changed outside kernelcraft (its signature does not verify): "
              "running the reference again", file=sys.stderr)
        path.unlink(missing_ok=True)
        return None
    try:
        entry = torch.load(io.BytesIO(data), weights_only=True)
        outs, precision = entry["outputs"], str(entry["precision"])
    except Exception:  # noqa: BLE001 - an unreadable entry is a miss
        return None
    path.touch()  # recently used: trimmed last
    return [o.to(device) if isinstance(o, torch.Tensor) else o for o in outs], precision


def _store(root: Path, key: str, outputs: list[Any], precision: str) -> None:
    host = [o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs]
    if sum(o.numel() * o.element_size() for o in host if isinstance(o, torch.Tensor)) > MAX_ENTRY_BYTES:
        return
    buf = io.BytesIO()
    torch.save({"outputs": host, "precision": precision}, buf)
    data = buf.getvalue()
    tmp = root / f".{key}.{os.getpid()}"
    tmp.write_bytes(_sign(data).encode() + b"\n" + data)
    tmp.replace(root / f"{key}.pt")  # atomic: a parallel judge reads a whole, signed entry or none
    stats["stored"] += 1
    _trim(root)


def _trim(root: Path) -> None:
    files = sorted(root.glob("*.pt"), key=lambda p: p.stat().st_mtime)
    total = sum(p.stat().st_size for p in files)
    for p in files:
        if total <= CAP_BYTES:
            break
        total -= p.stat().st_size
        p.unlink(missing_ok=True)


@contextlib.contextmanager
def _shape_lock(root: Path, shape: str):
    """Exclusive among processes for one shape key; a wait past LOCK_WAIT_S (a judge stuck in its
    reference) proceeds unlocked."""
    try:
        fd = os.open(root / f"lock-{shape}", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock


def cached_call(compute: Callable[[], tuple[list[Any], str]], inputs: list[Any], reference_source: str,
                native: bool, device: str) -> tuple[list[Any], str]:
    """``compute()`` (the reference on ``inputs``: its outputs and their precision), or what it returned
    for byte-identical inputs before."""
    limit = min_seconds()
    if math.isinf(limit):
        return compute()
    base = _base(reference_source, native, device)
    shape = _shape_key(base, inputs)
    root = _root()
    with _shape_lock(root, shape):
        marker = root / f"slow-{shape}"
        key = None
        if shape in _slow or marker.exists():
            key = _content_key(base, inputs)
            hit = _load(root, key, device)
            if hit is not None:
                stats["hits"] += 1
                return hit
        t = time.perf_counter()
        outputs, precision = compute()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        if time.perf_counter() - t >= limit:
            _slow.add(shape)
            marker.touch()
            _store(root, key or _content_key(base, inputs), outputs, precision)
        return outputs, precision
