"""Baseline (the model as it runs today) for cap_qwen3_next_05_topk: region torch.ops.aten.topk.default of qwen3-next, captured by kernelcraft capture (post-grad Inductor graph).

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
    v0 = torch.ops.aten.topk.default(x0, 10)  # topk
    v1 = operator.getitem(v0, 0)  # getitem_9
    v2 = operator.getitem(v0, 1)  # getitem_10
    return v1, v2
