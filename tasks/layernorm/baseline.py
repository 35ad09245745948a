"""Baseline for layernorm_bf16: PyTorch's fused LayerNorm.

`torch.nn.functional.layer_norm` (what `torch.nn.LayerNorm` calls in StarCoder2, GPT-NeoX, Falcon
and Phi-2 in Hugging Face transformers) runs one fused kernel on CUDA that accumulates mean and
variance in float32 and writes bfloat16: the best implementation plain PyTorch offers on the H200
(Apex's / FlashInfer's LayerNorm kernels are not installed there). Provenance: PyTorch
(BSD-3-Clause), torch 2.11 on the target.
"""
import torch


def run(x, weight, bias, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)
