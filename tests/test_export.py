"""kernelcraft export: the torch-op wheel installed into a fresh environment without kernelcraft passes
its shipped tests (kernel vs reference, fallback, opcheck, torch.compile fullgraph without
recompiles) and logs each kind of fallback once; the hf-kernels layout loads with the real `kernels`
package; the fib dataset parses with the real flashinfer-bench models; bad candidates are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from export_support import TRITON, WRONG, evaluated, kc, run_isolated, venv_with


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return evaluated(tmp_path_factory)


def _export(ev, fmt, dest, *extra):
    task, record = ev
    proc = kc("export", record, dest, "--format", fmt, "--solution", TRITON, "--task", task, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


FALLBACK_SCRIPT = """
import json, logging, io
stream = io.StringIO()
logging.basicConfig(stream=stream, level=logging.WARNING, format="%(name)s|%(message)s")
import torch
import kc_rmsnorm_bf16_h4096 as k
x = torch.randn(4, 64, dtype=torch.bfloat16); w = torch.randn(64, dtype=torch.bfloat16)
ok = k.op(x, w, 1e-5)
for _ in range(3):
    k.op(x.float(), w.float(), 1e-5)                                     # a dtype it was not validated for
big = torch.randn(40, 64, dtype=torch.bfloat16)                           # a size beyond every validated one
for _ in range(2):
    out = k.op(big, w, 1e-5)
assert torch.equal(out, k.reference(big, w, 1e-5))
print(json.dumps({"stats": k.stats(), "log": stream.getvalue().splitlines(), "validated": k.validated["var_axes"],
                  "op": str(k.op), "ok_dtype": str(ok.dtype)}))
import pytest
raise SystemExit(pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
                              "--pyargs", "kc_rmsnorm_bf16_h4096.tests"]))
"""


HF_SCRIPT = """
import json, torch
from pathlib import Path
from kernels import get_local_kernel, get_loaded_kernels
from kernels._rust import Build
k = get_local_kernel(Path("hf"))
x = torch.randn(8, 64, dtype=torch.bfloat16); w = torch.randn(64, dtype=torch.bfloat16)
got, ref = k.op(x, w, 1e-5), k.reference(x, w, 1e-5)
err = (got.double() - ref.double()).abs()
bad = ((err > 1e-2) & (err > 1.6e-2 * ref.double().abs())).sum().item()
[loaded] = get_loaded_kernels()
print(json.dumps({"stats": k.stats(), "bad": bad, "name": str(loaded.metadata.name), "id": loaded.metadata.id,
                  "backends": [str(b) for b in Build.open("hf").general.backends], "op": str(k.op)}))
"""


def test_torch_op_and_hf_kernels_exports_work_without_kernelcraft(ev, tmp_path):
    """One fresh venv process (startup is most of the cost): the torch-op wheel, then the hf-kernels
    layout loaded by Hugging Face's `kernels`."""
    pytest.importorskip("kernels", reason="the kernels package is a test dependency (pip install -e '.[test]')")
    from kernelcraft.export import export
    from kernelcraft.review.candidate import resolve

    task, record = ev
    dest = tmp_path / "op"
    export(resolve(str(record), TRITON, task_dir=task), "torch-op", dest)  # the CLI's path: test_fib_export_...
    export(resolve(str(record), TRITON, task_dir=task), "hf-kernels", tmp_path / "hf")
    assert (tmp_path / "hf" / "build" / "torch-cpu" / "metadata.json").is_file()
    [wheel] = list((dest / "dist").glob("*.whl"))
    assert (dest / "pyproject.toml").is_file() and "Validated envelope" in (dest / "README.md").read_text()
    py = venv_with(wheel, tmp_path)
    script = HF_SCRIPT + FALLBACK_SCRIPT.replace("import json, logging, io", "import json, logging, io  # torch-op")
    proc = run_isolated(py, script, tmp_path, env={"HF_HUB_OFFLINE": "1"})
    out = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hf = json.loads(out[0])
    assert hf["stats"]["kernel"] == 1 and hf["stats"]["fallback"] == 0 and hf["bad"] == 0, hf
    assert hf["name"] == "kc-rmsnorm-bf16-h4096" and hf["id"].startswith("_kc_rmsnorm_bf16_h4096_cpu_")
    assert hf["backends"] == ["cpu"] and "kchf_" in hf["op"]
    info = json.loads(out[1])
    stats = info["stats"]
    # One kernel call; five reference calls, each kind of miss logged once, with its reason.
    assert stats["kernel"] == 1 and stats["fallback"] == 5, stats
    assert stats["fallback_reasons"]["dtype"]["count"] == 3 and stats["fallback_reasons"]["shape"]["count"] == 2
    warnings = [ln for ln in info["log"] if "running the reference" in ln]
    assert len(warnings) == 2, info["log"]
    assert any("float32; validated for bfloat16" in ln for ln in warnings)
    hi = info["validated"]["batch_size"]["max"]
    assert any(f"batch_size=40 outside the validated range [1, {hi}]" in ln for ln in warnings)
    assert info["ok_dtype"] == "torch.bfloat16"
    # The shipped tests: kernel vs reference, fallback, opcheck on both paths, compile fullgraph no recompiles.
    assert "4 passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]


def test_fib_export_parses_with_flashinfer_bench(ev, tmp_path):
    data = pytest.importorskip("flashinfer_bench.data", reason="flashinfer-bench is installed by .ci/run")
    _export(ev, "fib", tmp_path / "fib")
    ts = data.TraceSet.from_path(str(tmp_path / "fib"))
    record = json.loads(ev[1].read_text())
    res = next(s for s in record["solutions"] if s["name"] == TRITON)
    name = record["task"]
    assert list(ts.definitions) == [name]
    [sol] = ts.solutions[name]
    assert sol.name == TRITON and sol.spec.language.value == "triton" and sol.spec.target_hardware
    assert len(ts.workloads[name]) == 3
    traces = ts.traces[name]
    assert {t.solution for t in traces} == {TRITON}
    assert sorted(t.evaluation.performance.latency_ms for t in traces) == sorted(w["latency_ms"] for w in res["workloads"])
    assert all(t.evaluation.status.value == "PASSED" for t in traces)


def test_export_refuses_what_was_not_validated(ev, tmp_path):
    task, record = ev
    proc = kc("export", record, tmp_path / "x", "--format", "torch-op", "--solution", WRONG, "--task", task)
    assert proc.returncode == 2 and "did not pass the gauntlet (INCORRECT_NUMERICAL" in proc.stderr, proc.stderr
    assert not (tmp_path / "x").exists()
    from kernelcraft.errors import InputError
    from kernelcraft.export import export
    from kernelcraft.review.candidate import resolve

    r = resolve(str(record), TRITON, task_dir=task)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("an older export")
    with pytest.raises(InputError, match="exists and is not an empty folder"):
        export(r, "torch-op", tmp_path / "full")
    with pytest.raises(InputError, match="unknown export format"):
        export(r, "onnx", tmp_path / "y")
    # The source changed after the evaluation: the record no longer vouches for it.
    edited = tmp_path / "edited"
    import shutil

    shutil.copytree(task, edited)
    src = edited / "solutions" / f"{TRITON}.py"
    src.write_text(src.read_text() + "\n# edited after the evaluation\n")
    with pytest.raises(InputError, match="evaluate the current source again"):
        resolve(str(record), TRITON, task_dir=edited)
    with pytest.raises(InputError, match="holds 2 candidate solutions"):
        resolve(str(record), None, task_dir=task)
    assert os.listdir(tmp_path / "full") == ["keep.txt"]


def test_cuda_solution_exports_and_runs_the_reference_off_its_gpu(tmp_path):
    """The H200 record's CUDA kernel: sources and record ship; on this CPU the op runs the reference;
    the hf-kernels variant declares CUDA 9.0, so `kernels` finds no variant for a CPU machine."""
    import torch

    from kernelcraft.e2e.run import load_package
    from kernelcraft.export import export
    from kernelcraft.review.candidate import resolve

    from conftest import ROOT

    r = resolve(str(ROOT / "tests" / "fixtures" / "records" / "h200" / "rmsnorm.json"), "rmsnorm_bf16_h4096_cuda_vec8", task_dir=ROOT / "tasks" / "rmsnorm")
    out = export(r, "torch-op", tmp_path / "op", name="kc_h200_rmsnorm_test")
    src = Path(out["dest"]) / "src" / "kc_h200_rmsnorm_test"
    assert {p.name for p in (src / "_solution").iterdir()} >= {"kernel.cu", "binding.cpp"}
    assert json.loads((src / "evaluation.json").read_text())["solutions"][0]["source_hash"] == r.solution.source_hash
    pkg = load_package(str(tmp_path / "op"))
    env = pkg.validated
    assert (env["device_type"], env["hardware"], env["compute_capability"]) == ("cuda", "NVIDIA H200", "9.0")
    x, w = torch.randn(3, 4096, dtype=torch.bfloat16), torch.randn(4096, dtype=torch.bfloat16)
    pkg.reset_stats()
    assert torch.equal(pkg.op(x, w, 1e-5), pkg.reference(x, w, 1e-5))
    assert pkg.stats()["fallback_reasons"]["device"]["first"] == "inputs on cpu; the kernel was validated on cuda only"
    torch.library.opcheck(pkg.op, (x, w, 1e-5))
    kernels = pytest.importorskip("kernels")
    hf = export(r, "hf-kernels", tmp_path / "hf")
    from kernels._rust import Metadata

    meta = Metadata.read_from_file(Path(hf["variant"]) / "metadata.json")
    assert str(meta.backend.backend_type).lower().endswith("cuda") and meta.backend.archs == ["9.0"]
    with pytest.raises(FileNotFoundError, match="Cannot find a build variant"):
        kernels.get_local_kernel(tmp_path / "hf")
