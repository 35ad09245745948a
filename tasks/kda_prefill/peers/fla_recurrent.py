"""Peer: flash-linear-attention's fused recurrent Kimi Delta Attention (fla-core 0.6.0,
fla/ops/kda/fused_recurrent.py: one program per sequence, head and 32-wide value block, stepping
token by token with the state in registers), the kernel a user runs instead of the chunked one
at short sequences (vLLM's KDA decode kernel, from which FLA's is derived).

Conventions checked against FLA's source: packed varlen inputs are [1, T, H, K] with cu_seqlens
(batch must be 1; no host copy of cu_seqlens is needed, N comes from its length); g is the raw
per-channel `a` [1, T, H, K] with use_gate_in_kernel=True (FLA computes -exp(A_log) *
softplus(a + dt_bias) per step), A_log [H] and dt_bias flattened to [H * K] (the kernel reads
dt_bias[h * K + k], although FLA's docstring says [HV]); no lower_bound; beta as logits
(use_beta_sigmoid_in_kernel=True); q/k l2-normalised in the kernel (eps 1e-6 inside the square
root); scale passed explicitly (a tl.constexpr there: one compile per scale value); the float32
state k-last (state_v_first=True: [N, H, V, K]) read from initial_state and the final state
returned in a new float32 tensor (output_final_state=True). The input state is not modified:
fused_recurrent_kda always calls fused_recurrent_kda_fwd with inplace_final_state=False (the
fwd's own default is True, which writes the final state over initial_state) and takes
inplace_final_state only through **kwargs, which 0.6.0 ignores; it is passed here as False anyway
so a later version that exposes it cannot turn the peer into an in-place one.
"""
PEER = {
    "name": "fla_recurrent",
    "library": "flash-linear-attention",
    "modules": ["fla"],
    "devices": ["cuda"],
    "install": "pip install flash-linear-attention fla-core",
}


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    from fla.ops.kda import fused_recurrent_kda

    out, new_state = fused_recurrent_kda(
        q[None], k[None], v[None], a[None], b[None], A_log=A_log, dt_bias=dt_bias.reshape(-1),
        scale=float(scale), initial_state=state, output_final_state=True, use_qk_l2norm_in_kernel=True,
        use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, state_v_first=True, cu_seqlens=cu_seqlens,
        inplace_final_state=False,
    )
    return out[0], new_state
