"""flash-linear-attention's fused norm forward: ``fla.modules.norm.layernorm.layer_norm_fwd(x, weight, bias, eps)``.

The Triton forward behind ``fla.modules.LayerNorm``: float32 mean and biased variance, weight and
bias applied in float32, one rounding (the contract's math). Returns ``(y, mean, rstd,
residual_out)``; ``y`` is the output (the float32 mean and rstd it stores are part of the
library's cost). Row kernel autotuned over num_warps on first use (fla-core distribution).
"""

PEER = {
    "name": "fla",
    "library": "fla-core",
    "modules": ["fla", "triton"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install fla-core",
}

_forward = None


def _lib():
    global _forward
    if _forward is None:
        from fla.modules.norm.layernorm import layer_norm_fwd

        _forward = layer_norm_fwd
    return _forward


def run(x, weight, bias, eps):
    return _lib()(x, weight, bias, eps)[0]
