"""The forkserver's preload for CUDA workers (:mod:`kernelcraft.worker.template`): no CUDA call."""

from kernelcraft.worker.template import warm

warm("cuda")
