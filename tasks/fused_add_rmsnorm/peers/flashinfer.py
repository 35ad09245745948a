"""FlashInfer's fused add + RMSNorm: ``flashinfer.norm.fused_add_rmsnorm(input, residual, weight, eps)``.

The kernel vLLM / SGLang call between decoder sublayers. It works in place: ``residual += input``
(float32 sum, stored rounded), then ``input = RMSNorm(residual) * weight`` of the float32 sum. So
``prepare`` (untimed) clones both activations once per workload, as a deployment owns its
residual-stream buffers, and ``run`` returns the clones: ``(input, residual)`` = the contract's
``(output, residual_out)``. Repeated timed calls keep rewriting those buffers (same work each
call); the caller's tensors are never touched. With nvidia-cutlass-dsl importable FlashInfer 0.6
runs its CuTe DSL kernel, else its JIT-built CUDA one.
"""

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_fused = None


def _lib():
    global _fused
    if _fused is None:
        from flashinfer.norm import fused_add_rmsnorm

        _fused = fused_add_rmsnorm
    return _fused


def prepare(hidden_states, residual, weight, eps):
    _lib()
    return hidden_states.clone(), residual.clone(), weight, eps


def run(hidden_states, residual, weight, eps):
    _lib()(hidden_states, residual, weight, eps)
    return hidden_states, residual
