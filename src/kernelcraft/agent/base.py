"""What every proposer sees and returns. Proposers are equal before the gauntlet: a model, a CLI,
the tuner or a folder of files all turn a :class:`Context` into a :class:`Proposal`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kernelcraft.solution.model import Solution
from kernelcraft.task.loader import Task

if TYPE_CHECKING:
    from kernelcraft.ledger.memory import Worked


@dataclass
class CandidateView:
    """One earlier candidate of the run, as the ledger remembers it."""

    id: int
    parent: int | None
    agent: str
    strategy: str  # the proposer's one-line note of what it tried
    status: str  # a gauntlet status, or "PENDING" while in flight
    speedup_vs_baseline: float | None
    feedback: str  # what an agent needs to fix or improve it (see kernelcraft.agent.feedback)
    solution: Solution


@dataclass
class Context:
    """The research step's bundle: the contract, the sources, and the run so far."""

    task: Task
    device: str
    brief: str  # the contract in words: axes, inputs, outputs, tolerances, workloads, baseline timing
    history: list[CandidateView] = field(default_factory=list)  # every candidate, oldest first
    hardware: str = ""  # the device's name as records give it ("NVIDIA H200"), for the knowledge pages
    similar: list[Worked] = field(default_factory=list)  # what worked on similar tasks (the ledger's memory)
    starting_point: Worked | None = None  # the one of ``similar`` offered to start from, if any

    @property
    def frontier(self) -> list[CandidateView]:
        """Passing candidates, best first."""
        ok = [c for c in self.history if c.status == "PASSED" and c.speedup_vs_baseline]
        return sorted(ok, key=lambda c: -(c.speedup_vs_baseline or 0))

    @property
    def last(self) -> CandidateView | None:
        return self.history[-1] if self.history else None

    @property
    def default_parent(self) -> int | None:
        """What a model-written proposal derives from: the best candidate so far, else the last one,
        else the ledger candidate offered as the starting point (lineage across runs)."""
        if self.frontier:
            return self.frontier[0].id
        if self.last:
            return self.last.id
        return self.starting_point.candidate_id if self.starting_point else None


@dataclass
class Proposal:
    solution: Solution
    parent: int | None  # the candidate this one was derived from, if any
    plan: str  # written before the code: what to try and why
    strategy: str  # one line for the DAG


class Agent(Protocol):
    name: str

    def propose(self, ctx: Context) -> Proposal | None:
        """The next candidate, or None when this agent has nothing more to try."""
        ...

    # Optional: ``offer(similar: list[Worked], definition: dict) -> None``, called once before the
    # baseline is evaluated with what worked on similar tasks; it may raise AgentError when the
    # agent cannot work with what it has (the tuner without TUNABLES of its own or offered).


class AgentError(Exception):
    """An agent cannot work here (a missing API key, CLI or folder); the message says what to do."""
