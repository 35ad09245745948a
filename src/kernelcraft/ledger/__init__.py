"""The ledger: tasks, runs, candidates (a DAG through `parent`), their evaluations and promotions."""

from kernelcraft.ledger.store import Candidate, Ledger, Run, default_url

__all__ = ["Candidate", "Ledger", "Run", "default_url"]
