"""A Triton export registered with torch.library.triton_op: under torch.compile(fullgraph=True) the
op decomposes into its kernel launch, so Inductor sees the kernel and its neighbours stay plain aten
ops it can fuse.

This CPU machine cannot run Inductor's code generation around a user Triton kernel (it needs a GPU
driver: "0 active drivers"), and under the Triton interpreter the kernel cannot be traced at all
(torch's wrap_triton returns interpreted kernels unwrapped). So the test checks the property at the
graph Inductor receives, in a process without the interpreter: one graph (no break), the kernel as a
``triton_kernel_wrapper_functional`` node, no opaque call of the op, and the ops around it as aten
ops. The H200 run (scripts/h200_capture.sh) is where generated code is inspected.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, kc
from tests.export_support import TRITON, evaluated

SCRIPT = r"""
import json, sys
import torch
import triton  # imported first and without TRITON_INTERPRET: real (traceable) kernels
sys.path.insert(0, sys.argv[1])
import kc_rmsnorm_bf16_h4096 as pkg
from torch._dynamo.backends.common import aot_autograd
import importlib

# The record validated the kernel on the CPU through the interpreter, so the runtime refuses to load it
# under real Triton (it would fall back to the reference, correctly). Load it as a GPU export would.
ex = pkg._exported
entry, symbol = ex.solution["entry_point"].split("::")
ex._kernel = getattr(importlib.import_module(f"{pkg.__name__}._solution." + entry.removesuffix(".py")), symbol)

graphs = []
class Traced(Exception):
    pass

def fw(gm, example_inputs):
    graphs.append(gm)
    def run(*args):
        raise Traced()  # the kernel cannot launch on this machine; the graph is what is checked
    return run

def f(x, w):
    return pkg.op(x * 2.0, w, 1e-5) + 1.0

x = torch.randn(4, 64, dtype=torch.bfloat16)
w = torch.randn(64, dtype=torch.bfloat16)
try:
    torch.compile(f, fullgraph=True, backend=aot_autograd(fw_compiler=fw), dynamic=False)(x, w)
except Traced:
    pass
g = graphs[0]
calls = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
print(json.dumps({"graphs": len(graphs), "calls": calls, "traceable": pkg._exported.traceable_triton(),
                  "stats": pkg.stats()}))
"""


def test_triton_export_is_a_triton_op_inductor_sees(tmp_path_factory, tmp_path):
    _, record = evaluated(tmp_path_factory)
    dest = tmp_path / "export"
    proc = kc("export", record, dest, "--format", "torch-op", "--solution", TRITON)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp_path / "check.py").write_text(SCRIPT)
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT / "src")
    run = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(dest / "src")], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["traceable"] and out["graphs"] == 1  # fullgraph: one graph, no break
    calls = out["calls"]
    kernels = [c for c in calls if "triton_kernel_wrapper" in c]
    assert len(kernels) == 1, calls  # the kernel itself is in the graph ...
    assert not any("kcx_" in c for c in calls), calls  # ... not an opaque call of the op
    # its neighbours are plain aten ops (Inductor fuses those as it would without the kernel)
    assert any(c.startswith("aten.mul") for c in calls) and any(c.startswith("aten.add") for c in calls), calls
    assert out["stats"]["kernel"] == 0  # tracing is not a call: the counts stay those of real calls
