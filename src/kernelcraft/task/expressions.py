"""The small expression language of axis expressions, parsed and evaluated without ``eval``.

*Axis expressions* are contract bounds such as ``high = "vocab_size"``, offsets totals, roofline
formulas, and the definition constraints that name only axes: numbers, axis names, arithmetic,
comparisons, ``and``/``or``/``not``. Constraints that also name inputs (``w.shape[0] == k``,
``num_kv_indices == kv_indptr[-1].item()``) extend this grammar in :mod:`kernelcraft.task.constraints`.

Evaluation walks the tree itself: nothing in a task file can call a function, read an attribute or
reach a builtin.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

ARITH_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Name, ast.Load, ast.Constant,
)
BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
          ast.Gt: operator.gt, ast.GtE: operator.ge}


def check_node(node: ast.AST, text: str) -> None:
    """ValueError unless ``node`` is arithmetic, a comparison, boolean logic, a name or a number."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | bool):
        raise ValueError(f"expression {text!r} has a non-numeric constant {node.value!r}")
    if not isinstance(node, ARITH_NODES):
        what = type(node).__name__
        if isinstance(node, ast.Attribute):
            what = f"attribute .{node.attr}"
        elif isinstance(node, ast.Call):
            what = f"call {ast.unparse(node.func)}()"
        raise ValueError(f"expression {text!r} uses {what}, which is not allowed "
                         "(allowed: arithmetic and comparisons over axis names)")


def parse(text: str) -> ast.Expression:
    """Parse an axis expression; ValueError naming the construct when it is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"expression {text!r} is not valid: {e.msg}") from None
    for node in ast.walk(tree):
        check_node(node, text)
    return tree


def names(text: str) -> set[str]:
    """Every name an axis expression refers to."""
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)}


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ValueError(f"names {node.id!r}, which is not an axis")
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}[type(node.op)](v)
    if isinstance(node, ast.BinOp):
        return BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.BoolOp):
        vals = (_eval(v, env) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env)
            if not CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError(f"cannot evaluate {type(node).__name__}")


def evaluate(text: str, env: dict[str, Any]) -> Any:
    """Evaluate an axis expression over ``env`` (axis values). ValueError for unknown names and for
    arithmetic that fails (1 / 0)."""
    try:
        return _eval(parse(text), env)
    except (ArithmeticError, TypeError) as e:
        raise ValueError(f"expression {text!r} cannot be evaluated: {type(e).__name__}: {e}") from None
