"""Baseline for rmsnorm_bf16_h4096: PyTorch's fused RMSNorm.

`torch.nn.functional.rms_norm` (PyTorch >= 2.4) on CUDA runs one fused
kernel that accumulates in float32 and writes bfloat16; it is the best
implementation available with plain PyTorch on the H200 (no FlashInfer or
vLLM installed there). The production SOTA is FlashInfer's
`flashinfer.norm.rmsnorm` / vLLM's `rms_norm` CUDA kernel, which need those
packages. Provenance: PyTorch (BSD-3-Clause), torch 2.11 on the target.
"""
import torch


def run(hidden_states, weight, eps):
    return torch.nn.functional.rms_norm(
        hidden_states, (hidden_states.shape[-1],), weight, eps
    )
