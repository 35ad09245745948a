"""Solutions: the FlashInfer-Trace record, packing, and builders per language."""

from kernelcraft.solution.model import BuildSpec, Solution, SourceFile, load_solution, pack_python_file

__all__ = ["BuildSpec", "Solution", "SourceFile", "load_solution", "pack_python_file"]
