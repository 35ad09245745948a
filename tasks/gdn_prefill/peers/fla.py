"""Peer: flash-linear-attention's chunked gated delta rule (fla-core 0.6.0,
fla/ops/gated_delta_rule/chunk.py: l2norm, gate + chunk cumsum, fused kkt/solve_tril/w-u,
the state scan, the output; chunk size 64), called the way vLLM's Qwen3-Next prefill calls it.

Conventions checked against FLA's source: packed varlen inputs are [1, T, H, K] with cu_seqlens
(batch must be 1); g is the raw `a` with use_gate_in_kernel=True (FLA computes -exp(A_log) *
softplus(a + dt_bias) and its chunk cumsum in log space), beta as logits
(use_beta_sigmoid_in_kernel=True), q/k l2-normalised in the kernel (eps 1e-6 inside the square
root), the state k-last (state_v_first=True: [N, HV, V, K]), initial states per sequence and the
final states returned in a new float32 tensor.

prepare() builds FLA's chunk index table from a host copy of cu_seqlens once per workload, as
serving engines build it once per batch in their attention metadata; without it FLA reads
cu_seqlens on the host at every call (a device sync, and no CUDA graph).
"""
PEER = {
    "name": "fla",
    "library": "flash-linear-attention",
    "modules": ["fla"],
    "devices": ["cuda"],
    "install": "pip install flash-linear-attention fla-core",
}


def prepare(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    from fla.ops.utils.index import prepare_chunk_indices

    cu_cpu = cu_seqlens.cpu()
    chunk_indices = prepare_chunk_indices(cu_seqlens, 64, cu_seqlens_cpu=cu_cpu)
    return q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, cu_cpu, chunk_indices


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, cu_cpu=None, chunk_indices=None):
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    out, new_state = chunk_gated_delta_rule(
        q[None], k[None], v[None], g=a[None], beta=b[None], scale=float(scale), initial_state=state,
        output_final_state=True, use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True,
        state_v_first=True, cu_seqlens=cu_seqlens, cu_seqlens_cpu=cu_cpu, chunk_indices=chunk_indices,
        use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
    )
    return out[0], new_state
