"""quack-kernels' RMSNorm forward with a residual: ``quack.rmsnorm.rmsnorm_fwd(x, weight, residual=...)``.

With ``residual`` given, quack's kernel adds it to ``x`` in float32, writes the sum rounded to the
residual's dtype (``residual_out``) and normalizes the float32 sum (the contract as written), in
one pass. Returns ``(out, residual_out, rstd)`` (rstd None: store_rstd=False): the contract's
``(output, residual_out)``. Inputs are not modified. Compiled by CuTe DSL on first use per
(dtypes, hidden size).
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
        from quack.rmsnorm import rmsnorm_fwd

        _forward = rmsnorm_fwd
    return _forward


def run(hidden_states, residual, weight, eps):
    out, residual_out, _ = _lib()(hidden_states, weight, residual=residual, eps=eps)
    return out, residual_out
