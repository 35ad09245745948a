"""The forkserver's preload for CPU workers (:mod:`kernelcraft.worker.template`): the Triton
interpreter on before triton is imported."""

from kernelcraft.worker.template import warm

warm("cpu")
