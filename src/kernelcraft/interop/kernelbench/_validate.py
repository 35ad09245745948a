"""Which var-axis candidates survive forward() at changed shapes, and the workloads that come of it.

Every probe runs on the meta device where the problem allows (shapes without memory), so a problem
whose inputs take gigabytes is analysed in megabytes; the scaled-down workload for CPU runs is found
the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelcraft.task.expressions import evaluate

from ._errors import _describe_error
from ._problem import _Problem, _structure

CPU_BYTES = 16_000_000  # `kernelcraft eval --device cpu` skips workloads moving more (its --cpu-max-mb 16)
# the doubled variant only where it stays this small: the judge holds the inputs, outputs and a float64
# reference of each (~6x), and a level-1 problem doubled is tens of GB
LARGER_BYTES = 4_000_000_000


def _variants(v: int) -> list[int]:
    return ([v // 2] if v >= 2 else []) + [2 * v]


@dataclass(frozen=True)
class Derived:
    """An output dim that follows one var axis through a formula (a convolution's H - k + 1): it
    becomes a var axis of its own, tied to that axis by a definition constraint."""

    axis: str
    formula: str  # an axis expression over ``axis``, e.g. "(height + -3) // 1 + 1"

    def value(self, assign: dict[str, int]) -> int:
        return int(evaluate(self.formula, {self.axis: assign[self.axis]}))


def _formula(axis: str, pts: list[tuple[int, int]]) -> str | None:
    """The simplest ``a * v + b`` or ``(v + b) // s + d`` through every (v, f(v)); None if none fits.
    Convolutions and pooling give the second ((v + 2p - d(k - 1) - 1) // s + 1), transposed ones the first."""
    if len({v for v, _ in pts}) < 4:
        return None  # three points fit too many formulas
    def plus(text: str, b: int) -> str:
        return text if b == 0 else f"{text} + {b}" if b > 0 else f"{text} - {-b}"

    v0, f0 = pts[0]
    for a in range(1, 9):
        b = f0 - a * v0
        if all(a * v + b == f for v, f in pts):
            return plus(axis if a == 1 else f"{axis} * {a}", b)
    for stride in range(2, 33):
        for b in sorted(range(-64, 65), key=abs):
            d = f0 - (v0 + b) // stride
            if all((v + b) // stride + d == f for v, f in pts):
                inner = axis if b == 0 else f"({plus(axis, b)})"
                return plus(f"{inner} // {stride}", d)
    return None


class _MakeConst(Exception):
    """These var-axis candidates must be const, for this reason."""

    def __init__(self, names: list[str], reason: str):
        super().__init__(reason)
        self.names, self.reason = names, reason


def _consistent(base_out, out_dims, assign: dict[str, int], out) -> bool:
    """forward()'s outputs at ``assign`` have the structure of the problem's and every dim follows its axis."""
    if _structure(out) != _structure(base_out):
        return False
    for j, dims in enumerate(out_dims):
        for k, name in enumerate(dims or []):
            want = (base_out[j][0][k] if name is None else name.value(assign) if isinstance(name, Derived)
                    else assign[name])
            if out[j][0][k] != want:
                return False
    return True


def _extra_probes(prob: _Problem, c: str) -> dict[int, list]:
    """forward() at a few more values of ``c`` (odd ones tell floor divisions apart), where it runs."""
    v = prob.consts[c]
    out = {}
    for v2 in sorted({v - 1, v + 1, v + 3, max(1, v // 4), v // 2 + 1} - {v, v // 2, 2 * v}):
        if v2 >= 1:
            try:
                out[v2] = prob.forward({c: v2})
            except Exception:  # noqa: BLE001 - too small for the kernel, or any other reason: no point
                continue
    return out


def _validate(prob: _Problem, var: list[str], base_out) -> tuple[list, list[tuple[str, dict[str, int]]]]:
    """(axis name or None per output dim, workload points), or raise _MakeConst."""
    singles: dict[tuple[str, int], list] = {}
    for c in var:
        for v2 in _variants(prob.consts[c]):
            try:
                out = prob.forward({c: v2})
            except Exception as e:  # noqa: BLE001
                raise _MakeConst([c], f"forward() fails with {c} = {v2} ({_describe_error(e)})") from e
            if _structure(out) != _structure(base_out):
                raise _MakeConst([c], f"forward() returns differently shaped results with {c} = {v2}")
            singles[(c, v2)] = out

    base_assign = {c: prob.consts[c] for c in var}
    pts = [(base_assign, base_out)] + [({**base_assign, c: v2}, out) for (c, v2), out in singles.items()]
    out_dims: list[list[str | Derived | None] | None] = []
    for j, (shape, _) in enumerate(base_out):
        if shape is None:
            out_dims.append(None)
            continue
        dims: list[str | Derived | None] = []
        for k, d in enumerate(shape):
            match = [c for c in var if all(o[j][0][k] == a[c] for a, o in pts)]
            if match:
                dims.append(match[0])
            elif all(o[j][0][k] == d for _, o in pts):
                dims.append(None)
            else:
                culprits = [c for c in var if any(out[j][0][k] != d for (c2, _), out in singles.items() if c2 == c)]
                derived = None
                if len(culprits) == 1:
                    c = culprits[0]
                    seen = [(prob.consts[c], d)] + [(v2, out[j][0][k]) for (c2, v2), out in singles.items() if c2 == c]
                    seen += [(v2, out[j][0][k]) for v2, out in _extra_probes(prob, c).items()
                             if _structure(out) == _structure(base_out)]
                    formula = _formula(c, seen)
                    derived = Derived(c, formula) if formula else None
                if derived is not None:
                    dims.append(derived)
                    continue
                unfollowed = [c for c in culprits
                              if any(out[j][0][k] != v2 for (c2, v2), out in singles.items() if c2 == c)]
                drop = unfollowed or culprits or list(var)
                raise _MakeConst(drop, f"output {j} dim {k} changes with it in a way no axis expresses "
                                       f"(it is {d} in the problem)")
        out_dims.append(dims)

    points: list[tuple[str, dict[str, int]]] = [("the problem's own shapes", base_assign)]
    if var:
        joint_ok = []
        for label, assign in (("smaller: every var axis halved", {c: v // 2 if v >= 2 else v for c, v in base_assign.items()}),
                              ("larger: every var axis doubled", {c: 2 * v for c, v in base_assign.items()})):
            if assign == base_assign:
                continue
            if _runs(prob, base_out, out_dims, base_assign, assign):
                joint_ok.append((label, assign))
        if len(joint_ok) == 2 or (len(joint_ok) == 1 and all(v < 2 for v in base_assign.values())):
            points += joint_ok
        else:
            points += [(f"{c} = {v2}", {**base_assign, c: v2}) for (c, v2) in singles]
        points = [p for p in points if p[1] == base_assign or sum(p[1].values()) < sum(base_assign.values())
                  or io_bytes(prob, base_assign, p[1]) <= LARGER_BYTES]
        points.sort(key=lambda p: sum(p[1].values()))
    return out_dims, points


def _runs(prob: _Problem, base_out, out_dims, base_assign: dict[str, int], assign: dict[str, int]) -> bool:
    overrides = {c: x for c, x in assign.items() if x != base_assign[c]}
    try:
        return _consistent(base_out, out_dims, assign, prob.forward(overrides))
    except Exception:  # noqa: BLE001
        return False


def io_bytes(prob: _Problem, base_assign: dict[str, int], assign: dict[str, int]) -> int:
    """Bytes of forward()'s arguments and results at ``assign`` (probed, nothing allocated on meta)."""
    overrides = {c: x for c, x in assign.items() if x != base_assign.get(c)}
    s = prob.sample(overrides)
    total = sum(x.numel() * x.element_size() for x in s.items if hasattr(x, "numel"))
    for shape, dtype in prob.forward(overrides):
        if shape is not None:
            total += math.prod(shape) * getattr(dtype, "itemsize", 8)
    return total


def scaled_point(prob: _Problem, var: list[str], base_out, out_dims, points, budget: int = CPU_BYTES,
                 state_bytes: int = 0, state_what: str = "parameters") -> tuple[str, dict[str, int]] | None:
    """A workload small enough for a CPU run, when none of ``points`` is: every var axis halved together
    (an axis stops at 1) until the problem's arguments and results, with its ``state_bytes`` of
    parameters and buffers (task inputs too: ``eval --cpu-max-mb`` counts them), fit ``budget``, checked
    by forward(); the smallest reached when its const axes or its parameters alone exceed the budget."""
    if not var:
        return None
    base_assign = {c: prob.consts[c] for c in var}

    def moved(assign: dict[str, int]) -> int:
        return io_bytes(prob, base_assign, assign) + state_bytes

    if min(moved(a) for _, a in points) <= budget:
        return None
    start = dict(min(points, key=lambda p: sum(p[1].values()))[1])
    assign = start
    counted = f" ({state_what} included)" if state_bytes else ""
    for _ in range(128):
        # all var axes halved together; where forward() refuses that (a conv's spatial size below its
        # kernel), one axis at a time, the largest first
        tries = [{c: max(1, v // 2) for c, v in assign.items()}]
        tries += [{**assign, c: assign[c] // 2} for c in sorted(assign, key=lambda c: -assign[c]) if assign[c] >= 2]
        nxt = next((t for t in tries if t != assign and _runs(prob, base_out, out_dims, base_assign, t)), None)
        if nxt is None:
            break
        assign = nxt
        if moved(assign) <= budget:
            return (f"scaled down for CPU runs: var axes halved until the inputs{counted} and outputs fit "
                    f"{budget / 1e6:g} MB", assign)
    if assign == start:
        return None
    if state_bytes >= budget:
        above = f"the {state_what} ({state_bytes / 1e6:.3g} MB)"
    else:
        above = "the const axes" + (f" and the {state_what} ({state_bytes / 1e6:.3g} MB)" if state_bytes else "")
    return (f"scaled down for CPU runs: var axes halved as far as forward() allows ({moved(assign) / 1e6:.3g} "
            f"MB of inputs{counted} and outputs; {above} keep it above {budget / 1e6:g} MB)", assign)
