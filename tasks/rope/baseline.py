"""Baseline for rope_neox_bf16_q32_kv8_d128: eager PyTorch neox rotary embedding in float32.

The structure of vLLM's `RotaryEmbedding.forward_native` (`index_select` of the cos/sin rows,
`chunk`, the two products, `cat`), kept in float32 until the final cast. vLLM's native path casts
cos / sin to bfloat16 and rounds every product: on 2048 tokens of randn queries it missed the
contract on 566 of 8.4M elements (max abs error 0.033, where x1 * cos and x2 * sin nearly cancel;
measured on CPU against the float64 reference), so the baseline keeps float32 as FlashInfer's and
vLLM's CUDA kernels do. A chain of gather, elementwise and cat kernels, each a pass over the
queries or keys. Provenance: PyTorch (BSD-3-Clause), torch 2.11 on the target; vLLM
(Apache-2.0) `vllm/model_executor/layers/rotary_embedding`.
"""
import torch


def run(positions, query, key, cos_sin_cache):
    cos, sin = cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)

    def rotate(x):
        x1, x2 = x.float().chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)

    return rotate(query), rotate(key)
