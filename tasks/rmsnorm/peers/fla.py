"""flash-linear-attention's fused norm forward in RMS mode: ``fla.modules.norm.layernorm.layer_norm_fwd``.

The Triton forward behind ``fla.modules.RMSNorm`` (``rms_norm`` -> ``LayerNormFunction``), called
directly with ``is_rms_norm=True`` and no bias: float32 row statistics and weight multiply, one
rounding to the output dtype (the contract's math). It returns ``(y, mean, rstd, residual_out)``;
only ``y`` is the contract's output (the float32 rstd it stores is part of the library's cost).
For hidden sizes above 512 fla runs its one-row-per-program kernel, autotuned over num_warps on
the first call (ships in the fla-core distribution; flash-linear-attention adds layers/models).
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


def run(hidden_states, weight, eps):
    return _lib()(hidden_states, weight, None, eps, is_rms_norm=True)[0]
