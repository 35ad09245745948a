"""RMSNorm computed with numpy on the host and written into the output through views: right values,
no torch compute op, and no kernel launched at all. A `python` solution must launch a kernel.
On a GPU the inputs must first come to the host (`.cpu()`, a copy the op audit sees), so there the
same attack is `[torch-compute]`; on a CPU nothing is copied and only the launch count can see it."""
import numpy as np
import torch


def run(hidden_states, weight, eps):
    x = hidden_states.cpu().view(torch.int16).numpy().astype(np.int32) << 16  # bf16 bits -> float32 bits
    w = weight.cpu().view(torch.int16).numpy().astype(np.int32) << 16
    xf, wf = x.view(np.float32), w.view(np.float32)
    y = xf / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps) * wf
    out = torch.empty(hidden_states.shape, dtype=hidden_states.dtype)  # on the host
    out.view(torch.int16).numpy()[:] = (y.view(np.int32) >> 16).astype(np.int16)  # truncate to bf16
    return out.to(hidden_states.device)
