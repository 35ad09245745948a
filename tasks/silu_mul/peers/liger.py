"""Liger-Kernel's SwiGLU over a fused gate-up tensor: ``liger_kernel.ops.swiglu.swiglu_fused_gate_up_forward(y)``.

The forward of ``LigerFusedGateUpSiLUMulFunction`` (Liger's Megatron path), called directly: it
reads the gate from columns ``[0, I)`` and up from ``[I, 2I)`` of each row of the one
``[tokens, 2I]`` buffer (no chunk copies), which is the contract's ``x = [gate | up]`` layout.
``silu`` is computed in float32, rounded to bfloat16, then multiplied by ``up`` in bfloat16 (two
roundings, as vLLM's kernel; inside the contract's rtol). Returns ``(y, c)``; ``c`` is the
output. Liger's two-tensor ``swiglu_forward(a, b)`` is not used: it indexes both inputs with the
output's row stride, so it needs contiguous halves (two copies).
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
        from liger_kernel.ops.swiglu import swiglu_fused_gate_up_forward

        _forward = swiglu_fused_gate_up_forward
    return _forward


def run(x):
    return _lib()(x)[1]
