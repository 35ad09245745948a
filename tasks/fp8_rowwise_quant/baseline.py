"""Baseline for fp8_rowwise_quant_bf16_e4m3: eager PyTorch per-token FP8 quantization.

The float32 steps of vLLM's native per-token path (`QuantFP8.forward_native` for dynamic per-token
scales): amax of |x| per row, scale = max(amax / 448, 1 / (448 * 512)), x / scale clamped to +-448,
cast to float8_e4m3fn: a chain of elementwise kernels and a row reduction with float32
intermediates of the whole matrix; plain PyTorch has no fused row-wise FP8 quantization op. Provenance: PyTorch (BSD-3-Clause), torch 2.11
on the target; vLLM (Apache-2.0) `csrc/quantization/fp8/common.cu` for the floor.
"""
import torch

FP8_MAX = 448.0
MIN_SCALE = 1.0 / (FP8_MAX * 512.0)


def run(x):
    xf = x.float()
    scale = (xf.abs().amax(dim=-1) / FP8_MAX).clamp_min(MIN_SCALE)
    q = (xf / scale[:, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale
