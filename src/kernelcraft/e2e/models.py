"""Hugging Face ``transformers`` models built from a config with random weights (nothing is
downloaded), and the placement of an exported RMSNorm op into them.

Presets (``--config``): ``llama-tiny`` (hidden 64, 2 layers: a CPU test in seconds) and
``llama3-8b`` (Llama-3-8B's dimensions: hidden 4096, 14336 MLP, 32 heads / 8 KV heads, vocabulary
128256, rope theta 500000), whose layer count ``--layers`` trims (2 by default) so it fits a
measurement budget; every layer is identical, so the op's share per layer is that of the full model,
while the embedding and LM head weigh more in a trimmed model than in the full one.
"""

from __future__ import annotations

import torch

PRESETS: dict[str, dict] = {
    "llama-tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 512},
    "llama3-8b": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 2, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
                  "rope_theta": 500000.0},
}


class E2EError(Exception):
    """The model cannot be built or the kernel cannot be placed; the message says what to do."""


def _transformers():
    try:
        import transformers
    except ImportError as e:
        raise E2EError(f"transformers is not installed ({e}); pip install transformers "
                       "(on a machine without network, bring its wheels: scripts/fetch_e2e_wheels.sh)") from None
    return transformers


def make_config(preset: str, layers: int | None = None, eps: float = 1e-5):
    """The model's configuration (cheap: no weights), so the envelope is checked before building."""
    if preset not in PRESETS:
        raise E2EError(f"unknown model config {preset!r}; use one of {sorted(PRESETS)}")
    kw = dict(PRESETS[preset])
    if layers:
        kw["num_hidden_layers"] = layers
    config = _transformers().LlamaConfig(rms_norm_eps=eps, **kw)
    config._attn_implementation = "sdpa"
    return config


def build_model(config, device: str, dtype: torch.dtype, seed: int = 0):
    LlamaForCausalLM = _transformers().LlamaForCausalLM
    torch.manual_seed(seed)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(prev)
    with torch.no_grad():
        for m in model.modules():
            if _is_rmsnorm(m):  # initialized to ones; random scales exercise the kernel's weight path
                m.weight.normal_(1.0, 0.1)
    return model.eval()


def _is_rmsnorm(m: torch.nn.Module) -> bool:
    return type(m).__name__.endswith("RMSNorm") and isinstance(getattr(m, "weight", None), torch.Tensor)


def _eps(m: torch.nn.Module) -> float:
    for attr in ("variance_epsilon", "eps"):
        if isinstance(getattr(m, attr, None), float):
            return getattr(m, attr)
    raise E2EError(f"{type(m).__name__} has neither variance_epsilon nor eps: cannot place an RMSNorm kernel there")


class KernelRMSNorm(torch.nn.Module):
    """An RMSNorm module that calls an exported op ``op(hidden_states[rows, hidden], weight, eps)``."""

    def __init__(self, op, weight: torch.nn.Parameter, eps: float):
        super().__init__()
        self.op, self.weight, self.variance_epsilon = op, weight, eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        shape = hidden_states.shape
        out = self.op(hidden_states.reshape(-1, shape[-1]), self.weight, self.variance_epsilon)
        return out.view(shape)


def rmsnorm_modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    return [(name, m) for name, m in model.named_modules() if _is_rmsnorm(m)]


def place_rmsnorm(model: torch.nn.Module, op) -> int:
    """Replace every RMSNorm module of ``model`` with :class:`KernelRMSNorm` (sharing its weight)."""
    found = rmsnorm_modules(model)
    if not found:
        raise E2EError(f"{type(model).__name__} has no RMSNorm module to replace")
    for name, m in found:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, KernelRMSNorm(op, m.weight, _eps(m)))
    return len(found)
