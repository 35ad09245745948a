"""The gauntlet: gates every candidate passes, in order, before a number is believed."""

from kernelcraft.gauntlet.evaluate import Options, baseline_solution, compile_solution, evaluate
from kernelcraft.gauntlet.records import EvalReport, SolutionResult, WorkloadResult

__all__ = ["EvalReport", "Options", "SolutionResult", "WorkloadResult", "baseline_solution",
           "compile_solution", "evaluate"]
