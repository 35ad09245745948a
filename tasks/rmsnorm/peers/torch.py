"""PyTorch's own RMSNorm: ``torch.nn.functional.rms_norm`` over the last dimension.

The same call as baseline.py, kept as a peer so every run names torch's fused op beside the
libraries' (and so the peer mechanism has a row that runs on CPU). Maps one to one onto the
contract: ``rms_norm(x, (hidden_size,), weight, eps)`` normalizes by ``rsqrt(mean(x^2) + eps)``
and scales by the weight, returning the input's dtype. On CPU torch's composite rounds the
normalized row to bfloat16 before the weight multiply (two roundings, inside the contract's
two-ulp rtol).
"""
import torch.nn.functional as F

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(hidden_states, weight, eps):
    return F.rms_norm(hidden_states, (hidden_states.shape[-1],), weight, eps)
