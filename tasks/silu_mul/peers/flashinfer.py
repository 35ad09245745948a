"""FlashInfer's fused SiLU-and-mul: ``flashinfer.activation.silu_and_mul(input)``.

``silu(input[..., :I]) * input[..., I:]`` with float32 math and one rounding (vLLM's
``silu_and_mul`` convention: the first half is the gate), which is the contract one to one;
returns a new ``[tokens, I]`` tensor. JIT-built with nvcc on first use (FlashInfer 0.6's JIT
cache, ~/.cache/flashinfer). ``enable_pdl`` left to FlashInfer (on by default on Hopper).
"""

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_silu_and_mul = None


def _lib():
    global _silu_and_mul
    if _silu_and_mul is None:
        from flashinfer.activation import silu_and_mul

        _silu_and_mul = silu_and_mul
    return _silu_and_mul


def run(x):
    return _lib()(x)
