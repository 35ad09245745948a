"""FlashInfer's RMSNorm: ``flashinfer.norm.rmsnorm(input, weight, eps)``.

Maps one to one onto the contract (``out = input * rsqrt(mean(input^2) + eps) * weight``, float32
math, output in the input's dtype). With nvidia-cutlass-dsl importable FlashInfer 0.6 runs its
CuTe DSL kernel (``rmsnorm_cute``); with ``FLASHINFER_USE_CUDA_NORM=1`` or without the DSL it
JIT-builds its CUDA kernel instead (nvcc on first use). ``enable_pdl`` is left to FlashInfer
(on by default on Hopper: programmatic dependent launch).
"""

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_rmsnorm = None


def _lib():
    global _rmsnorm
    if _rmsnorm is None:
        from flashinfer.norm import rmsnorm

        _rmsnorm = rmsnorm
    return _rmsnorm


def run(hidden_states, weight, eps):
    return _lib()(hidden_states, weight, eps)
