"""Task folders: the contract a candidate is judged by."""

from kernelcraft.task.contract import Contract, Tolerance, load_contract
from kernelcraft.task.definition import AxisConst, AxisVar, Definition, TensorSpec
from kernelcraft.task.loader import Task, load_task
from kernelcraft.task.workload import Workload

__all__ = [
    "AxisConst", "AxisVar", "Contract", "Definition", "Task", "TensorSpec", "Tolerance", "Workload",
    "load_contract", "load_task",
]
