"""The honest c2r FFT candidate (tests/fixtures/kda_fft_solutions/dft_c2r_triton.py) is accurate enough
for the KDA request jasvixban-fft3d-c2r (atol 1e-2, rtol 1e-3 against the float64 reference) on the
gauntlet's own stress inputs: outliers of |x| ~ 100-1000 put the unnormalized output at ~4e5 at 32^3,
where atol 1e-2 is ~1e-7 of the output's scale. Its float32 direct DFT failed there (5 of 32768
elements on the CPU, 30 of 16.8M at 256^3 on the H200: float32 sin/cos of float32 phases, float32 sums
and intermediates); it now accumulates in float64 and rounds to float32 once, so its error is the
output's own rounding. The kernels run in a subprocess under TRITON_INTERPRET=1 (triton reads it when
first imported, and an earlier test may have imported it without)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import FIXTURES, ROOT

CANDIDATE = FIXTURES / "kda_fft_solutions" / "dft_c2r_triton.py"
REQUEST = FIXTURES / "kda_fft_c2r_request"  # the c2r request's format and reference, small constraints

SCRIPT = r"""
import importlib.util, json, sys, torch
from kernelcraft.task.inputs import make_inputs
from kernelcraft.task.loader import load_task
from kernelcraft.task.workload import Workload
spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
cand = importlib.util.module_from_spec(spec); spec.loader.exec_module(cand)
task = load_task(sys.argv[2])
rows = []
def check(x, kind):
    nz, ny, nf, _ = x.shape
    nx = 2 * (nf - 1)
    x0 = x.clone()
    got = cand.run(x)
    ref = torch.fft.irfftn(torch.view_as_complex(x0.double()), s=(nz, ny, nx), norm="forward")
    err = (got.double() - ref).abs()
    rows.append(dict(kind=kind, shape=[nz, ny, nx], dtype=str(x.dtype), same_input=bool(torch.equal(x, x0)),
                     out_dtype=str(got.dtype), out_shape=list(got.shape),
                     fails=int(((err > 1e-2) & (err > 1e-3 * ref.abs())).sum()), max_err=float(err.max()),
                     eps_scale=float(torch.finfo(x.dtype).eps * ref.abs().max())))
for seed in range(3):  # the gauntlet's stress draw (uuid stress-...) at the request's first workload
    axes = dict(nz=32, ny=32, nx=32, nf=17)
    w = Workload(uuid=f"stress-0-test{seed}", axes=axes, inputs={"input": {"type": "random"}})
    [x] = make_inputs(task, w, seed, "cpu")
    check(x, "stress")
torch.manual_seed(0)
for nz, ny, nx in [(9, 17, 34), (24, 40, 50), (5, 7, 10), (2, 3, 4), (13, 11, 2)]:  # primes, odd factors
    for dt in (torch.float32, torch.float64):
        check(torch.randn(nz, ny, nx // 2 + 1, 2, dtype=dt), "shape")
print(json.dumps(rows))
"""


def test_c2r_candidate_accuracy():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(CANDIDATE), str(REQUEST)], capture_output=True,
                         text=True, timeout=600, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(rows) == 3 + 10
    for r in rows:
        assert r["same_input"] and r["out_dtype"] == r["dtype"], r
        assert r["out_shape"] == r["shape"], r
        assert r["fails"] == 0, r
        # float64 sums: a float32 result within its own rounding (eps x max |reference|; the float32
        # direct DFT was off by 1-4.4 times that), a float64 one within a few times the reference's
        bound = 1.0 if r["dtype"] == "torch.float32" else 16.0
        assert r["max_err"] <= bound * r["eps_scale"], r
    stress = [r for r in rows if r["kind"] == "stress"]
    assert all(r["eps_scale"] > 1e-2 for r in stress), stress  # outputs large enough to need it
