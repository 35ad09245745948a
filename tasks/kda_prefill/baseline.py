"""Baseline for kda_prefill: chunked Kimi Delta Attention in plain PyTorch, float32.

The chunked (WY / UT) delta rule of gdn_prefill's baseline with the decay per key channel, in
chunks of 16 tokens (FLA's KDA works in 16-token sub-chunks too). With a per-channel decay the
intra-chunk terms exp(gamma_i[c] - gamma_j[c]) cannot be split into exp(gamma_i) exp(-gamma_j)
without overflow when the decay is strong (exp(-gamma) passes float32's range after ~90 nats),
so they are formed pairwise: a [chunks, H, 16, 16, K] tensor, built for 256 chunks at a time.

1. l2-normalise q and k, log decay lg = -exp(A_log) softplus(a + dt_bias) per channel, beta;
2. scatter the packed tokens into chunks of 16 (padding: zero keys, betas and log decays);
3. per chunk: gamma = cumsum(lg), A_ij = beta_i sum_c k_i[c] k_j[c] exp(gamma_i[c] - gamma_j[c])
   (j < i), W = (I + A)^-1 beta (exp(gamma) . K), U = (I + A)^-1 beta V (batched triangular
   solve), the causal scores with the same pairwise decays;
4. one step per chunk position, every sequence that has a chunk there at once: Delta = U - W M,
   outputs scale ((exp(gamma) . Q) M + scores Delta), M = exp(gamma_C) . M + (exp(gamma_C - gamma)
   . K)^T Delta.

The host reads cu_seqlens once (the chunk layout), so this is timed eagerly, not as a CUDA graph.
PyTorch is BSD-3-Clause.
"""
import torch
import torch.nn.functional as F

CHUNK = 16
SLICE = 256  # chunks per pairwise-decay batch: [256, 32, 16, 16, 128] float32 is 268 MB


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    T, H, K = q.shape
    V = v.shape[2]
    dev = q.device
    qf, kf = q.float(), k.float()
    qn = qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6)
    kn = kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)
    lg = -A_log.exp()[None, :, None] * F.softplus(a.float() + dt_bias[None])  # [T, H, K]
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
    out = torch.zeros((T, H, V), dtype=torch.bfloat16, device=dev)
    if total == 0:
        return out, new_state
    idx = torch.full((total, CHUNK), -1, dtype=torch.long)
    for n in range(n_seq):
        if lens[n]:
            pos = torch.arange(lens[n])
            idx[first[n] + pos // CHUNK, pos % CHUNK] = bounds[n] + pos
    idx = idx.to(dev)
    valid = idx >= 0
    safe = idx.clamp_min(0)

    def chunks(x):  # [T, H, ...] -> [total, H, CHUNK, ...], zero at padding
        y = x[safe] * valid.view(total, CHUNK, *([1] * (x.dim() - 1)))
        return y.transpose(1, 2)

    qc, kc, vc = chunks(qn), chunks(kn), chunks(v.float())  # [total, H, C, K]
    gam = chunks(lg).cumsum(2)  # [total, H, C, K]
    bc = chunks(beta)  # [total, H, C]
    causal = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=dev).tril()
    strict = causal & ~torch.eye(CHUNK, dtype=torch.bool, device=dev)
    kk = torch.empty((total, H, CHUNK, CHUNK), device=dev)
    qk = torch.empty_like(kk)
    for s in range(0, total, SLICE):
        g = gam[s:s + SLICE]
        diff = g[:, :, :, None, :] - g[:, :, None, :, :]  # [n, H, C, C, K]
        dec = torch.where(causal[:, :, None], diff, torch.full_like(diff, -torch.inf)).exp()
        kk[s:s + SLICE] = torch.einsum("nhik,nhijk,nhjk->nhij", kc[s:s + SLICE], dec, kc[s:s + SLICE])
        qk[s:s + SLICE] = torch.einsum("nhik,nhijk,nhjk->nhij", qc[s:s + SLICE], dec, kc[s:s + SLICE])
    A = torch.where(strict, bc[..., None] * kk, 0.0)
    system = A + torch.eye(CHUNK, device=dev)
    w = torch.linalg.solve_triangular(system, bc[..., None] * gam.exp() * kc, upper=False, unitriangular=True)
    u = torch.linalg.solve_triangular(system, bc[..., None] * vc, upper=False, unitriangular=True)
    scores = scale * torch.where(causal, qk, 0.0)
    qg = scale * qc * gam.exp()
    kd = kc * (gam[:, :, -1:, :] - gam).exp()
    last = gam[:, :, -1, :].exp()[..., None]  # [total, H, K, 1]

    m = new_state.transpose(-1, -2).contiguous()  # [N, H, K, V]
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
