"""The regions of a transformers decoder that exported kernels replace, and the module patching that
places them.

Three kinds, each named by the interface of the exported op's definition:

- ``rmsnorm``: ``op(x[T, H], weight[H], eps) -> out``. Replaces an RMSNorm module that no fused region
  covers (the first layer's input norm when ``fused_add_rmsnorm`` is placed too, else every one).
- ``fused_add_rmsnorm``: ``op(x[T, H], residual[T, H], weight[H], eps) -> (out, residual_out)``.
  Replaces the whole region ``hidden = residual + x; normed = rmsnorm(hidden)``: after attention in
  every layer, between one layer's MLP add and the next layer's input norm, and before the final
  norm. Under torch.compile Inductor fuses exactly that add with that norm; replacing the norm alone
  would leave the add as a kernel of its own (the fusion lost, issue 25).
- ``silu_mul``: ``op(x[T, 2I]) -> out[T, I]``. Replaces the MLP's ``act_fn(gate_proj(x)) * up_proj(x)``
  with ``silu_mul(gate_up_proj(x))``, the two projections merged into one (their weights concatenated,
  as vLLM's ``MergedColumnParallelLinear``): the kernel reads ``[gate | up]`` from one tensor.

To fuse across layers the decoder layers are restructured the way vLLM runs them: a layer hands the
next one a :class:`Pending` pair ``(delta, residual)`` (the residual stream is ``residual + delta``, the
add not done yet) and the next norm does the add. Each region has a stock implementation (the same
torch ops transformers runs, in the same order: the restructured model with stock regions equals the
unpatched model bit for bit, ``tests/test_e2e_regions.py``) and a kernel one; the stock one, annotated
with ``record_function`` ranges, is what measures each region's share of the step.

The patching refuses code it does not reproduce: a decoder layer's ``forward``, an RMSNorm's and an
MLP's are compared statement by statement (``ast``) with the patterns of transformers 5.x, and a model
whose code differs gets an error naming the class, its file and the first statement that differs.
The patterns:

- decoder layers: Llama/Qwen2/Qwen3/Mistral/Gemma (one ``self_attn``), and Qwen3-Next's hybrid layer
  (``linear_attn`` or ``self_attn`` by ``block_type``, an MLP that may be a MoE block);
- RMSNorms, two forms: ``weight * rmsnorm(x).to(dtype)`` (Llama) and ``(rmsnorm(x) * (1 + weight.float()))
  .to(dtype)`` (the offset form of Gemma and Qwen3-Next, weight initialised to zeros). An offset norm's
  region passes the kernel ``1 + weight``, computed once when the region is placed as the model computes
  it (in float32) and rounded to the weight's dtype, the dtype the kernel was validated for: with a
  bfloat16 weight the kernel's scale differs from the model's float32 ``1 + w`` by that one rounding
  (at most 2^-8 relative, half a bfloat16 ulp; ``patch()`` reports the largest, and the e2e logits
  comparison against the stock model includes it). A norm the kernels do not replace (Qwen3-Next's gated norm in its
  linear-attention layers, the per-head q/k norms inside attention) stays stock, and ``patch()`` lists
  it with the reason.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
from typing import NamedTuple

import torch

from kernelcraft.e2e import gdn as G
from kernelcraft.e2e._source import read_source

LAYER_KINDS = ("rmsnorm", "fused_add_rmsnorm", "silu_mul")  # the kinds of every Llama-style decoder
KINDS = (*LAYER_KINDS, *G.KINDS)
# the phases a kind's region runs in (a gdn_prefill region is the chunked rule: prefill only; gdn_decode the
# recurrent one, called for one token with a cache: decode only)
PHASES_OF = {"gdn_prefill": ("prefill",), "gdn_decode": ("decode",)}
PHASES_OF_ALL = ("prefill", "decode")
RANGE = "kc::{}"  # the profiler range of a region's stock implementation


class PatchError(Exception):
    """The model's code is not the pattern a region replaces, or a package fits no region."""


class Call(NamedTuple):
    """A region call's positional and keyword arguments (the gdn regions take the model's keywords)."""

    args: tuple
    kwargs: dict


def call(region, x):
    """``region(*x)``, or ``region(*x.args, **x.kwargs)`` for a :class:`Call`."""
    if isinstance(x, Call):
        return region(*x.args, **x.kwargs)
    return region(*x)


def first_shape(x) -> list[int]:
    return list((x.args if isinstance(x, Call) else x)[0].shape)


class Pending(NamedTuple):
    """The residual stream with its add not done yet: ``stream = residual + delta``."""

    delta: torch.Tensor
    residual: torch.Tensor


# -- which region an exported op replaces --------------------------------------------------------------
def kind_of(definition: dict) -> str:
    """The region kind of an exported op, from its definition's interface (op_type, tensor ranks, outputs)."""
    try:
        g = G.kind_of(definition)
    except G.GDNPatchError as e:
        raise PatchError(str(e)) from None
    if g is not None:
        return g
    ins = definition["inputs"]
    ranks = [len(s["shape"]) for s in ins.values() if s.get("shape") is not None]
    scalars = [n for n, s in ins.items() if s.get("shape") is None]
    n_out = len(definition["outputs"])
    op_type = definition.get("op_type")
    if op_type == "rmsnorm" and ranks == [2, 1] and len(scalars) == 1 and n_out == 1:
        return "rmsnorm"
    if op_type == "rmsnorm" and ranks == [2, 2, 1] and len(scalars) == 1 and n_out == 2:
        return "fused_add_rmsnorm"
    if op_type == "silu_mul" and ranks == [2] and not scalars and n_out == 1:
        return "silu_mul"
    raise PatchError(f"definition {definition.get('name')!r} (op_type {op_type!r}, tensor ranks {ranks}, "
                     f"{len(scalars)} scalar(s), {n_out} output(s)) fits no region e2e can replace: "
                     "rmsnorm(x[T,H], weight[H], eps) -> out, fused_add_rmsnorm(x[T,H], residual[T,H], weight[H], "
                     "eps) -> (out, residual_out), silu_mul(x[T,2I]) -> out[T,I], or the gated delta rule (gdn_prefill, "
                     "gdn_decode)")


# -- the code patterns a region reproduces ---------------------------------------------------------------
_LAYER = """
residual = hidden_states
hidden_states = self.input_layernorm(hidden_states)
hidden_states, _ = self.self_attn(ANY)
hidden_states = residual + hidden_states
residual = hidden_states
hidden_states = self.post_attention_layernorm(hidden_states)
hidden_states = self.mlp(hidden_states)
hidden_states = residual + hidden_states
return hidden_states
"""
_NORM = """
input_dtype = hidden_states.dtype
hidden_states = hidden_states.to(torch.float32)
variance = hidden_states.pow(2).mean(-1, keepdim=True)
hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
return self.weight * hidden_states.to(input_dtype)
"""
# Qwen3-Next's decoder layer: a gated delta-net (linear attention) or full attention token mixer by
# block_type, a dense or MoE MLP. The linear_attn call is compared keyword by keyword (the restructured
# layer reproduces it); self_attn's keywords are not (they pass through whole, as for Llama).
_HYBRID_LAYER = """
residual = hidden_states
hidden_states = self.input_layernorm(hidden_states)
if self.block_type == "linear_attention":
    hidden_states = self.linear_attn(hidden_states=hidden_states, cache=cache, attention_mask=attention_mask, **kwargs)
elif self.block_type == "full_attention":
    hidden_states, _ = self.self_attn(ANY)
hidden_states = residual + hidden_states
residual = hidden_states
hidden_states = self.post_attention_layernorm(hidden_states)
hidden_states = self.mlp(hidden_states)
if isinstance(hidden_states, tuple):
    hidden_states, _ = hidden_states
hidden_states = residual + hidden_states
return hidden_states
"""
# the hybrid layer's forward(self, hidden_states, <named>, **kwargs): the restructured layer hands the
# named parameters on as that forward does
_HYBRID_NAMED = ("position_embeddings", "attention_mask", "position_ids", "cache")
_HYBRID_PARAMS = ("self", "hidden_states", *_HYBRID_NAMED, "kwargs")
# the offset ("1 + weight") RMSNorm of Gemma and Qwen3-Next: float32 throughout, one rounding at the end
_OFFSET_NORM = """
output = self._norm(x.float())
output = output * (1.0 + self.weight.float())
return output.type_as(x)
"""
_OFFSET_NORM_INNER = """
return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
"""


class NormForm(NamedTuple):
    name: str  # what the record calls it
    methods: tuple[tuple[str, str], ...]  # (method, pattern) that must all match
    eps: str  # the attribute holding epsilon
    offset: bool  # the scale is 1 + weight


NORM_FORMS = (
    NormForm("weight", (("forward", _NORM),), "variance_epsilon", False),
    NormForm("1 + weight", (("forward", _OFFSET_NORM), ("_norm", _OFFSET_NORM_INNER)), "eps", True),
)
_MLP = """
down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
return down_proj
"""


def _statements(src: str) -> list[ast.stmt]:
    body = ast.parse(src).body
    if len(body) == 1 and isinstance(body[0], ast.FunctionDef):
        body = body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring
    return body


def _norm(stmt: ast.stmt) -> str:
    """ast.dump with the arguments of a call to ``ANY`` in the pattern, or of ``self.self_attn(...)``
    in the model, left out: the attention's keywords differ between transformers versions."""
    stmt = ast.parse(ast.unparse(stmt)).body[0]  # a copy
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "self.self_attn":
            node.args, node.keywords = [], []
    return ast.dump(stmt)


_HINT = "patch only Llama/Qwen2/Qwen3/Mistral/Gemma or Qwen3-Next decoders (transformers 5.x), or leave this kernel out"


def check_code(cls: type, method: str, pattern: str, what: str, hint: str = _HINT) -> None:
    """Raise PatchError unless ``cls.method``'s body is ``pattern`` statement by statement."""
    fn = getattr(cls, method, None)
    if fn is None:
        raise PatchError(f"{cls.__name__} has no method {method}: it is not the {what} pattern e2e replaces")
    try:
        src, where = read_source(fn)
    except (OSError, TypeError) as e:
        raise PatchError(f"{cls.__name__}.{method}: its source cannot be read ({e}), so e2e cannot check that it "
                         f"is the {what} pattern it replaces") from None
    got = _statements(src)
    want = _statements(pattern.replace("(ANY)", "()"))
    for i, w in enumerate(want):
        if i >= len(got) or _norm(got[i]) != _norm(w):
            line = ast.unparse(got[i]).splitlines()[0] if i < len(got) else "(end of the method)"
            raise PatchError(f"{cls.__name__}.{method} ({where}) is not the {what} pattern e2e replaces: statement "
                             f"{i + 1} is `{line}`, expected `{ast.unparse(w).splitlines()[0]}`; {hint}")
    if len(got) > len(want):
        raise PatchError(f"{cls.__name__}.{method} ({where}) has {len(got) - len(want)} statement(s) more than the "
                         f"{what} pattern e2e replaces (`{ast.unparse(got[len(want)]).splitlines()[0]}`)")


def _is_norm(m) -> bool:
    return isinstance(m, torch.nn.Module) and type(m).__name__.endswith("RMSNorm")


def norm_form(norm: torch.nn.Module) -> NormForm:
    """The form of an RMSNorm module's code, or PatchError naming its class and, per form, what differs."""
    why = []
    for form in NORM_FORMS:
        try:
            for method, pattern in form.methods:
                check_code(type(norm), method, pattern, f"RMSNorm ({form.name})")
        except PatchError as e:
            why.append(str(e))
            continue
        if not isinstance(getattr(norm, form.eps, None), float):
            raise PatchError(f"{type(norm).__name__} has no float {form.eps}")
        return form
    raise PatchError(f"{type(norm).__name__} is neither RMSNorm form e2e replaces (`weight * rmsnorm(x)` as Llama's, "
                     "or `rmsnorm(x) * (1 + weight)` in float32 as Gemma's and Qwen3-Next's), so no exported rmsnorm "
                     "computes it faithfully: " + " | ".join(why))


def offset_scale(weight: torch.Tensor) -> torch.Tensor:
    """An offset norm's scale for the kernel: ``1 + weight`` as the model computes it (float32), rounded
    once to the weight's dtype (the dtype the kernel was validated for)."""
    with torch.no_grad():
        return (1.0 + weight.detach().float()).to(weight.dtype)


# -- the regions: stock and kernel implementations -------------------------------------------------------
class _Region(torch.nn.Module):
    kind = ""

    def __init__(self, op=None):
        super().__init__()
        self.op = op  # None: the stock implementation
        self.annotate = False  # set by annotated(): a profiler range around the stock implementation

    def forward(self, *args):
        if self.op is not None:
            return self.kernel(*args)
        if not self.annotate:
            return self.stock(*args)
        with torch.profiler.record_function(RANGE.format(self.kind)):
            return self.stock(*args)


class _NormRegion(_Region):
    """A region around an RMSNorm module: the stock implementation calls the module; the kernel gets
    ``weight``: the norm's own weight (Llama's form) or ``1 + weight`` (the offset form), made once here."""

    def __init__(self, norm: torch.nn.Module, op=None):
        super().__init__(op)
        self.form = norm_form(norm)
        self.norm, self.eps = norm, getattr(norm, self.form.eps)
        self.register_buffer("scale", offset_scale(norm.weight) if self.form.offset else None, persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        """The weight argument of the exported op."""
        return self.norm.weight if self.scale is None else self.scale


class RMSNormRegion(_NormRegion):
    kind = "rmsnorm"

    def stock(self, x):
        return self.norm(x)

    def kernel(self, x):
        shape = x.shape
        return self.op(x.reshape(-1, shape[-1]), self.weight, self.eps).view(shape)


class AddRMSNormRegion(_NormRegion):
    """``(delta, residual) -> (rmsnorm(residual + delta), residual + delta)``."""

    kind = "fused_add_rmsnorm"

    def stock(self, delta, residual):
        stream = residual + delta  # transformers' order: `hidden_states = residual + hidden_states`
        return self.norm(stream), stream

    def kernel(self, delta, residual):
        shape = delta.shape
        out, stream = self.op(delta.reshape(-1, shape[-1]), residual.reshape(-1, shape[-1]), self.weight, self.eps)
        return out.view(shape), stream.view(shape)


class FinalAddRMSNorm(torch.nn.Module):
    """The model's final norm after restructured layers: takes the last layer's Pending pair."""

    def __init__(self, region: AddRMSNormRegion):
        super().__init__()
        self.region = region

    def forward(self, hidden_states):
        if not isinstance(hidden_states, Pending):
            raise PatchError("the final norm got a tensor where a restructured layer's Pending pair was expected: "
                             "the model's decoder loop is not the one e2e patched")
        return self.region(hidden_states.delta, hidden_states.residual)[0]


class GateUpSiluMul(_Region):
    """``act_fn(gate_proj(x)) * up_proj(x)``; the kernel form is ``silu_mul(gate_up_proj(x))`` with the two
    projections merged into one (the region includes them: the kernel needs ``[gate | up]`` in one tensor)."""

    kind = "silu_mul"

    def __init__(self, mlp: torch.nn.Module, op=None):
        super().__init__(op)
        if op is None:
            self.gate_proj, self.up_proj, self.act_fn = mlp.gate_proj, mlp.up_proj, mlp.act_fn
        else:  # the merged projection replaces both (the patched model does not keep two copies)
            g, u = mlp.gate_proj, mlp.up_proj
            merged = torch.nn.Linear(g.in_features, g.out_features + u.out_features, bias=g.bias is not None,
                                     device=g.weight.device, dtype=g.weight.dtype)
            with torch.no_grad():
                merged.weight.copy_(torch.cat([g.weight, u.weight]))
                if g.bias is not None:
                    merged.bias.copy_(torch.cat([g.bias, u.bias]))
            self.gate_up_proj = merged

    def stock(self, x):
        return self.act_fn(self.gate_proj(x)) * self.up_proj(x)

    def kernel(self, x):
        gu = self.gate_up_proj(x)
        return self.op(gu.reshape(-1, gu.shape[-1])).view(*x.shape[:-1], -1)


class SiluMulMLP(torch.nn.Module):
    """``down_proj(region(x))``: a transformers gated MLP around a :class:`GateUpSiluMul` region."""

    def __init__(self, mlp: torch.nn.Module, op=None):
        super().__init__()
        self.act, self.down_proj = GateUpSiluMul(mlp, op), mlp.down_proj

    def forward(self, x):
        return self.down_proj(self.act(x))


class ResidualStreamLayer(torch.nn.Module):
    """A decoder layer whose residual adds the next norm performs (vLLM's layout): it takes the residual
    stream as a tensor (the first layer) or a :class:`Pending` pair, and returns a Pending pair
    ``(mlp output, residual)``. ``form`` is the layer's pattern: ``"llama"`` (one ``self_attn``) or
    ``"qwen3_next"`` (``linear_attn`` or ``self_attn`` by ``block_type``, called as that layer calls them)."""

    def __init__(self, layer: torch.nn.Module, input_norm: _Region, post_norm: AddRMSNormRegion, mlp: torch.nn.Module,
                 form: str = "llama"):
        super().__init__()
        for k, v in vars(layer).items():  # plain attributes the decoder loop may read (attention_type, ...)
            if not k.startswith("_") and k != "training":
                setattr(self, k, v)
        self.form = form
        for mixer in ("self_attn", "linear_attn"):
            if hasattr(layer, mixer):
                setattr(self, mixer, getattr(layer, mixer))
        self.input_norm, self.post_norm, self.mlp = input_norm, post_norm, mlp
        self.pending_input = isinstance(input_norm, AddRMSNormRegion)

    def _mix(self, normed, kwargs):
        if self.form == "llama":
            return self.self_attn(hidden_states=normed, **kwargs)[0]
        # Qwen3-Next: forward(hidden_states, position_embeddings, attention_mask=None, position_ids=None,
        # cache=None, **kwargs), with past_key_values renamed to cache (its deprecate_kwarg)
        if "past_key_values" in kwargs and "cache" not in kwargs:
            kwargs = {**kwargs, "cache": kwargs["past_key_values"]}
            del kwargs["past_key_values"]
        rest = {k: v for k, v in kwargs.items() if k not in _HYBRID_NAMED}
        if self.block_type == "linear_attention":
            return self.linear_attn(hidden_states=normed, cache=kwargs.get("cache"),
                                    attention_mask=kwargs.get("attention_mask"), **rest)
        return self.self_attn(hidden_states=normed, attention_mask=kwargs.get("attention_mask"),
                              position_ids=kwargs.get("position_ids"), cache=kwargs.get("cache"),
                              position_embeddings=kwargs["position_embeddings"], **rest)[0]

    def forward(self, hidden_states, **kwargs):
        if self.pending_input:
            if not isinstance(hidden_states, Pending):
                raise PatchError("a restructured layer after the first got a tensor, not the previous layer's "
                                 "Pending pair: the model's decoder loop is not the one e2e patched")
            normed, residual = self.input_norm(hidden_states.delta, hidden_states.residual)
        else:
            residual, normed = hidden_states, self.input_norm(hidden_states)
        attn = self._mix(normed, kwargs)
        normed, residual = self.post_norm(attn, residual)
        out = self.mlp(normed)
        if self.form == "qwen3_next" and isinstance(out, tuple):  # its MoE unpacking
            out, _ = out
        return Pending(out, residual)


# -- patching --------------------------------------------------------------------------------------------
def _decoder(model: torch.nn.Module):
    """(the module holding ``layers`` and ``norm``, its layers) of a *ForCausalLM."""
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList) or not _is_norm(getattr(inner, "norm", None)):
        raise PatchError(f"{type(model).__name__}: expected a decoder with .model.layers (ModuleList) and "
                         ".model.norm (an RMSNorm), as transformers' Llama/Qwen models have")
    return inner, layers


def layer_form(layer) -> str:
    """``"llama"`` or ``"qwen3_next"``: the decoder layer pattern ``layer.forward`` is, else PatchError
    (with the first statement that differs from the pattern it resembles)."""
    cls = type(layer)
    try:
        check_code(cls, "forward", _LAYER, "decoder layer")
        return "llama"
    except PatchError:
        if not (hasattr(layer, "block_type") or hasattr(layer, "linear_attn")):
            raise
    check_code(cls, "forward", _HYBRID_LAYER, "decoder layer (Qwen3-Next hybrid)")
    params = tuple(inspect.signature(cls.forward).parameters)  # what it hands on to its token mixers
    if params != _HYBRID_PARAMS:
        raise PatchError(f"{cls.__name__}.forward takes {params}, not {_HYBRID_PARAMS} as the Qwen3-Next layer "
                         "e2e restructures")
    mixer = {"linear_attention": "linear_attn", "full_attention": "self_attn"}.get(getattr(layer, "block_type", None))
    if mixer is None or not hasattr(layer, mixer):
        raise PatchError(f"{cls.__name__}: block_type {getattr(layer, 'block_type', None)!r} is neither "
                         "linear_attention (with .linear_attn) nor full_attention (with .self_attn)")
    return "qwen3_next"


def _check_layer(layer) -> str:
    form = layer_form(layer)
    for name in ("input_layernorm", "post_attention_layernorm"):
        norm = getattr(layer, name, None)
        if not _is_norm(norm):
            raise PatchError(f"{type(layer).__name__}.{name} is {type(norm).__name__}, not an RMSNorm")
        norm_form(norm)
    return form


def _check_mlp(mlp) -> None:
    check_code(type(mlp), "forward", _MLP, "gated MLP", "silu_mul replaces a dense Llama-style gated MLP (a MoE "
               "block's experts are not one), so leave this kernel out")
    act = getattr(mlp, "act_fn", None)
    if not isinstance(act, torch.nn.SiLU) and "silu" not in type(act).__name__.lower():
        raise PatchError(f"{type(mlp).__name__}.act_fn is {type(act).__name__}, not SiLU: silu_mul does not apply")


def _is_any_norm(m) -> bool:
    return not isinstance(m, _Region) and "Norm" in type(m).__name__ and isinstance(getattr(m, "weight", None), torch.Tensor)


def _left_why(name: str, norm, stream: set, kinds: set, first_input: int | None, hidden: int | None) -> str:
    """Why a norm module of the model keeps its own code."""
    cls = type(norm).__name__
    if id(norm) in stream:
        if not kinds & {"rmsnorm", "fused_add_rmsnorm"}:
            return "no rmsnorm or fused_add_rmsnorm kernel given"
        if id(norm) == first_input:
            return "the first layer's input norm has no residual add before it: only an rmsnorm kernel replaces it"
        return "not placed"
    if "Gated" in cls:
        return (f"gated norm ({cls}: rmsnorm(x) * weight, rounded, times silu(gate) in float32): no catalog task "
                "computes it (rmsnorm has no gate input)")
    width = norm.weight.shape[-1]
    where = name.rsplit(".", 1)[0] if "." in name else "the model"
    if hidden is not None and width != hidden:
        return (f"a norm over {width} channels inside {where} (hidden size {hidden}): e2e places norm regions on "
                "the residual stream only")
    return "not a residual-stream norm e2e places a region on"


def patch(model: torch.nn.Module, kernels: dict[str, object] | None = None, stock: tuple[str, ...] = (),
          gdn_function: str = "model") -> dict:
    """Place regions into ``model`` in place: kind -> op for each kind in ``kernels``, the stock
    implementation (annotatable, the same ops) for each kind in ``stock``; other code stays as it is.

    The layers are restructured (the residual stream layout) when ``fused_add_rmsnorm`` is among the
    kinds. Returns the layout and, per kind, the number of regions placed; ``norms``: every norm module
    of the model, the region that replaced it or why it was left; ``offset_scale`` when an offset
    (``1 + weight``) norm was replaced: how its scale was made and the largest rounding of it; ``gdn`` when a
    gated-delta-rule kind is placed: per linear-attention layer its regions, the function the model calls,
    and how the op's interface was adapted (``gdn.py``). ``gdn_function``: what a stock gdn region calls,
    ``model`` (the function transformers resolved: FLA's when it imports) or ``torch`` (its fallback)."""
    ops = dict(kernels or {})
    kinds = set(ops) | set(stock)
    unknown = kinds - set(KINDS)
    if unknown:
        raise PatchError(f"unknown region kind(s) {sorted(unknown)}; use {list(KINDS)}")
    gdn_ops = {k: v for k, v in ops.items() if k in G.KINDS}
    gdn_stock = tuple(k for k in stock if k in G.KINDS)
    ops = {k: v for k, v in ops.items() if k not in G.KINDS}
    stock = tuple(k for k in stock if k not in G.KINDS)
    kinds -= set(G.KINDS)
    try:
        gdn = G.patch_layers(model, gdn_ops, gdn_stock, gdn_function)
    except G.GDNPatchError as e:
        raise PatchError(str(e)) from None
    restructure = "fused_add_rmsnorm" in kinds
    inner, layers = _decoder(model)
    all_norms = [(n, m) for n, m in model.named_modules() if _is_any_norm(m)]
    stream = {id(inner.norm)} | {id(getattr(lay, a)) for lay in layers for a in ("input_layernorm",
                                                                                 "post_attention_layernorm")
                                 if hasattr(lay, a)}
    first_input = id(layers[0].input_layernorm) if len(layers) and hasattr(layers[0], "input_layernorm") else None
    forms = []
    if kinds & {"rmsnorm", "fused_add_rmsnorm"}:
        norm_form(inner.norm)
    for layer in layers:
        if kinds & {"rmsnorm", "fused_add_rmsnorm"}:
            forms.append(_check_layer(layer))
        if "silu_mul" in kinds:
            _check_mlp(layer.mlp)
    counts = dict.fromkeys(KINDS, 0)

    def region(cls, kind, module):
        counts[kind] += 1
        return cls(module, ops.get(kind))

    for i, layer in enumerate(layers):
        mlp = SiluMulMLP(layer.mlp, ops.get("silu_mul")) if "silu_mul" in kinds else layer.mlp
        counts["silu_mul"] += "silu_mul" in kinds
        if restructure:
            # the first layer's input norm has no add before it: an rmsnorm region if that kind is placed
            if i > 0:
                first = region(AddRMSNormRegion, "fused_add_rmsnorm", layer.input_layernorm)
            elif "rmsnorm" in kinds:
                first = region(RMSNormRegion, "rmsnorm", layer.input_layernorm)
            else:
                first = layer.input_layernorm
            layers[i] = ResidualStreamLayer(layer, first, region(AddRMSNormRegion, "fused_add_rmsnorm",
                                                                 layer.post_attention_layernorm), mlp, forms[i])
        else:
            if "rmsnorm" in kinds:
                layer.input_layernorm = region(RMSNormRegion, "rmsnorm", layer.input_layernorm)
                layer.post_attention_layernorm = region(RMSNormRegion, "rmsnorm", layer.post_attention_layernorm)
            layer.mlp = mlp
    if restructure:
        inner.norm = FinalAddRMSNorm(region(AddRMSNormRegion, "fused_add_rmsnorm", inner.norm))
    elif "rmsnorm" in kinds:
        inner.norm = region(RMSNormRegion, "rmsnorm", inner.norm)
    placed_norms = {id(r.norm): r for r in regions(model) if isinstance(r, _NormRegion)}
    hidden = getattr(getattr(model, "config", None), "hidden_size", None)
    norms = []
    for name, m in all_norms:
        r = placed_norms.get(id(m))
        entry = {"module": name, "class": type(m).__name__}
        if r is not None:
            entry.update(region=r.kind, scale=r.form.name)
        else:
            entry.update(region=None, left=_left_why(name, m, stream, kinds, first_input, hidden))
        norms.append(entry)
    counts.update(gdn.get("counts", {}))
    all_kinds = kinds | set(gdn.get("counts", {}))
    out = {"layout": "residual stream (each norm does the residual add before it, as vLLM runs it)" if restructure
           else "transformers' own", "layer_forms": sorted(set(forms)),
           "regions": {k: counts[k] for k in KINDS if k in all_kinds},
           "kernel_regions": sum(counts[k] for k in [*ops, *gdn_ops]), "norms": norms}
    if gdn:
        out["gdn"] = gdn
    offset = [r for r in placed_norms.values() if r.scale is not None]
    if offset:
        rel = 0.0
        for r in offset:
            exact = 1.0 + r.norm.weight.detach().float()
            nz = exact != 0
            if nz.any():
                rel = max(rel, ((r.scale.float() - exact)[nz] / exact[nz]).abs().max().item())
        out["offset_scale"] = {
            "norms": len(offset), "dtype": str(offset[0].scale.dtype).removeprefix("torch."),
            "how": "the kernel's weight is (1 + weight.float()).to(weight.dtype), made once per norm when patched; "
                   "the model multiplies by 1 + weight in float32, so the kernel's scale carries one rounding more "
                   "(none when the weight is float32); the logits comparison includes it",
            "max_rel_rounding": rel}
    return out


def regions(model: torch.nn.Module) -> list:
    return [m for m in model.modules() if isinstance(m, _Region | G.GDNRegion)]


@contextlib.contextmanager
def annotated(model: torch.nn.Module):
    """Profiler ranges (``kc::<kind>``) around every stock region of a patched model."""
    rs = regions(model)
    for r in rs:
        r.annotate = True
    try:
        yield rs
    finally:
        for r in rs:
            r.annotate = False


def region_inputs(kind: str, tokens: int, config, device: str, dtype: torch.dtype, seed: int = 0, batch: int = 1,
                  region=None):
    """Random inputs of one region call at ``tokens`` rows (the model's own shapes), for isolated timing: a
    tuple of positional arguments, for a gdn kind a :class:`Call` (``batch`` sequences of tokens / batch)."""
    if kind in G.KINDS:
        return Call(*G.region_inputs(kind, tokens, batch, config, device, dtype, seed,
                                     pre_repeated=getattr(region, "pre_repeated", False)))
    g = torch.Generator().manual_seed(seed)
    h = config.hidden_size

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(device, dtype)

    if kind == "rmsnorm":
        return (rnd(tokens, h),)
    if kind == "fused_add_rmsnorm":
        return rnd(tokens, h), rnd(tokens, h)
    if kind == "silu_mul":
        return (rnd(tokens, h),)
    raise PatchError(f"unknown region kind {kind!r}")
