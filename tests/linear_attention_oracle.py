"""The linear-attention prefill references as they stood before 2026-12-01 (commit 1931bc1), kept
verbatim as the oracle for the vectorised references of tasks/gdn_prefill and tasks/kda_prefill:
token by token, every live sequence gathered (``s[live]``) and scattered back each step, a host sync
(``torch.nonzero``) per token. tests/test_linear_attention.py checks the definitions' references
against these in float64; scripts/linear_attention_reference_time.py times both.
"""
import torch
import torch.nn.functional as F


def _l2norm(x):
    # FLA's use_qk_l2norm_in_kernel: x / sqrt(sum(x^2) + 1e-6) over the head dimension
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


@torch.no_grad()
def gdn_prefill(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    # The gated delta rule token by token: at step t every sequence still running advances by one
    # token (sequences run side by side, as many steps as the longest has tokens). Math in float32,
    # or in float64 when the harness feeds float64. States are k-last: state[n, h, v, k].
    acc = torch.promote_types(q.dtype, torch.float32)
    group = v.shape[1] // q.shape[1]  # value heads per q/k head (GVA)
    qn = _l2norm(q.to(acc)).repeat_interleave(group, dim=1)  # [T, HV, K]
    kn = _l2norm(k.to(acc)).repeat_interleave(group, dim=1)  # [T, HV, K]
    vt = v.to(acc)  # [T, HV, V]
    g = torch.exp(-torch.exp(A_log.to(acc)) * F.softplus(a.to(acc) + dt_bias.to(acc)))  # [T, HV]
    beta = torch.sigmoid(b.to(acc))  # [T, HV]
    s = state.to(acc).clone()  # [N, HV, V, K]; a sequence of length 0 keeps its initial state
    out = torch.zeros_like(vt)
    starts = cu_seqlens[:-1].long()
    lens = cu_seqlens[1:].long() - starts
    steps = int(lens.max()) if lens.numel() else 0
    for t in range(steps):
        live = torch.nonzero(lens > t).squeeze(1)  # sequences with a token at position t
        tok = starts[live] + t
        st = s[live] * g[tok][:, :, None, None]  # decay first
        pred = torch.einsum("nhvk,nhk->nhv", st, kn[tok])  # what the decayed state recalls for k
        st = st + (beta[tok][:, :, None] * (vt[tok] - pred))[:, :, :, None] * kn[tok][:, :, None, :]
        out[tok] = scale * torch.einsum("nhvk,nhk->nhv", st, qn[tok])
        s[live] = st
    return out, s


@torch.no_grad()
def kda_prefill(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    # Kimi Delta Attention token by token: the delta rule with a decay per key channel. At step t
    # every sequence still running advances by one token. Math in float32, or in float64 when the
    # harness feeds float64. States are k-last: state[n, h, v, k]; the decay acts along k.
    acc = torch.promote_types(q.dtype, torch.float32)
    qn = _l2norm(q.to(acc))  # [T, H, K]
    kn = _l2norm(k.to(acc))
    vt = v.to(acc)  # [T, H, V]
    A = torch.exp(A_log.to(acc))[None, :, None]
    g = torch.exp(-A * F.softplus(a.to(acc) + dt_bias.to(acc)[None]))  # [T, H, K]: per-channel decay
    beta = torch.sigmoid(b.to(acc))  # [T, H]
    s = state.to(acc).clone()  # [N, H, V, K]; a sequence of length 0 keeps its initial state
    out = torch.zeros_like(vt)
    starts = cu_seqlens[:-1].long()
    lens = cu_seqlens[1:].long() - starts
    steps = int(lens.max()) if lens.numel() else 0
    for t in range(steps):
        live = torch.nonzero(lens > t).squeeze(1)  # sequences with a token at position t
        tok = starts[live] + t
        st = s[live] * g[tok][:, :, None, :]  # decay each key channel first
        pred = torch.einsum("nhvk,nhk->nhv", st, kn[tok])  # what the decayed state recalls for k
        st = st + (beta[tok][:, :, None] * (vt[tok] - pred))[:, :, :, None] * kn[tok][:, :, None, :]
        out[tok] = scale * torch.einsum("nhvk,nhk->nhv", st, qn[tok])
        s[live] = st
    return out, s
