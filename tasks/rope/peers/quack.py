"""quack-kernels' rotary embedding: ``quack.rotary.apply_rotary(x, cos, sin, seqlen_offsets=...)`` (CuTe DSL).

quack's rotary (the flash-attention convention: ``x`` is ``[batch, seqlen, heads, head_dim]``,
``cos`` / ``sin`` are ``[positions, rotary_dim / 2]``, non-interleaved halves rotated as
``(x1 cos - x2 sin, x1 sin + x2 cos)`` in float32) indexes the cache by sequence position plus a
per-batch offset. Per-token positions map onto it with views only: each token is a batch of
sequence length 1 (``x.view(tokens, 1, heads, head_dim)``) whose offset is its position
(``seqlen_offsets=positions``, int64), and ``cos`` / ``sin`` are the two column halves of the
``[cos | sin]`` cache (strided views, unit column stride). quack rotates one tensor a call, so
query and key take two launches; outputs are new tensors. This shape (one token per "sequence")
is not the one quack's tiling is built for, which the timing will show. Compiled by CuTe DSL on
first use.
"""

PEER = {
    "name": "quack",
    "library": "quack-kernels",
    "modules": ["quack", "cutlass"],
    "devices": ["cuda"],
    "min_capability": [9, 0],
    "install": "pip install 'quack-kernels[cu13]'",
}

_apply = None


def _lib():
    global _apply
    if _apply is None:
        from quack.rotary import apply_rotary

        _apply = apply_rotary
    return _apply


def run(positions, query, key, cos_sin_cache):
    apply = _lib()
    half = cos_sin_cache.shape[-1] // 2
    cos, sin = cos_sin_cache[:, :half], cos_sin_cache[:, half:]

    def rotate(x):
        tokens, heads, head_dim = x.shape
        y = apply(x.view(tokens, 1, heads, head_dim), cos, sin, seqlen_offsets=positions)
        return y.view(tokens, heads, head_dim)

    return rotate(query), rotate(key)
