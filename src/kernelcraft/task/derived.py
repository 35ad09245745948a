"""Axes a definition derives from others (``"nf == nx // 2 + 1"``, ``"two_i == 2 * intermediate_size"``).

A shape drawn by changing one var axis (a holdout) violates such a constraint unless the derived
axis follows: without this, holdouts never vary ``nx`` of an FFT request, since every new ``nx``
breaks ``nf == nx // 2 + 1``. :func:`derive_axes` recomputes each var axis a constraint of the form
``axis == expression`` defines from the others (never the axis just changed, nor a const axis).
"""

from __future__ import annotations

import ast

from kernelcraft.task.definition import AxisVar, Definition, eval_expression, parse_constraint


def definitions_of(d: Definition) -> list[tuple[str, str]]:
    """(axis, expression) for every constraint ``axis == expression`` (or ``expression == axis``)
    whose expression names only other axes."""
    from kernelcraft.task.constraints import axis_constraints

    out = []
    for c in axis_constraints(d):
        body = parse_constraint(c).body
        if not (isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.Eq)):
            continue
        left, right = body.left, body.comparators[0]
        for name, expr in ((left, right), (right, left)):
            if isinstance(name, ast.Name) and isinstance(d.axes.get(name.id), AxisVar):
                text = ast.unparse(expr)
                names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
                if name.id not in names:
                    out.append((name.id, text))
                    break
    return out


def derive_axes(d: Definition, axes: dict[str, int], changed: str) -> dict[str, int]:
    """``axes`` (var axes only) with the axes derived from ``changed`` recomputed."""
    out = dict(axes)
    for name, expr in definitions_of(d):
        if name == changed:
            continue
        try:
            value = eval_expression(expr, d.axis_values(out))
        except (ValueError, ZeroDivisionError):
            continue
        if isinstance(value, int | float) and float(value).is_integer():
            out[name] = int(value)
    return out
