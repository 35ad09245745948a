"""Compare a candidate's outputs with the reference's.

Shape and dtype must be exact; then each output is judged by its checker
(:mod:`kernelcraft.gauntlet.checkers`), element-wise ``tolerance`` unless the contract names another.
For the element-wise check: NaN must sit where the reference has NaN, and +-Inf where it has the
same infinity. Every other element fails when its error exceeds both ``atol`` and
``rtol * |reference|``; no fraction of failing elements is tolerated. A failure message says which
output, how many elements failed, the worst index, its value and the reference's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelcraft.task.contract import Contract
from kernelcraft.task.definition import Definition
from kernelcraft.task.dtypes import torch_dtype


@dataclass
class Check:
    status: str  # PASSED, INCORRECT_SHAPE, INCORRECT_DTYPE, INCORRECT_NUMERICAL, RUNTIME_ERROR
    reason: str = ""
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    judge_ratio: float | None = None  # a request's own judge (kind = "python"): its worst error / tolerance


def normalize_outputs(result: Any, definition: Definition) -> list[Any]:
    """FlashInfer-Trace's value-returning forms -> a list in the definition's output order (the
    runner's own rule, :func:`kernelcraft.runner.main.normalize`, so both sides read a result alike)."""
    from kernelcraft.runner.main import normalize

    return normalize(result, list(definition.outputs))


def fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size if size else 0)
        flat //= size if size else 1
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ")"


def _validate(name: str, got: Any, want_shape: tuple[int, ...] | None, dtype: str, device: str) -> Check | None:
    """Shape, dtype and device of one output; None when they are what the definition says."""
    if want_shape is None:  # a scalar output
        if isinstance(got, torch.Tensor) and got.numel() != 1:
            return Check("INCORRECT_SHAPE", f"output {name!r}: expected a scalar, got shape {tuple(got.shape)}")
        return None
    if not isinstance(got, torch.Tensor):
        return Check("INCORRECT_SHAPE", f"output {name!r}: expected a tensor of shape {want_shape}, got {type(got).__name__}")
    if tuple(got.shape) != want_shape:
        return Check("INCORRECT_SHAPE", f"output {name!r}: shape {tuple(got.shape)}, expected {want_shape}")
    if got.dtype != torch_dtype(dtype):
        return Check("INCORRECT_DTYPE", f"output {name!r}: dtype {str(got.dtype).removeprefix('torch.')}, expected {dtype}")
    if got.device.type != torch.device(device).type:
        return Check("RUNTIME_ERROR", f"output {name!r} is on {got.device}, expected {device}")
    return None


def compare(outputs: list[Any], expected: list[Any], definition: Definition, contract: Contract,
            axes: dict[str, int], device: str, inputs: list[Any] | None = None,
            atol_floor: dict[str, float] | None = None, task_root: Path | None = None) -> Check:
    """Judge a candidate's outputs: shape, dtype and device exactly, then each output group by the
    contract's checker (:mod:`kernelcraft.gauntlet.checkers`; ``tolerance`` by default). ``inputs``
    (the pristine inputs, in the definition's order) are what set-valued and objective checkers read.
    ``atol_floor`` (output name -> absolute error) raises an output's atol to at least that much
    (stress inputs: :func:`kernelcraft.gauntlet.stress.atol_floor`); ``task_root`` is where a
    ``python`` checker's functions live."""
    from kernelcraft.gauntlet.checkers import Context, checkers_for

    got: dict[str, Any] = {}
    ref: dict[str, Any] = {}
    for (name, spec), g, r in zip(definition.outputs.items(), outputs, expected, strict=True):
        bad = _validate(name, g, definition.shape(spec, axes), spec.dtype, device)
        if bad is not None:
            return bad
        if spec.shape is None and isinstance(g, torch.Tensor):
            g = g.item()
        got[name], ref[name] = g, r
    ctx = Context(definition, contract, axes, device, dict(zip(definition.inputs, inputs or [], strict=False)), got, ref,
                  atol_floor=dict(atol_floor or {}), task_root=task_root)
    worst_abs = worst_rel = 0.0
    ratio: float | None = None
    for checker in checkers_for(definition, contract):
        check = checker.check(ctx)
        worst_abs = max(worst_abs, check.max_abs_error)
        worst_rel = max(worst_rel, check.max_rel_error)
        if check.judge_ratio is not None:
            ratio = check.judge_ratio if ratio is None else max(ratio, check.judge_ratio)
        if check.status != "PASSED":
            check.max_abs_error, check.max_rel_error, check.judge_ratio = worst_abs, worst_rel, ratio
            return check
    return Check("PASSED", "", worst_abs, worst_rel, ratio)


def canonical_outputs(outputs: list[Any], definition: Definition, contract: Contract) -> list[Any]:
    """The outputs as the determinism gate compares them: set-valued checkers put each row in a
    canonical order (a different order of tied top-k entries is the same answer)."""
    from kernelcraft.gauntlet.checkers import checkers_for

    by_name = dict(zip(definition.outputs, outputs, strict=True))
    for checker in checkers_for(definition, contract):
        by_name = checker.canonical(by_name)
    return [by_name[n] for n in definition.outputs]


COMPARE_CHUNK = 1 << 24  # elements compared at a time: the temporaries of 2**31 elements in float64 ran an H200 out of memory


def compare_values(name: str, got: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float,
                    shape: tuple[int, ...], min_matched_ratio: float = 1.0) -> Check:
    """Element-wise check; with ``min_matched_ratio`` < 1 up to that share of elements may exceed the
    tolerance (never a NaN/Inf disagreement). Compared in float64, :data:`COMPARE_CHUNK` elements at a
    time, so an output of any size and dtype costs a bounded amount of memory beside it."""
    got = got.reshape(-1)
    ref = ref.reshape(-1)
    n = ref.numel()
    if n == 0:
        return Check("PASSED")
    tiny = torch.finfo(torch.float64).tiny
    n_special = n_bad = 0
    first_special: int | None = None
    max_abs = max_rel = 0.0
    worst: tuple[float, int] | None = None  # (score, index) of the element furthest past its tolerance
    for lo in range(0, n, COMPARE_CHUNK):
        g, r = got[lo:lo + COMPARE_CHUNK].to(torch.float64), ref[lo:lo + COMPARE_CHUNK].to(torch.float64)
        ref_nan, got_nan = torch.isnan(r), torch.isnan(g)
        ref_inf, got_inf = torch.isinf(r), torch.isinf(g)
        special_bad = (ref_nan != got_nan) | ((ref_inf | got_inf) & ~(ref_nan | got_nan) & (g != r))
        finite = ~(ref_nan | ref_inf | got_nan | got_inf)
        abs_err = torch.where(finite, (g - r).abs(), torch.zeros_like(r))
        rel_err = abs_err / r.abs().clamp_min(tiny)
        numeric_bad = finite & (abs_err > atol) & (abs_err > rtol * r.abs())
        # one device-to-host copy per chunk (the four figures stacked): the checks of timed calls run
        # inside the timing rotation, where each synchronization is host time between repetitions
        chunk_abs, chunk_rel, k_special, k_bad = torch.stack([
            abs_err.max(), torch.where(finite, rel_err, torch.zeros_like(rel_err)).max(),
            special_bad.sum(dtype=torch.float64), numeric_bad.sum(dtype=torch.float64)]).tolist()
        max_abs, max_rel = max(max_abs, chunk_abs), max(max_rel, chunk_rel)
        k = int(k_special)
        if k and first_special is None:
            first_special = lo + int(special_bad.nonzero()[0])
        n_special += k
        k = int(k_bad)
        n_bad += k
        if k:
            score = torch.where(numeric_bad, abs_err - torch.maximum(torch.full_like(r, atol), rtol * r.abs()),
                                torch.full_like(r, -1.0))
            i = int(score.argmax())
            if worst is None or float(score[i]) > worst[0]:
                worst = (float(score[i]), lo + i)
    if n_special:
        i = first_special
        return Check(
            "INCORRECT_NUMERICAL",
            f"output {name!r}: {n_special} of {n} elements disagree on NaN/Inf; first at index "
            f"{fmt_index(i, shape)}: got {got[i].item():.6g}, expected {ref[i].item():.6g}",
            float("inf"), float("inf"),
        )
    matched = 1.0 - n_bad / n
    if n_bad and matched < min_matched_ratio:
        i = worst[1]
        gi, ri = got[i].to(torch.float64), ref[i].to(torch.float64)
        abs_i = float((gi - ri).abs())
        rel_i = float((gi - ri).abs() / ri.abs().clamp_min(tiny))
        allowance = (f"; the contract requires {100 * min_matched_ratio:g}% of elements within it, "
                     f"{100 * matched:.4g}% are") if min_matched_ratio < 1.0 else ""
        return Check(
            "INCORRECT_NUMERICAL",
            f"output {name!r}: {n_bad} of {n} elements ({100.0 * n_bad / n:.3g}%) exceed both atol={atol:g} "
            f"and rtol={rtol:g}{allowance}; worst at index {fmt_index(i, shape)}: got {got[i].item():.6g}, expected "
            f"{ref[i].item():.6g} (abs error {abs_i:.3g}, rel error {rel_i:.3g})",
            max_abs, max_rel,
        )
    return Check("PASSED", "", max_abs, max_rel)
