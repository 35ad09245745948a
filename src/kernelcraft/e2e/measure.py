"""The regions' share of a step (torch.profiler) and the Amdahl prediction from it.

Share: the stock model in the layout the kernels need (``regions.patch`` with stock regions: the same
ops as the unpatched model, bit for bit) runs with a ``record_function("kc::<kind>")`` range around
every region and ``kc::model`` around the step. On CUDA a kind's share is the device time of the kernels
launched under its ranges over those under ``kc::model`` (``FunctionEvent.device_time_total`` sums an
event's and its children's kernels); on the CPU the same ratio of CPU time.

Prediction: a region kind taking share ``f_k`` of the step and run ``s_k`` times faster by its kernel
(timed alone on the model's own shape) should make the step ``1 / ((1 - sum f_k) + sum f_k / s_k)``
times faster, when nothing else changes.

The profiler's per-op cost inflates a model made of many small ops (a tiny model on the CPU, AGENTS.md),
so ``run.py`` also records the share estimated from timings alone (calls x isolated time / step time).
"""

from __future__ import annotations

import torch

from kernelcraft.e2e.regions import RANGE, annotated

MODEL = "kc::model"


def amdahl(shares: dict[str, float], speedups: dict[str, float]) -> float:
    """``1 / ((1 - sum f) + sum f / s)`` over the kinds in ``shares``."""
    total = sum(shares.values())
    if not 0 <= total <= 1 + 1e-9:
        raise ValueError(f"shares sum to {total}, outside [0, 1]: {shares}")
    return 1.0 / ((1.0 - total) + sum(f / speedups[k] for k, f in shares.items()))


def region_shares(model: torch.nn.Module, step, device: str, iters: int = 5) -> dict:
    """Profile ``iters`` calls of ``step`` (after one warm-up) of the stock-region ``model``; per kind its
    ms per step, calls per step and share."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with annotated(model) as rs, torch.no_grad():
        kinds = sorted({r.kind for r in rs})
        step()
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=acts) as prof:
            for _ in range(iters):
                with record_function(MODEL):
                    step()
            if cuda:
                torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    models = [e for e in events if e.name == MODEL]
    use_device = cuda and sum(e.device_time_total for e in models) > 0
    basis = "device time of the kernels under each range" if use_device else "CPU time inside each range"

    def ms(evs):
        return sum((e.device_time_total if use_device else e.cpu_time_total) for e in evs) / iters / 1e3

    model_ms = ms(models)
    out: dict = {"iters": iters, "basis": basis, "model_ms": model_ms, "kinds": {}}
    if cuda and not use_device:
        out["note"] = "the profiler attached no device time to the ranges; the CPU share stands in"
    for k in kinds:
        evs = [e for e in events if e.name == RANGE.format(k)]
        out["kinds"][k] = {"ms": ms(evs), "calls_per_step": len(evs) / iters,
                           "share": ms(evs) / model_ms if model_ms else None}
    return out
