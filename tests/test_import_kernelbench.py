"""KernelBench import: problems in KernelBench's format (tests/fixtures/kernelbench/) become task
folders that load, pass `task check`, and whose baseline (the problem's own forward) passes its own
task on the CPU; a problem that cannot be converted is reported with its reason. Issue 27's failures
(tests/fixtures/kernelbench_real/) are in tests/test_kernelbench_real.py."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kernelcraft.gauntlet.static import check_static
from kernelcraft.interop.kernelbench import import_kernelbench
from kernelcraft.solution import load_solution
from kernelcraft.task import load_task
from kernelcraft.task.inputs import make_inputs

from conftest import FIXTURES, eval_json, kc

KB = FIXTURES / "kernelbench"
CONVERTIBLE = {
    "19_ReLU", "47_Sum_reduction_over_a_dimension", "2_Standard_matrix_multiplication_",
    "11_Conv2d_BatchNorm_ReLU", "3_MLP_Softmax", "95_CrossEntropyLoss",
}
BROKEN = "99_broken_get_inputs"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernelbench_tasks")
    report = import_kernelbench([KB], out, seed=0)
    return out, report


def _parallel(fn, items):
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        return dict(zip(items, pool.map(fn, items), strict=True))


def _problem(stem: str) -> types.ModuleType:
    module = types.ModuleType("problem")
    exec(compile((KB / f"{stem}.py").read_text(), stem, "exec"), module.__dict__)
    return module


def _load_run(text: str):
    ns: dict = {}
    exec(compile(text, "<generated>", "exec"), ns)
    return ns["run"]


def test_report_lists_converted_and_failed(imported):
    out, report = imported
    assert {p.name for p in report.converted} == CONVERTIBLE
    assert all(p.parent == out for p in report.converted)
    assert len(report.failures) == 1
    path, reason = report.failures[0]
    assert Path(path).stem == BROKEN
    assert "get_inputs()" in reason and "broken on purpose" in reason
    assert not (out / BROKEN).exists()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(CONVERTIBLE), "no partial or temporary folders left"
    lines = [json.loads(ln) for ln in (out / "kernelbench_import.jsonl").read_text().splitlines()]
    assert sorted(Path(r["problem"]).stem for r in lines) == sorted(CONVERTIBLE | {BROKEN})
    assert all(r["peak_mb"] and r["seconds"] > 0 for r in lines)


def test_folders_load_and_pass_task_check(imported):
    out, _ = imported
    for name in CONVERTIBLE:
        task = load_task(out / name)
        d = task.definition
        assert d.op_type == "kernelbench" and "source:kernelbench" in d.tags
        assert task.readme_path is not None and len(task.workloads) >= 1
        assert not task.warnings
        # any solution an imported task holds passes the static gate (tests/test_static.py's zero false
        # rejections, checked here where the import already ran; the importer writes none today)
        for p in task.solution_paths():
            v = check_static(load_solution(p, d.name))
            assert v.passed, (name, p, v.reason)
    procs = _parallel(lambda n: kc("task", "check", out / n), sorted(CONVERTIBLE))
    for name, proc in procs.items():
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}{proc.stderr}"
        assert proc.stdout.strip().endswith("ok"), proc.stdout


def test_baselines_pass_their_own_tasks_on_cpu(imported, tmp_path):
    out, _ = imported
    records = _parallel(lambda n: eval_json(out / n, tmp=tmp_path), sorted(CONVERTIBLE))
    for name, rec in records.items():
        base = rec["solutions"][0]
        assert base["name"] == "baseline", name
        assert base["status"] == "PASSED", f"{name}: {base['reason']}"
        assert base["workloads"] and all(w["status"] == "PASSED" for w in base["workloads"]), (name, base["workloads"])


def test_matmul_has_var_axes_and_shape_variants(imported):
    out, _ = imported
    task = load_task(out / "2_Standard_matrix_multiplication_")
    d = task.definition
    assert set(d.var_axes) == {"M", "K", "N"}
    assert d.inputs["A"].shape == ["M", "K"] and d.inputs["B"].shape == ["K", "N"]
    assert d.outputs["output"].shape == ["M", "N"] and d.outputs["output"].dtype == "float32"
    axes = [w.axes for w in task.workloads]
    assert len(axes) >= 3
    assert {"M": 64, "K": 32, "N": 48} in axes, "the problem's own shapes are a workload"
    assert min(a["M"] for a in axes) < 64 < max(a["M"] for a in axes)
    assert all(spec.type == "random" for w in task.workloads for spec in w.inputs.values())


def test_elementwise_and_reduction_axes(imported):
    out, _ = imported
    relu = load_task(out / "19_ReLU").definition
    assert set(relu.var_axes) == {"batch_size", "dim"}
    assert relu.outputs["output"].shape == ["batch_size", "dim"]
    red = load_task(out / "47_Sum_reduction_over_a_dimension").definition
    assert set(red.var_axes) == {"batch_size", "dim1", "dim2"}
    b, one, d2 = red.outputs["output"].shape
    assert (b, d2) == ("batch_size", "dim2")
    assert red.axes[one].type == "const" and red.axes[one].value == 1  # keepdim over reduce_dim = 1


def test_conv_weights_buffers_and_const_fallback(imported):
    out, _ = imported
    root = out / "11_Conv2d_BatchNorm_ReLU"
    task = load_task(root)
    d = task.definition
    # the output's 14 = height - 2 is an axis of its own, tied to height by a constraint, so the
    # spatial sizes scale (a scaled-down check workload); in_channels stays const: get_init_inputs() uses it
    assert d.var_axes == ["batch_size", "height", "width", "output_d2", "output_d3"]
    assert {"output_d2 == height - 2", "output_d3 == width - 2"} <= set(d.constraints)
    assert d.inputs["x"].shape == ["batch_size", "in_channels", "height", "width"]
    assert d.axes["in_channels"].type == "const"
    # the generator gets the problem's own constants, not the derived output axes
    assert task.contract.input_generator.axes == ["batch_size", "height", "width"]
    own = next(w for w in task.workloads if w.axes["height"] == 16)
    out_shape = d.axis_values(own.axes)
    assert [out_shape[a] for a in d.outputs["output"].shape[1:]] == [8, 14, 14]
    assert all(not d.violated_constraints(d.axis_values(w.axes)) for w in task.workloads)
    state_names = ["conv__weight", "conv__bias", "bn__weight", "bn__bias", "bn__running_mean",
                   "bn__running_var", "bn__num_batches_tracked"]
    assert list(d.inputs)[1:] == state_names
    assert d.inputs["bn__num_batches_tracked"].dtype == "int64" and d.inputs["bn__num_batches_tracked"].shape == []
    # parameters: torch.manual_seed(0), then Model(*get_init_inputs())
    problem = _problem("11_Conv2d_BatchNorm_ReLU")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs())
    weights = load_file(str(root / "weights.safetensors"))
    assert set(weights) == set(model.state_dict())
    for key, t in model.state_dict().items():
        assert torch.equal(weights[key], t), key
    for w in task.workloads:
        spec = w.inputs["conv__weight"]
        assert (spec.type, spec.path, spec.tensor_key) == ("safetensors", "weights.safetensors", "conv.weight")
    readme = (root / "README.md").read_text()
    sha = hashlib.sha256((KB / "11_Conv2d_BatchNorm_ReLU.py").read_bytes()).hexdigest()
    assert sha in readme and "seed: 0" in readme and "own PyTorch forward" in readme


def test_reference_matches_the_module_and_runs_in_float64(imported):
    out, _ = imported
    for stem in ("3_MLP_Softmax", "11_Conv2d_BatchNorm_ReLU"):
        task = load_task(out / stem)
        w = task.workloads[0]
        inputs = make_inputs(task, w, seed=123, device="cpu")
        pristine = [a.clone() for a in inputs]
        reference = _load_run(task.definition.reference)
        baseline = _load_run((out / stem / "baseline.py").read_text())
        problem = _problem(stem)
        torch.manual_seed(0)
        model = problem.Model(*problem.get_init_inputs())  # training mode, as KernelBench runs it
        with torch.no_grad():
            want = model(inputs[0])
        got = baseline(*inputs)
        assert got.dtype == torch.float32 and torch.allclose(got, want, atol=1e-6, rtol=1e-5), stem
        up = [a.double() if a.is_floating_point() else a for a in inputs]
        ref64 = reference(*up)
        assert ref64.dtype == torch.float64, "the reference runs in the precision of the (upcast) inputs"
        assert torch.allclose(ref64.float(), want, atol=1e-5, rtol=1e-4), stem
        assert all(torch.equal(a, b) for a, b in zip(inputs, pristine, strict=True)), "inputs stay unmodified"


def test_integer_index_input_comes_from_get_inputs(imported):
    out, _ = imported
    root = out / "95_CrossEntropyLoss"
    task = load_task(root)
    d = task.definition
    assert d.inputs["targets"].dtype == "int64" and d.inputs["targets"].shape == ["batch_size"]
    assert d.outputs["output"].shape == []  # the mean loss, a 0-d tensor
    contract = tomllib.loads((root / "contract.toml").read_text())
    assert contract["inputs"] == {"generator": "inputs.py::make_inputs", "axes": ["batch_size"]}
    assert task.contract.input_generator.axes == ["batch_size"]
    for w in task.workloads:
        t = make_inputs(task, w, seed=7, device="cpu")[1]
        assert int(t.min()) >= 0 and int(t.max()) < 10 and t.numel() == w.axes["batch_size"]


def test_unconvertible_problems_do_not_stop_the_others(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_no_model.py").write_text("import torch\n\ndef get_inputs():\n    return [torch.randn(2, 2)]\n")
    (src / "b_dropout.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n"
        "        return self.drop(x)\n\n\ndef get_inputs():\n    return [torch.randn(4, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    (src / "c_relu.py").write_text((KB / "19_ReLU.py").read_text())
    out = tmp_path / "out"
    report = import_kernelbench([src, tmp_path / "missing.py"], out)
    assert report.report_path == out / "kernelbench_import.jsonl"
    assert [p.name for p in report.converted] == ["c_relu"]
    reasons = {Path(p).name: why for p, why in report.failures}
    assert "Model" in reasons["a_no_model.py"]
    assert "different results" in reasons["b_dropout.py"]
    assert "not found" in reasons["missing.py"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["c_relu"]
    rec = json.loads((out / "c_relu" / "workloads.jsonl").read_text().splitlines()[0])
    assert rec["definition"] == "c_relu" and rec["solution"] is None and rec["evaluation"] is None


_LINEAR = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self, n_in, n_out):\n"
           "        super().__init__()\n        self.fc = nn.Linear(n_in, n_out)\n\n    def forward(self, x):\n"
           "        return self.fc(x)\n\n\nbatch_size = {batch}\nn_in = {n_in}\nn_out = {n_out}\n\n\n"
           "def get_inputs():\n    return [torch.rand(batch_size, n_in)]\n\n\ndef get_init_inputs():\n"
           "    return [n_in, n_out]\n")


def test_the_cpu_workload_counts_the_parameters_as_eval_does(tmp_path):
    """The weights are task inputs, and `eval --device cpu` counts them against its 16 MB: a workload
    scaled to fit 16 MB without them (MinGPT's attention: 20 MB with its 13.6 MB of weights) was
    skipped by the CPU eval its README said it fitted."""
    src = tmp_path / "src"
    src.mkdir()
    # 8.4 MB of weights: batch 1024 moves 12.6 MB of x and output (fits without them); 512 fits with them
    (src / "weighty_linear.py").write_text(_LINEAR.format(batch=4096, n_in=1024, n_out=2048))
    # 16.8 MB of weights: no batch fits, and the README says why
    (src / "heavy_linear.py").write_text(_LINEAR.format(batch=64, n_in=2048, n_out=2048))
    report = import_kernelbench([src], tmp_path / "out")
    assert sorted(p.name for p in report.converted) == ["heavy_linear", "weighty_linear"], report.failures

    task = load_task(tmp_path / "out" / "weighty_linear")
    small = min(task.workloads, key=lambda w: task.io_bytes(w.axes))
    assert small.axes == {"batch_size": 512}
    assert task.io_bytes(small.axes) <= 16e6, "eval --device cpu (--cpu-max-mb 16) runs it"
    readme = (task.root / "README.md").read_text()
    assert "var axes halved until the inputs (parameters included) and outputs fit 16 MB: batch_size=512" in readme

    task = load_task(tmp_path / "out" / "heavy_linear")
    assert min(w.axes["batch_size"] for w in task.workloads) == 1, "still the smallest there is, for a larger --cpu-max-mb"
    readme = (task.root / "README.md").read_text()
    assert "the parameters (16.8 MB) keep it above 16 MB" in readme, readme


def test_the_import_command_exits_1_when_a_problem_is_not_converted(tmp_path):
    """A script or CI importing a set must learn that part of it is missing; what converted is still written."""
    src = tmp_path / "src"
    src.mkdir()
    for stem in ("19_ReLU", BROKEN):
        (src / f"{stem}.py").write_text((KB / f"{stem}.py").read_text())
    proc = kc("import", "kernelbench", src, "--out", tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 converted" in proc.stdout and "1 not converted" in proc.stdout and "broken on purpose" in proc.stdout
    load_task(tmp_path / "out" / "19_ReLU")
    proc = kc("import", "kernelbench", src / "19_ReLU.py", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 converted" in proc.stdout and "0 not converted" in proc.stdout
