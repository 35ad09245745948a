"""quack-kernels' cross-entropy forward: ``quack.cross_entropy.cross_entropy_fwd(x, target)`` (CuTe DSL).

One pass over the bfloat16 logits per row (online logsumexp in float32), writing the float32 loss
``lse - x[target]`` per row: the contract's ``loss``. The contract's second output, the mean, is
``loss.mean()``: quack's own ``cross_entropy(..., reduction="mean")`` reduces its per-row losses
with torch ops the same way (a small extra kernel over num_rows floats). ``ignore_index`` stays
quack's -100, which no contract target takes. Compiled by CuTe DSL on first use per
(dtypes, vocabulary size); quack's vectorized copies need an even vocabulary (every catalog
workload is; the odd generalization shape 65537 does not compile).
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
        from quack.cross_entropy import cross_entropy_fwd

        _forward = cross_entropy_fwd
    return _forward


def run(logits, targets):
    loss = _lib()(logits, targets)
    return loss, loss.mean()
