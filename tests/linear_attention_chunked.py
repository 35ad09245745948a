"""An independent chunked formulation of the gated delta rule (GDN) and Kimi Delta Attention (KDA),
for tests/test_linear_attention.py and scripts/linear_attention_tolerances.py.

The tasks' references (definition.json) advance the state one token at a time. This computes the
same thing chunk by chunk, the way fast kernels do (the WY / UT form of the delta rule): within a
chunk of C tokens with cumulative log decays gamma_i, the corrections Delta = (I + A)^-1 (beta V -
beta Gamma K M0) with A_ij = beta_i (Gamma_i / Gamma_j) k_i.k_j (j < i), the outputs
O = scale (Gamma Q M0 + (Q K^T . D) Delta), and M1 = Gamma_C M0 + K^T (Gamma_C / Gamma) Delta. The
triangular system is solved with torch.linalg.solve_triangular, not a hand-written inverse, so
it shares no code with the tasks' baselines or kernels.

``rnd`` is applied wherever a bf16 tensor-core kernel rounds (FLA's chunk_gated_delta_rule rounds
the normalised q and k, W, U, the state before each product, the new values and the intra-chunk
scores to bf16): identity for the exact float64 formulation, bf16 rounding to estimate a fast
kernel's error (scripts/linear_attention_tolerances.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _ident(x: torch.Tensor) -> torch.Tensor:
    return x


def bf16_round(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(x.dtype)


def _l2norm(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def _chunk_scan(qs, ks, vs, lg, beta, m0, scale, chunk, rnd, per_channel):
    """One sequence, all heads. qs, ks [L, HV, K]; vs [L, HV, V]; lg [L, HV] (GDN) or [L, HV, K]
    (KDA) log decays; beta [L, HV]; m0 [HV, K, V]. Returns o [L, HV, V], m [HV, K, V]."""
    L = qs.shape[0]
    m = m0.clone()
    outs = []
    for c0 in range(0, L, chunk):
        q, k, v = (x[c0:c0 + chunk].transpose(0, 1) for x in (qs, ks, vs))  # [HV, C, .]
        bt = beta[c0:c0 + chunk].transpose(0, 1)  # [HV, C]
        gam = lg[c0:c0 + chunk].transpose(0, 1).cumsum(1)  # [HV, C] or [HV, C, K]
        C = q.shape[1]
        eye = torch.eye(C, dtype=q.dtype)
        lower = torch.ones(C, C, dtype=torch.bool).tril(-1)
        incl = torch.ones(C, C, dtype=torch.bool).tril(0)
        if per_channel:
            # exp(gamma_i - gamma_j) per channel, formed pairwise: no exp(-gamma) that could overflow
            diff = gam[:, :, None, :] - gam[:, None, :, :]  # [HV, C, C, K]
            dec = torch.where(incl[None, :, :, None], diff, torch.full_like(diff, -torch.inf)).exp()
            kk = torch.einsum("hik,hjk,hijk->hij", k, k, dec)
            qk = torch.einsum("hik,hjk,hijk->hij", q, k, dec)
            qg = q * gam.exp()  # [HV, C, K]
            kb = k * gam.exp()
            kd = k * (gam[:, -1:, :] - gam).exp()
            last = gam[:, -1, :].exp()[:, :, None]  # [HV, K, 1]
        else:
            diff = gam[:, :, None] - gam[:, None, :]
            dec = torch.where(incl, diff, torch.full_like(diff, -torch.inf)).exp()  # [HV, C, C]
            kk = (k @ k.transpose(1, 2)) * dec
            qk = (q @ k.transpose(1, 2)) * dec
            qg = q * gam.exp()[:, :, None]
            kb = k * gam.exp()[:, :, None]
            kd = k * (gam[:, -1:] - gam).exp()[:, :, None]
            last = gam[:, -1].exp()[:, None, None]
        A = torch.where(lower, bt[:, :, None] * kk, torch.zeros_like(kk))
        system = eye + A
        w = rnd(torch.linalg.solve_triangular(system, bt[:, :, None] * kb, upper=False, unitriangular=True))
        u = rnd(torch.linalg.solve_triangular(system, bt[:, :, None] * v, upper=False, unitriangular=True))
        mr = rnd(m)
        delta = rnd(u - w @ mr)  # [HV, C, V]
        qk = rnd(torch.where(incl, qk, torch.zeros_like(qk)))
        outs.append((scale * (rnd(qg) @ mr + qk @ delta)).transpose(0, 1))
        m = last * m + rnd(kd).transpose(1, 2) @ delta
    o = torch.cat(outs, 0) if outs else torch.zeros_like(vs)
    return o, m


def chunked(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, chunk=64, rnd=_ident, per_channel=False):
    """The prefill tasks' operation in float64, chunk by chunk. GDN: a [T, HV], dt_bias [HV].
    KDA (per_channel): a [T, HV, K], dt_bias [HV, K]. States k-last [N, HV, V, K] in and out."""
    f = torch.float64
    group = v.shape[1] // q.shape[1]
    qn = rnd(_l2norm(q.to(f))).repeat_interleave(group, dim=1)
    kn = rnd(_l2norm(k.to(f))).repeat_interleave(group, dim=1)
    A = torch.exp(A_log.to(f))
    if per_channel:
        lg = -A[None, :, None] * F.softplus(a.to(f) + dt_bias.to(f)[None])
    else:
        lg = -A[None, :] * F.softplus(a.to(f) + dt_bias.to(f)[None])
    beta = torch.sigmoid(b.to(f))
    out = torch.zeros(v.shape, dtype=f)
    new_state = state.to(f).clone()
    bounds = cu_seqlens.tolist()
    for n in range(len(bounds) - 1):
        s, e = bounds[n], bounds[n + 1]
        if e == s:
            continue
        o, m = _chunk_scan(qn[s:e], kn[s:e], v[s:e].to(f), lg[s:e], beta[s:e], new_state[n].transpose(1, 2),
                           scale, chunk, rnd, per_channel)
        out[s:e] = o
        new_state[n] = m.transpose(1, 2)
    return out, new_state
