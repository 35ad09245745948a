"""Baseline (the model as it runs today) for cap_qwen3_next_01_grouped_mm: region aten._grouped_mm of qwen3-next, captured by kernelcraft capture (eager aten graph).

The same aten ops as the captured graph, generated from it.
"""
import operator

import torch


def run(x0, x1, x2):
    # these ops do not run in float64 (seen at capture): float64 inputs run in the captured dtypes
    x0 = x0.to(torch.bfloat16) if x0.dtype == torch.float64 else x0
    x1 = x1.to(torch.bfloat16) if x1.dtype == torch.float64 else x1
    _hi = False
    _dev = x0.device

    def _fl(d):
        return torch.float64 if _hi and d.is_floating_point else d

    n0 = x1.shape[0]
    v0 = torch.ops.aten.transpose.int(x0, -2, -1)  # transpose_20
    v1 = torch.ops.aten._grouped_mm.default(x1, v0, x2)  # _grouped_mm
    return v1
