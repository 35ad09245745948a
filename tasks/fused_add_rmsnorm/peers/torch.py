"""PyTorch's own ops: the residual add, then ``torch.nn.functional.rms_norm`` of the sum.

torch has no fused add + RMSNorm op; this is what Hugging Face's Llama / Qwen3 decoder layers run
eager (the same two calls as baseline.py), kept as a peer so every run names it beside the
libraries' fused kernels (and so the peer mechanism has a row that runs on CPU). It normalizes
the bfloat16-rounded sum, as vLLM's kernel does, which the contract's rtol allows.
"""
import torch.nn.functional as F

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(hidden_states, residual, weight, eps):
    residual_out = hidden_states + residual
    return F.rms_norm(residual_out, (residual_out.shape[-1],), weight, eps), residual_out
