"""Input generator for gdn_prefill: every input of one workload, cu_seqlens valid by construction.

For a contract-level generator (`[inputs] generator = "inputs.py::generate"`, called as
generate(axes, device, seed) -> the inputs in the definition's order), which random holdout
shapes need: the per-element distributions of contract.toml cannot draw a non-decreasing
cu_seqlens ending at total_seq_len. Until the harness has that hook, the workloads carry fixed
cu_seqlens (data/cu_seqlens.safetensors) and tests/test_linear_attention.py uses this generator
for its stress cases.

Sequence lengths: a random composition of total_seq_len into num_seqs parts that mixes the cases
kernels get wrong: about a tenth of the sequences empty (when there are several), the rest split
by random weights drawn log-uniformly over three decades (so one long sequence beside many short
ones is common). Every other input follows contract.toml's distributions.
"""
import math

import torch


def lengths(total: int, n: int, gen: torch.Generator) -> list[int]:
    """A composition of ``total`` into ``n`` non-negative parts (some empty when n > 1)."""
    if n == 1:
        return [total]
    w = torch.exp(torch.rand(n, generator=gen, dtype=torch.float64) * math.log(1000.0))
    empty = torch.rand(n, generator=gen) < 0.1
    if bool(empty.all()):
        empty[0] = False
    w[empty] = 0.0
    raw = w / w.sum() * total
    out = raw.floor().long()
    rest = total - int(out.sum())
    order = torch.argsort(raw - out, descending=True)  # largest remainders first
    live = order[~empty[order]]
    out[live[:rest]] += 1
    return out.tolist()


def generate(axes: dict, device: str, seed: int) -> list:
    gen = torch.Generator().manual_seed(seed)
    T, N = axes["total_seq_len"], axes["num_seqs"]
    H, HV, K = axes["num_q_heads"], axes["num_v_heads"], axes["head_size"]
    lens = lengths(T, N, gen)
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)

    def normal(*shape, std=1.0):
        return torch.randn(*shape, generator=gen) * std

    def uniform(low, high, *shape):
        return low + (high - low) * torch.rand(*shape, generator=gen)

    out = [normal(T, H, K).bfloat16(), normal(T, H, K).bfloat16(), normal(T, HV, K).bfloat16(),
           normal(N, HV, K, K), uniform(0.0, 2.7726, HV), normal(T, HV).bfloat16(),
           uniform(-6.9, -2.25, HV), normal(T, HV, std=2.0).bfloat16(), cu, 1 / math.sqrt(K)]
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in out]
