"""Catalog II on CPU (issue 7): cross_entropy, topk, kmeans_assign, balanced_kmeans_step.

Each task's baseline and Triton solution pass on small copies of the task (Triton interpreter),
and each known-wrong fixture is rejected by the task's checker with the reason expected.toml
names. One eval per task for everything (timing off except for cross_entropy: the fixtures fail at
correctness, and timing is covered by the other catalog tests), to keep the interpreter's cost
within CI's budget.
"""

from __future__ import annotations

import tomllib

import pytest

from conftest import TASKS, eval_json, small_task

SMALL = {
    "cross_entropy": [{"num_rows": 3, "vocab_size": 5000}, {"num_rows": 2, "vocab_size": 17000}],
    "topk": [{"num_rows": 2, "vocab_size": 3000, "k": 50}, {"num_rows": 3, "vocab_size": 200, "k": 8}],
    "kmeans_assign": [{"num_points": 300, "dim": 33, "num_centroids": 70}, {"num_points": 200, "dim": 8, "num_centroids": 3}],
    "balanced_kmeans_step": [{"num_points": 300, "dim": 33, "num_centroids": 7},
                             {"num_points": 500, "dim": 16, "num_centroids": 40}],
}


@pytest.fixture(scope="module")
def catalog2(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("catalog2")
    tasks = {name: small_task(name, base, axes) for name, axes in SMALL.items()}
    # The interpreter sorts a 1024-wide row in ~2 s per call: the copy's fixed holdout keeps the
    # k == vocab_size - 1 edge at k = 128 (the H200 run keeps the contract's k = 1024).
    contract = tasks["topk"] / "contract.toml"
    text = contract.read_text()
    assert "{ num_rows = 2, vocab_size = 1025, k = 1024 }" in text
    contract.write_text(text.replace("{ num_rows = 2, vocab_size = 1025, k = 1024 }", "{ num_rows = 2, vocab_size = 129, k = 128 }"))
    return tasks


@pytest.mark.parametrize("task", list(SMALL))
def test_catalog2_task_on_cpu(task, catalog2, tmp_path):
    """Baseline and Triton solutions pass (holdouts included); every wrong fixture fails with its reason."""
    t = catalog2[task]
    wrong = t / "solutions" / "wrong"
    expected = tomllib.loads((TASKS / task / "solutions" / "wrong" / "expected.toml").read_text())
    good = sorted((t / "solutions").glob("*.py"))
    extra = ("--time",) if task == "cross_entropy" else ()  # timing: one task is enough here
    # The interpreter's cost depends on the drawn holdouts' shapes, not their bytes: topk's radix select
    # at 12 x 1077 (k = 38) took 63 s a call, 158 s of holdouts in all (CI, 2026-12-02); balanced k-means
    # took 30-56 s from run to run (n x k x d of its draws spans 7x between seeds). These seeds draw cheap
    # shapes (topk 1 x 4954, 3 x 243, 3 x 16; balanced k-means n <= 618, k = 7); tests/test_holdouts.py
    # covers the draws themselves.
    seed = {"topk": "194", "balanced_kmeans_step": "185"}.get(task)
    if seed:
        extra = ("--seed", seed)
    rep = eval_json(t, *good, *[wrong / f"{name}.py" for name in expected], extra=extra, tmp=tmp_path)
    got = {s["name"]: s for s in rep["solutions"]}
    assert any(s["language"] == "triton" and s["name"] not in expected for s in rep["solutions"])
    for s in rep["solutions"]:
        if s["name"] in expected:
            continue
        assert s["status"] == "PASSED", (s["name"], s["reason"])
        assert all(w["status"] == "PASSED" for w in s["workloads"])
        if "--time" in extra:
            assert all(w["latency_ms"] > 0 for w in s["workloads"])
        assert s["holdouts"] and all(h["status"] == "PASSED" for h in s["holdouts"])
    for name, exp in expected.items():
        s = got[name]
        assert s["status"] == exp["status"], (name, s["reason"])
        if "gate" in exp:
            assert s["gate"] == exp["gate"], (name, s["reason"])
        assert "workload " in s["reason"], s["reason"]  # says where
        for fragment in exp.get("reason_contains", []):
            assert fragment in s["reason"], (name, s["reason"])


@pytest.mark.parametrize("task", list(SMALL))
def test_catalog2_baseline_meets_its_contract(task, catalog2):
    """The baseline against the float64 reference through the task's checker, in process (the
    gauntlet runs it as a trusted row in the tests above only when no solution is named)."""
    import importlib.util

    import torch

    from kernelcraft.gauntlet.compare import compare, normalize_outputs
    from kernelcraft.task import load_task
    from kernelcraft.task.inputs import make_inputs

    t = load_task(catalog2[task])
    spec = importlib.util.spec_from_file_location(f"kc_baseline_{task}", t.baseline_path)
    baseline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)
    ns: dict = {}
    exec(compile(t.definition.reference, "<reference>", "exec"), ns)  # noqa: S102 - the task's reference
    for seed, w in enumerate(t.workloads):
        args = make_inputs(t, w, seed, "cpu")
        got = normalize_outputs(baseline.run(*args), t.definition)
        up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        ref = normalize_outputs(ns["run"](*up), t.definition)
        c = compare(got, ref, t.definition, t.contract, t.definition.axis_values(w.axes), "cpu", args)
        assert c.status == "PASSED", c.reason
