"""Baseline for gdn_prefill: the chunked (WY / UT) gated delta rule in plain PyTorch, float32.

What a PyTorch implementation without FLA does (Hugging Face's `torch_chunk_gated_delta_rule` for
Qwen3-Next is this algorithm for one sequence; here every sequence of the batch runs at once):

1. l2-normalise q and k, the log decay lg = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b);
2. scatter the packed tokens into chunks of 64 (a sequence's last chunk padded with zero keys,
   zero betas and zero log decay, which leave the state alone);
3. for all chunks at once: gamma = cumsum(lg), A = beta_i exp(gamma_i - gamma_j) k_i.k_j (j < i),
   W = (I + A)^-1 beta exp(gamma) K and U = (I + A)^-1 beta V by a batched triangular solve, and
   the causal scores exp(gamma_i - gamma_j) q_i.k_j (j <= i);
4. one step per chunk position, every sequence that has a chunk there at once: new values
   Delta = U - W M, outputs scale (exp(gamma) Q M + scores Delta), state M = exp(gamma_C) M +
   (exp(gamma_C - gamma) K)^T Delta.

The host reads cu_seqlens once (the chunk layout), so this is timed eagerly, not as a CUDA graph.
PyTorch is BSD-3-Clause.
"""
import torch
import torch.nn.functional as F

CHUNK = 64


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    dev = q.device
    group = HV // H
    qf, kf = q.float(), k.float()
    qn = (qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(group, dim=1)
    kn = (kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(group, dim=1)
    lg = -A_log.exp() * F.softplus(a.float() + dt_bias)  # [T, HV]
    beta = torch.sigmoid(b.float())

    bounds = cu_seqlens.tolist()
    n_seq = len(bounds) - 1
    lens = [bounds[i + 1] - bounds[i] for i in range(n_seq)]
    n_chunks = [-(-n // CHUNK) for n in lens]
    first = [0]
    for c in n_chunks:
        first.append(first[-1] + c)
    total = first[-1]
    new_state = state.clone()
    out = torch.zeros((T, HV, V), dtype=torch.bfloat16, device=dev)
    if total == 0:
        return out, new_state
    # token index of every (chunk, row) slot, -1 for padding
    idx = torch.full((total, CHUNK), -1, dtype=torch.long)
    for n in range(n_seq):
        if lens[n]:
            pos = torch.arange(lens[n])
            idx[first[n] + pos // CHUNK, pos % CHUNK] = bounds[n] + pos
    idx = idx.to(dev)
    valid = idx >= 0
    safe = idx.clamp_min(0)

    def chunks(x):  # [T, HV, ...] -> [total, HV, CHUNK, ...], zero at padding
        y = x[safe] * valid.view(total, CHUNK, *([1] * (x.dim() - 1)))
        return y.transpose(1, 2)

    qc, kc, vc = chunks(qn), chunks(kn), chunks(v.float())  # [total, HV, C, K]
    gam = chunks(lg).cumsum(-1)  # [total, HV, C]
    bc = chunks(beta)
    causal = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=dev).tril()
    diff = gam[..., :, None] - gam[..., None, :]
    dec = torch.where(causal, diff, torch.full_like(diff, -torch.inf)).exp()
    strict = causal & ~torch.eye(CHUNK, dtype=torch.bool, device=dev)
    A = torch.where(strict, bc[..., None] * (kc @ kc.transpose(-1, -2)) * dec, 0.0)
    system = A + torch.eye(CHUNK, device=dev)
    w = torch.linalg.solve_triangular(system, (bc * gam.exp())[..., None] * kc, upper=False, unitriangular=True)
    u = torch.linalg.solve_triangular(system, bc[..., None] * vc, upper=False, unitriangular=True)
    scores = scale * (qc @ kc.transpose(-1, -2)) * dec
    qg = scale * qc * gam.exp()[..., None]
    kd = kc * (gam[..., -1:] - gam).exp()[..., None]
    last = gam[..., -1].exp()[..., None, None]  # [total, HV, 1, 1]

    m = new_state.transpose(-1, -2).contiguous()  # [N, HV, K, V]
    oc = torch.empty_like(vc)
    order = torch.tensor(first[:-1], device=dev)
    counts = torch.tensor(n_chunks, device=dev)
    for j in range(max(n_chunks)):
        seqs = torch.nonzero(counts > j).squeeze(1)
        c = order[seqs] + j
        ms = m[seqs]
        delta = u[c] - w[c] @ ms
        oc[c] = qg[c] @ ms + scores[c] @ delta
        m[seqs] = last[c] * ms + kd[c].transpose(-1, -2) @ delta
    out[idx[valid]] = oc.transpose(1, 2)[valid].to(torch.bfloat16)
    return out, m.transpose(-1, -2).contiguous()
