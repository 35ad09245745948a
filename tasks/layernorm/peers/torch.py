"""PyTorch's own LayerNorm: ``torch.nn.functional.layer_norm`` over the last dimension.

The same call as baseline.py (what ``torch.nn.LayerNorm`` runs in StarCoder2, GPT-NeoX, Falcon
and Phi-2), kept as a peer so every run names torch's fused op beside the libraries' (and so the
peer mechanism has a row that runs on CPU). Biased variance, ``eps`` inside the rsqrt, weight then
bias: the contract one to one.
"""
import torch.nn.functional as F

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(x, weight, bias, eps):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
