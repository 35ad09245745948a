"""Baseline for topk_bf16: torch.topk.

`torch.topk(logits, k, dim=-1)` on a bfloat16 CUDA tensor runs PyTorch's radix-select top-k
(aten/src/ATen/native/cuda/TensorTopK.cu; a multi-block select for long rows, then a sort of the k
selected), one call. Best-known plain-PyTorch implementation; PyTorch is BSD-3-Clause.
"""
import torch


def run(logits, k):
    return torch.topk(logits, k, dim=-1, largest=True, sorted=True)
