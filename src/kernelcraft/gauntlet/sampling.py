"""The ``sampling`` checker: a sampler is judged by where its samples fall and how often.

FlashInfer-Bench's rule (``flashinfer_bench/bench/evaluators/sampling.py``: validity on every call,
then total-variation distance over many draws, its thresholds), with the kept set the definitions'
references and flashinfer's samplers define:

1. *Validity*, on every call: each sample is an index of ``probs``' last dim that the thresholding
   keeps. Top-k keeps every entry at least as large as the k-th largest (ties all count); top-p then
   applies to the top-k row renormalised (flashinfer's ``top_k_first`` order) and keeps the sorted
   prefix whose mass before each entry is below ``p`` (so the entry that crosses ``p`` is kept), with
   ``top_p_eps`` of slack. k <= 0 or k >= vocab, and p <= 0 or p >= 1, keep everything.
2. *Distribution*: ``probs`` (and every input batched with it) is tiled to ``batch_rows`` rows, the
   sampler called until each original row has ``samples_per_row`` samples, and per row the
   total-variation distance ``0.5 * sum |frequency - expected|`` between the samples' frequencies and
   the kept probabilities renormalised must not exceed ``tvd``.

Where this differs from FlashInfer-Bench 0.1.x: its evaluator computes the nucleus on the original
probabilities and keeps only entries whose cumulative mass *including* their own is within
``p + 0.05``. That drops the entry crossing ``p`` and ignores the top-k renormalisation, which the
definitions' own ``top_p`` and ``top_k_top_p`` references keep and apply, so a reference could fail
its own task there (see ``tests/test_fib_faithful.py``).

One call's outputs (the correctness and timed-call checks) are judged by validity only; the judge
runs the draws of step 2 once per correctness check (:meth:`Sampling.draw_plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelcraft.gauntlet.compare import Check
from kernelcraft.task.contract import Contract, SamplingCheck
from kernelcraft.task.definition import AxisVar, Definition


def _fail(reason: str) -> Check:
    return Check("INCORRECT_NUMERICAL", reason)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.unsqueeze(0) if x.dim() == 1 else x


def _per_row(v: Any, n: int, device) -> torch.Tensor:
    t = v if isinstance(v, torch.Tensor) else torch.tensor([v])
    t = t.reshape(-1).to(device)
    return t.expand(n) if t.numel() == 1 else t


def kept_sets(probs: torch.Tensor, top_k: Any, top_p: Any, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """([batch, vocab] bool kept exactly, [batch, vocab] bool allowed with slack): what the definition's
    thresholding keeps, and what a sample may take. Top-k keeps every entry >= the k-th largest (ties all
    count); top-p then applies to the top-k row renormalised (flashinfer's top_k_first order) and keeps
    the sorted prefix whose mass *before* each entry is below p (the entry crossing p included), with
    ``eps`` of slack on p for what a sample may take."""
    p = _rows(probs).to(torch.float64)
    b, v = p.shape
    kept = torch.ones((b, v), dtype=torch.bool, device=p.device)
    if b == 0 or v == 0:
        return kept, kept.clone()
    if top_k is not None:
        k = _per_row(top_k, b, p.device).long()
        use = (k > 0) & (k < v)
        pivot = p.sort(dim=-1, descending=True).values.gather(1, (k.clamp(1, v) - 1)[:, None])
        kept &= ~use[:, None] | (p >= pivot)
    allowed = kept.clone()
    if top_p is not None:
        q = _per_row(top_p, b, p.device).to(torch.float64)
        use = (q > 0) & (q < 1)
        row = torch.where(kept, p, torch.zeros_like(p))
        row = row / row.sum(-1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        srt, idx = row.sort(dim=-1, descending=True)
        before = srt.cumsum(-1) - srt
        exact = torch.zeros_like(kept).scatter_(1, idx, before < q[:, None])
        loose = torch.zeros_like(kept).scatter_(1, idx, before < (q + eps)[:, None])
        kept &= ~use[:, None] | exact
        allowed &= ~use[:, None] | loose
    return kept, allowed


def _validity(s: SamplingCheck, samples: torch.Tensor, mask: torch.Tensor) -> Check | None:
    b, v = mask.shape
    flat = samples.reshape(-1)
    if flat.is_floating_point() or flat.dtype == torch.bool:
        return _fail(f"output {s.samples!r} is {flat.dtype}; samples are integer indices")
    flat = flat.to(mask.device, torch.int64)
    if flat.numel() % max(b, 1):
        return _fail(f"output {s.samples!r}: {flat.numel()} samples for {b} rows of {s.probs!r}")
    bad = (flat < 0) | (flat >= v)
    if bool(bad.any()):
        i = int(bad.nonzero()[0])
        return _fail(f"output {s.samples!r}: {int(bad.sum())} samples outside [0, {v}); first at position {i}: "
                     f"{int(flat[i])}")
    rows = torch.arange(flat.numel(), device=mask.device) % b
    outside = ~mask[rows, flat]
    if bool(outside.any()):
        i = int(outside.nonzero()[0])
        return _fail(f"output {s.samples!r}: {int(outside.sum())} samples outside the kept set "
                     f"({_method(s)}); first at position {i} (row {int(rows[i])}): index {int(flat[i])}, "
                     f"which the thresholding removes")
    return None


def _method(s: SamplingCheck) -> str:
    parts = [n for n, x in (("top-k", s.top_k), ("top-p", s.top_p)) if x]
    return " and ".join(parts) or "no thresholding"


@dataclass
class DrawPlan:
    """What the judge runs for the distribution check: the tiled inputs, how many calls, and the tally."""

    spec: SamplingCheck
    inputs: list[Any]
    axes: dict[str, int]
    calls: int
    mask: torch.Tensor  # [rows, vocab] of the original inputs
    expected: torch.Tensor  # [rows, vocab] float64: the kept probabilities renormalised
    counts: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.counts = torch.zeros(self.mask.shape, dtype=torch.int64, device=self.mask.device)

    def absorb(self, outputs: dict[str, Any]) -> Check | None:
        """One call's samples: validity, then counted per original row."""
        samples = outputs[self.spec.samples]
        if not isinstance(samples, torch.Tensor):
            samples = torch.tensor([samples])
        bad = _validity(self.spec, samples, self.mask)
        if bad is not None:
            return bad
        b, v = self.mask.shape
        flat = samples.reshape(-1).to(self.mask.device, torch.int64)
        rows = torch.arange(flat.numel(), device=flat.device) % b
        self.counts.view(-1).index_add_(0, rows * v + flat, torch.ones_like(flat))
        return None

    def finish(self) -> Check:
        n = self.counts.sum(-1, keepdim=True).clamp_min(1).to(torch.float64)
        tvd = 0.5 * (self.counts.to(torch.float64) / n - self.expected).abs().sum(-1)
        worst = int(tvd.argmax()) if tvd.numel() else 0
        top = float(tvd.max()) if tvd.numel() else 0.0
        if top > self.spec.tvd:
            return _fail(f"output {self.spec.samples!r}: the frequencies of {int(n[worst])} samples of row {worst} are "
                         f"at total-variation distance {top:.4g} from the kept probabilities of {self.spec.probs!r} "
                         f"({_method(self.spec)}); the contract allows {self.spec.tvd:g} (FlashInfer-Bench's rule)")
        return Check("PASSED", "", top, 0.0)


class Sampling:
    kind = "sampling"

    def __init__(self, spec: SamplingCheck, definition: Definition | None = None):
        self.spec, self.definition = spec, definition

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.spec.samples,)

    def _sets(self, inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.spec
        return kept_sets(inputs[s.probs], inputs.get(s.top_k) if s.top_k else None,
                         inputs.get(s.top_p) if s.top_p else None, s.top_p_eps)

    def check(self, ctx) -> Check:
        got = ctx.got[self.spec.samples]
        samples = got if isinstance(got, torch.Tensor) else torch.tensor([got])
        bad = _validity(self.spec, samples, self._sets({k: ctx.input(k) for k in self._input_names()})[1])
        return bad or Check("PASSED")

    def _input_names(self) -> list[str]:
        s = self.spec
        return [n for n in (s.probs, s.top_k, s.top_p) if n]

    def canonical(self, outputs: dict[str, Any]) -> dict[str, Any]:
        return outputs

    def draw_plan(self, definition: Definition, axes: dict[str, int], inputs: list[Any]) -> DrawPlan:
        s = self.spec
        by_name = dict(zip(definition.inputs, inputs, strict=True))
        probs = by_name[s.probs]
        kept_mask, mask = self._sets(by_name)
        kept = _rows(probs).to(torch.float64) * kept_mask
        expected = kept / kept.sum(-1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        b = mask.shape[0]
        shape = definition.inputs[s.probs].shape or []
        batch_axis = shape[0] if len(shape) == 2 else None
        repeat = 1
        if batch_axis is not None and isinstance(definition.axes[batch_axis], AxisVar) and b:
            repeat = max(1, s.batch_rows // b)
        tiled_axes = dict(axes)
        tiled = list(inputs)
        if repeat > 1:
            tiled_axes[batch_axis] = repeat * b
            for i, spec in enumerate(definition.inputs.values()):
                x = inputs[i]
                if isinstance(x, torch.Tensor) and spec.shape and spec.shape[0] == batch_axis:
                    tiled[i] = x.repeat(repeat, *([1] * (x.dim() - 1)))
        calls = math.ceil(s.samples_per_row / repeat)
        return DrawPlan(s, tiled, tiled_axes, calls, mask, expected)

    def describe(self, definition: Definition, contract: Contract) -> list[str]:
        s = self.spec
        return [f"{s.samples}: sampling from {s.probs} ({_method(s)}): every sample inside the kept set (top-k ties, "
                f"top-p within {s.top_p_eps:g}); over {s.samples_per_row} draws per row the frequencies within "
                f"total-variation distance {s.tvd:g} of the renormalised kept probabilities (FlashInfer-Bench's rule)"]
