"""MODEL_SPEC: what ``kernelcraft capture`` runs, and the inputs of its prefill and decode steps.

- a preset: ``llama-tiny`` (hidden 64, 2 layers), ``llama3-8b`` (Llama-3-8B's dimensions),
  ``qwen3-next-tiny`` (Qwen3-Next's architecture at hidden 64) and ``qwen3-next`` (Qwen3-Next-80B-A3B's
  dimensions: hybrid gated-delta-net / full attention layers, 512 experts, 10 routed per token);
- ``hf:MODEL_TYPE[,key=value...]``: any ``transformers`` causal LM config, e.g.
  ``hf:llama,hidden_size=128,num_hidden_layers=2`` (values parsed as Python literals);
- ``module:factory`` (``pkg.mod:make``): a function of the user's returning an ``nn.Module``, or a
  pair ``(module, inputs)`` where ``inputs(phase, batch, seq, device)`` returns the keyword arguments
  of one forward (``phase`` is ``"prefill"`` or ``"decode"``; return None for a phase the model
  does not have).

Weights are random (``--seed``) and nothing is downloaded. Every layer of a preset is identical,
so ``--layers`` trims the stack to fit a time budget while each layer's regions keep their shapes.
"""

from __future__ import annotations

import ast
import copy
import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

PRESETS: dict[str, tuple[str, dict]] = {
    "llama-tiny": ("llama", {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
                             "max_position_embeddings": 512}),
    "llama3-8b": ("llama", {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 2,
                            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                            "max_position_embeddings": 8192, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}),
    # Qwen3-Next-80B-A3B (transformers' Qwen3NextConfig defaults are that model's): three gated
    # delta-net layers, then one full-attention layer, each with a 512-expert MoE MLP.
    "qwen3-next": ("qwen3_next", {"num_hidden_layers": 4}),
    "qwen3-next-tiny": ("qwen3_next", {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
                                       "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                                       "vocab_size": 512, "num_experts": 8, "num_experts_per_tok": 2,
                                       "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
                                       "linear_num_value_heads": 4, "linear_num_key_heads": 2,
                                       "linear_key_head_dim": 16, "linear_value_head_dim": 16,
                                       "max_position_embeddings": 512}),
    # the tiny model with the gated delta-net heads of the gdn_prefill / gdn_decode tasks (Qwen3-Next-80B's
    # per GPU under tensor parallelism 4: 4 q/k heads, 8 value heads, head size 128), so their exported
    # kernels fit its linear-attention layers
    "qwen3-next-gdn-tiny": ("qwen3_next", {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
                                           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                                           "vocab_size": 512, "num_experts": 8, "num_experts_per_tok": 2,
                                           "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
                                           "linear_num_value_heads": 8, "linear_num_key_heads": 4,
                                           "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                           "max_position_embeddings": 512}),
    # Qwen3-Next-80B-A3B's dimensions with its linear-attention heads as one GPU of TP4 holds them (the
    # gdn tasks' shapes); the full-attention and MoE layers whole
    "qwen3-next-tp4": ("qwen3_next", {"num_hidden_layers": 4, "linear_num_key_heads": 4, "linear_num_value_heads": 8}),
}


class CaptureError(Exception):
    """The model cannot be built or captured; the message says what to do."""


@dataclass
class Subject:
    """A model ready to run, and the keyword arguments of its prefill and decode steps."""

    spec: str
    model: torch.nn.Module
    inputs: Callable[[str], dict | None]  # phase -> forward kwargs (fresh each call), None: no such phase
    describe: dict  # architecture, config, parameter count, how the weights were made


def _transformers():
    try:
        import transformers
    except ImportError as e:
        raise CaptureError(f"transformers is not installed ({e}); pip install transformers, or give a "
                           "module:factory MODEL_SPEC") from None
    return transformers


def _parse_hf(spec: str) -> tuple[str, dict]:
    body = spec.removeprefix("hf:")
    model_type, *pairs = body.split(",")
    kw = {}
    for p in pairs:
        key, eq, val = p.partition("=")
        if not eq or not key.strip():
            raise CaptureError(f"MODEL_SPEC {spec!r}: {p!r} is not key=value (e.g. hf:llama,hidden_size=128)")
        try:
            kw[key.strip()] = ast.literal_eval(val.strip())
        except (ValueError, SyntaxError):
            kw[key.strip()] = val.strip()
    return model_type.strip(), kw


def _hf_config(spec: str, layers: int | None):
    tf = _transformers()
    if spec in PRESETS:
        model_type, kw = PRESETS[spec]
        kw = dict(kw)
    elif spec.startswith("hf:"):
        model_type, kw = _parse_hf(spec)
    else:
        raise CaptureError(f"unknown MODEL_SPEC {spec!r}: use a preset ({', '.join(sorted(PRESETS))}), "
                           "hf:MODEL_TYPE[,key=value...] or module:factory")
    if layers:
        kw["num_hidden_layers"] = layers
        if model_type == "qwen3_next":  # keep the 3:1 linear/full attention pattern within the trimmed stack
            kw["layer_types"] = [("full_attention" if (i + 1) % 4 == 0 else "linear_attention") for i in range(layers)]
    try:
        config = tf.AutoConfig.for_model(model_type, **kw)
    except (ValueError, KeyError, TypeError) as e:
        raise CaptureError(f"MODEL_SPEC {spec!r}: transformers cannot make a {model_type!r} config from {kw}: {e}") from None
    config._attn_implementation = "sdpa"
    return config


def _token_inputs(vocab: int, batch: int, seq: int, device: str, seed: int, model) -> Callable[[str], dict | None]:
    """Prefill: ``seq`` tokens per sequence, no cache. Decode: one token per sequence after a cache
    of ``seq`` tokens, made once by a prefill forward and deep-copied for every call."""
    g = torch.Generator().manual_seed(seed + 1)
    prompt = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
    nxt = torch.randint(0, vocab, (batch, 1), generator=g).to(device)
    state: dict = {}

    def inputs(phase: str) -> dict | None:
        if phase == "prefill":
            return {"input_ids": prompt, "use_cache": False}
        if phase == "decode":
            if "cache" not in state:
                with torch.no_grad():
                    state["cache"] = model(input_ids=prompt, use_cache=True).past_key_values
            return {"input_ids": nxt, "past_key_values": copy.deepcopy(state["cache"]), "use_cache": True}
        raise CaptureError(f"unknown phase {phase!r}")

    return inputs


def build(spec: str, device: str, dtype: torch.dtype, batch: int, seq: int, layers: int | None = None,
          seed: int = 0) -> Subject:
    if ":" in spec and not spec.startswith("hf:"):
        return _from_factory(spec, device, dtype, batch, seq)
    config = _hf_config(spec, layers)
    tf = _transformers()
    torch.manual_seed(seed)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = tf.AutoModelForCausalLM.from_config(config)
    except ValueError as e:
        raise CaptureError(f"MODEL_SPEC {spec!r}: no causal LM for this config: {e}") from None
    finally:
        torch.set_default_dtype(prev)
    with torch.no_grad():
        for m in model.modules():
            # transformers initializes norm scales to ones (or zeros for Qwen3-Next's 1 + w form); random
            # scales make a captured reference that ignores the weight fail.
            if type(m).__name__.endswith("RMSNorm") and isinstance(getattr(m, "weight", None), torch.Tensor):
                m.weight.normal_(float(m.weight.float().mean()), 0.1)
    model = model.eval()
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size", "num_experts", "num_experts_per_tok", "moe_intermediate_size", "layer_types")
    describe = {"arch": type(model).__name__, "transformers": tf.__version__,
                "config": {k: getattr(config, k) for k in keys if getattr(config, k, None) is not None},
                "params": sum(p.numel() for p in model.parameters()), "weights": f"random, seed {seed}"}
    return Subject(spec, model, _token_inputs(config.vocab_size, batch, seq, device, seed, model), describe)


def _from_factory(spec: str, device: str, dtype: torch.dtype, batch: int, seq: int) -> Subject:
    mod_name, _, fn_name = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise CaptureError(f"MODEL_SPEC {spec!r}: cannot import {mod_name!r} ({e}); put it on PYTHONPATH") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise CaptureError(f"MODEL_SPEC {spec!r}: {mod_name} has no function {fn_name!r}")
    made = fn()
    model, make_inputs = made if isinstance(made, tuple) else (made, None)
    if not isinstance(model, torch.nn.Module):
        raise CaptureError(f"MODEL_SPEC {spec!r}: {fn_name}() returned {type(model).__name__}, not an nn.Module "
                           "(or a pair (module, inputs))")
    if make_inputs is None:
        raise CaptureError(f"MODEL_SPEC {spec!r}: {fn_name}() returned a module alone; return (module, inputs) with "
                           "inputs(phase, batch, seq, device) -> forward kwargs, so capture knows what to feed it")
    model = model.to(device=device, dtype=dtype).eval()
    return Subject(spec, model, lambda phase: make_inputs(phase, batch, seq, device),
                   {"arch": type(model).__name__, "factory": spec, "params": sum(p.numel() for p in model.parameters()),
                    "weights": "as the factory made them"})
