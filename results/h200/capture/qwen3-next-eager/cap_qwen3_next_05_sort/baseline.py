"""Baseline (the model as it runs today) for cap_qwen3_next_05_sort: region aten.sort of qwen3-next, captured by kernelcraft capture (eager aten graph).

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

    num_tokens = x0.shape[0]
    num_tokens_x10 = 10 * num_tokens
    v0 = torch.ops.aten.view.default(x0, [-1])  # view_138
    v1 = torch.ops.aten.sort.default(v0)  # sort
    v2 = operator.getitem(v1, 0)  # getitem_11
    v3 = operator.getitem(v1, 1)  # getitem_12
    return v2, v3
