"""Regions: the parts of a captured graph that run as one operator (eager) or one kernel (compile).

A region is a set of FX nodes of one graph, its inputs (values it reads from outside: placeholders,
other regions' outputs) and outputs (values used outside it). View-like nodes that only reshape an
input are pulled into the region that reads them, so a region's inputs are the tensors as they
live in memory (a linear's weight as ``[out, in]``, not its transpose).

Compile mode follows Inductor's provenance: a generated kernel's origins, minus what extern calls
(mm, sdpa, ...) compute and minus what an earlier kernel already produced (Inductor's origins
include pointwise producers it inlined; the earlier kernel's result is read as an input here).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.fx

from kernelcraft.capture.graphs import Captured

# aten ops that only change the view of a tensor (no kernel in eager mode, none of a region's work)
VIEW_OPS = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze", "expand",
            "slice", "select", "alias", "as_strided", "split", "split_with_sizes", "unbind", "detach",
            "_reshape_alias", "lift_fresh", "unflatten", "flatten", "narrow", "diagonal", "view_as"}


def op_name(n: torch.fx.Node) -> str:
    t = n.target
    if isinstance(t, torch._ops.OpOverload):
        return t._schema.name.split("::")[-1]
    return getattr(t, "__name__", str(t))


def is_view(n: torch.fx.Node) -> bool:
    return n.op == "call_function" and (op_name(n) in VIEW_OPS)


def is_getitem(n: torch.fx.Node) -> bool:
    return n.op == "call_function" and n.target is operator.getitem


@dataclass
class Region:
    graph_id: int
    nodes: list[str]  # graph order
    inputs: list[str]
    outputs: list[str]
    kind: str  # "operator" (eager), "kernel" (Inductor-generated), "extern" (a library call Inductor kept)
    label: str  # the operator, or the kernel's name
    ms: float = 0.0  # per step
    count: int = 1  # occurrences per step merged into this region (layers with the same shapes)
    members: list[tuple[int, list[str]]] = field(default_factory=list)  # (graph, nodes) of every occurrence
    ops: list[str] = field(default_factory=list)  # the compute ops, for the label and the README
    kernel_index: int | None = None  # compile mode: index into Captured.kernels


def _graph_order(cap: Captured) -> dict[str, int]:
    return {n.name: i for i, n in enumerate(cap.gm.graph.nodes)}


def _close(cap: Captured, core: list[str]) -> list[str]:
    """``core`` plus the view chains feeding it and the getitem nodes reading its tuple outputs."""
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    keep = set(core)
    stack = list(core)
    while stack:
        n = nodes[stack.pop()]
        for a in n.all_input_nodes:
            if a.name not in keep and is_view(a):
                keep.add(a.name)
                stack.append(a.name)
        for u in n.users:
            if is_getitem(u) and u.name not in keep:
                keep.add(u.name)
    order = _graph_order(cap)
    return sorted(keep, key=order.__getitem__)


def _boundary(cap: Captured, names: list[str]) -> tuple[list[str], list[str]]:
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    inside = set(names)
    inputs: list[str] = []
    outputs: list[str] = []
    of_input: set[str] = set()  # views of an input: no work of this region
    for name in names:
        n = nodes[name]
        for a in n.all_input_nodes:
            if a.name not in inside and a.name not in inputs:
                inputs.append(a.name)
        if is_view(n) and all(a.name in inputs or a.name in of_input for a in n.all_input_nodes):
            of_input.add(name)
    for name in names:
        n = nodes[name]
        if name in of_input or isinstance(n.meta.get("val"), tuple | list):
            continue
        if not isinstance(n.meta.get("val"), torch.Tensor):
            continue
        if any(u.name not in inside for u in n.users):
            outputs.append(name)
    return inputs, outputs


def _compute_ops(cap: Captured, names: list[str]) -> list[str]:
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    ops = []
    for name in names:
        n = nodes[name]
        if n.op == "call_function" and not is_view(n) and not is_getitem(n) and op_name(n) not in ops:
            ops.append(op_name(n))
    return ops


def eager_regions(cap: Captured) -> list[Region]:
    """One region per operator that computes (views and tuple unpacking ride along)."""
    out = []
    for n in cap.gm.graph.nodes:
        if n.op != "call_function" or is_view(n) or is_getitem(n):
            continue
        names = _close(cap, [n.name])
        inputs, outputs = _boundary(cap, names)
        if not outputs:
            continue
        out.append(Region(cap.graph_id, names, inputs, outputs, "operator", f"aten.{op_name(n)}",
                          members=[(cap.graph_id, names)], ops=[op_name(n)]))
    return out


def _extern_core(cap: Captured, kernel_name: str, origins: list[str]) -> list[str]:
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    parts = kernel_name.split(".")
    op = parts[-2] if parts[-1] in ("default", "out", "Tensor", "Scalar") and len(parts) > 2 else parts[-1]
    hits = [o for o in origins if o in nodes and op_name(nodes[o]) == op]
    if hits:
        return hits[-1:] if len(hits) > 1 else hits
    real = [o for o in origins if o in nodes and not is_view(nodes[o]) and not is_getitem(nodes[o])]
    return real[-1:]


def compiled_regions(cap: Captured) -> list[Region]:
    """One region per kernel Inductor generated or called, in call order (``cap.kernels``)."""
    nodes = {n.name: n for n in cap.gm.graph.nodes}
    extern_core: dict[int, list[str]] = {}
    extern_nodes: set[str] = set()
    for i, k in enumerate(cap.kernels):
        if k.extern:
            core = _extern_core(cap, k.name, k.nodes)
            extern_core[i] = core
            extern_nodes.update(core)
    owned: set[str] = set()
    out = []
    for i, k in enumerate(cap.kernels):
        if k.extern:
            core = extern_core[i]
        else:
            core = [o for o in k.nodes if o in nodes and o not in extern_nodes
                    and nodes[o].op == "call_function" and (is_view(nodes[o]) or o not in owned)]
            core = [o for o in core if not is_view(nodes[o])] or []
        if not core:
            continue
        names = _close(cap, core)
        owned.update(o for o in names if not is_view(nodes[o]))
        inputs, outputs = _boundary(cap, names)
        if not outputs:
            continue
        out.append(Region(cap.graph_id, names, inputs, outputs, "extern" if k.extern else "kernel", k.name,
                          members=[(cap.graph_id, names)], ops=_compute_ops(cap, names), kernel_index=i))
    return out
