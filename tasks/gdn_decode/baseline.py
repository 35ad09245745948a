"""Baseline for gdn_decode: the decode step in plain PyTorch, float32, batched over every
(sequence, value head) with matrix-vector products.

This is what Hugging Face transformers runs for Qwen3-Next when FLA is not installed
(`torch_recurrent_gated_delta_rule` in modeling_qwen3_next.py, one token): l2-normalise q and k,
decay the state, one matvec for the recall, a rank-1 update, one matvec for the output. Each line
is one or two PyTorch kernels that reads or writes the whole state, so it moves the state ~6 times
where one read and one write suffice. PyTorch is BSD-3-Clause.
"""
import torch
import torch.nn.functional as F


def run(q, k, v, state, A_log, a, dt_bias, b, scale):
    group = v.shape[2] // q.shape[2]
    qf, kf = q[:, 0].float(), k[:, 0].float()
    qn = (qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(group, dim=1)  # [B, HV, K]
    kn = (kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(group, dim=1)
    g = torch.exp(-A_log.exp() * F.softplus(a[:, 0].float() + dt_bias))  # [B, HV]
    beta = torch.sigmoid(b[:, 0].float())
    s = state * g[:, :, None, None]
    pred = torch.matmul(s, kn[..., None])[..., 0]  # [B, HV, V]
    delta = beta[..., None] * (v[:, 0].float() - pred)
    s = s + delta[..., None] * kn[:, :, None, :]
    out = scale * torch.matmul(s, qn[..., None])[..., 0]
    return out[:, None].to(torch.bfloat16), s
