"""Which var-axis candidates survive forward() at changed shapes, and the workloads that come of it."""

from __future__ import annotations

from ._errors import _describe_error
from ._problem import _Problem, _structure


def _variants(v: int) -> list[int]:
    return ([v // 2] if v >= 2 else []) + [2 * v]


class _MakeConst(Exception):
    """These var-axis candidates must be const, for this reason."""

    def __init__(self, names: list[str], reason: str):
        super().__init__(reason)
        self.names, self.reason = names, reason


def _validate(prob: _Problem, var: list[str], base_out, int_inputs, orig_ranges, int_ranges, inputs):
    """(axis name or None per output dim, workload points, range per integer input), or raise _MakeConst.

    An integer input's range (what get_inputs() drew) may change with a constant, e.g.
    ``randint(0, num_classes)``: the constant is made const when its changed shapes draw a different
    range from samples large enough that every value of the range shows up (>= 10 draws per value);
    the contract's range is the intersection over all workloads, valid at each whatever the samples."""
    singles: dict[tuple[str, int], list] = {}
    for c in var:
        for v2 in _variants(prob.consts[c]):
            try:
                out = prob.forward({c: v2})
            except Exception as e:  # noqa: BLE001
                raise _MakeConst([c], f"forward() fails with {c} = {v2} ({_describe_error(e)})") from e
            if _structure(out) != _structure(base_out):
                raise _MakeConst([c], f"forward() returns differently shaped results with {c} = {v2}")
            if int_inputs:
                try:
                    ranges = int_ranges(prob.sample({c: v2}, real=True))
                except Exception as e:  # noqa: BLE001
                    raise _MakeConst([c], f"get_inputs() fails on the CPU with {c} = {v2} ({_describe_error(e)})") from e
                for i, (lo, hi, n), (lo0, hi0, n0) in zip(int_inputs, ranges, orig_ranges, strict=True):
                    if (lo, hi) != (lo0, hi0) and min(n, n0) >= 10 * max(hi - lo, hi0 - lo0):
                        raise _MakeConst([c], f"the range of integer input {inputs[i].name} changes with it "
                                              f"([{lo0}, {hi0}) -> [{lo}, {hi}) with {c} = {v2})")
            singles[(c, v2)] = out

    base_assign = {c: prob.consts[c] for c in var}
    pts = [(base_assign, base_out)] + [({**base_assign, c: v2}, out) for (c, v2), out in singles.items()]
    out_dims: list[list[str | None] | None] = []
    for j, (shape, _) in enumerate(base_out):
        if shape is None:
            out_dims.append(None)
            continue
        dims: list[str | None] = []
        for k, d in enumerate(shape):
            match = [c for c in var if all(o[j][0][k] == a[c] for a, o in pts)]
            if match:
                dims.append(match[0])
            elif all(o[j][0][k] == d for _, o in pts):
                dims.append(None)
            else:
                culprits = [c for c in var if any(out[j][0][k] != d for (c2, _), out in singles.items() if c2 == c)]
                unfollowed = [c for c in culprits
                              if any(out[j][0][k] != v2 for (c2, v2), out in singles.items() if c2 == c)]
                drop = unfollowed or culprits or list(var)
                raise _MakeConst(drop, f"output {j} dim {k} changes with it in a way no axis expresses "
                                       f"(it is {d} in the problem)")
        out_dims.append(dims)

    def consistent(assign: dict[str, int], out) -> bool:
        if _structure(out) != _structure(base_out):
            return False
        for j, dims in enumerate(out_dims):
            for k, name in enumerate(dims or []):
                want = base_out[j][0][k] if name is None else assign[name]
                if out[j][0][k] != want:
                    return False
        return True

    points: list[tuple[str, dict[str, int]]] = [("the problem's own shapes", base_assign)]
    if var:
        joint_ok = []
        for label, assign in (("smaller: every var axis halved", {c: v // 2 if v >= 2 else v for c, v in base_assign.items()}),
                              ("larger: every var axis doubled", {c: 2 * v for c, v in base_assign.items()})):
            if assign == base_assign:
                continue
            overrides = {c: x for c, x in assign.items() if x != base_assign[c]}
            try:
                out = prob.forward(overrides)
                ok = consistent(assign, out)
            except Exception:  # noqa: BLE001
                ok = False
            if ok:
                joint_ok.append((label, assign))
        if len(joint_ok) == 2 or (len(joint_ok) == 1 and all(v < 2 for v in base_assign.values())):
            points += joint_ok
        else:
            points += [(f"{c} = {v2}", {**base_assign, c: v2}) for (c, v2) in singles]
        points.sort(key=lambda p: sum(p[1].values()))
    final: list[tuple[int, int]] = [(lo, hi) for lo, hi, _ in orig_ranges]
    for label, assign in points[1:] if int_inputs else []:
        overrides = {c: x for c, x in assign.items() if x != base_assign[c]}
        try:
            got = int_ranges(prob.sample(overrides, real=True))
        except Exception as e:  # noqa: BLE001
            raise _MakeConst(list(var), f"get_inputs() fails on the CPU at {label} ({_describe_error(e)})") from e
        final = [(max(lo, g[0]), min(hi, g[1])) for (lo, hi), g in zip(final, got, strict=True)]
    for i, (lo, hi) in zip(int_inputs, final, strict=True):
        if lo >= hi:
            raise _MakeConst(list(var), f"the values of integer input {inputs[i].name} drawn at the different "
                                        "shapes have no range in common")
    return out_dims, points, final
