"""PyTorch's own pairwise distance: ``torch.cdist(points, centroids).argmin(dim=1)``.

``torch.cdist`` is torch's op for the n x k Euclidean distance matrix; with its default
``compute_mode`` and more than 25 points or centroids it takes the matrix-multiply expansion
(``|x|^2 - 2 x.c + |c|^2``, then clamp and sqrt). The square root is monotone, so the argmin over
its distances is the nearest centroid the contract asks for (judged by squared distance, ties
and near-ties by distance). baseline.py is the leaner form of the same expansion (one addmm, no
|x|^2, no sqrt); this peer is what a user reaching for torch's distance op runs. Float32
throughout (TF32 only if the caller enabled it for matmuls).
"""
import torch

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(points, centroids):
    return torch.cdist(points, centroids).argmin(dim=1)
