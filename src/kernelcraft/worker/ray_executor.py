"""The Ray executor: the local pool's lanes as Ray actors on a cluster (``--executor ray[:ADDRESS]``).

One actor per GPU of the cluster (``num_gpus=1``: Ray sets its CUDA_VISIBLE_DEVICES to that GPU), or
CPU actors for CPU tasks (``num_cpus=1`` each, spread over the nodes). An actor is a lane: it runs
each job in a worker subprocess it owns (:func:`kernelcraft.worker.pool.run_job`), so candidate code
never runs in the actor, let alone in the driver; on a GPU two jobs at a time (``max_concurrency=2``)
share the actor's GPU slot exactly as on a local lane. The driver (the process that called
``evaluate`` or ``optimize``) dispatches jobs, receives every outcome and alone writes records.

The kernelcraft package travels with the job (``runtime_env`` ``py_modules``): every node runs the
driver's code whatever is installed there. The task folder travels too, zipped once into the object
store (``solutions/`` left out) and unpacked once per actor.

A node that dies takes its actors' in-flight jobs with it: each is dispatched again to a live actor,
at most :data:`~kernelcraft.worker.executor.MAX_ATTEMPTS` times in all, and its record says so
(``attempts``, ``retried``). Dead actors are not replaced.
"""

from __future__ import annotations

import collections
import hashlib
import io
import os
import socket
import tempfile
import threading
import zipfile
from dataclasses import replace
from pathlib import Path

import kernelcraft
from kernelcraft.errors import InputError, Problem
from kernelcraft.worker.child import Job
from kernelcraft.worker.executor import (
    GPU_DEPTH,
    MAX_ATTEMPTS,
    Done,
    Executor,
    Started,
    harness_failure,
    pick_lane,
    spares_for,
)
from kernelcraft.worker.pool import GpuSlot, JobOutcome, run_job

ACTOR_START_TIMEOUT_S = 180  # every actor placed and answering; a cluster without room fails here


def pack_task(root: Path) -> tuple[str, bytes]:
    """(content digest, zip) of a task folder without its solutions: what a worker needs to load it."""
    buf = io.BytesIO()
    h = hashlib.sha256()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(root.rglob("*")):
            rel = f.relative_to(root)
            if not f.is_file() or rel.parts[0] == "solutions" or "__pycache__" in rel.parts:
                continue
            data = f.read_bytes()
            h.update(str(rel).encode() + b"\0" + hashlib.sha256(data).digest())
            zf.writestr(str(rel), data)
    return h.hexdigest()[:16], buf.getvalue()


class LaneActor:
    """One device of one node (made a Ray actor by :class:`RayExecutor`)."""

    def __init__(self, device: str, depth: int):
        self.device, self.depth = device, depth
        self.slot = GpuSlot()  # the GPU: checks share it, a timing holds it alone
        self._tasks: dict[str, str] = {}
        self._lock = threading.Lock()

    def where(self) -> dict:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "pid": os.getpid()}

    def _task_root(self, digest: str, packed: bytes) -> str:
        with self._lock:
            if digest not in self._tasks:
                dest = tempfile.mkdtemp(prefix=f"kc_task_{digest}_")
                with zipfile.ZipFile(io.BytesIO(packed)) as zf:
                    zf.extractall(dest)
                self._tasks[digest] = dest
            return self._tasks[digest]

    def run(self, job: Job, digest: str, packed: bytes, build_s: float, workload_s: float,
            spare_next: bool) -> JobOutcome:
        gated = self.depth > 1
        with tempfile.TemporaryDirectory(prefix="kc_log_") as logdir:
            job = replace(job, task_root=self._task_root(digest, packed), device=self.device, gpu_slot=gated,
                          log_path=str(Path(logdir) / "worker.log"))
            return run_job(job, build_s, workload_s, spare_next=spare_next, slot=self.slot if gated else None,
                           keep=spares_for(self.device, self.depth))


def _lost_errors(ray) -> tuple[type, ...]:
    """The exceptions by which Ray says the actor (its process or its node) is gone."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
             "OwnerDiedError", "ObjectLostError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


class RayExecutor(Executor):
    kind = "ray"

    def __init__(self, address: str | None, device: str, workers: int | None = None, overlap: bool = True):
        try:
            import ray
        except ImportError:
            raise InputError(Problem("--executor", "", "ray is not installed here",
                                     "pip install 'kernelcraft[ray]' (or pip install ray)")) from None
        self.ray = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            # The driver's kernelcraft goes to every node: a node with another version installed
            # would speak another worker protocol.
            env = {"py_modules": [str(Path(kernelcraft.__file__).parent)], "excludes": ["__pycache__"]}
            extra = {} if address or os.environ.get("RAY_ADDRESS") else {"include_dashboard": False}
            ray.init(address=address, runtime_env=env, log_to_driver=False, logging_level="WARNING", **extra)
        self.address = address or os.environ.get("RAY_ADDRESS") or "local"
        resources = ray.cluster_resources()
        on_gpu = device.startswith("cuda")
        if device not in ("cpu", "cuda"):
            raise InputError(Problem("--device", "", f"{device} names one GPU of this machine; on a Ray cluster "
                                     "every GPU is used", "use --device cuda (--workers N to use at most N)"))
        if on_gpu:
            n = int(resources.get("GPU", 0))
            if n == 0:
                raise InputError(Problem("--executor", "", f"the Ray cluster at {self.address} has no GPU",
                                         "add GPU nodes, or use --device cpu"))
            opts = {"num_gpus": 1, "num_cpus": 0}
        else:
            n = int(resources.get("CPU", 1)) or 1
            opts = {"num_cpus": 1}
        if workers:
            n = min(n, workers) if on_gpu else workers
        depth = GPU_DEPTH if on_gpu and overlap else 1
        remote = ray.remote(LaneActor).options(max_concurrency=depth, max_restarts=0,
                                               scheduling_strategy="SPREAD", **opts)
        self.actors = [remote.remote("cuda:0" if on_gpu else "cpu", depth) for _ in range(n)]
        try:
            places = ray.get([a.where.remote() for a in self.actors], timeout=ACTOR_START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise InputError(Problem("--executor", "", f"{n} worker actor(s) were not all placed within "
                                     f"{ACTOR_START_TIMEOUT_S} s on the Ray cluster at {self.address}",
                                     "check `ray status` for free resources, or lower --workers")) from None
        self.labels = [f"ray:{p['node'][:8]}/" + (f"gpu{p['gpus']}" if on_gpu else f"cpu#{i}")
                       for i, p in enumerate(places)]
        self.nodes = [p["node"] for p in places]
        self.depth = [depth] * n
        self._busy = [0] * n
        self._alive = [True] * n
        self._queue: collections.deque = collections.deque()  # (key, job, build_s, workload_s, retried)
        self._inflight: dict = {}  # ObjectRef -> (actor index, queued item)
        self._events: collections.deque = collections.deque()
        self._packed: dict[str, tuple[str, object]] = {}  # task root -> (digest, ObjectRef of the zip)

    def capacity(self) -> int:
        return sum(d for d, a in zip(self.depth, self._alive, strict=True) if a)

    def describe(self) -> dict:
        return {"kind": self.kind, "address": self.address, "workers": list(self.labels),
                "jobs_per_worker": self.depth[0] if self.depth else 0}

    def submit(self, key: object, job: Job, build_timeout_s: float, workload_timeout_s: float) -> None:
        self._queue.append((key, job, build_timeout_s, workload_timeout_s, []))

    def _task(self, root: str) -> tuple[str, object]:
        if root not in self._packed:
            digest, data = pack_task(Path(root))
            self._packed[root] = (digest, self.ray.put(data))
        return self._packed[root]

    def _dispatch(self) -> None:
        while self._queue:
            i = pick_lane(self._busy, self.depth, self._alive)
            if i is None:
                return
            item = self._queue.popleft()
            key, job, build_s, workload_s, _ = item
            digest, ref = self._task(job.task_root)
            spare = self.expect_more if self.expect_more is not None else bool(self._queue)
            out = self.actors[i].run.remote(job, digest, ref, build_s, workload_s, spare)
            self._busy[i] += 1
            self._inflight[out] = (i, item)
            self._events.append(Started(key, self.labels[i]))

    def next_event(self) -> Started | Done:
        while True:
            if self._events:
                return self._events.popleft()
            self._dispatch()
            if self._events:
                continue
            if not self._inflight:
                if not self._queue:
                    raise RuntimeError("next_event() with no job outstanding")
                key, _, _, _, retried = self._queue.popleft()  # no live actor left to take it
                return Done(key, JobOutcome(died_status="RUNTIME_ERROR", died="no Ray worker is left alive: "
                                            + "; ".join(retried)), "", len(retried) + 1, retried)
            ready, _ = self.ray.wait(list(self._inflight), num_returns=1)
            i, item = self._inflight.pop(ready[0])
            key, job, build_s, workload_s, retried = item
            self._busy[i] -= 1
            try:
                outcome = self.ray.get(ready[0])
            except _lost_errors(self.ray) as e:
                self._alive[i] = False  # it takes no more work; its other in-flight jobs fail the same way
                first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
                why = f"{self.labels[i]} was lost ({type(e).__name__}: {first})"
                if len(retried) + 1 < MAX_ATTEMPTS:
                    self._queue.appendleft((key, job, build_s, workload_s, [*retried, why]))
                    continue
                outcome = JobOutcome(died_status="RUNTIME_ERROR",
                                     died=f"its worker was lost {MAX_ATTEMPTS} times: " + "; ".join([*retried, why]))
            except self.ray.exceptions.RayTaskError:
                outcome = harness_failure(f"running the job in {self.labels[i]}")
            return Done(key, outcome, self.labels[i], len(retried) + 1, list(retried))

    def close(self) -> None:
        for a in getattr(self, "actors", []):
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001, S110 - an actor whose node died is already gone
                pass
        self.actors = []
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
