"""Baseline (the model as it runs today) for cap_llama3_8b_04_mm: region aten.mm of llama3-8b, captured by kernelcraft capture (eager aten graph).

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

    num_tokens = x0.shape[2]
    v0 = torch.ops.aten.transpose.int(x0, 1, 2)  # transpose_4
    v1 = torch.ops.aten.view.default(v0, [1, (num_tokens), -1])  # view_9
    v2 = torch.ops.aten.t.default(x1)  # t_3
    v3 = torch.ops.aten.view.default(v1, [(num_tokens), 4096])  # view_10
    v4 = torch.ops.aten.mm.default(v3, v2)  # mm_3
    return v4
