"""PyTorch's own softmax: ``torch.softmax(x, dim=-1)``.

The same call as baseline.py (torch's persistent / block softmax kernels on CUDA: float32
accumulation, output in the input's dtype), kept as a peer so every run names torch's fused op
beside the libraries' (and so the peer mechanism has a row that runs on CPU).
"""
import torch

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(x):
    return torch.softmax(x, dim=-1)
