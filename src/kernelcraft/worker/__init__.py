"""Isolated execution: one spawned worker process per candidate, with hard timeouts, spread over
the devices of this machine (the local pool) or of a Ray cluster by an executor."""

from kernelcraft.worker.child import Job
from kernelcraft.worker.executor import Executor, LocalExecutor, make_executor
from kernelcraft.worker.pool import run_job

__all__ = ["Executor", "Job", "LocalExecutor", "make_executor", "run_job"]
