"""Baseline for gelu_tanh_mul_bf16: eager PyTorch GeGLU activation.

`F.gelu(x[:, :I], approximate="tanh") * x[:, I:]` is vLLM's `GeluAndMul(approximate="tanh")
.forward_native`, the PyTorch fallback of its fused `gelu_tanh_and_mul` CUDA kernel, and what
Hugging Face's Gemma MLP computes (`act_fn(gate_proj(x)) * up_proj(x)`, act_fn gelu_pytorch_tanh):
two elementwise kernels with a bfloat16 intermediate. Best plain-PyTorch option on the H200 (no
vLLM / FlashInfer there). Provenance: PyTorch (BSD-3-Clause), torch 2.11 on the target; vLLM
(Apache-2.0) `vllm/model_executor/layers/activation.py`.
"""
import torch.nn.functional as F


def run(x):
    d = x.shape[-1] // 2
    return F.gelu(x[:, :d], approximate="tanh") * x[:, d:]
