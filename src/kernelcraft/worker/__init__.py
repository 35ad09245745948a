"""Isolated execution: one spawned worker process per candidate, with hard timeouts."""

from kernelcraft.worker.child import Job
from kernelcraft.worker.pool import run_job

__all__ = ["Job", "run_job"]
