"""Baseline for balanced_kmeans_step_f32: the reference's algorithm in float32 PyTorch.

No library ships this exact step; the baseline runs the contract's algorithm (deferred acceptance
in rounds, then the centroid update) with the usual plain-PyTorch building blocks: one cuBLAS
float32 addmm for the n x k distance matrix (kept for all rounds), masked argmin per round,
stable sorts for the per-centroid ranking, index_add for the update. PyTorch is BSD-3-Clause.
"""
import torch


def run(points, centroids):
    n, k = points.shape[0], centroids.shape[0]
    cap = (n + k - 1) // k
    # |x|^2 matters here (unlike a plain argmin): each centroid ranks *different* points by distance
    dist = torch.addmm((centroids * centroids).sum(1), points, centroids.T, beta=1.0, alpha=-2.0)
    dist += (points * points).sum(1, keepdim=True)
    assign = torch.full((n,), -1, dtype=torch.int64, device=points.device)
    count = torch.zeros(k, dtype=torch.int64, device=points.device)
    active = torch.arange(n, device=points.device)
    while active.numel():
        d = dist[active]
        d[:, count >= cap] = float("inf")
        best, prop = d.min(1)
        order = torch.argsort(best, stable=True)
        order = order[torch.argsort(prop[order], stable=True)]
        grouped = prop[order]
        rank = torch.arange(grouped.numel(), device=points.device) - torch.searchsorted(grouped, grouped)
        take = order[rank < (cap - count)[grouped]]
        assign[active[take]] = prop[take]
        count += torch.bincount(prop[take], minlength=k)
        keep = torch.ones(active.numel(), dtype=torch.bool, device=points.device)
        keep[take] = False
        active = active[keep]
    sums = torch.zeros_like(centroids).index_add_(0, assign, points)
    size = torch.bincount(assign, minlength=k).to(points.dtype)[:, None]
    return assign, torch.where(size > 0, sums / size.clamp_min(1), centroids)
