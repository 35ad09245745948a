"""Inputs: drawn per workload from (seed, uuid), with the documented distributions; safetensors read."""

from __future__ import annotations

import json
import shutil

import torch
from safetensors.torch import save_file

from kernelcraft.task import load_task
from kernelcraft.task.inputs import make_inputs

from conftest import FIXTURES, TASKS


def test_same_seed_same_inputs_other_seed_other_inputs():
    task = load_task(TASKS / "rmsnorm")
    w = task.workloads[0]
    a = make_inputs(task, w, 7, "cpu")
    b = make_inputs(task, w, 7, "cpu")
    c = make_inputs(task, w, 8, "cpu")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert a[2] == 1e-5  # the scalar input comes from the workload, as a Python number
    assert a[0].dtype == torch.bfloat16 and a[0].shape == (w.axes["batch_size"], 4096)


def test_workloads_get_independent_streams():
    task = load_task(TASKS / "rmsnorm")
    w1, w2 = task.workloads[0], task.workloads[1]
    x1 = make_inputs(task, w1, 7, "cpu")[1]
    x2 = make_inputs(task, w2, 7, "cpu")[1]
    assert not torch.equal(x1, x2)  # the weights differ between workloads of one run


def test_default_distribution_is_standard_normal():
    task = load_task(FIXTURES / "kda_gelu_request")
    w = task.workloads[-1]
    x = make_inputs(task, w, 1, "cpu")[0].float()
    assert abs(x.mean().item()) < 0.05 and abs(x.std().item() - 1) < 0.05


def test_contract_distribution_and_safetensors(tmp_path):
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "kda_gelu_request", d)
    bias = torch.arange(1536, dtype=torch.float16) / 1536
    save_file({"b": bias}, str(d / "bias.safetensors"))
    (d / "contract.toml").write_text('[inputs.x]\ndist = "uniform"\nlow = 2.0\nhigh = 3.0\n')
    lines = (d / "workloads.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["workload"]["inputs"]["bias"] = {"type": "safetensors", "path": "bias.safetensors", "tensor_key": "b"}
    lines[0] = json.dumps(rec)
    (d / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    task = load_task(d)
    x, b = make_inputs(task, task.workloads[0], 3, "cpu")
    assert torch.equal(b, bias)
    assert x.min() >= 2.0 and x.max() <= 3.0
