"""Baseline for cross_entropy_bf16: PyTorch's cross_entropy on float32 logits.

`F.cross_entropy(logits.float(), targets, reduction="none")` is what training code does to get a
float32 loss from bf16 logits (Hugging Face's `ForCausalLMLoss` upcasts the logits to float32
first): one upcast copy of the logits, then PyTorch's fused log_softmax + nll_loss kernels
(aten/src/ATen/native/cuda/SoftMax.cu, Loss.cu). Best-known plain-PyTorch implementation on the
target; PyTorch is BSD-3-Clause.
"""
import torch


def run(logits, targets):
    loss = torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none")
    return loss, loss.mean()
