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
MLP's are compared statement by statement (``ast``) with the Llama/Qwen2/Qwen3/Mistral pattern of
transformers 5.x, and a model whose code differs (Gemma's ``1 + weight`` norm, Qwen3-Next's layers)
gets an error naming the class, its file and the first statement that differs.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from typing import NamedTuple

import torch

KINDS = ("rmsnorm", "fused_add_rmsnorm", "silu_mul")
RANGE = "kc::{}"  # the profiler range of a region's stock implementation


class PatchError(Exception):
    """The model's code is not the pattern a region replaces, or a package fits no region."""


class Pending(NamedTuple):
    """The residual stream with its add not done yet: ``stream = residual + delta``."""

    delta: torch.Tensor
    residual: torch.Tensor


# -- which region an exported op replaces --------------------------------------------------------------
def kind_of(definition: dict) -> str:
    """The region kind of an exported op, from its definition's interface (op_type, tensor ranks, outputs)."""
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
                     "eps) -> (out, residual_out), or silu_mul(x[T,2I]) -> out[T,I]")


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


def check_code(cls: type, method: str, pattern: str, what: str) -> None:
    """Raise PatchError unless ``cls.method``'s body is ``pattern`` statement by statement."""
    fn = getattr(cls, method)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        where = f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
    except (OSError, TypeError) as e:
        raise PatchError(f"{cls.__name__}.{method}: its source cannot be read ({e}), so e2e cannot check that it "
                         f"is the {what} pattern it replaces") from None
    got = _statements(src)
    want = _statements(pattern.replace("self.self_attn(ANY)", "self.self_attn()"))
    for i, w in enumerate(want):
        if i >= len(got) or _norm(got[i]) != _norm(w):
            line = ast.unparse(got[i]).splitlines()[0] if i < len(got) else "(end of the method)"
            raise PatchError(f"{cls.__name__}.{method} ({where}) is not the {what} pattern e2e replaces: statement "
                             f"{i + 1} is `{line}`, expected `{ast.unparse(w).splitlines()[0]}`; patch only "
                             "Llama/Qwen2/Qwen3/Mistral-style decoders (transformers 5.x), or leave this kernel out")
    if len(got) > len(want):
        raise PatchError(f"{cls.__name__}.{method} ({where}) has {len(got) - len(want)} statement(s) more than the "
                         f"{what} pattern e2e replaces (`{ast.unparse(got[len(want)]).splitlines()[0]}`)")


def _is_norm(m) -> bool:
    return isinstance(m, torch.nn.Module) and type(m).__name__.endswith("RMSNorm")


def _eps(norm: torch.nn.Module) -> float:
    eps = getattr(norm, "variance_epsilon", None)
    if not isinstance(eps, float):
        raise PatchError(f"{type(norm).__name__} has no float variance_epsilon")
    return eps


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


class RMSNormRegion(_Region):
    kind = "rmsnorm"

    def __init__(self, norm: torch.nn.Module, op=None):
        super().__init__(op)
        self.norm, self.eps = norm, _eps(norm)

    def stock(self, x):
        return self.norm(x)

    def kernel(self, x):
        shape = x.shape
        return self.op(x.reshape(-1, shape[-1]), self.norm.weight, self.eps).view(shape)


class AddRMSNormRegion(_Region):
    """``(delta, residual) -> (rmsnorm(residual + delta), residual + delta)``."""

    kind = "fused_add_rmsnorm"

    def __init__(self, norm: torch.nn.Module, op=None):
        super().__init__(op)
        self.norm, self.eps = norm, _eps(norm)

    def stock(self, delta, residual):
        stream = residual + delta  # transformers' order: `hidden_states = residual + hidden_states`
        return self.norm(stream), stream

    def kernel(self, delta, residual):
        shape = delta.shape
        out, stream = self.op(delta.reshape(-1, shape[-1]), residual.reshape(-1, shape[-1]), self.norm.weight, self.eps)
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
    """A Llama/Qwen-style decoder layer whose residual adds the next norm performs (vLLM's layout):
    it takes the residual stream as a tensor (the first layer) or a :class:`Pending` pair, and returns a
    Pending pair ``(mlp output, residual)``."""

    def __init__(self, layer: torch.nn.Module, input_norm: _Region, post_norm: AddRMSNormRegion, mlp: torch.nn.Module):
        super().__init__()
        for k, v in vars(layer).items():  # plain attributes the decoder loop may read (attention_type, ...)
            if not k.startswith("_") and k != "training":
                setattr(self, k, v)
        self.self_attn, self.input_norm, self.post_norm, self.mlp = layer.self_attn, input_norm, post_norm, mlp
        self.pending_input = isinstance(input_norm, AddRMSNormRegion)

    def forward(self, hidden_states, **kwargs):
        if self.pending_input:
            if not isinstance(hidden_states, Pending):
                raise PatchError("a restructured layer after the first got a tensor, not the previous layer's "
                                 "Pending pair: the model's decoder loop is not the one e2e patched")
            normed, residual = self.input_norm(hidden_states.delta, hidden_states.residual)
        else:
            residual, normed = hidden_states, self.input_norm(hidden_states)
        attn, _ = self.self_attn(hidden_states=normed, **kwargs)
        normed, residual = self.post_norm(attn, residual)
        return Pending(self.mlp(normed), residual)


# -- patching --------------------------------------------------------------------------------------------
def _decoder(model: torch.nn.Module):
    """(the module holding ``layers`` and ``norm``, its layers) of a *ForCausalLM."""
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList) or not _is_norm(getattr(inner, "norm", None)):
        raise PatchError(f"{type(model).__name__}: expected a decoder with .model.layers (ModuleList) and "
                         ".model.norm (an RMSNorm), as transformers' Llama/Qwen models have")
    return inner, layers


def _check_layer(layer) -> None:
    check_code(type(layer), "forward", _LAYER, "decoder layer")
    for name in ("input_layernorm", "post_attention_layernorm"):
        norm = getattr(layer, name, None)
        if not _is_norm(norm):
            raise PatchError(f"{type(layer).__name__}.{name} is {type(norm).__name__}, not an RMSNorm")
        check_code(type(norm), "forward", _NORM, "RMSNorm")


def _check_mlp(mlp) -> None:
    check_code(type(mlp), "forward", _MLP, "gated MLP")
    act = getattr(mlp, "act_fn", None)
    if not isinstance(act, torch.nn.SiLU) and "silu" not in type(act).__name__.lower():
        raise PatchError(f"{type(mlp).__name__}.act_fn is {type(act).__name__}, not SiLU: silu_mul does not apply")


def patch(model: torch.nn.Module, kernels: dict[str, object] | None = None, stock: tuple[str, ...] = ()) -> dict:
    """Place regions into ``model`` in place: kind -> op for each kind in ``kernels``, the stock
    implementation (annotatable, the same ops) for each kind in ``stock``; other code stays as it is.

    The layers are restructured (the residual stream layout) when ``fused_add_rmsnorm`` is among the
    kinds. Returns the layout and, per kind, the number of regions placed."""
    ops = dict(kernels or {})
    kinds = set(ops) | set(stock)
    unknown = kinds - set(KINDS)
    if unknown:
        raise PatchError(f"unknown region kind(s) {sorted(unknown)}; use {list(KINDS)}")
    restructure = "fused_add_rmsnorm" in kinds
    inner, layers = _decoder(model)
    if kinds & {"rmsnorm", "fused_add_rmsnorm"}:
        check_code(type(inner.norm), "forward", _NORM, "RMSNorm")
    for layer in layers:
        if kinds & {"rmsnorm", "fused_add_rmsnorm"}:
            _check_layer(layer)
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
                                                                 layer.post_attention_layernorm), mlp)
        else:
            if "rmsnorm" in kinds:
                layer.input_layernorm = region(RMSNormRegion, "rmsnorm", layer.input_layernorm)
                layer.post_attention_layernorm = region(RMSNormRegion, "rmsnorm", layer.post_attention_layernorm)
            layer.mlp = mlp
    if restructure:
        inner.norm = FinalAddRMSNorm(region(AddRMSNormRegion, "fused_add_rmsnorm", inner.norm))
    elif "rmsnorm" in kinds:
        inner.norm = region(RMSNormRegion, "rmsnorm", inner.norm)
    return {"layout": "residual stream (each norm does the residual add before it, as vLLM runs it)" if restructure
            else "transformers' own", "regions": {k: counts[k] for k in KINDS if k in kinds},
            "kernel_regions": sum(counts[k] for k in ops)}


def regions(model: torch.nn.Module) -> list[_Region]:
    return [m for m in model.modules() if isinstance(m, _Region)]


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


def region_inputs(kind: str, tokens: int, config, device: str, dtype: torch.dtype, seed: int = 0) -> tuple:
    """Random inputs of one region call at ``tokens`` rows (the model's own shapes), for isolated timing."""
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
