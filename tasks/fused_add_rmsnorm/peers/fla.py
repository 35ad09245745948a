"""flash-linear-attention's fused norm forward with a residual: ``fla.modules.norm.layernorm.layer_norm_fwd``.

``layer_norm_fwd(x, weight, None, eps, residual=residual, is_rms_norm=True)`` adds the residual in
float32, stores the sum in the residual's dtype and normalizes the float32 sum (the contract's
math); the prenorm path of ``fla.modules.RMSNorm(..., residual=...)``. It returns
``(y, mean, rstd, residual_out)``: ``y`` and ``residual_out`` are the contract's ``(output,
residual_out)``. Inputs are not modified. Row kernel autotuned over num_warps on first use.
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


def run(hidden_states, residual, weight, eps):
    y, _, _, residual_out = _lib()(hidden_states, weight, None, eps, residual=residual, is_rms_norm=True)
    return y, residual_out
