"""Executors: where a batch of jobs runs. The one process that records results submits jobs and
reads back events (:class:`Started`, :class:`Done`); no worker ever writes a record.

A *lane* is one device's share of the pool. On a GPU a lane runs three jobs at once: while one is
timed, holding its device's GPU slot alone, the others build (import, nvcc, torch extension: CPU
work) or run their correctness checks, which may share the GPU with each other but never with a
timing (:class:`kernelcraft.worker.pool.GpuSlot`); a check gives the GPU up while Triton compiles
one of its kernels. So compilation and checks overlap timing, and a candidate is never timed while
another's GPU work runs. A CPU lane runs one job at a time.

Dispatch: a queued job goes to the idle lane first (lowest index among the least busy), and a GPU
lane takes its second job only when no lane is idle, so no device waits while work is queued.

- :class:`LocalExecutor`: every visible GPU of this machine (``CUDA_VISIBLE_DEVICES`` respected,
  ``devices`` to choose), each worker process shown only its own GPU; or N CPU workers.
- :class:`kernelcraft.worker.ray_executor.RayExecutor`: the same lanes as Ray actors on a cluster.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import os
import queue
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kernelcraft.errors import InputError, Problem
from kernelcraft.worker.child import Job
from kernelcraft.worker.pool import GpuSlot, JobOutcome, run_job

GPU_DEPTH = 3  # jobs per GPU lane: one timed alone, the others building or checking
GPU_SPARES_PER_JOB = 2  # warm spares per job slot of a GPU lane: spawned cold (no template), a spare
# takes ~10 s to import torch and the gauntlet (H200 machine), a lane takes a worker every ~3 s
MAX_ATTEMPTS = 3  # a job whose worker's node died is run again, at most this many times in all


@dataclass
class Started:
    key: object  # what the caller submitted the job under
    worker: str  # the lane's label


@dataclass
class Done:
    key: object
    outcome: JobOutcome
    worker: str
    attempts: int = 1
    retried: list[str] = field(default_factory=list)  # why each earlier attempt was lost


@dataclass
class Lane:
    label: str  # the record's name for it: "cuda:1", "cpu#0"
    device: str  # the device as its worker processes see it
    visible: str | None  # CUDA_VISIBLE_DEVICES of its processes (one GPU); None: inherited
    depth: int  # jobs at once
    slot: GpuSlot = field(default_factory=GpuSlot)  # the GPU: checks share it, a timing holds it alone


def spares_for(device: str, depth: int) -> int:
    """Warm spares a lane of ``depth`` jobs keeps for its device: two per job on a GPU, one on a CPU."""
    return depth * (GPU_SPARES_PER_JOB if device.startswith("cuda") else 1)


def default_cpu_workers() -> int:
    """One: on a CPU task the CPU is also what is timed, and workers running side by side would
    disturb each other's timings. More (``--workers N``) suit correctness sweeps."""
    return 1


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (indices when unset)."""
    import torch

    n = torch.cuda.device_count()
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return [str(i) for i in range(n)]
    return [x.strip() for x in env.split(",") if x.strip()][:n]


def gpu_lanes(device: str, devices: list[int] | None, overlap: bool = True, depth: int = GPU_DEPTH) -> list[Lane]:
    """One lane per chosen GPU: ``cuda`` is every visible GPU (or ``devices``, indices among the
    visible ones), ``cuda:N`` only visible GPU N; ``depth`` jobs at once per lane (1 without ``overlap``)."""
    gpus = visible_gpus()
    if device != "cuda":
        index = int(device.split(":", 1)[1])
        if devices and devices != [index]:
            raise InputError(Problem("--devices", "", f"--device {device} names one GPU already",
                                     "use --device cuda with --devices"))
        devices = [index]
    chosen = devices if devices else list(range(len(gpus)))
    bad = [i for i in chosen if not 0 <= i < len(gpus)]
    if bad or len(set(chosen)) != len(chosen):
        raise InputError(Problem("--devices", "", f"{chosen} is not a list of distinct visible GPUs "
                                 f"(this process sees {len(gpus)}: indices 0..{len(gpus) - 1})",
                                 "pick among the visible GPUs; CUDA_VISIBLE_DEVICES narrows them"))
    return [Lane(label=f"cuda:{i}", device="cuda:0", visible=gpus[i], depth=depth if overlap else 1)
            for i in chosen]


def cpu_lanes(workers: int | None) -> list[Lane]:
    n = workers or default_cpu_workers()
    return [Lane(label=f"cpu#{i}", device="cpu", visible=None, depth=1) for i in range(n)]


def pick_lane(busy: list[int], depth: list[int], alive: list[bool]) -> int | None:
    """The lane the next job goes to: the least busy live lane with room, lowest index first."""
    free = [i for i in range(len(busy)) if alive[i] and busy[i] < depth[i]]
    return min(free, key=lambda i: (busy[i], i)) if free else None


def harness_failure(where: str) -> JobOutcome:
    return JobOutcome(died_status="RUNTIME_ERROR",
                      died=f"harness error while {where} (not the candidate's verdict):\n{traceback.format_exc()[-3000:]}")


class Executor:
    """What evaluate() and optimize() need: submit jobs, read events, close. ``expect_more``: more
    jobs will be submitted later (the design loop), so each lane keeps a warm spare."""

    kind = "executor"
    expect_more: bool | None = None
    # on_phase(key, gate, uuid): a job's worker announced a phase (progress display; executors that
    # cannot see their workers' phases, Ray's, never call it)
    on_phase: Callable[[object, str, str | None], None] | None = None

    def submit(self, key: object, job: Job, build_timeout_s: float, workload_timeout_s: float) -> None:
        raise NotImplementedError

    def next_event(self) -> Started | Done:
        """The next event; blocks until there is one (only call it with jobs outstanding)."""
        raise NotImplementedError

    def capacity(self) -> int:
        """Jobs that can be in flight at once: how many to keep submitted to stay busy."""
        raise NotImplementedError

    def describe(self) -> dict:
        raise NotImplementedError

    def prestart(self, timeout_s: float = 120.0) -> float:
        """Start the workers ahead of the first job where the executor can; the seconds it took."""
        return 0.0

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(Executor):
    """Lanes of this machine, each run by ``depth`` threads of this process that drive worker
    processes (:func:`kernelcraft.worker.pool.run_job`)."""

    kind = "local"

    def __init__(self, lanes: list[Lane]):
        if not lanes:
            raise InputError(Problem("--devices", "", "no device to run on", "check --device and --devices"))
        self.lanes = lanes
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._inbox: list[collections.deque] = [collections.deque() for _ in lanes]
        self._busy = [0] * len(lanes)
        self._closed = False
        self._events: queue.Queue = queue.Queue()
        # spares per (device, visible GPU), summed over the lanes that share those processes
        self._keep: dict[tuple[str, str | None], int] = collections.Counter()
        for lane in lanes:
            self._keep[(lane.device, lane.visible)] += spares_for(lane.device, lane.depth)
        self._threads = [threading.Thread(target=self._runner, args=(i,), daemon=True, name=f"kc-{lane.label}")
                         for i, lane in enumerate(lanes) for _ in range(lane.depth)]
        for t in self._threads:
            t.start()

    def capacity(self) -> int:
        return sum(lane.depth for lane in self.lanes)

    def describe(self) -> dict:
        return {"kind": self.kind, "workers": [lane.label for lane in self.lanes],
                "jobs_per_worker": self.lanes[0].depth}

    def submit(self, key: object, job: Job, build_timeout_s: float, workload_timeout_s: float) -> None:
        with self._cond:
            self._queue.append((key, job, build_timeout_s, workload_timeout_s))
            self._dispatch()

    def _dispatch(self) -> None:  # under self._cond
        while self._queue:
            i = pick_lane(self._busy, [lane.depth for lane in self.lanes], [True] * len(self.lanes))
            if i is None:
                return
            self._busy[i] += 1
            self._inbox[i].append(self._queue.popleft())
            self._cond.notify_all()

    def _runner(self, i: int) -> None:
        lane = self.lanes[i]
        while True:
            with self._cond:
                while not self._inbox[i] and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                key, job, build_s, workload_s = self._inbox[i].popleft()
                more = bool(self._queue) or any(self._inbox)
            self._events.put(Started(key, lane.label))
            spare = self.expect_more if self.expect_more is not None else more
            gated = lane.depth > 1  # a second job in this lane: it must wait for the slot after its build
            try:
                outcome = run_job(replace(job, device=lane.device, gpu_slot=gated), build_s, workload_s,
                                  spare_next=spare, visible=lane.visible, slot=lane.slot if gated else None,
                                  keep=self._keep[(lane.device, lane.visible)],
                                  on_phase=functools.partial(self._phase, key) if self.on_phase else None)
            except Exception:  # noqa: BLE001 - a harness bug must become this job's verdict, not a hang
                outcome = harness_failure(f"running the job on {lane.label}")
            with self._cond:
                self._busy[i] -= 1
                self._dispatch()
            self._events.put(Done(key, outcome, lane.label))

    def _phase(self, key: object, gate: str, uuid: str | None) -> None:
        try:
            self.on_phase(key, gate, uuid)
        except Exception:  # noqa: BLE001, S110 - a progress display must never become a job's verdict
            pass

    def next_event(self) -> Started | Done:
        return self._events.get()

    def prestart(self, timeout_s: float = 120.0) -> float:
        """Start every lane's spares and wait until they have imported torch and the gauntlet: a
        pool that is already running, as in a design loop's later rounds. Returns the seconds."""
        from kernelcraft.worker.pool import prestart

        with concurrent.futures.ThreadPoolExecutor(len(self._keep)) as ex:
            return max(ex.map(lambda k: prestart(*k, keep=self._keep[k], timeout_s=timeout_s), self._keep))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()


def make_executor(spec: str, device: str, devices: list[int] | None = None, workers: int | None = None,
                  overlap: bool = True) -> Executor:
    """``local`` or ``ray[:ADDRESS]`` for ``device`` (cpu, cuda, cuda:N)."""
    kind, _, address = spec.partition(":")
    if kind == "local" and not address:
        lanes = cpu_lanes(workers) if device == "cpu" else gpu_lanes(device, devices, overlap)
        return LocalExecutor(lanes)
    if kind == "ray":
        from kernelcraft.worker.ray_executor import RayExecutor

        return RayExecutor(address or None, device, workers=workers, overlap=overlap)
    raise InputError(Problem("--executor", "", f"unknown executor {spec!r}", "use local, ray or ray:ADDRESS"))
