"""Named checkers: how a task's outputs are judged against its reference (trusted process only).

``contract.toml`` names them as ``[[check]]`` tables (models in :mod:`kernelcraft.task.contract`);
an output no table names is judged by ``tolerance``. Every checker sees the candidate's outputs
(shape, dtype and device already checked), the reference's, and the pristine inputs, and returns a
:class:`~kernelcraft.gauntlet.compare.Check` whose reason names the output, the row and the values.

- ``tolerance``: element-wise, an element fails when its error exceeds both atol and rtol * |ref|.
- ``exact``: bit-for-bit equality with the reference rounded to the output's dtype.
- ``topk``: set-valued. Indices in range and unique per row; ``values`` equal ``input.gather(indices)``
  bit for bit; the values, sorted, match the reference's top-k values within the values' tolerance
  (so any valid choice among tied entries passes); ordered when ``sorted``.
- ``argmin``: an index per point whose objective (squared distance to the chosen centroid) is within
  ``atol + rtol * scale`` of the best centroid's; ties and near-ties are judged by distance, never by
  index.
- ``balanced_kmeans``: validity (indices in range, no cluster above ceil(n/k)), quality (the
  assignment's objective within ``objective_rtol`` of the reference assignment's or, with
  ``distance_rtol``, a replay of the acceptance rounds in which only near-ties went another way),
  and centroids equal to the mean of the points the candidate's own assignment gives them.
- ``python``: a request's own verifier (``benchmark.py::judge``), trusted task code called here with
  the outputs, the reference's outputs and/or the inputs, returning ``(ok, worst_ratio)``.

Repeatability: the determinism gate compares each checker's :meth:`Checker.canonical` form of two
calls bit for bit. For ``topk`` that is each row's (index, value) pairs ordered by index, so two calls
may order tied values differently but must select the same entries with the same values; for the
others it is the outputs themselves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelcraft.errors import Problem
from kernelcraft.gauntlet.compare import Check, compare_values, fmt_index
from kernelcraft.gauntlet.sampling import Sampling
from kernelcraft.task.contract import (
    ArgminCheck,
    BalancedKMeansCheck,
    Contract,
    PythonCheck,
    SamplingCheck,
    ToleranceCheck,
    TopKCheck,
)
from kernelcraft.task.definition import Definition

_F64 = torch.float64
_CHUNK_ELEMENTS = 1 << 25  # rows x centroids of float64 distances held at once (256 MiB)


@dataclass
class Context:
    definition: Definition
    contract: Contract
    axes: dict[str, int]
    device: str
    inputs: dict[str, Any]  # the pristine inputs by name ({} when the caller has none)
    got: dict[str, Any]  # the candidate's outputs by name, shape and dtype already checked
    expected: dict[str, Any]  # the reference's outputs by name
    # per output, an absolute error no honest kernel can be held under on these inputs (stress
    # inputs: kernelcraft.gauntlet.stress); raises that output's atol
    atol_floor: dict[str, float] = dataclasses.field(default_factory=dict)
    task_root: Path | None = None  # where a python checker's functions live

    def tolerance(self, output: str):
        tol = self.contract.tolerance.for_output(output, self.definition.outputs[output].dtype)
        floor = self.atol_floor.get(output, 0.0)
        return tol if floor <= tol.atol else tol.model_copy(update={"atol": floor})

    def input(self, name: str) -> torch.Tensor:
        if name not in self.inputs:
            raise ValueError(f"the checker needs input {name!r}, which the caller did not pass")
        return self.inputs[name]


def _on(value: Any, device: torch.device | str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to(device=device)
    return torch.tensor([float(value)], dtype=_F64)


def _fail(reason: str) -> Check:
    return Check("INCORRECT_NUMERICAL", reason)


class Checker:
    """One named way of judging some outputs. Subclasses set ``kind`` and implement ``check``."""

    kind = ""

    def __init__(self, spec: Any, definition: Definition | None = None):
        self.spec, self.definition = spec, definition

    @property
    def outputs(self) -> tuple[str, ...]:
        raise NotImplementedError

    def check(self, ctx: Context) -> Check:
        raise NotImplementedError

    def canonical(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """The form two calls on identical inputs must agree on bit for bit."""
        return outputs

    def draw_plan(self, definition: Definition, axes: dict[str, int], inputs: list[Any]):
        """Checkers judged over many calls (``sampling``) return what the judge must run; others None."""
        return None

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        raise NotImplementedError


class Tolerance(Checker):
    kind = "tolerance"

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.spec.outputs)

    def check(self, ctx: Context) -> Check:
        worst_abs = worst_rel = 0.0
        for name in self.outputs:
            got, ref = ctx.got[name], ctx.expected[name]
            device = got.device if isinstance(got, torch.Tensor) else "cpu"
            # on the device as they are: compare_values goes to float64 a chunk at a time (a float64 copy of
            # a 2**31-element output is 17 GB)
            g, r = _on(got, device), _on(ref, device)
            shape = tuple(g.shape) if isinstance(got, torch.Tensor) else (1,)
            tol = ctx.tolerance(name)
            c = compare_values(name, g, r, tol.atol, tol.rtol, shape, self.spec.min_matched_ratio)
            worst_abs, worst_rel = max(worst_abs, c.max_abs_error), max(worst_rel, c.max_rel_error)
            if c.status != "PASSED":
                return c
        return Check("PASSED", "", worst_abs, worst_rel)

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        out = []
        for n in self.outputs:
            tol = contract.tolerance.for_output(n, definition.outputs[n].dtype)
            share = "" if self.spec.min_matched_ratio >= 1 else \
                f"; at least {100 * self.spec.min_matched_ratio:g}% of elements must pass"
            out.append(f"{n}: tolerance, an element fails when |error| > atol={tol.atol:g} and > "
                       f"rtol={tol.rtol:g} x |reference| (float64 reference){share}")
        return out


class Exact(Checker):
    kind = "exact"

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.spec.outputs)

    def check(self, ctx: Context) -> Check:
        for name in self.outputs:
            got, ref = ctx.got[name], ctx.expected[name]
            if not isinstance(got, torch.Tensor):
                same = float(got) == float(ref) or (got != got and ref != ref)
                if not same:
                    return _fail(f"output {name!r}: got {got!r}, expected exactly {ref!r}")
                continue
            want = ref.detach().to(device=got.device, dtype=got.dtype) if isinstance(ref, torch.Tensor) \
                else torch.full_like(got, ref)
            diff = got != want
            if got.is_floating_point():
                diff &= ~(torch.isnan(got) & torch.isnan(want))
            n_bad = int(diff.sum())
            if n_bad:
                i = int(diff.reshape(-1).nonzero()[0])
                return _fail(f"output {name!r}: {n_bad} of {got.numel()} elements differ from the reference "
                             f"(exact check); first at index {fmt_index(i, tuple(got.shape))}: got "
                             f"{got.reshape(-1)[i].item()!r}, expected {want.reshape(-1)[i].item()!r}")
        return Check("PASSED")

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        return [f"{n}: exact, bit for bit equal to the reference in {definition.outputs[n].dtype}" for n in self.outputs]


class TopK(Checker):
    kind = "topk"
    spec: TopKCheck

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.spec.values, self.spec.indices)

    def check(self, ctx: Context) -> Check:
        s = self.spec
        x = ctx.input(s.input)
        vals, idx = ctx.got[s.values], ctx.got[s.indices]
        n, k = x.shape[-1], idx.shape[-1]
        x2 = x.detach().to(idx.device).reshape(-1, n)
        v2, i2 = vals.reshape(-1, k), idx.reshape(-1, k)
        if not v2.numel():
            return Check("PASSED")
        where = lambda flat: fmt_index(flat, (v2.shape[0], k))  # noqa: E731
        bad = (i2 < 0) | (i2 >= n)
        if bool(bad.any()):
            f = int(bad.reshape(-1).nonzero()[0])
            return _fail(f"output {s.indices!r}: {int(bad.sum())} indices out of range [0, {n}); first at "
                         f"(row, position) {where(f)}: {int(i2.reshape(-1)[f])}")
        srt = i2.sort(dim=-1).values
        dup = srt[:, 1:] == srt[:, :-1]
        if bool(dup.any()):
            row, pos = (int(t) for t in dup.nonzero()[0])
            return _fail(f"output {s.indices!r}: row {row} holds index {int(srt[row, pos])} more than once "
                         f"({int(dup[row].sum())} duplicate(s) in the row); top-k indices must be unique per row")
        gathered = x2.gather(-1, i2).to(vals.dtype)
        differ = gathered != v2
        if v2.is_floating_point():
            differ &= ~(torch.isnan(gathered) & torch.isnan(v2))
        if bool(differ.any()):
            f = int(differ.reshape(-1).nonzero()[0])
            r, p = divmod(f, k)
            return _fail(f"output {s.values!r}: {int(differ.sum())} values are not {s.input}[row, index] of the "
                         f"returned index; first at (row, position) ({r}, {p}): value {v2[r, p].item():.6g}, index "
                         f"{int(i2[r, p])} holds {gathered[r, p].item():.6g}")
        got_sorted = v2.to(_F64).sort(dim=-1, descending=s.largest).values
        ref = ctx.expected[s.values].detach().to(device=v2.device, dtype=_F64).reshape(-1, k)
        ref_sorted = ref.sort(dim=-1, descending=s.largest).values
        tol = ctx.tolerance(s.values)
        c = compare_values(s.values, got_sorted, ref_sorted, tol.atol, tol.rtol, (v2.shape[0], k))
        if c.status != "PASSED":
            which = "largest" if s.largest else "smallest"
            c.reason = (f"not the {k} {which} entries of {s.input!r} per row (values compared after sorting each row; "
                        f"index (row, rank)): " + c.reason)
            return c
        if s.sorted and k > 1:
            a, b = v2[:, :-1].to(_F64), v2[:, 1:].to(_F64)
            out_of_order = (a < b) if s.largest else (a > b)
            if bool(out_of_order.any()):
                r, p = (int(t) for t in out_of_order.nonzero()[0])
                order = "descending" if s.largest else "ascending"
                return _fail(f"output {s.values!r}: row {r} is not in {order} order: position {p} holds "
                             f"{a[r, p].item():.6g}, position {p + 1} holds {b[r, p].item():.6g}")
        return Check("PASSED", "", c.max_abs_error, c.max_rel_error)

    def canonical(self, outputs: dict[str, Any]) -> dict[str, Any]:
        s = self.spec
        vals, idx = outputs[s.values], outputs[s.indices]
        if not isinstance(idx, torch.Tensor) or not isinstance(vals, torch.Tensor) or vals.shape != idx.shape:
            return outputs
        order = idx.argsort(dim=-1, stable=True)
        return {**outputs, s.values: vals.gather(-1, order), s.indices: idx.gather(-1, order)}

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        s = self.spec
        tol = contract.tolerance.for_output(s.values, definition.outputs[s.values].dtype)
        which = "largest" if s.largest else "smallest"
        return [f"{s.values}, {s.indices}: topk of {s.input} along its last dim: indices in range and unique per "
                f"row, {s.values} == {s.input}.gather({s.indices}) bit for bit, the sorted values match the "
                f"reference's k {which} within atol={tol.atol:g} / rtol={tol.rtol:g}; any choice among tied "
                f"entries passes" + ("; values ordered" if s.sorted else "; any order")]


def _sq_distances(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Squared distances in float64, |x|^2 - 2 x.c + |c|^2 (the float64 rounding is ~1e-16 of the norms)."""
    return ((x * x).sum(1, keepdim=True) - 2.0 * (x @ c.T) + (c * c).sum(1)).clamp_min(0.0)


def _check_index_range(name: str, idx: torch.Tensor, k: int, what: str) -> Check | None:
    bad = (idx < 0) | (idx >= k)
    if bool(bad.any()):
        i = int(bad.nonzero()[0])
        return _fail(f"output {name!r}: {int(bad.sum())} of {idx.numel()} indices are out of range [0, {k}) "
                     f"({what}); first at row {i}: {int(idx[i])}")
    return None


class Argmin(Checker):
    kind = "argmin"
    spec: ArgminCheck

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.spec.index,)

    def check(self, ctx: Context) -> Check:
        s = self.spec
        idx = ctx.got[s.index].reshape(-1)
        dev = idx.device
        x = ctx.input(s.points).detach().to(device=dev, dtype=_F64)
        c = ctx.input(s.centroids).detach().to(device=dev, dtype=_F64)
        k = c.shape[0]
        bad = _check_index_range(s.index, idx, k, f"{s.centroids} has {k} rows")
        if bad:
            return bad
        cmax = float((c * c).sum(1).max()) if k else 0.0
        rows = max(1, _CHUNK_ELEMENTS // max(1, k))
        n_bad, worst, worst_excess = 0, None, -1.0
        for start in range(0, x.shape[0], rows):
            xs = x[start:start + rows]
            dist = _sq_distances(xs, c)
            best, best_j = dist.min(1)
            chosen = dist.gather(1, idx[start:start + rows, None]).squeeze(1)
            allowed = s.atol + s.rtol * ((xs * xs).sum(1) + cmax)
            excess = chosen - best - allowed
            failing = excess > 0
            n_bad += int(failing.sum())
            if bool(failing.any()):
                e, i = excess.max(0)
                if float(e) > worst_excess:
                    i = int(i)
                    worst_excess = float(e)
                    worst = (start + i, int(idx[start + i]), float(chosen[i]), int(best_j[i]), float(best[i]),
                             float(allowed[i]))
        if worst is not None:
            row, j, dj, b, db, allowed = worst
            return _fail(f"output {s.index!r}: {n_bad} of {idx.numel()} rows choose a {s.centroids} row that is not "
                         f"the nearest within tolerance; worst at row {row}: index {j} at squared distance {dj:.6g}, "
                         f"the nearest is index {b} at {db:.6g} (excess {dj - db:.3g}, allowed {allowed:.3g} = "
                         f"atol {s.atol:g} + rtol {s.rtol:g} x (|x|^2 + max |c|^2))")
        return Check("PASSED")

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        s = self.spec
        return [f"{s.index}: argmin, the chosen row of {s.centroids} for each row of {s.points} must be the nearest "
                f"(squared Euclidean) within atol={s.atol:g} + rtol={s.rtol:g} x (|x|^2 + max |c|^2); ties are "
                "judged by distance, not by index"]


def _objective(x: torch.Tensor, c: torch.Tensor, assign: torch.Tensor) -> float:
    total = 0.0
    rows = max(1, _CHUNK_ELEMENTS // max(1, x.shape[1]))
    for start in range(0, x.shape[0], rows):
        diff = x[start:start + rows] - c[assign[start:start + rows]]
        total += float((diff * diff).sum())
    return total


def _replay_deferred_acceptance(x: torch.Tensor, c: torch.Tensor, assign: torch.Tensor, cap: int,
                                rtol: float) -> str:
    """Why ``assign`` is not an outcome of the contract's deferred acceptance on distances each off by
    up to ``rtol * (|x_i|^2 + max_j |c_j|^2)`` (float64 here), or "" where it is one.

    The acceptance is greedy and final (an accepted point is never displaced), so a near-tie that a
    kernel's rounding resolves the other way (two proposers at one full centroid, a point between two
    open centroids) hands the loser its next choice, and at small n with outliers that moves the
    objective by percents: solutions/triton_open_nosync.py was 0.68% above the float64 reference on
    one stress draw in 300 (500 x 16, k = 40) with every distance within ~1e-7 of the scale. So the
    rounds are replayed with the candidate's assignment deciding each near-tie: every active point
    proposes its nearest open centroid, or the centroid it ended in where that is within the error
    of the nearest; each centroid must accept exactly min(proposers, room) of them, and the ones it
    accepts (those the assignment puts there) no farther than the ones it rejects, within the error.
    A cheaper algorithm (round-robin, nearest-then-spilled, a wrong acceptance order) breaks a round
    by more than the error; that round, centroid and pair are named."""
    n, k = x.shape[0], c.shape[0]
    dev = x.device
    xx = (x * x).sum(1)
    cc = (c * c).sum(1)
    err = rtol * (xx + cc.max())  # per point: the error a kernel's distance to any centroid may carry
    count = torch.zeros(k, dtype=torch.int64, device=dev)
    active = torch.arange(n, device=dev)
    rows = max(1, _CHUNK_ELEMENTS // max(1, k))
    for rnd in range(k + 1):
        if active.numel() == 0:
            return ""
        room = cap - count
        closed = room <= 0
        mine = assign[active]
        nearest = torch.empty_like(active)
        best = torch.empty(active.numel(), dtype=x.dtype, device=dev)
        own = torch.empty_like(best)
        for start in range(0, active.numel(), rows):
            idx = active[start:start + rows]
            d = xx[idx, None] - 2.0 * (x[idx] @ c.T) + cc[None, :]
            d[:, closed] = float("inf")
            best[start:start + rows], nearest[start:start + rows] = d.min(1)
            own[start:start + rows] = d.gather(1, mine[start:start + rows, None]).squeeze(1)  # inf: its centroid is closed
        e = err[active]
        near_own = own <= best + 2.0 * e  # its own centroid is as near as the nearest, within the error
        # Each point proposes its nearest open centroid; one whose own centroid is near-tied with it
        # may have proposed that one instead (its kernel saw it nearer). Which did is read from the
        # assignment: a point rejected where the rejection cannot be (a centroid with room left, or
        # nearer than one it accepted) proposed its own; repeat until nothing changes.
        prop = nearest.clone()
        while True:
            took = mine == prop
            dist = torch.where(took, own, best)
            proposers = torch.bincount(prop, minlength=k)
            worst_in = torch.full((k,), -float("inf"), dtype=x.dtype, device=dev).scatter_reduce(
                0, prop[took], (dist - e)[took], "amax")
            rejected_wrongly = ~took & ((proposers <= room)[prop] | (dist + e < worst_in[prop]))
            switch = rejected_wrongly & near_own
            if not bool(switch.any()):
                break
            prop = torch.where(switch, mine, prop)
        accepted = torch.bincount(prop[took], minlength=k)
        need = torch.minimum(proposers, room)
        wrong = (accepted != need).nonzero().flatten()
        if wrong.numel():
            j = int(wrong[0])
            return (f"in round {rnd + 1}, centroid {j} had room for {int(room[j])} and {int(proposers[j])} "
                    f"proposer(s) but the assignment gives it {int(accepted[j])} of them")
        bad = rejected_wrongly.nonzero().flatten()
        if bad.numel():
            q = int(bad[0])
            j = int(prop[q])
            at = (prop == j) & took
            p = int(dist.masked_fill(~at, -float("inf")).argmax())
            return (f"in round {rnd + 1}, centroid {j} accepted point {int(active[p])} (squared distance "
                    f"{float(dist[p]):.9g}) and rejected the nearer point {int(active[q])} ({float(dist[q]):.9g}) "
                    f"by more than the distance error")
        count += accepted
        active = active[~took]
    return f"{active.numel()} point(s) still unassigned after {k + 1} rounds"


class BalancedKMeans(Checker):
    kind = "balanced_kmeans"
    spec: BalancedKMeansCheck

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.spec.assignment, self.spec.new_centroids)

    def check(self, ctx: Context) -> Check:
        s = self.spec
        assign = ctx.got[s.assignment].reshape(-1)
        dev = assign.device
        x = ctx.input(s.points).detach().to(device=dev, dtype=_F64)
        c = ctx.input(s.centroids).detach().to(device=dev, dtype=_F64)
        n, k = x.shape[0], c.shape[0]
        bad = _check_index_range(s.assignment, assign, k, f"{s.centroids} has {k} rows")
        if bad:
            return bad
        if n == 0:
            return Check("PASSED")
        cap = -(-n // k)
        counts = torch.bincount(assign, minlength=k)
        over = counts > cap
        if bool(over.any()):
            j = int(counts.argmax())
            return _fail(f"output {s.assignment!r}: {int(over.sum())} cluster(s) over capacity ceil(n/k) = {cap} "
                         f"(n={n}, k={k}); cluster {j} holds {int(counts[j])} points")
        got_obj = _objective(x, c, assign)
        ref_assign = ctx.expected[s.assignment].detach().to(dev).reshape(-1).long()
        ref_obj = _objective(x, c, ref_assign)
        limit = ref_obj * (1.0 + s.objective_rtol)
        if got_obj > limit:
            excess = (f"output {s.assignment!r}: the assignment's objective (sum of squared distances to the "
                      f"assigned {s.centroids}) is {got_obj:.9g}, {100 * (got_obj / ref_obj - 1):.3g}% above the "
                      f"reference's {ref_obj:.9g}; the contract allows {100 * s.objective_rtol:g}% "
                      f"(objective_rtol = {s.objective_rtol:g})")
            if s.distance_rtol is None:
                return _fail(excess)
            why = _replay_deferred_acceptance(x, c, assign.long(), cap, s.distance_rtol)
            if why:
                return _fail(f"{excess}, and it is not what deferred acceptance gives with the near-ties "
                             f"(distance_rtol = {s.distance_rtol:g}) resolved otherwise: {why}")
        sums = torch.zeros_like(c).index_add_(0, assign, x)
        mean = torch.where(counts[:, None] > 0, sums / counts.clamp_min(1)[:, None].to(_F64), c)
        got_c = ctx.got[s.new_centroids].detach().to(dev, _F64)
        tol = ctx.tolerance(s.new_centroids)
        chk = compare_values(s.new_centroids, got_c, mean, tol.atol, tol.rtol, tuple(got_c.shape))
        if chk.status != "PASSED":
            chk.reason = (f"output {s.new_centroids!r} is not the mean of the points the returned {s.assignment!r} "
                          f"gives each cluster (an empty cluster keeps its centroid): " + chk.reason)
            return chk
        return Check("PASSED", "", chk.max_abs_error, max(chk.max_rel_error, got_obj / ref_obj - 1 if ref_obj else 0.0))

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        s = self.spec
        tol = contract.tolerance.for_output(s.new_centroids, definition.outputs[s.new_centroids].dtype)
        replay = ("" if s.distance_rtol is None else
                  f" or, above it, the deferred acceptance's own outcome with near-ties (distances within "
                  f"{s.distance_rtol:g} x (|x|^2 + max |c|^2)) resolved otherwise, replayed round by round")
        return [f"{s.assignment}, {s.new_centroids}: balanced_kmeans: indices in [0, k), no cluster above ceil(n/k) "
                f"points, sum of squared distances to the assigned {s.centroids} at most (1 + {s.objective_rtol:g}) x "
                f"the reference assignment's{replay}, {s.new_centroids} the mean of each cluster's points within "
                f"atol={tol.atol:g} / rtol={tol.rtol:g} (an empty cluster keeps its centroid); not bit equality"]


class PythonJudge(Checker):
    """A request's own verifier (KDA's ``benchmark.py::judge``): ``fn(*args) -> (ok, worst_ratio)``.
    Trusted task code in the judge process; it sees every output of the definition, in order."""

    kind = "python"
    spec: PythonCheck

    @property
    def outputs(self) -> tuple[str, ...]:
        if self.spec.outputs:
            return tuple(self.spec.outputs)
        return tuple(self.definition.outputs) if self.definition is not None else ()

    def _args(self, ctx: Context) -> list[Any]:
        from kernelcraft.task.taskcode import load_function, split

        root = ctx.task_root
        names = list(ctx.definition.outputs)
        lists = {"outputs": [ctx.got[n] for n in names], "reference": [ctx.expected[n] for n in names],
                 "inputs": [ctx.inputs[n] for n in ctx.definition.inputs if n in ctx.inputs]}
        if len(lists["inputs"]) != len(ctx.definition.inputs) and any("inputs" in a for a in self.spec.args):
            raise ValueError("the request's judge needs the inputs, which the caller did not pass")
        file, _ = split(self.spec.function)
        out = []
        for a in self.spec.args:
            if a in lists:
                out.append(lists[a])
            else:  # NAME(x): a function of the same file applied to x (benchmark.py::exact_state(inputs))
                fn, x = a[:-1].split("(")
                out.append(load_function(root, f"{file}::{fn}")(lists[x]))
        return out

    def check(self, ctx: Context) -> Check:
        from kernelcraft.solution._traceback import candidate_traceback
        from kernelcraft.task.taskcode import load_function

        s = self.spec
        try:
            result = load_function(ctx.task_root, s.function)(*self._args(ctx))
        except Exception as e:  # noqa: BLE001 - the task's code failing is not the candidate's verdict
            return Check("RUNTIME_ERROR", f"[request-judge] {s.function} raised (the task's judge, not the candidate): "
                         f"{candidate_traceback(e)[-1500:]}")
        try:
            ok, ratio = result
            ok, ratio = bool(ok), float(ratio)
        except (TypeError, ValueError):
            return Check("RUNTIME_ERROR", f"[request-judge] {s.function} returned {str(result)[:200]!r}; "
                         "contract.toml [[check]] kind = \"python\" needs (ok, worst_ratio)")
        finite = ratio == ratio and abs(ratio) != float("inf")
        if ok:
            return Check("PASSED", "", judge_ratio=ratio if finite else None)
        return Check("INCORRECT_NUMERICAL", f"[request-judge] {s.function} rejected the outputs: worst error / "
                     f"tolerance {ratio:.4g}" + (" (> 1)" if ratio > 1 else " (ok = False: non-finite or "
                                                "out-of-range values, or a rule beyond the ratio)"),
                     judge_ratio=ratio if finite else None)

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        s = self.spec
        names = ", ".join(self.outputs)
        precision = "the inputs' own precision" if s.reference == "native" else "float64"
        return [f"{names}: the request's own judge {s.function}({', '.join(s.args)}) must return ok "
                f"(reference in {precision}); its worst error / tolerance is recorded"]


REGISTRY: dict[str, type[Checker]] = {c.kind: c for c in (Tolerance, Exact, TopK, Argmin, BalancedKMeans, PythonJudge,
                                                            Sampling)}


def wants_native_reference(contract: Contract) -> bool:
    """A request's judge is written against its reference run as its benchmark runs it."""
    return any(isinstance(s, PythonCheck) and s.reference == "native" for s in contract.check)


def checkers_for(definition: Definition, contract: Contract) -> list[Checker]:
    """The contract's checkers in order, then ``tolerance`` for every output none of them names."""
    out = [REGISTRY[spec.kind](spec, definition) for spec in contract.check]
    claimed = {o for c in out for o in c.outputs}
    rest = [n for n in definition.outputs if n not in claimed]
    if rest:
        out.append(Tolerance(ToleranceCheck(kind="tolerance", outputs=rest)))
    return out


def describe_checks(definition: Definition, contract: Contract) -> list[str]:
    """One line per output group: how it is judged, for briefs and reports."""
    return [line for c in checkers_for(definition, contract) for line in c.describe(definition, contract)]


def _integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def check_problems(path: Path, contract: Contract, definition: Definition) -> list[Problem]:
    """Static problems of ``[[check]]``: names that are not inputs/outputs, outputs judged twice,
    dtypes or shapes a checker cannot work with."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    ins, outs = definition.inputs, definition.outputs

    def need(i: int, field: str, name: str, table: dict, what: str) -> bool:
        if name not in table:
            problems.append(Problem(path, f"check.{i}.{field}", f"{name!r} is not {what} of the definition",
                                    f"use one of {list(table)}"))
            return False
        return True

    for i, spec in enumerate(contract.check):
        checker = REGISTRY[spec.kind](spec)
        for field in type(spec).model_fields:
            if field in ("outputs", "values", "indices", "index", "assignment", "new_centroids", "samples"):
                names = getattr(spec, field)
                for name in names if isinstance(names, list) else [names]:
                    if need(i, field, name, outs, "an output") and name in seen:
                        problems.append(Problem(path, f"check.{i}.{field}", f"output {name!r} is already judged by "
                                                f"check.{seen[name]}", "name each output in one [[check]] table"))
                    seen.setdefault(name, i)
            elif field in ("input", "points", "centroids", "probs", "top_k", "top_p"):
                if getattr(spec, field) is not None:
                    need(i, field, getattr(spec, field), ins, "an input")
        if problems:
            continue
        if isinstance(spec, SamplingCheck):
            if contract.integrity.deterministic:
                problems.append(Problem(path, f"check.{i}", "a sampler's outputs are random, and [integrity] "
                                        "deterministic = true asks two calls to agree bit for bit",
                                        "set [integrity] deterministic = false"))
            ps = ins[spec.probs].shape
            if ps is None or len(ps) not in (1, 2) or not ins[spec.probs].dtype.startswith(("float", "bfloat")):
                problems.append(Problem(path, f"check.{i}.probs", f"{spec.probs} must be floating [batch, vocab] or "
                                        f"[vocab] (is {ins[spec.probs].dtype} {ps})", "fix the definition or the name"))
        for field in ("indices", "index", "assignment", "samples"):
            name = getattr(spec, field, None)
            if name is not None and not _integer(outs[name].dtype):
                problems.append(Problem(path, f"check.{i}.{field}", f"output {name!r} is {outs[name].dtype}; "
                                        f"{checker.kind} indices need an integer dtype", "make it int64 or int32"))
        if isinstance(spec, TopKCheck):
            vs, xs, js = outs[spec.values].shape, ins[spec.input].shape, outs[spec.indices].shape
            if not vs or vs != js or not xs or len(xs) != len(vs) or xs[:-1] != vs[:-1]:
                problems.append(Problem(path, f"check.{i}", f"topk needs {spec.values} and {spec.indices} of one shape "
                                        f"[..., k] and {spec.input} of shape [..., n] (have {vs}, {js}, {xs})",
                                        "fix the definition's shapes or the names"))
        if isinstance(spec, ArgminCheck | BalancedKMeansCheck):
            ps, cs = ins[spec.points].shape, ins[spec.centroids].shape
            if not ps or not cs or len(ps) != 2 or len(cs) != 2 or ps[1] != cs[1]:
                problems.append(Problem(path, f"check.{i}", f"{spec.points} and {spec.centroids} must be [n, d] and "
                                        f"[k, d] (have {ps}, {cs})", "fix the definition's shapes or the names"))
        if isinstance(spec, BalancedKMeansCheck) and outs[spec.new_centroids].shape != ins[spec.centroids].shape:
            problems.append(Problem(path, f"check.{i}.new_centroids", f"{spec.new_centroids} must have the shape of "
                                    f"{spec.centroids}", "fix the definition's shapes"))
    return problems
