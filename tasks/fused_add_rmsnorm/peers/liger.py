"""Liger-Kernel's fused add + RMSNorm forward: ``liger_kernel.ops.fused_add_rms_norm.fused_add_rms_norm_forward``.

The function behind ``LigerFusedAddRMSNorm`` (``LigerFusedAddRMSNormFunction.forward``), called
directly. ``fused_add_rms_norm_forward(X, R, W, eps, offset, casting_mode)`` returns
``(Y, S, RSTD, ...)`` with ``S = X + R`` (the updated residual) and ``Y = RMSNorm(S) * W``: the
contract's ``(output, residual_out)`` in that order, into new tensors (the inputs are not
modified). ``offset=0.0`` (no Gemma ``1 + w``), ``casting_mode="gemma"`` (float32 math, one
rounding; "llama" would round ``S * rstd`` before the weight multiply). Liger adds X and R in
bfloat16 and normalizes the rounded sum, as vLLM's kernel does; the contract's rtol allows it.
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
        from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward

        _forward = fused_add_rms_norm_forward
    return _forward


def run(hidden_states, residual, weight, eps):
    out = _lib()(hidden_states, residual, weight, eps, 0.0, "gemma")
    return out[0], out[1]
