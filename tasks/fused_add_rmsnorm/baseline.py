"""Baseline for fused_add_rmsnorm_bf16: the residual add, then PyTorch's fused RMSNorm.

This is what Hugging Face transformers' Llama / Qwen3 decoder layers run in eager mode
(`hidden_states = residual + hidden_states`, then the next RMSNorm), with the norm done by
`torch.nn.functional.rms_norm` (PyTorch >= 2.4), the fastest RMSNorm plain PyTorch has on the H200:
two kernels, the sum written to memory in bfloat16 and read back (5 tensor passes instead of the
fused kernel's 4). The production SOTA is vLLM's `fused_add_rms_norm` / FlashInfer's
`fused_add_rmsnorm` CUDA kernels, which need those packages. Provenance: PyTorch (BSD-3-Clause),
torch 2.11 on the target.
"""
import torch


def run(hidden_states, residual, weight, eps):
    residual_out = hidden_states + residual
    output = torch.nn.functional.rms_norm(residual_out, (residual_out.shape[-1],), weight, eps)
    return output, residual_out
