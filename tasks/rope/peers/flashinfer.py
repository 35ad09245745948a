"""FlashInfer's rotary embedding with a cos/sin cache: ``flashinfer.rope.apply_rope_with_cos_sin_cache``.

``apply_rope_with_cos_sin_cache(positions, query, key, head_size, cos_sin_cache, is_neox=True)``
is the vLLM / SGLang-compatible entry the task's definition names: per token it reads row
``positions[t]`` of the float32 ``[cos | sin]`` cache, rotates the two halves of every head
(``is_neox=True``: no interleaving) in float32 and writes new tensors (the ``_inplace`` variant
would rotate the inputs). ``query`` / ``key`` are passed as ``[tokens, heads, head_dim]``
(FlashInfer views them as ``[tokens, -1, head_size]``), and the outputs come back in the same
shapes; int64 positions are accepted as they are. JIT-built with nvcc on first use.
"""

PEER = {
    "name": "flashinfer",
    "library": "flashinfer-python",
    "modules": ["flashinfer", "tvm_ffi"],
    "devices": ["cuda"],
    "min_capability": [8, 0],
    "install": "pip install flashinfer-python",
}

_apply = None


def _lib():
    global _apply
    if _apply is None:
        from flashinfer.rope import apply_rope_with_cos_sin_cache

        _apply = apply_rope_with_cos_sin_cache
    return _apply


def run(positions, query, key, cos_sin_cache):
    return _lib()(positions, query, key, query.shape[-1], cos_sin_cache, is_neox=True)
