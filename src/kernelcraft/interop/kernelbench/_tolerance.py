"""The tolerance a converted task is judged by, and the rule that chose it.

KernelBench (``src/kernelbench/eval.py``, ``get_tolerance_for_precision``) accepts a kernel whose
output is ``torch.allclose`` to the problem's fp32 forward with atol = rtol = 1e-4 (1e-2 for fp16 and
bf16). kernelcraft judges against the reference in float64 instead (every floating input upcast), so
that the problem's own fp32 rounding is not part of "the right answer", with an element failing when
its error exceeds both atol and rtol x |reference|. The rule, per floating output:

1. start from KernelBench's tolerance for the output's dtype;
2. measure the problem's own forward in its precision (the baseline) against float64 on the
   import's check workload: ``need`` is the smallest atol = rtol that passes all of its elements;
   where ``MARGIN x need`` exceeds KernelBench's tolerance, the tolerance is ``MARGIN x need`` (an
   implementation as accurate as PyTorch's must pass, on other inputs and larger shapes too), and
   beyond ``CAP`` (KernelBench v0.1's fp32 tolerance) the problem is refused: its fp32 forward is too
   far from the exact answer for any tolerance to tell a right kernel from a wrong one;
3. if a constant output (zeros, or the reference's median) would pass every element, atol is lowered
   between the baseline's largest needed error and the constant's smallest miss; where no atol
   separates them (an output that is all zeros, or as small as the fp32 error itself) the problem is
   refused as degenerate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._errors import ConversionError

KB_TOLERANCE = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
CAP = 1e-2
MARGIN = 4.0


@dataclass
class OutputTolerance:
    name: str
    dtype: str
    atol: float
    rtol: float
    need: float  # the baseline's smallest passing atol = rtol against float64
    why: str


def _round_up(x: float) -> float:
    """Two significant digits, rounded up (a tolerance is never below what was measured)."""
    if x <= 0:
        return x
    e = math.floor(math.log10(x)) - 1
    return math.ceil(x / 10 ** e) * 10 ** e


def _passes(err: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> bool:
    return bool((err <= torch.maximum(torch.full_like(ref, atol), rtol * ref.abs())).all())


def choose(name: str, dtype: str, got: torch.Tensor, ref: torch.Tensor) -> OutputTolerance:
    """The tolerance for one output from the baseline's result and the float64 reference's (same inputs)."""
    g, r = got.detach().double().reshape(-1), ref.detach().double().reshape(-1)
    special = torch.isnan(g) != torch.isnan(r)
    special |= (torch.isinf(g) | torch.isinf(r)) & ~(torch.isnan(g) | torch.isnan(r)) & (g != r)
    if bool(special.any()):
        i = int(special.nonzero()[0])
        raise ConversionError(f"the baseline fails its own task: output {name!r} element {i} is {g[i].item():.6g} in "
                              f"{dtype}, the float64 reference gives {r[i].item():.6g} (NaN/Inf where the exact answer "
                              "has none, or the other way round)")
    finite = torch.isfinite(r)
    g, r = g[finite], r[finite]
    err = (g - r).abs()
    need = float((err / r.abs().clamp_min(1.0)).max()) if err.numel() else 0.0
    base = KB_TOLERANCE.get(dtype, 1e-4)
    t = base
    why = f"KernelBench's {dtype} tolerance {base:g}; the baseline needs {need:.3g} against float64"
    if MARGIN * need > base:
        t = _round_up(MARGIN * need)
        why = (f"{MARGIN:g} x the baseline's own error against float64 ({need:.3g}), above KernelBench's "
               f"{dtype} tolerance {base:g}")
        if t > CAP:
            raise ConversionError(f"the baseline fails its own task: output {name!r} of the problem's {dtype} forward "
                                  f"is {need:.3g} (relative, or absolute below 1) from the float64 reference on the check "
                                  f"workload, and a tolerance of {MARGIN:g} x that exceeds {CAP:g}: the problem is "
                                  "ill-conditioned in this precision and no tolerance tells a right kernel from a wrong one")
    tol = OutputTolerance(name, dtype, t, t, need, why)
    return _separate(tol, err, r)


def _separate(tol: OutputTolerance, err: torch.Tensor, r: torch.Tensor) -> OutputTolerance:
    """Lower atol when a constant output would pass; refuse when nothing separates it from the baseline."""
    if r.numel() < 2:
        return tol
    for label, c in (("all zeros", 0.0), ("the constant median", float(r.median()))):
        miss = (r - c).abs()
        if not _passes(miss, r, tol.atol, tol.rtol):
            continue
        # elements the constant gets wrong by more than rtol: atol must sit below their miss, and above the
        # baseline's error on the elements where rtol alone does not cover it
        beyond = miss > tol.rtol * r.abs()
        top_miss = float(miss[beyond].max()) if bool(beyond.any()) else 0.0
        uncovered = err > tol.rtol * r.abs()
        need = float(err[uncovered].max()) if bool(uncovered.any()) else 0.0
        if top_miss == 0.0 or need >= top_miss / MARGIN:
            what = (f"is {label.removeprefix('the constant ')} ({c:.4g}) in every element" if top_miss == 0.0 else
                    f"is within {top_miss:.3g} of {label} ({c:.4g}) while the baseline's own error reaches {need:.3g}")
            raise ConversionError(f"[degenerate-output] output {tol.name!r} {what} on the check workload: a kernel "
                                  "returning that constant would pass; the problem cannot judge a kernel")
        atol = _round_up(math.sqrt(max(need, top_miss * 1e-6) * top_miss))
        atol = min(atol, top_miss / 2)
        tol = OutputTolerance(tol.name, tol.dtype, atol, tol.rtol, tol.need,
                              tol.why + f"; atol lowered to {atol:.2g} because {label} ({c:.4g}) would pass with the "
                              f"{tol.atol:g} atol (the output's scale is {float(r.abs().max()):.3g})")
    return tol
