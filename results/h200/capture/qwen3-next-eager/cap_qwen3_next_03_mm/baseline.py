"""Baseline (the model as it runs today) for cap_qwen3_next_03_mm: region aten.mm of qwen3-next, captured by kernelcraft capture (eager aten graph).

The same aten ops as the captured graph, generated from it.
"""
import operator

import torch


def run(x0, x1):
    # float64 inputs (the judge's reference run): every floating dtype the graph names follows
    _hi = any(t.dtype == torch.float64 for t in (x0, x1,))
    _dev = x0.device

    def _fl(d):
        return torch.float64 if _hi and d.is_floating_point else d

    num_tokens = x0.shape[1]
    v0 = torch.ops.aten.alias.default(x0)  # alias_9
    v1 = torch.ops.aten.t.default(x1)  # t_33
    v2 = torch.ops.aten.view.default(v0, [(num_tokens), 2048])  # view_432
    v3 = torch.ops.aten.mm.default(v2, v1)  # mm_33
    return v3
