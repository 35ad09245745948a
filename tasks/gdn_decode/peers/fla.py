"""Peer: flash-linear-attention's fused recurrent gated delta rule (fla-core 0.6.0,
fla/ops/gated_delta_rule/fused_recurrent.py), called as vLLM and SGLang call it for decode.

Conventions checked against FLA's source: inputs [B, T, H, K] (no head_first); the gate fused in
the kernel (use_gate_in_kernel=True: g is the raw `a`, FLA computes -exp(A_log) * softplus(a +
dt_bias) in log space), beta as logits (use_beta_sigmoid_in_kernel=True), q/k l2-normalised in the
kernel with eps 1e-6 inside the square root, scale passed explicitly, the state k-last
(state_v_first=True: [N, HV, V, K]) and returned, not updated in place (output_final_state=True
allocates a new float32 tensor).
"""
PEER = {
    "name": "fla",
    "library": "flash-linear-attention",
    "modules": ["fla"],
    "devices": ["cuda"],
    "install": "pip install flash-linear-attention fla-core",
}


def run(q, k, v, state, A_log, a, dt_bias, b, scale):
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule

    out, new_state = fused_recurrent_gated_delta_rule(
        q, k, v, g=a, beta=b, scale=float(scale), initial_state=state, output_final_state=True,
        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
        use_beta_sigmoid_in_kernel=True, state_v_first=True,
    )
    return out, new_state
