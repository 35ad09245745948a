"""Measurement: the timer and the environment a number was measured in."""

from kernelcraft.measure.timing import TIMING_VERSION, Timing, time_interleaved

__all__ = ["TIMING_VERSION", "Timing", "time_interleaved"]
