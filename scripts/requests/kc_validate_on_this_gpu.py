"""Run a KDA wishlist request's benchmark.py (its correctness checks) on a GPU its device assertion
does not name. Copied into the request folder by kernelcraft's scripts/h200_requests.sh; not part of
the request. benchmark.py asserts "B200" or "B300" in torch.cuda.get_device_name() because its timings
are only meaningful there; its correctness checks (run with --skip-timing) are not device-specific,
so the name it reads here says both what this GPU is and that it stands in for a B200."""
import runpy
import sys
from pathlib import Path

import torch

_name = torch.cuda.get_device_name
torch.cuda.get_device_name = lambda *a, **k: f"{_name(*a, **k)} (a stand-in for a) B200"
here = Path(__file__).resolve().parent
sys.argv = [str(here / "benchmark.py"), *sys.argv[1:]]
runpy.run_path(str(here / "benchmark.py"), run_name="__main__")
