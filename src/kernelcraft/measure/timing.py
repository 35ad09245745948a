"""The one timer. Its version is named in every result; change the method, bump the version.

``kc-timing/1``. Functions of the same inputs (candidate, baseline, reference) are timed A/B
interleaved: every repetition runs each function once, the order rotated every repetition so
neither side always runs first.

- CUDA, per call: ``synchronize -> overwrite a buffer of 2 x L2 (evicts the L2) -> record start ->
  fn() -> record end``. The start event is enqueued behind the flush kernel, so the host's launch
  of ``fn`` overlaps the flush, and the events bracket the device time of ``fn`` rather than the
  host's enqueue, as long as launching ``fn`` takes less host time than the flush takes device
  time (about 30 us for 120 MB on an H200).
- CPU: a wall clock (``time.perf_counter``) around each call, no flush. Labelled ``cpu-wall``;
  never mixed with GPU results.

Stopping rule: at least ``min_reps`` repetitions, then stop once every function has accumulated
``budget_ms`` of measured time, or the loop has used ``WALL_FACTOR x budget_ms`` of wall time per
function (short kernels spend most of a repetition in the host loop and the flush), or
``max_reps`` is reached. Reported: the median, the 25th/75th percentiles, the minimum, the count.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

TIMING_VERSION = "kc-timing/1"
WALL_FACTOR = 3.0


@dataclass
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    reps: int
    method: str  # "cuda-events+l2flush" or "cpu-wall"

    def to_dict(self) -> dict:
        return asdict(self)


def _summary(samples: list[float], method: str) -> Timing:
    s = sorted(samples)
    q = statistics.quantiles(s, n=4) if len(s) >= 2 else [s[0], s[0], s[0]]
    return Timing(statistics.median(s), q[0], q[2], s[0], len(s), method)


class _CudaClock:
    method = "cuda-events+l2flush"

    def __init__(self, device: str):
        import torch

        self.torch, self.device = torch, device
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.flush = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device=device)
        self.pending: list[tuple[str, object, object]] = []

    def run(self, name: str, fn: Callable[[], object], rep: int) -> None:
        torch = self.torch
        torch.cuda.synchronize(self.device)
        self.flush.fill_(rep)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        self.pending.append((name, start, end))

    def collect(self) -> list[tuple[str, float]]:
        self.torch.cuda.synchronize(self.device)
        done = [(n, s.elapsed_time(e)) for n, s, e in self.pending]
        self.pending = []
        return done


class _CpuClock:
    method = "cpu-wall"

    def __init__(self) -> None:
        self.pending: list[tuple[str, float]] = []

    def run(self, name: str, fn: Callable[[], object], rep: int) -> None:
        t0 = time.perf_counter()
        fn()
        self.pending.append((name, (time.perf_counter() - t0) * 1e3))

    def collect(self) -> list[tuple[str, float]]:
        done, self.pending = self.pending, []
        return done


def time_interleaved(fns: dict[str, Callable[[], object]], device: str, budget_ms: float = 500.0,
                     min_reps: int = 10, max_reps: int = 1000, warmup: int = 3) -> dict[str, Timing]:
    """Time several functions of the same inputs, interleaved repetition by repetition."""
    names = list(fns)
    for _ in range(warmup):
        for n in names:
            fns[n]()
    clock = _CudaClock(device) if device.startswith("cuda") else _CpuClock()
    samples: dict[str, list[float]] = {n: [] for n in names}
    wall_limit = time.perf_counter() + WALL_FACTOR * budget_ms * len(names) / 1e3
    rep = 0
    while rep < max_reps:
        k = rep % len(names)
        for n in names[k:] + names[:k]:
            clock.run(n, fns[n], rep)
        for n, ms in clock.collect():
            samples[n].append(ms)
        rep += 1
        if rep >= min_reps and (
            all(sum(samples[n]) >= budget_ms for n in names) or time.perf_counter() > wall_limit
        ):
            break
    return {n: _summary(samples[n], clock.method) for n in names}
