"""quack-kernels' softmax forward: ``quack.softmax.softmax_fwd(x)`` (CuTe DSL, Hopper and later).

Row-wise softmax of a 2-D tensor, float32 math, output in the input's dtype: the contract one to
one. The forward that ``quack.softmax`` (the autograd entry) runs, called directly. Compiled by
CuTe DSL on first use per (dtype, width).
"""

PEER = {
    "name": "quack",
    "library": "quack-kernels",
    "modules": ["quack", "cutlass"],
    "devices": ["cuda"],
    "min_capability": [9, 0],
    "install": "pip install 'quack-kernels[cu13]'",
}

_forward = None


def _lib():
    global _forward
    if _forward is None:
        from quack.softmax import softmax_fwd

        _forward = softmax_fwd
    return _forward


def run(x):
    return _lib()(x)
