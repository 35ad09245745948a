"""FlashInfer's fused GeLU(tanh)-and-mul: ``flashinfer.activation.gelu_tanh_and_mul(input)``.

``gelu_tanh(input[..., :I]) * input[..., I:]`` with float32 math and one rounding: vLLM's
``gelu_tanh_and_mul`` convention (gate first, tanh-approximate GELU), the contract one to one;
returns a new ``[tokens, I]`` tensor. JIT-built with nvcc on first use. FlashInfer requires the
row width in bytes to be a multiple of 16 (every catalog workload is).
"""

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_gelu_tanh_and_mul = None


def _lib():
    global _gelu_tanh_and_mul
    if _gelu_tanh_and_mul is None:
        from flashinfer.activation import gelu_tanh_and_mul

        _gelu_tanh_and_mul = gelu_tanh_and_mul
    return _gelu_tanh_and_mul


def run(x):
    return _lib()(x)
