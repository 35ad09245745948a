"""What a person should hear before a candidate is approved or exported, though nothing forbids it.

``approve`` and ``export`` refuse what did not pass; they used to accept in silence a candidate
slower than the baseline, one that was never timed, or one its run did not promote (issue 24).
Each of those is a warning here, printed by the command beside what it did.
"""

from __future__ import annotations

from kernelcraft.ledger.store import Ledger
from kernelcraft.review.candidate import Resolved, can_promote


def cautions(r: Resolved, ledger: Ledger | None) -> list[str]:
    res, rule = r.result, r.task.contract.promotion.min_speedup_vs_baseline
    out = []
    where = "on the CPU (interpreter figures)" if not r.full.device.startswith("cuda") else f"on {r.full.environment.get('hardware', r.full.device)}"
    if res.speedup_vs_baseline is None:
        out.append(f"{r.label} was not timed (correctness only): nobody measured whether it beats the baseline")
    elif res.speedup_vs_baseline < 1.0:
        out.append(f"{r.label} is slower than the baseline: {res.speedup_vs_baseline:.3g}x baseline.py {where}")
    if r.candidate_id is not None and ledger is not None and r.run_id is not None:
        run = ledger.run(r.run_id)
        if run is not None and run.promoted_id != r.candidate_id:
            other = f"candidate {run.promoted_id}" if run.promoted_id is not None else "no candidate"
            out.append(f"{r.label} was never promoted: run {r.run_id} promoted {other}"
                       + ("" if can_promote(res) else f" (it does not meet the promotion rule x baseline >= {rule:g})"))
    elif not can_promote(res):
        out.append(f"{r.label} does not meet the contract's promotion rule (PASSED and x baseline >= {rule:g})")
    return out
