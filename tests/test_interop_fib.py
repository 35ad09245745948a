"""FlashInfer-Trace interop: a dataset written here becomes task folders whose baselines pass on
CPU; evaluations come back out as Trace records that the real flashinfer-bench package parses."""

from __future__ import annotations

import json

import pytest

from kernelcraft.task import load_task

from conftest import FIXTURES, eval_json, kc

DATASET = FIXTURES / "fib_dataset"
OP_KINDS = {"gelu_tanh_f32_d256", "row_logsumexp_bf16", "gemm_bf16_n128_k64", "conv2d_f32_c8_k3", "mlp2_f32"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("fib_tasks")
    proc = kc("import", "fib", DATASET, "--out", out)
    # exit 1: the dataset's orphan definition is not converted, and a script must learn that; the
    # other five are written all the same
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "5 converted" in proc.stdout and "1 not converted" in proc.stdout
    assert "orphan_def" in proc.stdout and "no workloads/**/orphan_def.jsonl" in proc.stdout
    return out


def test_every_definition_with_workloads_converts(imported):
    assert {p.name for p in imported.iterdir()} == OP_KINDS
    for d in imported.iterdir():
        assert kc("task", "check", d).returncode == 0
        assert "FlashInfer-Trace dataset" in (d / "README.md").read_text()
    conv = load_task(imported / "conv2d_f32_c8_k3")
    spec = conv.workloads[0].inputs["weight"]
    assert spec.type == "safetensors" and (conv.root / spec.path).is_file()  # the blob came along


@pytest.mark.parametrize("name", sorted(OP_KINDS))
def test_imported_baselines_pass_on_cpu(name, imported, tmp_path):
    rep = eval_json(imported / name, tmp=tmp_path)
    for s in rep["solutions"]:
        assert s["status"] == "PASSED", (s["name"], s["reason"])
    if name == "gelu_tanh_f32_d256":  # the dataset's own solution, DPS by FlashInfer-Trace's default
        assert [s["name"] for s in rep["solutions"]] == ["baseline", "gelu_triton_flat"]
        assert rep["solutions"][1]["destination_passing_style"] is True


def test_not_a_dataset_exits_2(tmp_path):
    proc = kc("import", "fib", tmp_path, "--out", tmp_path / "out")
    assert proc.returncode == 2 and "no definitions/ folder" in proc.stderr


def test_traces_parse_with_flashinfer_bench(small_tasks, tmp_path):
    fib = pytest.importorskip("flashinfer_bench.data", reason="flashinfer-bench is installed by .ci/run")
    t = small_tasks["rmsnorm"]
    traces = tmp_path / "traces"
    sols = [t / "solutions" / "triton_dps", t / "solutions" / "wrong" / "slightly_off.py",
            t / "solutions" / "wrong" / "raises.py", t / "solutions" / "wrong" / "wrong_dtype.py"]
    rep = eval_json(t, *sols, extra=("--traces", str(traces), "--time"), tmp=tmp_path)
    [f] = list(traces.rglob("*.jsonl"))
    assert f.parent.name == "rmsnorm" and f.stem == rep["task"]
    parsed = [fib.Trace.model_validate_json(line) for line in f.read_text().splitlines()]
    by_solution: dict[str, list] = {}
    for tr in parsed:
        by_solution.setdefault(tr.solution, []).append(tr)
        assert tr.definition == rep["task"] and tr.evaluation.environment.hardware.startswith("CPU")
    ok = by_solution["rmsnorm_bf16_h4096_triton_dps"]
    assert len(ok) == 2 and all(tr.evaluation.status.value == "PASSED" for tr in ok)
    assert all(tr.evaluation.performance.latency_ms > 0 for tr in ok)
    [off] = by_solution["slightly_off"]
    assert off.evaluation.status.value == "INCORRECT_NUMERICAL" and off.evaluation.correctness.max_relative_error > 0.016
    assert by_solution["raises"][0].evaluation.status.value == "RUNTIME_ERROR"
    assert by_solution["wrong_dtype"][0].evaluation.status.value == "INCORRECT_DTYPE"
    # the workload travels whole, so FlashInfer-Bench can replay it
    uuids = {json.loads(line)["workload"]["uuid"] for line in f.read_text().splitlines()}
    assert uuids <= {w.uuid for w in load_task(t).workloads}
