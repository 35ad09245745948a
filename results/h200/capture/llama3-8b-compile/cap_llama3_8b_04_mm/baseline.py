"""Baseline (the model as it runs today) for cap_llama3_8b_04_mm: region extern_kernels.mm of llama3-8b, captured by kernelcraft capture (post-grad Inductor graph).

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
    v0 = torch.ops.aten.permute.default(x0, [0, 2, 1, 3])  # permute_7
    v1 = torch.ops.aten.reshape.default(v0, [1, (num_tokens), -1])  # view_15
    v2 = torch.ops.aten.reshape.default(v1, [(num_tokens), 4096])  # view_16
    v3 = torch.ops.aten.permute.default(x1, [1, 0])  # permute_8
    v4 = torch.ops.aten.mm.default(v2, v3)  # mm_3
    return v4
