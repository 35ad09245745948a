"""flash-linear-attention's SwiGLU forward: ``fla.modules.activations.swiglu_fwd(x, y)`` (Triton).

``swiglu_fwd(gate, up)`` computes ``gate * sigmoid(gate) * up`` in float32 and rounds once. It is
given the two halves of ``x`` as views (``x[:, :I]``, ``x[:, I:]``): fla's ``prepare_input``
addresses a strided row (row stride 2I, unit column stride) without copying, and the output is a
new contiguous ``[tokens, I]`` tensor. The autograd entry ``fla.modules.activations.swiglu``
is not used: its ``input_guard`` makes both halves contiguous first (two copies). Autotuned over
block size and num_warps on first use (fla-core distribution).
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
        from fla.modules.activations import swiglu_fwd

        _forward = swiglu_fwd
    return _forward


def run(x):
    d = x.shape[-1] // 2
    return _lib()(x[:, :d], x[:, d:])
