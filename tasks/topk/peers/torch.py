"""PyTorch's own top-k: ``torch.topk(logits, k, dim=-1, largest=True, sorted=True)``.

The same call as baseline.py (radix select on CUDA, then a sort of the k kept), kept as a peer so
every run names torch's op beside the libraries' (and so the peer mechanism has a row that runs
on CPU). Values in the input's dtype, int64 indices, largest first: the contract one to one.
"""
import torch

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(logits, k):
    return torch.topk(logits, k, dim=-1, largest=True, sorted=True)
