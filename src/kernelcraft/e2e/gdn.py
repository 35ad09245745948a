"""The gated delta rule regions (Qwen3-Next's linear attention): ``gdn_prefill`` and ``gdn_decode``.

Where ``Qwen3NextGatedDeltaNet.forward`` calls ``torch_chunk_gated_delta_rule`` (prefill) or
``torch_recurrent_gated_delta_rule`` (decode with a cache) -- transformers' names for FLA's
``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule`` when ``fla`` imports, else its torch
fallbacks -- a patched layer calls a region instead. The layer keeps its own code: its ``forward`` is
the model's source with only those two calls redirected (``self.kc_gdn_prefill(...)`` /
``self.kc_gdn_decode(...)``, the call's own arguments plus the forward's ``a``, ``b`` and the layer's
``A_log``, ``dt_bias``), compiled once per class into a subclass. Before that, the source is checked
(``ast``): each rule called with ``use_qk_l2norm_in_kernel=True`` and ``g``/``beta`` made by exactly the
statements the op recomputes; anything else is refused naming it. Two call forms are known:

- transformers <= 5.24: each rule called once, ``g=g, beta=beta``;
- transformers 5.25: the prefill splits its tokens (``chunked_X, sequential_X = torch.tensor_split(X,
  [effective_sequence_length], dim=1)`` for q, k, v, g, beta) to keep the recurrent state after each of the last
  ``cache.get_recurrent_states_to_keep(layer_idx)`` tokens (0 unless a cache records its past, as speculative
  decoding does): the chunked rule on ``g=chunked_g``, then the recurrent rule once per kept token on
  ``g=sequential_g[:, i : i + 1, ...]``, besides the decode call on ``g=g``.

A call's ``g`` (and ``beta``) may be ``g`` itself or a part of a ``torch.tensor_split`` of it, indexed by
subscripts: the region then gets ``a`` (``b``) through the same split and subscripts. ``g`` is elementwise in
``a`` (``beta`` in ``b``) and has its shape, so the same split and indexing select the same elements.

A region's stock implementation calls the function the model would have called with the same
arguments (bit for bit the unpatched layer); its kernel implementation calls the exported op
(the task interface: ``q, k, v, state, A_log, a, dt_bias, b, [cu_seqlens,] scale -> output, new_state``)
with the adaptation :data:`ADAPTATION` states; a peer (``op_interface="model"``, e.g. FLA's functions)
gets the model's call unchanged.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys

import torch
import torch.nn.functional as F

from kernelcraft.e2e._source import read_source

KINDS = ("gdn_prefill", "gdn_decode")
CALLS = {"gdn_prefill": "torch_chunk_gated_delta_rule", "gdn_decode": "torch_recurrent_gated_delta_rule"}
ATTR = {k: f"kc_{k}" for k in KINDS}
EXTRA = ("kc_a", "kc_b", "kc_A_log", "kc_dt_bias")
# the statements of the forward that make what the op recomputes from a, b, A_log, dt_bias
_G = "g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)"
_BETA = "beta = b.sigmoid()"
_REPEAT = "query = query.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)"  # transformers 5.17
_ALLOWED_KW = {"g", "beta", "initial_state", "output_final_state", "use_qk_l2norm_in_kernel", "cu_seqlens",
               "chunk_size", "scale"}
# the gate inputs the region takes, by the name the forward's statements make from them (_G: g from a; _BETA:
# beta from b), with the same shape
_GATE_INPUT = {"g": "a", "beta": "b"}
_SPLIT = "torch.tensor_split"  # the one split of g / beta e2e follows (transformers 5.25)

ADAPTATION = [
    "gate: the model passes g = -exp(A_log.float()) * softplus(a.float() + dt_bias) (log decay, float32); the op "
    "takes A_log, a, dt_bias and computes exp(that) itself: the region hands it the layer's A_log and dt_bias "
    "widened to float32 (exact; widened once and reused by eager calls while the parameter is the same tensor with "
    "the same storage and version counter) and the forward's a (the forward's statement is checked to be exactly "
    "that)",
    "beta: the model passes beta = b.sigmoid() in the model dtype; the op computes sigmoid(b) in float32 from b: "
    "the kernel's beta lacks the model's one rounding of beta (at most 2^-9 relative in bfloat16)",
    "q/k l2 norm: the model calls with use_qk_l2norm_in_kernel=True and the op l2-normalises inside "
    "(x / sqrt(sum x^2 + 1e-6), FLA's; transformers' fallback x * rsqrt(sum x^2 + 1e-6): equal up to float32 "
    "rounding); a call with anything but True is refused",
    "scale: the model passes none (FLA's and the fallback's default head_k_dim^-0.5): the region passes "
    "head_k_dim^-0.5, or the call's scale",
    "heads: the op serves num_v_heads / num_q_heads consecutive value heads per q/k head, as the model's "
    "repeat_interleave; where the forward repeats q and k before the call (transformers 5.17) the region takes "
    "every group-th head back (exactly the originals)",
    "state: the model's recurrent state is [N, HV, K, V] float32, the op's k-last [N, HV, V, K]: the region "
    "transposes the initial state in (one copy) and returns the op's new state as a transposed view (the cache's "
    "copy_ stores it k-first); no initial state (a prefill without cache): zeros (made once per shape and reused "
    "by eager calls: the op writes none of its inputs); output_final_state=False: the op's new state is dropped",
    "packing: prefill's [B, S] tokens go to the op as B*S rows with cu_seqlens [0, S, 2S, ...] (made once per "
    "(B, S) and reused by eager calls; the call's cu_seqlens when it passes one, B = 1); chunk_size is not passed "
    "(the op chunks by itself: the same recurrence)",
    "split calls (transformers 5.25, a cache keeping intermediate recurrent states): where the forward hands a rule "
    "part of g and beta (a torch.tensor_split of them, indexed), the region gets a and b through the same split and "
    "indexing (they have g's and beta's shapes: the same elements); a call on no tokens (every token kept as an "
    "intermediate state) computes nothing and goes to the model's function",
]


class GDNPatchError(Exception):
    pass


def kind_of(definition: dict) -> str | None:
    """``gdn_prefill`` / ``gdn_decode`` for a gated-delta-rule definition e2e adapts to, None when not a gdn op,
    GDNPatchError naming what differs when a gdn op computes something the region cannot adapt to."""
    if definition.get("op_type") != "gdn":
        return None
    ins, outs = list(definition["inputs"]), list(definition["outputs"])
    name = definition.get("name", "")
    base = ["q", "k", "v", "state", "A_log", "a", "dt_bias", "b"]
    if ins == [*base, "cu_seqlens", "scale"]:
        kind = "gdn_prefill"
    elif ins == [*base, "scale"] and len(definition["inputs"]["q"]["shape"]) == 4:
        kind = "gdn_decode"
    else:
        raise GDNPatchError(f"definition {name!r}: inputs {ins} are neither gdn_prefill's (q, k, v, state, A_log, a, "
                            "dt_bias, b, cu_seqlens, scale) nor gdn_decode's (the same without cu_seqlens, q "
                            "[B, 1, H, K]): the region passes the raw gate inputs (A_log, a, dt_bias, b), not g/beta")
    if outs != ["output", "new_state"]:
        raise GDNPatchError(f"definition {name!r}: outputs {outs}, not (output, new_state)")
    tags = definition.get("tags", [])
    if "layout:k-last" not in tags:
        raise GDNPatchError(f"definition {name!r}: its state layout is not tagged layout:k-last; the region adapts "
                            "the model's [N, HV, K, V] state to k-last [N, HV, V, K] only")
    if "l2qk" not in name:
        raise GDNPatchError(f"definition {name!r} does not say q and k are l2-normalised inside the op (l2qk); the "
                            "model calls with use_qk_l2norm_in_kernel=True")
    return kind


# -- the forward: checked, then rewritten ---------------------------------------------------------------------
def _source(cls) -> tuple[ast.Module, str, object]:
    fn = cls.forward
    raw = inspect.unwrap(fn)
    try:
        src, where = read_source(fn)
    except (OSError, TypeError) as e:
        raise GDNPatchError(f"{cls.__name__}.forward: its source cannot be read ({e})") from None
    return ast.parse(src), where, raw


def _splits(tree: ast.Module) -> dict:
    """name -> (the split call, part) for each ``n0, n1, ... = torch.tensor_split(X, ...)`` of the forward."""
    out = {}
    for n in ast.walk(tree):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Tuple)
                and isinstance(n.value, ast.Call) and ast.unparse(n.value.func) == _SPLIT and n.value.args
                and isinstance(n.value.args[0], ast.Name)
                and all(isinstance(t, ast.Name) for t in n.targets[0].elts)):
            for part, t in enumerate(n.targets[0].elts):
                out[t.id] = (n.value, part)
    return out


def _bound(tree: ast.Module) -> dict:
    """name -> how many times the forward binds it (assignments, loop targets, ...)."""
    counts: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, ast.arg):
            counts[n.arg] = counts.get(n.arg, 0) + 1
    return counts


def _gate_input(expr: ast.expr, made: str, splits: dict, bound: dict) -> ast.expr | None:
    """The expression giving the gate input (``a`` for ``g``, ``b`` for ``beta``) elementwise matching ``expr``
    (a call's ``g=`` / ``beta=``), or None when ``expr`` is not ``made`` itself or a tensor_split part of it,
    indexed by subscripts without calls."""
    subs = []
    while isinstance(expr, ast.Subscript):
        if any(isinstance(n, ast.Call | ast.NamedExpr) for n in ast.walk(expr.slice)):
            return None  # the index is evaluated once more for the gate input: no calls, no bindings
        subs.append(expr.slice)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    src = _GATE_INPUT[made]
    if expr.id == made:
        root = ast.Name(src, ast.Load())
    elif expr.id in splits and bound.get(expr.id) == 1:
        call, part = splits[expr.id]
        rest = [*call.args[1:], *call.keywords]  # evaluated once more, at the call, for the gate input: the same
        # value only when no call or binding is in them and each name in them is bound once at most
        if call.args[0].id != made or any(isinstance(n, ast.Call | ast.NamedExpr) or (
                isinstance(n, ast.Name) and bound.get(n.id, 0) > 1) for r in rest for n in ast.walk(r)):
            return None
        split = ast.Call(call.func, [ast.Name(src, ast.Load()), *call.args[1:]], call.keywords)
        root = ast.Subscript(split, ast.Constant(part), ast.Load())
    else:
        return None
    for sl in reversed(subs):
        root = ast.Subscript(root, sl, ast.Load())
    return copy.deepcopy(root)  # its own nodes: the forward's (split arguments, indices) stay where they are


def _call_gates(c: ast.Call, splits: dict, bound: dict) -> dict | None:
    """``{"kc_a": expr, "kc_b": expr}`` for a rule call, or None when its g or beta is not one e2e follows."""
    kws = {k.arg: k.value for k in c.keywords if k.arg is not None}
    if "g" not in kws or "beta" not in kws:
        return None
    a = _gate_input(kws["g"], "g", splits, bound)
    b = _gate_input(kws["beta"], "beta", splits, bound)
    return None if a is None or b is None else {"kc_a": a, "kc_b": b}


def _rule_calls(tree: ast.Module) -> dict:
    calls: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in CALLS.values():
            calls.setdefault(n.func.id, []).append(n)
    return calls


def check_forward(cls) -> dict:
    """What the forward does around the rule calls, or GDNPatchError naming what differs."""
    tree, where, _ = _source(cls)
    stmts = {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Assign)}
    for want, what in ((_G, "the log decay g"), (_BETA, "beta")):
        if want not in stmts:
            raise GDNPatchError(f"{cls.__name__}.forward ({where}) does not make {what} as `{want}`: the op "
                                "recomputes it from a, b, A_log and dt_bias, so e2e cannot check it computes the same")
    bound = _bound(tree)
    for name in ("g", "beta"):
        if bound.get(name) != 1:
            raise GDNPatchError(f"{cls.__name__}.forward ({where}) binds {name} {bound.get(name, 0)} times: e2e follows "
                                f"a forward that makes {name} once (the statement the op recomputes)")
    splits, calls = _splits(tree), _rule_calls(tree)
    forms = {}
    for kind, name in CALLS.items():
        found = calls.get(name, [])
        if not found:
            raise GDNPatchError(f"{cls.__name__}.forward ({where}) does not call {name}: nothing for {kind}")
        for c in found:
            kws = {k.arg: ast.unparse(k.value) for k in c.keywords if k.arg is not None}
            gates = _call_gates(c, splits, bound) if len(c.args) == 3 else None
            if gates is None:
                raise GDNPatchError(
                    f"{cls.__name__}.forward ({where}): `{ast.unparse(c)[:160]}` is not {name}(query, key, value, "
                    f"g=..., beta=..., ...) with g and beta the forward's g and beta or parts of a {_SPLIT} of "
                    "them (indexed): the region cannot give the op the a and b they were made from")
            if kws.get("use_qk_l2norm_in_kernel") != "True":
                raise GDNPatchError(f"{cls.__name__}.forward ({where}) calls {name} with use_qk_l2norm_in_kernel="
                                    f"{kws.get('use_qk_l2norm_in_kernel')}: the exported {kind} op l2-normalises q "
                                    "and k inside (use_qk_l2norm_in_kernel=True), so it computes something else")
            extra = set(kws) - _ALLOWED_KW
            if extra:
                raise GDNPatchError(f"{cls.__name__}.forward ({where}) passes {name} {sorted(extra)}, which the "
                                    "region does not map")
            forms.setdefault(kind, []).append(f"g={kws['g']}, beta={kws['beta']}")
    split_calls = any(f != "g=g, beta=beta" for fs in forms.values() for f in fs)
    return {"pre_repeated": _REPEAT in stmts, "where": where, "calls": forms,
            "form": ("prefill split for kept intermediate recurrent states (transformers 5.25)" if split_calls
                     else "one call per rule (transformers <= 5.24)")}


class _Redirect(ast.NodeTransformer):
    """Each rule call -> ``self.kc_<kind>(...)`` with the gate inputs matching its g and beta (check_forward
    accepted each call, so ``_call_gates`` answers)."""

    def __init__(self, tree: ast.Module):
        self.splits, self.bound = _splits(tree), _bound(tree)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in CALLS.values():
            kind = next(k for k, v in CALLS.items() if v == node.func.id)
            gates = _call_gates(node, self.splits, self.bound)
            node.func = ast.Attribute(ast.Name("self", ast.Load()), ATTR[kind], ast.Load())
            exprs = (gates["kc_a"], gates["kc_b"], *(ast.parse(e, mode="eval").body for e in ("self.A_log",
                                                                                              "self.dt_bias")))
            for kw, expr in zip(EXTRA, exprs, strict=True):
                node.keywords.insert(len(node.keywords) - sum(k.arg is None for k in node.keywords),
                                     ast.keyword(kw, expr))
        return node


_SUBCLASSES: dict = {}


def redirected_class(cls) -> type:
    """A subclass of ``cls`` whose forward is ``cls.forward``'s source (its decorators included) with the two
    rule calls redirected to the regions; one per class."""
    if cls in _SUBCLASSES.values():
        return cls
    if cls not in _SUBCLASSES:
        tree, where, raw = _source(cls)
        tree = ast.fix_missing_locations(_Redirect(tree).visit(tree))
        ns = dict(raw.__globals__)
        exec(compile(tree, f"<kernelcraft e2e: {where} with the gated delta rule calls redirected>", "exec"), ns)
        sub = type(cls.__name__, (cls,), {"forward": ns["forward"], "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__ + "[kc gdn regions]"})
        _SUBCLASSES[cls] = sub
    return _SUBCLASSES[cls]


def model_function(module_cls, kind: str, which: str = "model"):
    """The function the model calls for ``kind``: ``model`` (as transformers resolved it: FLA's when ``fla``
    imported, else its torch fallback) or ``torch`` (transformers' torch fallback, unwrapped)."""
    mod = sys.modules[module_cls.__module__]
    fn = getattr(mod, CALLS[kind])
    return inspect.unwrap(fn) if which == "torch" else fn


def resolved_impl(module_cls, kind: str) -> str:
    fn = getattr(sys.modules[module_cls.__module__], CALLS[kind])
    try:
        impl = inspect.getclosurevars(fn).nonlocals.get("implementation") if hasattr(fn, "__wrapped__") else None
    except (TypeError, ValueError):
        impl = None
    if impl is None or impl is inspect.unwrap(fn):
        return "torch (transformers' fallback)"
    return f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__name__', '?')}"


def fla_functions() -> dict:
    """FLA's two functions (the peer), or GDNPatchError saying why not."""
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        raise GDNPatchError(f"peer fla: flash-linear-attention does not import ({type(e).__name__}: {e}); "
                            "pip install flash-linear-attention") from None
    return {"gdn_prefill": chunk_gated_delta_rule, "gdn_decode": fused_recurrent_gated_delta_rule}


# -- the region ---------------------------------------------------------------------------------------------
class GDNRegion(torch.nn.Module):
    """One rule call of one layer. ``fn``: the model's function (stock); ``op``: the exported op (task
    interface, adapted) or, with ``op_interface="model"``, a function called as the model calls ``fn``."""

    def __init__(self, kind: str, fn, heads: tuple[int, int], head_k_dim: int, pre_repeated: bool, op=None,
                 op_interface: str = "task"):
        super().__init__()
        self.kind, self.fn, self.op, self.op_interface = kind, fn, op, op_interface
        self.num_k_heads, self.num_v_heads = heads
        self.head_k_dim, self.pre_repeated = head_k_dim, pre_repeated
        self.annotate = False
        self.calls = 0  # calls that took the op (kernel or peer) path
        self._consts: dict = {}  # slot -> what eager calls reuse (``_const``, ``_float32``)

    def forward(self, query, key, value, **kw):
        extra = {k: kw.pop(k) for k in EXTRA}
        if self.op is None or query.shape[1] == 0:  # stock; or a call on no tokens (transformers 5.25's chunked
            # part when every token is kept as an intermediate state): nothing to compute, the model's answer
            if not self.annotate:
                return self.fn(query, key, value, **kw)
            with torch.profiler.record_function(f"kc::{self.kind}"):
                return self.fn(query, key, value, **kw)
        if not torch.compiler.is_compiling():  # (a Python counter under dynamo: a guard, a recompile per call)
            self.calls += 1
        if self.op_interface == "model":
            params = inspect.signature(self.op).parameters
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                kw = {k: v for k, v in kw.items() if k in params}
            return self.op(query, key, value, **kw)
        return self.kernel(query, key, value, extra, **kw)

    def op_args(self, query, key, value, extra, g=None, beta=None, initial_state=None, output_final_state=False,
                use_qk_l2norm_in_kernel=False, cu_seqlens=None, scale=None, chunk_size=None, **rest):
        """The exported op's arguments for the model's call (ADAPTATION)."""
        if use_qk_l2norm_in_kernel is not True:
            raise GDNPatchError(f"{self.kind}: called with use_qk_l2norm_in_kernel={use_qk_l2norm_in_kernel}; the "
                                "op l2-normalises q and k inside")
        B, S = query.shape[:2]
        group = self.num_v_heads // self.num_k_heads
        if self.pre_repeated and query.shape[2] == self.num_v_heads and group > 1:
            query, key = query[:, :, ::group], key[:, :, ::group]
        if query.shape[2] != self.num_k_heads:
            raise GDNPatchError(f"{self.kind}: q has {query.shape[2]} heads, the layer {self.num_k_heads} q/k heads")
        a, b = extra["kc_a"], extra["kc_b"]
        A_log, dt_bias = self._float32("A_log", extra["kc_A_log"]), self._float32("dt_bias", extra["kc_dt_bias"])
        HV, V, K = value.shape[2], value.shape[3], query.shape[3]
        dev = value.device
        if initial_state is None:
            shape = (B if cu_seqlens is None else cu_seqlens.numel() - 1, HV, V, K)
            state = self._const("state", (shape, dev), lambda: torch.zeros(shape, dtype=torch.float32, device=dev))
        else:
            state = initial_state.float().transpose(-1, -2).contiguous()
        scale = float(K ** -0.5 if scale is None else scale)
        if self.kind == "gdn_decode":
            if S != 1:
                raise GDNPatchError(f"gdn_decode: called on {S} tokens per sequence; the op takes one")
            return (query.contiguous(), key.contiguous(), value.contiguous(), state, A_log, a.contiguous(), dt_bias,
                    b.contiguous(), scale)
        T = B * S
        if cu_seqlens is None:
            cu_seqlens = self._const("cu_seqlens", (B, S, dev),
                                     lambda: torch.arange(0, T + 1, S, dtype=torch.int64, device=dev))
        elif B != 1:
            raise GDNPatchError(f"gdn_prefill: cu_seqlens with batch {B}; packed sequences come as batch 1")
        elif cu_seqlens.dtype is not torch.int64:
            cu_seqlens = cu_seqlens.to(torch.int64)
        return (query.reshape(T, -1, K).contiguous(), key.reshape(T, -1, K).contiguous(),
                value.reshape(T, HV, V).contiguous(), state, A_log, a.reshape(T, HV).contiguous(), dt_bias,
                b.reshape(T, HV).contiguous(), cu_seqlens, scale)

    # Tensors the op only reads (it mutates none of its arguments) that every eager call with the same key would
    # make alike: kept per region and reused. Made afresh and not kept under torch.compile (the graph makes them),
    # while a CUDA graph is being captured (the memory is the graph's, the kernels run at replay only), and when
    # the result is no plain tensor (a trace's fake or functional tensor); keys include inference mode (an
    # inference tensor is not handed to a call outside it).
    @staticmethod
    def _keep(t: torch.Tensor) -> bool:
        return type(t) is torch.Tensor and not (t.is_cuda and torch.cuda.is_current_stream_capturing())

    def _const(self, slot: str, key, make):
        """``make()``, or what it made for an earlier eager call with the same ``key``."""
        if torch.compiler.is_compiling():
            return make()
        key = (key, torch.is_inference_mode_enabled())
        hit = self._consts.get(slot)
        if hit is not None and hit[0] == key:
            return hit[1]
        t = make()
        if self._keep(t):
            self._consts[slot] = (key, t)
        return t

    def _float32(self, slot: str, p: torch.Tensor) -> torch.Tensor:
        """``p.detach().float()`` (a gate parameter widened for the op: exact), made once and reused while ``p`` is
        the same tensor with the same storage, dtype, device and version counter (an in-place change, as
        ``load_state_dict`` or ``copy_`` make, bumps the counter; a write through ``p.data`` does not and is not
        seen, as the norms' ``1 + weight`` made when their regions are placed)."""
        if torch.compiler.is_compiling() or type(p) not in (torch.Tensor, torch.nn.Parameter) or p.is_inference():
            return p.detach().float()
        key = (p._version, p.data_ptr(), p.dtype, p.device, torch.is_inference_mode_enabled())
        hit = self._consts.get(slot)
        if hit is not None and hit[0] is p and hit[1] == key:  # the entry holds p: its id is never recycled
            return hit[2]
        t = p.detach().float()
        if self._keep(t):
            self._consts[slot] = (p, key, t)
        return t

    def kernel(self, query, key, value, extra, **kw):
        args = self.op_args(query, key, value, extra, **kw)
        out, new_state = self.op(*args)
        # the model's dtype (the definition's bf16 output): the op's fake implementation is the reference,
        # which returns float32 math, so under torch.compile the traced output would be float32 otherwise
        if out.dtype is not value.dtype:
            out = out.to(value.dtype)
        if self.kind == "gdn_prefill":
            out = out.view(*query.shape[:2], *out.shape[1:])
        return out, (new_state.transpose(-1, -2) if kw.get("output_final_state") else None)


class _StockCall(torch.nn.Module):
    """A rule call no region replaces: the model's function, as called."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, query, key, value, **kw):
        for k in EXTRA:
            kw.pop(k)
        return self.fn(query, key, value, **kw)


def is_gdn_layer(m) -> bool:
    return isinstance(m, torch.nn.Module) and type(m).__name__.endswith("GatedDeltaNet")


def patch_layers(model: torch.nn.Module, ops: dict, stock: tuple = (), which: str = "model",
                 op_interface: str = "task") -> dict:
    """Place gdn regions into every gated delta-net layer of ``model``: kind -> op for kinds in ``ops``,
    the stock implementation for kinds in ``stock``, the model's call for the others."""
    kinds = set(ops) | set(stock)
    if not kinds:
        return {}
    layers = [(n, m) for n, m in model.named_modules() if is_gdn_layer(m)]
    if kinds and not layers:
        raise GDNPatchError(f"{type(model).__name__} has no gated delta-net layer (a *GatedDeltaNet module): "
                            f"nothing for {sorted(kinds)} to replace")
    out = {"layers": [], "counts": dict.fromkeys(sorted(kinds), 0)}
    for name, m in layers:
        base = next(c for c in type(m).__mro__ if c not in _SUBCLASSES.values())
        info = check_forward(base)
        sub = redirected_class(base)
        m.__class__ = sub
        entry = {"module": name, "class": base.__name__}
        for kind in KINDS:
            fn = model_function(base, kind, which)
            if kind in kinds:
                r = GDNRegion(kind, fn, (m.num_k_heads, m.num_v_heads), m.head_k_dim, info["pre_repeated"],
                              ops.get(kind), op_interface)
                setattr(m, ATTR[kind], r)
                out["counts"][kind] += 1
                entry[kind] = "kernel" if kind in ops else "stock"
            else:
                setattr(m, ATTR[kind], _StockCall(fn))
                entry[kind] = "the model's function"
        out["layers"].append(entry)
    if layers:
        out["model_function"] = {k: resolved_impl(type(layers[0][1]).__mro__[1], k) for k in KINDS}
        out["stock_function"] = which
        info = check_forward(type(layers[0][1]).__mro__[1])
        out["q_k_repeated_before_the_call"] = info["pre_repeated"]
        out["forward_form"], out["rule_calls"] = info["form"], info["calls"]
    if ops and op_interface == "task":
        out["adaptation"] = ADAPTATION
    return out


def region_inputs(kind: str, tokens: int, batch: int, config, device: str, dtype, seed: int = 0,
                  final_state: bool | None = None, pre_repeated: bool = False) -> tuple[tuple, dict]:
    """(args, kwargs) of one model call of the rule at ``tokens`` rows, made as the model makes them
    (g and beta by the forward's statements), for isolated timing and the fit check."""
    gen = torch.Generator().manual_seed(seed)
    H, HV = config.linear_num_key_heads, config.linear_num_value_heads
    K, V = config.linear_key_head_dim, config.linear_value_head_dim
    S = 1 if kind == "gdn_decode" else max(1, tokens // batch)

    def rnd(*shape, std=1.0, dt=dtype):
        return (torch.randn(*shape, generator=gen) * std).to(device, dt)

    q, k, v = rnd(batch, S, H, K), rnd(batch, S, H, K), rnd(batch, S, HV, V)
    if pre_repeated and HV != H:
        q, k = q.repeat_interleave(HV // H, dim=2), k.repeat_interleave(HV // H, dim=2)
    a, b = rnd(batch, S, HV), rnd(batch, S, HV, std=2.0)
    A_log = torch.log(torch.empty(HV).uniform_(1.0, 16.0, generator=gen)).to(device, dtype)
    dt_bias = torch.empty(HV).uniform_(-6.9, -2.25, generator=gen).to(device, dtype)
    g = -A_log.float().exp() * F.softplus(a.float() + dt_bias)  # the forward's statements
    beta = b.sigmoid()
    state = rnd(batch, HV, K, V, std=0.1, dt=torch.float32) if kind == "gdn_decode" else None
    final = (kind == "gdn_decode") if final_state is None else final_state
    kw = {"g": g, "beta": beta, "initial_state": state, "output_final_state": final, "use_qk_l2norm_in_kernel": True,
          "kc_a": a, "kc_b": b, "kc_A_log": A_log, "kc_dt_bias": dt_bias}
    return (q, k, v), kw
