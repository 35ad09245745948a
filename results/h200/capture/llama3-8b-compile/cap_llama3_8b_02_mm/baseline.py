"""Baseline (the model as it runs today) for cap_llama3_8b_02_mm: region extern_kernels.mm of llama3-8b, captured by kernelcraft capture (post-grad Inductor graph).

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
    v0 = torch.ops.aten.reshape.default(x0, [(num_tokens), 4096])  # view_18
    v1 = torch.ops.aten.permute.default(x1, [1, 0])  # permute_9
    v2 = torch.ops.aten.mm.default(v0, v1)  # mm_4
    return v2
