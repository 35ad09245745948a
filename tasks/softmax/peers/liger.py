"""Liger-Kernel's softmax: ``liger_kernel.ops.softmax.LigerSoftmaxFunction.apply(x)`` (Triton).

The op behind ``LigerSoftmax`` / ``liger_kernel.transformers.functional.liger_softmax``, over the
last dimension, output in the input's dtype: the contract one to one. Rows up to Liger's block
limit run in one block, wider ones in its two-pass online kernel. Called through the autograd
Function (Liger exports no separate forward for softmax); with inputs that do not require grad
that adds host work only, which CUDA-graph timing leaves out. Triton widens the bfloat16 row to float32
for the max reduction, so the subtraction, exp and sum run in float32 (seen in the kernel's TTIR
compiled for sm_90 with Triton 3.6) and the output is rounded once.
"""

PEER = {
    "name": "liger",
    "library": "liger-kernel",
    "modules": ["liger_kernel", "triton"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install liger-kernel",
}

_fn = None


def _lib():
    global _fn
    if _fn is None:
        from liger_kernel.ops.softmax import LigerSoftmaxFunction

        _fn = LigerSoftmaxFunction.apply
    return _fn


def run(x):
    return _lib()(x)
