"""``kernelcraft capture``: from a model to the operators worth a kernel, as task folders.

A model (a ``transformers`` config with random weights, or a user's ``module:factory``) runs a
prefill and a decode step; its graph is captured (``graphs.py``), cut into regions (one operator in
eager mode, one Inductor kernel's FX nodes with ``--compile``: ``regions.py``), ranked by their share
of the profiled step, and the top regions become task folders whose reference is generated from the
captured graph (``codegen.py``, ``write.py``). Regions a catalog task already computes are linked
to it instead. ``run.py`` ties the steps together.
"""

from kernelcraft.capture.models import CaptureError

__all__ = ["CaptureError"]
