"""The small expression language of definitions and contracts, parsed and evaluated without ``eval``.

Two dialects:

- *axis expressions* (contract bounds such as ``high = "vocab_size"``, roofline formulas, and the
  constraints that name only axes): numbers, axis names, arithmetic, comparisons, ``and``/``or``/``not``;
- *value expressions* (FlashInfer-Trace constraints over inputs): the above, plus an input's shape
  (``gemm1_weights.shape[1]``), an element of it by a constant index (``kv_indptr[-1]``) and
  ``.item()`` of that element: ``num_kv_indices == kv_indptr[-1].item()``.

Evaluation walks the tree itself: nothing in a task file can call a function other than ``.item()``,
read an attribute other than ``.shape``, or reach a builtin.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

_ARITH = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Name, ast.Load, ast.Constant,
)
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}


class NeedsValues(Exception):
    """The expression reads an input's values, and only its shape is known here."""


class Shape:
    """Stands in for an input whose shape is known (from the axes) but whose values are not drawn yet."""

    def __init__(self, name: str, shape: tuple[int, ...] | None):
        self.name, self.shape = name, shape


def _constant_index(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd) and _constant_index(node.operand)


def parse(text: str, values: bool = False) -> ast.Expression:
    """Parse an expression; ValueError naming the construct when it is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"expression {text!r} is not valid: {e.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | bool):
            raise ValueError(f"expression {text!r} has a non-numeric constant {node.value!r}")
        if isinstance(node, _ARITH):
            continue
        if values and isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
            continue
        if values and isinstance(node, ast.Subscript) and _constant_index(node.slice) and \
                isinstance(node.value, ast.Name | ast.Attribute):
            continue
        if values and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "item" and not node.args and not node.keywords:
            continue
        if values and isinstance(node, ast.Attribute) and node.attr == "item":
            continue  # the func of an .item() call, checked just above
        what = type(node).__name__
        if isinstance(node, ast.Attribute):
            what = f"attribute .{node.attr}"
        elif isinstance(node, ast.Call):
            what = f"call {ast.unparse(node.func)}()"
        allowed = ("arithmetic and comparisons over axis names, an input's .shape[k], x[k] with a constant k, "
                   "and .item()") if values else "arithmetic and comparisons over axis names"
        raise ValueError(f"expression {text!r} uses {what}, which is not allowed (allowed: {allowed})")
    return tree


def names(text: str, values: bool = False) -> set[str]:
    """Every name an expression refers to (axes, and inputs for value expressions)."""
    return {n.id for n in ast.walk(parse(text, values)) if isinstance(n, ast.Name)}


def value_names(text: str) -> set[str]:
    """Names a value expression reads other than through ``.shape`` (the caller intersects them with
    the inputs: an input named here is read by value, so the constraint needs the drawn inputs)."""
    tree = parse(text, values=True)
    shape_only = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "shape"}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in shape_only}


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ValueError(f"names {node.id!r}, which is neither an axis nor an input")
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}[type(node.op)](v)
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.BoolOp):
        vals = (_eval(v, env) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        v = _eval(node.value, env)
        shape = v.shape
        if shape is None:
            raise ValueError(f"{node.value.id} is a scalar and has no shape")
        return tuple(shape)
    if isinstance(node, ast.Subscript):
        v = _eval(node.value, env)
        if isinstance(v, Shape):
            raise NeedsValues(v.name)
        return v[_eval(node.slice, env)]
    if isinstance(node, ast.Call):
        v = _eval(node.func.value, env)
        if isinstance(v, Shape):
            raise NeedsValues(v.name)
        return v.item() if hasattr(v, "item") else v
    raise ValueError(f"cannot evaluate {type(node).__name__}")


def evaluate(text: str, env: dict[str, Any], values: bool = False) -> Any:
    """Evaluate an expression over ``env`` (axis values; for value expressions also inputs, as
    tensors or :class:`Shape`). Raises ValueError for unknown names, NeedsValues when it reads the
    values of an input given only as a Shape."""
    try:
        return _eval(parse(text, values), env)
    except (ArithmeticError, TypeError, IndexError, RuntimeError) as e:  # 1 / 0, x[5] of a 3-element input
        raise ValueError(f"expression {text!r} cannot be evaluated: {type(e).__name__}: {e}") from None
