"""What a definition's ``constraints`` say, read for drawing shapes and inputs (the one place
constraints are classified, parsed and evaluated).

FlashInfer-Trace constraints are Python expressions. Most relate axes (``two_i == 2 *
intermediate_size``, ``k <= vocab_size``); some name inputs, in terms of axes or of other inputs.
Three kinds:

- an *axis constraint* names axes only (:mod:`kernelcraft.task.expressions`' grammar); it is checked
  on every workload and holdout shape;
- a *shape constraint* reads inputs only through ``.shape`` (``w.shape[0] == k``): it follows from
  the axes, and is checked with them (:meth:`Definition.violated_constraints`);
- a *value constraint* reads an input's values (``num_kv_indices == kv_indptr[-1].item()``,
  ``h.min() >= 0``, ``0 <= h < 16``): checked on every set of inputs made for a workload, drawn or
  from the task's own generator (:mod:`kernelcraft.task.inputs`), which also reads simple bounds out
  of it for its default draws: ``x >= a``, ``x < b``, ``a <= x < b``, ``x.min() >= a``,
  ``x.max() < b`` with ``a``, ``b`` arithmetic over axes.

Constraints that name inputs may use, beyond the axis grammar, ``.shape``, indexing by integers or
slices and the methods ``item min max sum numel abs all any`` without arguments; a comparison of
tensors holds when it holds for every element. Nothing else is evaluated.

For holdout shapes (:mod:`kernelcraft.gauntlet.holdout`):

- ``axis_bounds``: per var axis, the closed range its one-axis comparisons with constants allow
  (``n >= 1``, ``n <= 32768``, ``n % 16 == 0`` is left to the final check).
- ``derived_axes``: an equality ``name == expression`` whose left side (else right side) is a bare
  var axis defines that axis from the others (``two_i == 2 * intermediate_size``, ``nf == nx // 2 +
  1``); holdouts compute it instead of drawing it, so a draw that moves ``nx`` keeps ``nf`` right.
"""

from __future__ import annotations

import ast
import functools
import math
from typing import TYPE_CHECKING, Any

from kernelcraft.task import expressions

if TYPE_CHECKING:
    from kernelcraft.task.definition import Definition

_METHODS = frozenset({"item", "min", "max", "sum", "numel", "abs", "all", "any"})
_VALUE_EXTRA_NODES = (ast.Subscript, ast.Slice, ast.Tuple, ast.Attribute, ast.Call)
_ALLOWED = (f"arithmetic and comparisons over axis names, an input's .shape, indexing, and the methods "
            f"{sorted(_METHODS)} without arguments")


# Constraints are classified every time inputs are made (each timed call of a candidate draws fresh
# ones: a parse per constraint per input was ~70% of make_inputs, 0.2 of 0.28 ms on the CPU): the
# names of an expression are a function of its text, read once.
@functools.lru_cache(maxsize=4096)
def names(text: str) -> frozenset[str]:
    """Every bare name a constraint refers to (axes and inputs), whatever its grammar."""
    return frozenset(n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name))


def parse_value_constraint(text: str) -> ast.Expression:
    """The axis grammar plus ``.shape``, indexing and the allowed no-argument methods; ValueError
    (naming the construct, "not allowed") otherwise."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"constraint {text!r} is not a Python expression: {e.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS) or node.args or node.keywords:
                raise ValueError(f"constraint {text!r} calls {ast.unparse(node.func)}(...), which is not allowed "
                                 f"(allowed: {_ALLOWED})")
        elif isinstance(node, ast.Attribute):
            if node.attr not in _METHODS and node.attr != "shape":
                raise ValueError(f"constraint {text!r} reads attribute {node.attr!r}, which is not allowed "
                                 f"(allowed: {_ALLOWED})")
        elif not isinstance(node, _VALUE_EXTRA_NODES):
            expressions.check_node(node, text)
    return tree


@functools.lru_cache(maxsize=4096)
def value_names(text: str) -> frozenset[str]:
    """Names a constraint reads other than through ``.shape``."""
    tree = ast.parse(text, mode="eval")
    shape_only = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "shape"}
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in shape_only)


def _inputs_only(d: Definition) -> set[str]:
    # A name that is an axis means the axis, also where an input has the same name (topk's k).
    return set(d.inputs) - set(d.axes)


def is_value_constraint(d: Definition, text: str) -> bool:
    """Reads the values of an input: checked on the inputs made, not on axes."""
    return bool(value_names(text) & _inputs_only(d))


def is_shape_constraint(d: Definition, text: str) -> bool:
    """Names inputs only through ``.shape``: follows from the axes."""
    return not is_value_constraint(d, text) and bool(names(text) & _inputs_only(d))


def axis_constraints(d: Definition) -> list[str]:
    """Constraints over axis names only."""
    return [c for c in d.constraints if not names(c) & _inputs_only(d)]


def shape_constraints(d: Definition) -> list[str]:
    return [c for c in d.constraints if is_shape_constraint(d, c)]


def value_constraints(d: Definition) -> list[str]:
    return [c for c in d.constraints if is_value_constraint(d, c)]


# -- evaluation of constraints that name inputs ----------------------------------------------------
class Shape:
    """Stands in for an input whose shape is known (from the axes) but whose values are not drawn."""

    def __init__(self, name: str, shape: tuple[int, ...] | None):
        self.name, self.shape = name, shape


def _truth(v: Any) -> bool:
    if hasattr(v, "all") and hasattr(v, "numel"):  # a tensor: every element
        return bool(v.all())
    return bool(v)


def _values(v: Any, node: ast.AST) -> Any:
    if isinstance(v, Shape):
        raise ValueError(f"reads the values of input {v.name!r}, which are not drawn here")
    return v


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
        v = _values(_eval(node.operand, env), node)
        if isinstance(node.op, ast.Not):
            return not _truth(v)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp):
        return expressions.BINOPS[type(node.op)](_values(_eval(node.left, env), node),
                                                 _values(_eval(node.right, env), node))
    if isinstance(node, ast.BoolOp):
        values = (_truth(_values(_eval(v, env), node)) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _values(_eval(node.left, env), node)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _values(_eval(comp, env), node)
            if not _truth(expressions.CMPOPS[type(op)](left, right)):
                return False
            left = right
        return True
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        shape = _eval(node.value, env).shape
        if shape is None:
            raise ValueError(f"{ast.unparse(node.value)} is a scalar and has no shape")
        return tuple(shape)
    if isinstance(node, ast.Subscript):
        return _values(_eval(node.value, env), node)[_index(node.slice, env)]
    if isinstance(node, ast.Call):  # parse_value_constraint allowed only no-argument methods
        v = _values(_eval(node.func.value, env), node)
        if node.func.attr == "item" and not hasattr(v, "item"):
            return v  # a Python number (a scalar input)
        return getattr(v, node.func.attr)()
    raise ValueError(f"cannot evaluate {type(node).__name__}")


def _index(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Slice):
        return slice(*(None if p is None else int(_eval(p, env)) for p in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Tuple):
        return tuple(_index(e, env) for e in node.elts)
    return int(_eval(node, env))


def _broken(constraints: list[str], env: dict[str, Any]) -> list[str]:
    bad = []
    for c in constraints:
        try:
            ok = _truth(_eval(parse_value_constraint(c), env))
        except Exception as e:  # noqa: BLE001 - an IndexError on an empty tensor is a violation too
            bad.append(f"{c} (cannot be evaluated on these inputs: {e})")
            continue
        if not ok:
            bad.append(c)
    return bad


def violated_values(d: Definition, axes: dict[str, int], inputs: dict[str, Any]) -> list[str]:
    """The value constraints these inputs break (a constraint that cannot be evaluated counts)."""
    return _broken(value_constraints(d), {**axes, **inputs})


def violated_shapes(d: Definition, axes: dict[str, int]) -> list[str]:
    """The shape constraints these axis values break (``w.shape[0] == k``)."""
    env: dict[str, Any] = {n: Shape(n, d.shape(s, axes)) for n, s in d.inputs.items()}
    return _broken(shape_constraints(d), {**env, **axes})


# -- bounds read out of simple comparisons ---------------------------------------------------------
def _subject(node: ast.AST) -> tuple[str, str] | None:
    """``x`` -> (x, "all"); ``x.min()`` -> (x, "min"); ``x.max()`` -> (x, "max")."""
    if isinstance(node, ast.Name):
        return node.id, "all"
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("min", "max")
            and isinstance(node.func.value, ast.Name)):
        return node.func.value.id, node.func.attr
    return None


def _constant(node: ast.AST, axes: dict[str, int]) -> float | None:
    """The value of an expression over axes and numbers only; None if it reads anything else."""
    text = ast.unparse(node)
    try:
        if expressions.names(text) - set(axes):
            return None
        return float(expressions.evaluate(text, axes))
    except (ValueError, SyntaxError):
        return None


def _comparisons(text: str) -> list[tuple[ast.AST, ast.cmpop, ast.AST]]:
    """The pairwise comparisons a constraint asserts (through ``and`` and chains)."""
    tree = ast.parse(text, mode="eval").body
    out: list[tuple[ast.AST, ast.cmpop, ast.AST]] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for v in node.values:
                walk(v)
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                out.append((left, op, right))
                left = right

    walk(tree)
    return out


_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}


class Bounds:
    """A closed/open interval; ``None`` for an unbounded side."""

    def __init__(self) -> None:
        self.low: float | None = None
        self.high: float | None = None
        self.low_strict = self.high_strict = False

    def add(self, op: type, value: float) -> None:
        if op in (ast.Gt, ast.GtE, ast.Eq) and (self.low is None or value >= self.low):
            strict = op is ast.Gt
            self.low_strict = strict if self.low is None or value > self.low else (self.low_strict or strict)
            self.low = value
        if op in (ast.Lt, ast.LtE, ast.Eq) and (self.high is None or value <= self.high):
            strict = op is ast.Lt
            self.high_strict = strict if self.high is None or value < self.high else (self.high_strict or strict)
            self.high = value

    def int_range(self) -> tuple[int | None, int | None]:
        """[low, high) over the integers."""
        low = None if self.low is None else math.floor(self.low) + 1 if self.low_strict else math.ceil(self.low)
        high = None if self.high is None else math.ceil(self.high) if self.high_strict else math.floor(self.high) + 1
        return low, high

    def __bool__(self) -> bool:
        return self.low is not None or self.high is not None


def _bounds_of(constraints: list[str], name: str, axes: dict[str, int], subjects: tuple[str, ...]) -> Bounds:
    b = Bounds()
    for c in constraints:
        for left, op, right in _comparisons(c):
            for subj_node, other, o in ((left, right, type(op)), (right, left, _FLIP.get(type(op)))):
                if o is None:
                    continue
                subj = _subject(subj_node)
                if subj is None or subj[0] != name or subj[1] not in subjects:
                    continue
                value = _constant(other, axes)
                if value is None:
                    continue
                # x.min() >= a bounds every element from below; x.max() < b from above.
                if subj[1] == "min" and o not in (ast.Gt, ast.GtE):
                    continue
                if subj[1] == "max" and o not in (ast.Lt, ast.LtE):
                    continue
                b.add(o, value)
    return b


def input_bounds(d: Definition, name: str, axes: dict[str, int]) -> Bounds:
    """Element bounds on input ``name`` that its value constraints state in terms of axes."""
    return _bounds_of(value_constraints(d), name, axes, ("all", "min", "max"))


def axis_bounds(d: Definition) -> dict[str, tuple[int, int | None]]:
    """Per var axis, [low, high] (inclusive; high None when unbounded) from comparisons with constants."""
    consts = {n: a.value for n, a in d.axes.items() if a.type == "const"}
    out = {}
    for axis in d.var_axes:
        b = _bounds_of(axis_constraints(d), axis, consts, ("all",))
        low, high = b.int_range()
        out[axis] = (max(low if low is not None else 1, 0), None if high is None else high - 1)
    return out


def derived_axes(d: Definition) -> dict[str, str]:
    """Var axes an equality defines from other axes, in an order where each one's inputs come first."""
    var = set(d.var_axes)
    found: dict[str, str] = {}
    for c in axis_constraints(d):
        tree = expressions.parse(c).body
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.Eq)):
            continue
        left, right = tree.left, tree.comparators[0]
        for target, expr in ((left, right), (right, left)):
            if isinstance(target, ast.Name) and target.id in var and target.id not in found:
                uses = expressions.names(ast.unparse(expr))
                if target.id not in uses and uses <= set(d.axes):
                    found[target.id] = ast.unparse(expr)
                    break
    # Order so that a derived axis computed from another derived axis comes after it; drop cycles.
    ordered: dict[str, str] = {}
    pending = dict(found)
    while pending:
        ready = [a for a, e in pending.items() if not (expressions.names(e) & set(pending))]
        if not ready:
            break  # a cycle (a == b, b == a): neither is derived, both are drawn and checked
        for a in ready:
            ordered[a] = pending.pop(a)
    return ordered
