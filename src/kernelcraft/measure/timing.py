"""The one timer. Its version is named in every result; change the method, bump the version.

``kc-timing/1``, CUDA: every repetition runs, for each function in turn (A/B interleaved, the order
rotated every repetition so neither side always runs right after the flush):
``synchronize -> write a buffer of 2 x L2 (evicts the L2) -> record start -> fn() -> record end``.
The start event is recorded on the stream behind the flush kernel, so the host's launch of ``fn``
overlaps the flush and the events bracket the device time of ``fn`` itself, not the host enqueue,
as long as launching ``fn`` takes less host time than the flush takes device time (about 30 us
for 120 MB on an H200). Repetitions continue until each function has used ``budget_ms`` of
measured time or reached ``max_reps``, and at least ``min_reps``. The median is reported, with the
25th/75th percentiles and the repetition count.

CPU: the same loop with a wall clock (``time.perf_counter``) and no flush; results are labelled
``cpu-wall`` and never mixed with GPU results.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

TIMING_VERSION = "kc-timing/1"
_WALL_FACTOR = 4  # wall time allowed per function, in multiples of its measured-time budget


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


def time_interleaved(fns: dict[str, Callable[[], object]], device: str, budget_ms: float = 500.0,
                     min_reps: int = 10, max_reps: int = 1000, warmup: int = 3) -> dict[str, Timing]:
    """Time several functions of the same inputs, interleaved repetition by repetition."""
    names = list(fns)
    for _ in range(warmup):
        for n in names:
            fns[n]()
    if device.startswith("cuda"):
        return _time_cuda(fns, names, device, budget_ms, min_reps, max_reps)
    return _time_cpu(fns, names, budget_ms, min_reps, max_reps)


def _time_cuda(fns, names, device, budget_ms, min_reps, max_reps) -> dict[str, Timing]:
    import torch

    torch.cuda.synchronize(device)
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    flush = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device=device)
    samples: dict[str, list[float]] = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    rep = 0
    wall_limit = time.perf_counter() + _WALL_FACTOR * budget_ms * len(names) / 1e3
    while rep < max_reps:
        order = names[rep % len(names):] + names[: rep % len(names)]
        events = []
        for n in order:
            torch.cuda.synchronize(device)
            flush.fill_(rep)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fns[n]()
            end.record()
            events.append((n, start, end))
        torch.cuda.synchronize(device)
        for n, start, end in events:
            ms = start.elapsed_time(end)
            samples[n].append(ms)
            spent[n] += ms
        rep += 1
        if rep >= min_reps and all(spent[n] >= budget_ms for n in names):
            break
        # A short kernel spends most of each repetition in the host loop and the flush, not in
        # its own time: bound the wall time as well.
        if rep >= min_reps and time.perf_counter() > wall_limit:
            break
    return {n: _summary(samples[n], "cuda-events+l2flush") for n in names}


def _time_cpu(fns, names, budget_ms, min_reps, max_reps) -> dict[str, Timing]:
    samples: dict[str, list[float]] = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    rep = 0
    while rep < max_reps:
        order = names[rep % len(names):] + names[: rep % len(names)]
        for n in order:
            t0 = time.perf_counter()
            fns[n]()
            ms = (time.perf_counter() - t0) * 1e3
            samples[n].append(ms)
            spent[n] += ms
        rep += 1
        if rep >= min_reps and all(spent[n] >= budget_ms for n in names):
            break
    return {n: _summary(samples[n], "cpu-wall") for n in names}
