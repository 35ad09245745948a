"""kernelcraft: agent-designed GPU kernels, verified, measured and recorded before anyone trusts them.

The public entry points are the `kernelcraft` command (:mod:`kernelcraft.cli`) and:

- :func:`kernelcraft.task.load_task`: a task folder -> :class:`kernelcraft.task.Task`
- :func:`kernelcraft.solution.load_solution`: a solution file or folder -> :class:`kernelcraft.solution.Solution`
- :func:`kernelcraft.gauntlet.evaluate`: a task and solutions -> :class:`kernelcraft.gauntlet.EvalReport`
"""

__version__ = "0.1.0"

# Names the whole evaluation pipeline (gates, comparison, input generation). Bump it when a change
# could turn a verdict or a number around; every record carries it.
# 0.6.1: balanced_kmeans' distance_rtol replay of near ties (session 15), the task's sources hashed into every
# record, kc-timing/6 (session 16)
HARNESS_VERSION = "kernelcraft-gauntlet/0.6.1"

__all__ = ["HARNESS_VERSION", "__version__"]
