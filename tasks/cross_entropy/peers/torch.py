"""PyTorch's own cross-entropy: ``F.cross_entropy(logits.float(), targets, reduction="none")``, then its mean.

torch's fused log_softmax + nll_loss kernels need float32 logits to give a float32 loss (on
bfloat16 logits they return a bfloat16 loss, an ulp of 0.0625 at the losses' size, far outside
the contract's rtol), so this is what training code runs (Hugging Face's ``ForCausalLMLoss``
upcasts first): the same calls as baseline.py, kept as a peer so every run names torch's op
beside the libraries' (and so the peer mechanism has a row that runs on CPU). ``reduction=
"none"`` gives the per-row loss; the mean is one more small reduction.
"""
import torch.nn.functional as F

PEER = {
    "name": "torch",
    "library": "torch",
    "modules": ["torch"],
    "devices": ["cuda", "cpu"],
    "install": "pip install torch",
}


def run(logits, targets):
    loss = F.cross_entropy(logits.float(), targets, reduction="none")
    return loss, loss.mean()
