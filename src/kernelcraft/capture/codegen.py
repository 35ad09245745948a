"""A region as a program: canonical form (to merge layers and pair prefill with decode), axes, and
the reference source generated from it.

The program is the region's FX nodes with every argument made local: a node outside the region is
an input ``x<i>``, one inside a value ``v<j>``, and every int kept. Two occurrences with the same
*structure* (ops, wiring, non-int constants, input dtypes and ranks) are the same computation at
other sizes; the ints and dims that differ between the prefill and the decode occurrence become var
axes (a dim pair seen on an input names an axis; an op's size argument that differs is written as
an expression of those axes: ``seq_len``, ``2 * seq_len``, ``num_tokens * d8`` ...). With one
occurrence only (a region of one phase), every size is fixed.

The reference runs the same aten ops as the captured graph. When the judge feeds float64 inputs,
every floating dtype the graph names becomes float64 too (the dtype casts of a bf16 graph would
otherwise round the float64 reference back to bf16).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch
import torch.fx

from kernelcraft.capture.graphs import Captured
from kernelcraft.capture.regions import Region


class Unsupported(Exception):
    """A region the generated reference cannot express (the reason is the message)."""


@dataclass
class Program:
    code: list[tuple[str, tuple, dict]]  # (target expression, args tree, kwargs tree) per node
    names: list[str]  # FX node names, per instruction
    inputs: list[tuple[str, list[int]]]  # (dtype, shape) per input, in order
    input_nodes: list[str]
    outputs: list[int]  # instruction index of each output
    output_meta: list[tuple[str, list[int]]]
    struct: str = ""
    full: str = ""
    ints: list[int] = field(default_factory=list)  # every int leaf of the code, in order


def _dtype_name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _target(n: torch.fx.Node) -> str:
    t = n.target
    if isinstance(t, torch._ops.OpOverload):
        ns, name = t._schema.name.split("::")
        return f"torch.ops.{ns}.{name}.{t._overloadname}"
    if t is operator.getitem:
        return "operator.getitem"
    raise Unsupported(f"node {n.name} calls {t!r}, which a generated reference cannot name")


def program(cap: Captured, region: Region) -> Program:
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    local = {name: i for i, name in enumerate(region.nodes)}
    inputs = {name: i for i, name in enumerate(region.inputs)}

    def canon(a):
        if isinstance(a, torch.fx.Node):
            if a.name in local:
                return ("v", local[a.name])
            if a.name in inputs:
                return ("x", inputs[a.name])
            raise Unsupported(f"{a.name} is neither inside the region nor one of its inputs")
        if isinstance(a, bool):
            return ("bool", a)
        if isinstance(a, int):
            return ("int", a)
        if isinstance(a, float):
            return ("float", a)
        if a is None:
            return ("none",)
        if isinstance(a, torch.dtype):
            return ("dtype", _dtype_name(a))
        if isinstance(a, torch.device):
            return ("device",)
        if isinstance(a, torch.layout | torch.memory_format):
            return ("torch", str(a))
        if isinstance(a, str):
            return ("str", a)
        if isinstance(a, list | tuple):
            return ("list", tuple(canon(x) for x in a))
        raise Unsupported(f"an argument of type {type(a).__name__} ({a!r:.60}) cannot be written into a reference")

    code, ints = [], []
    for name in region.nodes:
        n = nodes[name]
        if n.op != "call_function":
            raise Unsupported(f"node {name} is a {n.op}, not a call")
        code.append((_target(n), canon(tuple(n.args)), {k: canon(v) for k, v in n.kwargs.items()}))

    def collect(t):
        if t[0] == "int":
            ints.append(t[1])
        elif t[0] == "list":
            for x in t[1]:
                collect(x)

    for _, args, kwargs in code:
        collect(args)
        for v in kwargs.values():
            collect(v)
    in_meta = []
    for name in region.inputs:
        v = nodes[name].meta.get("val")
        if not isinstance(v, torch.Tensor):
            raise Unsupported(f"input {name} is a {type(v).__name__}, not a tensor")
        in_meta.append((_dtype_name(v.dtype), [int(s) for s in v.shape]))
    out_meta = []
    for name in region.outputs:
        v = nodes[name].meta["val"]
        out_meta.append((_dtype_name(v.dtype), [int(s) for s in v.shape]))
    p = Program(code, list(region.nodes), in_meta, list(region.inputs), [local[o] for o in region.outputs], out_meta,
                ints=ints)

    def blank(t):
        if t[0] == "int":
            return ("int",)
        if t[0] == "list":
            return ("list", tuple(blank(x) for x in t[1]))
        return t

    struct_code = [(tg, blank(a), {k: blank(v) for k, v in kw.items()}) for tg, a, kw in code]
    p.struct = repr((struct_code, [(d, len(s)) for d, s in in_meta], p.outputs, [(d, len(s)) for d, s in out_meta]))
    p.full = repr((code, in_meta, out_meta))
    return p


# -- axes -------------------------------------------------------------------------------------------

@dataclass
class Axes:
    const: dict[str, int]
    var: dict[str, tuple[int, ...]]  # name -> value per observation
    derived: dict[str, str]  # var axis -> expression over other axes (a constraint name == expr)
    input_shapes: list[list[str]]
    output_shapes: list[list[str]]
    int_exprs: list[str | None]  # per int leaf: None keeps the literal, else an expression
    bind: dict[str, tuple[int, int]]  # var axis -> (input index, dim) it is read from


def _expr_for(vals: tuple[int, ...], var: dict[str, tuple[int, ...]], const: dict[str, int]) -> str | None:
    for a, av in var.items():
        if av == vals:
            return a
    for a, av in var.items():  # c * a
        if all(x and v % x == 0 for x, v in zip(av, vals, strict=True)):
            ratios = {v // x for x, v in zip(av, vals, strict=True)}
            if len(ratios) == 1:
                return f"{ratios.pop()} * {a}"
    names = list(var)
    for i, a in enumerate(names):  # a * b, c * a * b
        for b in names[i:]:
            prod = tuple(x * y for x, y in zip(var[a], var[b], strict=True))
            if prod == vals:
                return f"{a} * {b}"
            if all(p and v % p == 0 for p, v in zip(prod, vals, strict=True)):
                ratios = {v // p for p, v in zip(prod, vals, strict=True)}
                if len(ratios) == 1:
                    return f"{ratios.pop()} * {a} * {b}"
    for a, av in var.items():  # a + c
        diffs = {v - x for x, v in zip(av, vals, strict=True)}
        if len(diffs) == 1:
            d = diffs.pop()
            return f"{a} + {d}" if d >= 0 else f"{a} - {-d}"
    return None


def _derived_name(expr: str) -> str:
    """``2 * seq_len`` -> ``seq_len_x2``, ``a * b`` -> ``a_x_b``, ``kv_len + 1`` -> ``kv_len_plus_1``."""
    parts = [p.strip() for p in expr.split("*")]
    if len(parts) > 1 and parts[0].isdigit():
        return "_x_".join(parts[1:]) + f"_x{parts[0]}"
    if len(parts) > 1:
        return "_x_".join(parts)
    return expr.replace(" + ", "_plus_").replace(" - ", "_minus_")


def infer_axes(progs: list[Program], hints: dict[tuple[int, ...], str]) -> Axes:
    """Axes of one region seen once per observation (phase); ``hints`` names var axes by their values."""
    first = progs[0]
    const: dict[str, int] = {}
    var: dict[str, tuple[int, ...]] = {}
    bind: dict[str, tuple[int, int]] = {}
    by_vals: dict[tuple[int, ...], str] = {}

    def const_name(v: int) -> str:
        name = f"d{v}"
        const[name] = v
        return name

    in_shapes = []
    for i, (_, shape) in enumerate(first.inputs):
        names = []
        for j in range(len(shape)):
            vals = tuple(p.inputs[i][1][j] for p in progs)
            if len(set(vals)) == 1:
                names.append(const_name(vals[0]))
                continue
            if vals not in by_vals:
                base = hints.get(vals) or f"n{len(var)}"
                name = base if base not in var else f"{base}_{len(var)}"
                by_vals[vals] = name
                var[name] = vals
                bind[name] = (i, j)
            names.append(by_vals[vals])
        in_shapes.append(names)
    derived: dict[str, str] = {}

    def axis_for(vals: tuple[int, ...], what: str) -> str:
        if len(set(vals)) == 1:
            return const_name(vals[0])
        if vals in by_vals:
            return by_vals[vals]
        expr = _expr_for(vals, {k: v for k, v in var.items() if k not in derived}, const)
        if expr is None:
            raise Unsupported(f"{what} takes the values {vals} across the phases, which no expression of the "
                              f"inputs' axes {dict(var)} gives")
        name = _derived_name(expr)
        by_vals[vals] = name
        var[name] = vals
        derived[name] = expr
        return name

    out_shapes = []
    for i, (_, shape) in enumerate(first.output_meta):
        out_shapes.append([axis_for(tuple(p.output_meta[i][1][j] for p in progs), f"output {i} dim {j}")
                           for j in range(len(shape))])
    int_exprs: list[str | None] = []
    for k in range(len(first.ints)):
        vals = tuple(p.ints[k] for p in progs)
        if len(set(vals)) == 1:
            int_exprs.append(None)
            continue
        base = {a: v for a, v in var.items() if a not in derived}
        expr = next((a for a, v in var.items() if v == vals), None) or _expr_for(vals, base, const)
        if expr is None:
            raise Unsupported(f"an op's size argument takes the values {vals}, which no expression of the "
                              f"inputs' axes {dict(base)} gives")
        int_exprs.append(expr)
    return Axes(const, var, derived, in_shapes, out_shapes, int_exprs, bind)


# -- source -----------------------------------------------------------------------------------------

def _fmt(t, ints: list[str | None], pos: list[int]) -> str:
    kind = t[0]
    if kind == "x":
        return f"x{t[1]}"
    if kind == "v":
        return f"v{t[1]}"
    if kind == "int":
        k = pos[0]
        pos[0] += 1
        e = ints[k] if k < len(ints) else None
        return repr(t[1]) if e is None else f"({e})"
    if kind == "float":
        v = t[1]
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        if math.isnan(v):
            return "float('nan')"
        return repr(v)
    if kind == "bool":
        return repr(t[1])
    if kind == "none":
        return "None"
    if kind == "dtype":
        return f"_fl(torch.{t[1]})"
    if kind == "device":
        return "_dev"
    if kind == "torch":
        return t[1]
    if kind == "str":
        return repr(t[1])
    if kind == "list":
        items = [_fmt(x, ints, pos) for x in t[1]]
        return "[" + ", ".join(items) + "]"
    raise Unsupported(f"cannot write {t!r}")


def source(p: Program, axes: Axes, header: str, native: bool = False) -> str:
    """The reference's source. ``native``: the region's ops do not run in float64 (measured at capture),
    so float64 inputs are cast back to the captured dtypes and the ops run as the model runs them."""
    params = [f"x{i}" for i in range(len(p.inputs))]
    lines = ['"""' + header.strip() + '\n"""', "import operator", "", "import torch", "", "",
             f"def run({', '.join(params)}):"]
    if native:
        lines.append("    # these ops do not run in float64 (seen at capture): float64 inputs run in the captured dtypes")
        for i, (dt, _) in enumerate(p.inputs):
            if dt.startswith(("float", "bfloat")):
                lines.append(f"    x{i} = x{i}.to(torch.{dt}) if x{i}.dtype == torch.float64 else x{i}")
        lines.append("    _hi = False")
    else:
        lines += ["    # float64 inputs (the judge's reference run): every floating dtype the graph names follows",
                  f"    _hi = any(t.dtype == torch.float64 for t in ({', '.join(params)},))"]
    lines += ["    _dev = x0.device", "",
              "    def _fl(d):",
              "        return torch.float64 if _hi and d.is_floating_point else d", ""]
    for name, (i, j) in axes.bind.items():
        if name not in axes.derived:
            lines.append(f"    {name} = x{i}.shape[{j}]")
    for name, expr in axes.derived.items():
        lines.append(f"    {name} = {expr}")
    pos = [0]
    for j, (target, args, kwargs) in enumerate(p.code):
        a = [_fmt(x, axes.int_exprs, pos) for x in args[1]]
        kw = [f"{k}={_fmt(v, axes.int_exprs, pos)}" for k, v in kwargs.items()]
        lines.append(f"    v{j} = {target}({', '.join(a + kw)})  # {p.names[j]}")
    outs = [f"v{j}" for j in p.outputs]
    lines.append(f"    return {outs[0]}" if len(outs) == 1 else f"    return {', '.join(outs)}")
    return "\n".join(lines) + "\n"
