"""flash-linear-attention's softmax kernel: ``fla.ops.utils.softmax.softmax_fwd(x, dtype=x.dtype)`` (Triton).

fla's row softmax utility (one program per row, the whole row in one block, num_warps
autotuned on first use), asked for output in the input's dtype: the contract's shape and dtype.
It is a kernel utility of fla's ops package rather than an nn module. The bfloat16 row is
widened to float32 for the max reduction, so the subtraction, exp and sum run in float32 (seen
in the kernel's TTIR compiled for sm_90 with Triton 3.6) and the output is rounded once
(fla-core distribution).
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
        from fla.ops.utils.softmax import softmax_fwd

        _forward = softmax_fwd
    return _forward


def run(x):
    return _lib()(x, dtype=x.dtype)
