"""Baseline for silu_mul_bf16_i14336: eager PyTorch SwiGLU activation.

`F.silu(x[:, :I]) * x[:, I:]` is exactly vLLM's `SiluAndMul.forward_native`
(the PyTorch fallback of vLLM's fused `silu_and_mul` CUDA kernel): two
elementwise kernels (silu on the gate half, then the multiply), each
computing internally in float32 and rounding to bfloat16 in between. It is
the best that plain PyTorch offers on the H200 (no vLLM / FlashInfer there).
Provenance: PyTorch (BSD-3-Clause), torch 2.11 on the target; vLLM
(Apache-2.0) `vllm/model_executor/layers/activation.py`.
"""
import torch.nn.functional as F


def run(x):
    d = x.shape[-1] // 2
    return F.silu(x[:, :d]) * x[:, d:]
