"""The exported op's eager fast path (the envelope verdict cached per argument key, in-envelope calls
straight to the kernel without the dispatcher) keeps the behaviour: after cached in-envelope calls, a
shape past the envelope, the cached shape non-contiguous and the cached shape in another dtype each
run the reference (counted, logged once per kind), the next in-envelope call runs the kernel again,
and calls the dispatcher must see (a dispatch mode, an input that records gradients) still go through
it. Behaviour only, never timing (benchmarks/export_call_overhead.py measures the cost).

In a subprocess with TRITON_INTERPRET=1: the package was validated through the interpreter, which
must be on when triton is first imported (this test process may have imported it without)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from e2e_support import FIXTURES

SCRIPT = r"""
import io, json, logging, sys
stream = io.StringIO()
logging.basicConfig(stream=stream, level=logging.WARNING, format="%(name)s|%(message)s")
import torch
from torch.utils._python_dispatch import TorchDispatchMode
sys.path.insert(0, sys.argv[1])
import kc_rmsnorm_bf16_h4096 as k

op, ex = k.op, k._exported
through = []  # the calls that went through the dispatcher (its backend, _impl, checks), by the first input's shape
orig = ex._check_cached
def counted(args):
    through.append(list(args[0].shape))
    return orig(args)
ex._check_cached = counted

res = {"op_is_custom_op": isinstance(op, torch._library.custom_ops.CustomOpDef), "op": str(op)}
w = torch.randn(64, dtype=torch.bfloat16)
x = torch.randn(8, 64, dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(3):
        got = op(x, w, 1e-5)
    res["after_3_in_envelope"] = {"through": len(through), "stats": k.stats()}
    ref = k.reference(x, w, 1e-5)
    res["max_err"] = (got.float() - ref.float()).abs().max().item()
    big = torch.randn(40, 64, dtype=torch.bfloat16)  # past the validated batch sizes [1, 16]
    res["big_is_reference"] = all(torch.equal(op(big, w, 1e-5), k.reference(big, w, 1e-5)) for _ in range(2))
    xt = torch.randn(64, 8, dtype=torch.bfloat16).t()  # the cached shape [8, 64], not contiguous
    res["strided_is_reference"] = torch.equal(op(xt, w, 1e-5), k.reference(xt, w, 1e-5))
    res["float32_is_reference"] = torch.equal(op(x.float(), w.float(), 1e-5), k.reference(x.float(), w.float(), 1e-5))
    n = len(through)
    op(x, w, 1e-5)
    res["again_direct"] = len(through) == n

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with Seen() as mode:
        op(x, w, 1e-5)
    res["mode_saw_op"] = [o for o in mode.ops if "kcx_" in o]
wg = w.clone().requires_grad_()
res["grad_fn"] = op(x, wg, 1e-5).grad_fn is not None
res["stats"] = k.stats()
res["warnings"] = [ln for ln in stream.getvalue().splitlines() if "running the reference" in ln]
res["through"] = list(through)
# a reference computing in float32 (the GDN tasks' do): a call with the definition's dtypes still returns
# the definition's bfloat16, on the fallback path and under the fake; with other dtypes its own dtype
ex.reference = lambda *a: k.reference(*a).float()
big = torch.randn(40, 64, dtype=torch.bfloat16)
res["fallback_dtype"] = str(op(big, w, 1e-5).dtype)
from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode() as fm:
    res["fake_dtype"] = str(op(fm.from_tensor(x), fm.from_tensor(w), 1e-5).dtype)
res["float32_call_dtype"] = str(op(x.float(), w.float(), 1e-5).dtype)
print(json.dumps(res))
"""


def test_cached_fast_path_still_refuses_what_is_outside_the_envelope(tmp_path):
    from kernelcraft.export import export
    from kernelcraft.review.candidate import resolve

    r = resolve(str(FIXTURES / "rmsnorm.json"), "triton_rowwise", None, FIXTURES / "rmsnorm")
    out = export(r, "torch-op", tmp_path / "op")
    (tmp_path / "check.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path / "op" / "src")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["op_is_custom_op"] and "kcx_" in res["op"], res
    # the first call is checked through the dispatcher; the next two go to the kernel directly
    first = res["after_3_in_envelope"]
    assert first["through"] == 1 and first["stats"]["kernel"] == 3 and first["stats"]["fallback"] == 0, first
    assert res["max_err"] < 0.1, res
    assert res["big_is_reference"] and res["strided_is_reference"] and res["float32_is_reference"], res
    assert res["again_direct"], res
    assert len(res["mode_saw_op"]) == 1 and res["grad_fn"], res
    assert res["fallback_dtype"] == res["fake_dtype"] == "torch.bfloat16", res
    assert res["float32_call_dtype"] == "torch.float32", res
    stats = res["stats"]
    # kernel: 3 + again + under the mode + with grad; reference: 2 too big, 1 strided, 1 float32
    assert stats["kernel"] == 6 and stats["fallback"] == 4, stats
    reasons = {k: v["count"] for k, v in stats["fallback_reasons"].items()}
    assert reasons == {"shape": 2, "layout": 1, "dtype": 1}, stats
    assert "batch_size=40 outside the validated range [1, 16]" in stats["fallback_reasons"]["shape"]["first"]
    assert len(res["warnings"]) == 3, res["warnings"]  # once per kind of miss
    # every miss, the dispatch mode's call and the gradient-recording call took the dispatcher
    assert res["through"] == [[8, 64], [40, 64], [40, 64], [8, 64], [8, 64], [8, 64], [8, 64]], res["through"]
    assert out["op"].startswith("torch.ops.kcx_")
