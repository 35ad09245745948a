"""Peer: flash-linear-attention's chunked Kimi Delta Attention (fla-core 0.6.0, fla/ops/kda/chunk.py,
chunk size 64 with 16-token sub-chunks), called the way Kimi-Linear's KDA layer calls it.

Conventions checked against FLA's source: packed varlen inputs are [1, T, H, K] with cu_seqlens
(batch must be 1); g is the raw per-channel `a` [1, T, H, K] with use_gate_in_kernel=True (FLA
computes -exp(A_log) * softplus(a + dt_bias.view(H, K)) and its chunk cumsum), A_log [H] and
dt_bias flattened to [H * K]; no safe_gate / lower_bound (Kimi-Linear-48B's config sets no
gate_lower_bound); beta as logits (use_beta_sigmoid_in_kernel=True); q/k l2-normalised in the
kernel; the float32 state k-last (state_v_first=True: [N, H, V, K]), returned in a new tensor.

prepare() hands FLA a host copy of cu_seqlens once per workload (cu_seqlens_cpu), as serving
engines keep one per batch; without it FLA reads cu_seqlens on the host at every call.
"""
PEER = {
    "name": "fla",
    "library": "flash-linear-attention",
    "modules": ["fla"],
    "devices": ["cuda"],
    "install": "pip install flash-linear-attention fla-core",
}


def prepare(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    return q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, cu_seqlens.cpu()


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, cu_cpu=None):
    from fla.ops.kda import chunk_kda

    out, new_state = chunk_kda(
        q[None], k[None], v[None], a[None], b[None], scale=float(scale), initial_state=state,
        output_final_state=True, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
        use_beta_sigmoid_in_kernel=True, state_v_first=True, cu_seqlens=cu_seqlens, cu_seqlens_cpu=cu_cpu,
        A_log=A_log, dt_bias=dt_bias.reshape(-1),
    )
    return out[0], new_state
