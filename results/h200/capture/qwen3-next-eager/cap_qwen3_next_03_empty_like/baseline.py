"""Baseline (the model as it runs today) for cap_qwen3_next_03_empty_like: region aten.empty_like of qwen3-next, captured by kernelcraft capture (eager aten graph).

The same aten ops as the captured graph, generated from it.
"""
import operator

import torch


def run(x0):
    # float64 inputs (the judge's reference run): every floating dtype the graph names follows
    _hi = any(t.dtype == torch.float64 for t in (x0,))
    _dev = x0.device

    def _fl(d):
        return torch.float64 if _hi and d.is_floating_point else d

    n0 = x0.shape[0]
    v0 = torch.ops.aten.empty_like.default(x0, pin_memory=False)  # empty_like
    return v0
