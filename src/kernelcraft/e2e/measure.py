"""The op's share of the model's time (torch.profiler) and the Amdahl prediction from it.

Share: every RMSNorm module's forward runs inside ``record_function("kc::op")`` and every model
forward inside ``record_function("kc::model")``; on CUDA the share is the device time of the kernels
launched under ``kc::op`` over those launched under ``kc::model`` (``FunctionEvent.device_time_total``
sums the kernels of an event and its children), on the CPU the same ratio of CPU time. Prediction:
the op alone runs ``s`` times faster (timed in isolation on the model's own activation shape), so
the model should run ``1 / ((1 - f) + f / s)`` times faster, when nothing but the op changes.

The profiler's own cost per recorded op inflates the time of a model made of many small ops (a
tiny model on the CPU); ``run.py`` therefore also records the share estimated from timings alone.
"""

from __future__ import annotations

import contextlib
import functools

import torch

OP, MODEL = "kc::op", "kc::model"


def amdahl(share: float, op_speedup: float) -> float:
    return 1.0 / ((1.0 - share) + share / op_speedup)


@contextlib.contextmanager
def _annotated(modules: list[torch.nn.Module]):
    from torch.profiler import record_function

    def wrapped(fwd, *args, **kwargs):
        with record_function(OP):
            return fwd(*args, **kwargs)

    for m in modules:
        m.forward = functools.partial(wrapped, m.forward)  # an instance attribute shadows the class's
    try:
        yield
    finally:
        for m in modules:
            del m.forward


def op_share(model: torch.nn.Module, modules: list[torch.nn.Module], forward, device: str, iters: int = 5) -> dict:
    """Profile ``iters`` forwards of ``model`` (after one warm-up) and return the op's share."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with _annotated(modules):
        forward()
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=acts) as prof:
            for _ in range(iters):
                with record_function(MODEL):
                    forward()
            if cuda:
                torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    ops = [e for e in events if e.name == OP]
    models = [e for e in events if e.name == MODEL]
    out = {"iters": iters, "op_calls_per_forward": len(ops) / iters,
           "cpu_op_ms": sum(e.cpu_time_total for e in ops) / iters / 1e3,
           "cpu_model_ms": sum(e.cpu_time_total for e in models) / iters / 1e3}
    out["cpu_share"] = out["cpu_op_ms"] / out["cpu_model_ms"] if out["cpu_model_ms"] else None
    if cuda:
        out["device_op_ms"] = sum(e.device_time_total for e in ops) / iters / 1e3
        out["device_model_ms"] = sum(e.device_time_total for e in models) / iters / 1e3
        out["device_share"] = out["device_op_ms"] / out["device_model_ms"] if out["device_model_ms"] else None
    if cuda and out.get("device_share"):
        out["share"], out["basis"] = out["device_share"], "device time of the kernels under each range"
    else:
        out["share"], out["basis"] = out["cpu_share"], "CPU time inside each range"
        if cuda:
            out["note"] = "the profiler attached no device time to the ranges; the CPU share stands in"
    return out
