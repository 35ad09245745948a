"""Liger-Kernel's LayerNorm forward: ``liger_kernel.ops.layer_norm.layer_norm_forward(X, W, B, eps)``.

The function behind ``LigerLayerNorm`` (``LigerLayerNormFunction.forward``), called directly: one
row per program, float32 mean and biased variance, ``(x - mean) * rstd * w + b`` in float32 and
one rounding (the contract's math; the bfloat16 weight and bias are widened in the kernel).
Returns ``(Y, X, Mean, RSTD, BLOCK_SIZE, num_warps)``; ``Y`` is the output (the float32 Mean and
RSTD it stores, 8 bytes a row, are part of the library's cost).
"""

PEER = {
    "name": "liger",
    "library": "liger-kernel",
    "modules": ["liger_kernel", "triton"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install liger-kernel",
}

_forward = None


def _lib():
    global _forward
    if _forward is None:
        from liger_kernel.ops.layer_norm import layer_norm_forward

        _forward = layer_norm_forward
    return _forward


def run(x, weight, bias, eps):
    return _lib()(x, weight, bias, eps)[0]
