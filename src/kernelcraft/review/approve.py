"""``kernelcraft approve CANDIDATE --by NAME``: a person's approval, recorded in the ledger.

Only a candidate that PASSED every gate can be approved: an approval vouches for a verdict, not
instead of one. The approval binds the exact source (its sha256). When the contract sets
``[promotion] require_approval`` and the candidate's ledger run has finished, the run's promotion is
decided again at once, so the approved candidate is promoted if it is the best approved one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelcraft.errors import InputError, Problem
from kernelcraft.ledger.store import Ledger
from kernelcraft.review.candidate import Resolved


@dataclass
class ApprovalOutcome:
    approval_id: int
    promoted: int | None  # the run's promoted candidate after this approval (ledger runs)
    note: str  # what the approval changed, in one sentence


def approve(r: Resolved, ledger: Ledger, by: str, note: str = "") -> ApprovalOutcome:
    if not by.strip():
        raise InputError(Problem("--by", by, "empty", "give the name of the person approving"))
    if r.result.status != "PASSED":
        gate = f" at gate {r.result.gate}" if r.result.gate else ""
        raise InputError(Problem("CANDIDATE", r.label, f"did not pass the gauntlet ({r.result.status}{gate})",
                                 "only a candidate that PASSED can be approved; fix it and evaluate it again"))
    aid = ledger.approve(r.solution.source_hash, r.task.definition.name, r.solution.name, by.strip(), note,
                         candidate_id=r.candidate_id, evidence=r.evidence)
    promo = r.task.contract.promotion
    if r.run_id is None:
        return ApprovalOutcome(aid, None, "recorded (the candidate is not in a ledger run: nothing to promote)")
    run = ledger.run(r.run_id)
    if not promo.require_approval:
        return ApprovalOutcome(aid, run.promoted_id, "recorded (the contract does not require approval for promotion)")
    if run.status != "finished":
        return ApprovalOutcome(aid, run.promoted_id, f"recorded; run {r.run_id} is still running and selects at its end")
    from kernelcraft.agent.loop import select

    result = select(ledger, r.run_id, r.task, finish=False)
    if result["promoted"] == r.candidate_id:
        what = f"candidate {r.candidate_id} is now promoted in run {r.run_id}"
    elif not r.result.promotable:
        what = (f"recorded; candidate {r.candidate_id} does not meet the promotion rule "
                f"(x baseline >= {promo.min_speedup_vs_baseline:g}), so it is not promoted")
    else:
        what = f"recorded; run {r.run_id} keeps candidate {result['promoted']}, a better approved one"
    return ApprovalOutcome(aid, result["promoted"], what)
