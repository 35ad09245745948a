"""Peer: flash-linear-attention's fused recurrent gated delta rule (fla-core 0.6.0,
fla/ops/gated_delta_rule/fused_recurrent.py: one program per sequence, value head and 8-wide
value block, stepping token by token with the state in registers), the kernel vLLM and SGLang
call for decode and the one a user runs instead of the chunked kernel at short sequences.

Conventions checked against FLA's source: packed varlen inputs are [1, T, H, K] (v [1, T, HV, V])
with cu_seqlens (batch must be 1; no host copy of cu_seqlens is needed, N comes from its length);
g is the raw `a` [1, T, HV] with use_gate_in_kernel=True (FLA computes -exp(A_log) * softplus(a +
dt_bias) per step), A_log and dt_bias [HV]; beta as logits (use_beta_sigmoid_in_kernel=True); q/k
l2-normalised in the kernel (eps 1e-6 inside the square root); scale passed explicitly; the
float32 state k-last (state_v_first=True: [N, HV, V, K]) read from initial_state, and the final
state returned in a new float32 tensor (output_final_state=True). This function has no in-place
mode (fused_recurrent_gated_delta_rule_fwd always allocates the final state), so the input state
is left as it was; a sequence of length 0 gets its initial state back.
"""
PEER = {
    "name": "fla_recurrent",
    "library": "flash-linear-attention",
    "modules": ["fla"],
    "devices": ["cuda"],
    "install": "pip install flash-linear-attention fla-core",
}


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule

    out, new_state = fused_recurrent_gated_delta_rule(
        q[None], k[None], v[None], g=a[None], beta=b[None], scale=float(scale), initial_state=state,
        output_final_state=True, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log,
        dt_bias=dt_bias, use_beta_sigmoid_in_kernel=True, state_v_first=True, cu_seqlens=cu_seqlens,
    )
    return out[0], new_state
