"""Integrity, the judge's side (gate 5). Each failed check names its class in brackets, so a verdict
says which way of cheating it caught; docs/integrity.md lists every class with its gate and fixture.

Decided here, on what the judge holds itself:
- ``[input-mutation]`` an input in the shared arena differs from the judge's pristine copy after the call;
- ``[nondeterminism]`` two calls on identical inputs disagree bit for bit (in the checkers' canonical
  form); ``[integrity] deterministic = false`` relaxes it to: the second call must pass the checks again;
  under a numerical failure the judge repeats the call too and adds the line to the INCORRECT_NUMERICAL
  reason where the two differ (a race looks like rounding from one call);
- ``[torch-compute]`` the op counts the runner reported include ops outside the allowlist (by
  qualified name; ``contract.toml [integrity] allowed_torch_ops`` may allow more);
- ``[threads]`` the thread counts it reported grew during a call;
- ``[timed-output]`` the outputs of a timed call (fresh inputs, chosen secretly) are wrong;
- ``[protocol]`` a reply of the runner is not an answer to what it was asked.

Seen in the runner (:mod:`kernelcraft.runner.checks`) and reported as findings, which can only count
against a candidate: ``[output-aliasing]``, ``[not-a-plain-tensor]``, ``[harness-tamper]``,
``[audit-tamper]``.
"""

from __future__ import annotations

from typing import Any

import torch


def bitwise_equal(a: Any, b: Any) -> tuple[bool, int]:
    """Bit-for-bit equality (NaNs with the same bits compare equal); returns (equal, differing elements)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return (a == b) or (a != a and b != b), 0 if a == b else 1
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, max(a.numel(), b.numel())
    if a.dtype == torch.bool:
        diff = a != b
    else:
        view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        diff = a.contiguous().view(view) != b.contiguous().view(view)
    n = int(diff.sum())
    return n == 0, n
