"""FlashInfer's LayerNorm: ``flashinfer.norm.layernorm(input, gemma, beta, eps)``.

Biased variance, ``eps`` inside the rsqrt, ``gemma`` (scale) then ``beta`` (shift): the contract,
for a bfloat16 input. FlashInfer documents ``gemma`` and ``beta`` as float32, so ``prepare``
(untimed, once per workload) widens the bfloat16 weight and bias to float32 (exact), as a
deployment keeping norm parameters in float32 would store them. With nvidia-cutlass-dsl importable
FlashInfer 0.6 runs its CuTe DSL kernel (``layernorm_cute``), else its JIT-built CUDA one.
"""
import torch

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_layernorm = None


def _lib():
    global _layernorm
    if _layernorm is None:
        from flashinfer.norm import layernorm

        _layernorm = layernorm
    return _layernorm


def prepare(x, weight, bias, eps):
    _lib()
    return x, weight.to(torch.float32), bias.to(torch.float32), eps


def run(x, weight, bias, eps):
    return _lib()(x, weight, bias, eps)
