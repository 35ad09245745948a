"""FlashInfer-Trace as FlashInfer-Bench runs it (issue 27), on kernelcraft's own small dataset
(tests/fixtures/fib_trace): constraints over input values, index inputs drawn to satisfy them where a
blob is missing, the sampling and low-bit rules, cudaDeviceSynchronize allowed, the tvm-ffi binding,
and atomic imports."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
import torch

from kernelcraft.errors import InputError
from kernelcraft.gauntlet.judge import Judge, LocalSubject
from kernelcraft.gauntlet.static import allowed_groups, check_static
from kernelcraft.interop.fib import import_fib_dataset
from kernelcraft.solution.model import BuildSpec, Solution, SourceFile
from kernelcraft.task import load_task
from kernelcraft.task.definition import Definition
from kernelcraft.task.inputs import InputsError, infeasible, make_inputs
from kernelcraft.task.workload import Workload

from conftest import FIXTURES, eval_json

DATASET = FIXTURES / "fib_trace"
PAGED, RAGGED = "paged_decode_h4_kv2_d8_ps1", "ragged_prefill_causal_h2_d8"
MOE, SAMPLING, REFUSED = "moe_toy_gemm_k64_n32", "top_k_top_p_sampling_from_probs_v32", "label_gather_refused"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("fib_trace")
    report = import_fib_dataset(DATASET, out)
    # fewer draws than FlashInfer-Bench's 500000 per row: the CPU reference samples in a Python loop
    contract = out / SAMPLING / "contract.toml"
    contract.write_text(contract.read_text() + "samples_per_row = 4000\nbatch_rows = 300\n")
    return out, report


def _load_run(text: str):
    ns: dict = {}
    exec(compile(text, "<reference>", "exec"), ns)
    return ns["run"]


def test_value_constraints_parse_and_classify():
    d = Definition.model_validate(json.loads((DATASET / "definitions/paged" / f"{PAGED}.json").read_text()))
    assert d.value_constraints() == ["num_kv_indices == kv_indptr[-1].item()"]
    axes = {"batch_size": 2, "num_pages": 8, "len_indptr": 4, "num_kv_indices": 5}
    assert d.violated_constraints(d.axis_values(axes)) == ["len_indptr == batch_size + 1"]
    ins = [None, None, None, torch.tensor([0, 2, 4], dtype=torch.int32), None, None]
    axes["len_indptr"] = 3
    assert d.violated_value_constraints(d.axis_values(axes), ins) == ["num_kv_indices == kv_indptr[-1].item()"]
    moe = Definition.model_validate(json.loads((DATASET / "definitions/moe" / f"{MOE}.json").read_text()))
    assert moe.value_constraints() == []  # w.shape[0] == k follows from the axes alone
    with pytest.raises(ValueError, match="not allowed"):
        Definition.model_validate({**json.loads((DATASET / "definitions/moe" / f"{MOE}.json").read_text()),
                                   "constraints": ["x.__class__ == k"]})
    with pytest.raises(ValueError, match="neither axes nor inputs"):
        Definition.model_validate({**json.loads((DATASET / "definitions/moe" / f"{MOE}.json").read_text()),
                                   "constraints": ["nope[-1].item() == k"]})


def test_import_report_and_rules(imported):
    out, report = imported
    assert sorted(p.name for p in report.converted) == sorted([PAGED, RAGGED, MOE, SAMPLING])
    [(what, why)] = report.failures
    assert what == REFUSED and "no rule to draw integer input 'labels'" in why
    assert sorted(p.name for p in out.iterdir()) == sorted([PAGED, RAGGED, MOE, SAMPLING]), "no stub or temp folder"
    paged = load_task(out / PAGED)
    c = paged.contract
    assert c.tolerance.float32.atol == c.tolerance.float32.rtol == 1e-2  # FlashInfer-Bench's default
    assert c.integrity.allow_device_sync
    assert c.inputs["kv_indptr"].dist == "offsets" and c.inputs["kv_indptr"].total == "num_kv_indices"
    assert c.inputs["kv_indices"].high == "num_pages"
    kinds = [w.inputs["kv_indptr"].type for w in paged.workloads]
    assert kinds == ["safetensors", "random", "random"], "the shipped blob is used, the missing ones are drawn"
    assert (out / PAGED / "blob/workloads/paged" / f"{PAGED}_present.safetensors").is_file()
    assert "2 of 3 workloads name a safetensors blob" in (out / PAGED / "README.md").read_text()
    ragged = load_task(out / RAGGED)
    assert ragged.contract.inputs["qo_indptr"].within == "kv_indptr"  # causal prefill
    moe = load_task(out / MOE)
    assert [(ck.kind, ck.min_matched_ratio) for ck in moe.contract.check] == [("tolerance", 0.95)]
    s = load_task(out / SAMPLING)
    assert [ck.kind for ck in s.contract.check] == ["sampling"] and not s.contract.integrity.deterministic
    assert s.contract.inputs["probs"].dist == "softmax"
    readme = (out / MOE / "README.md").read_text()
    assert "## Solutions" in readme and "`tvm_ffi_cuda_gemm` (cuda, entry `gemm.cu::run`" in readme
    assert "destination-passing style (the outputs passed after the inputs)" in readme


def test_a_solution_without_the_field_gets_flashinfer_benchs_default():
    from kernelcraft.interop.fib import _solution_line

    line = _solution_line({"name": "s", "spec": {"language": "cuda", "entry_point": "main.cpp::run", "binding": "torch"}})
    assert "destination-passing style" in line and "FlashInfer-Bench's default (true) applies" in line
    line = _solution_line({"name": "s", "spec": {"language": "triton", "destination_passing_style": False}})
    assert "value-returning" in line and "default" not in line


def test_drawn_index_inputs_satisfy_the_constraints(imported):
    out, _ = imported
    paged = load_task(out / PAGED)
    for w in paged.workloads:
        for seed in range(5):
            q, k, v, indptr, indices, scale = make_inputs(paged, w, seed, "cpu")
            b, pages = w.axes["batch_size"], w.axes["num_pages"]
            assert indptr.dtype == torch.int32 and int(indptr[0]) == 0 and int(indptr[-1]) == w.axes["num_kv_indices"]
            assert bool((indptr[1:] >= indptr[:-1]).all()) and indptr.numel() == b + 1
            assert int(indices.min()) >= 0 and int(indices.max()) < pages
    ragged = load_task(out / RAGGED)
    for w in ragged.workloads:
        for seed in range(5):
            *_, qo, kv, _ = make_inputs(ragged, w, seed, "cpu")
            assert int(qo[-1]) == w.axes["total_q"] and int(kv[-1]) == w.axes["total_kv"]
            assert bool(((qo[1:] - qo[:-1]) <= (kv[1:] - kv[:-1])).all()), "each sequence's queries fit its keys"
    assert infeasible(ragged, {"len_indptr": 2, "total_q": 9, "total_kv": 4}), "more queries than keys"
    assert infeasible(ragged, {"len_indptr": 2, "total_q": 3, "total_kv": 4}) == ""


def test_a_blob_that_breaks_a_value_constraint_is_an_error(imported, tmp_path):
    out, _ = imported
    task_dir = tmp_path / PAGED
    shutil.copytree(out / PAGED, task_dir)
    lines = (task_dir / "workloads.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["workload"]["axes"]["num_kv_indices"] = 4  # the blob's kv_indptr ends at 5
    first["workload"]["inputs"]["kv_indices"] = {"type": "random"}
    (task_dir / "workloads.jsonl").write_text(json.dumps(first) + "\n")
    task = load_task(task_dir)
    with pytest.raises(InputsError, match=r"violate the definition's constraint\(s\) \['num_kv_indices == kv_indptr"):
        make_inputs(task, task.workloads[0], 0, "cpu")


def test_references_pass_their_own_tasks(imported, tmp_path):
    out, _ = imported
    rep = eval_json(out / PAGED, extra=("--no-timing",), tmp=tmp_path)  # the CLI path once
    base = rep["solutions"][0]
    assert base["name"] == "baseline" and base["status"] == "PASSED", base["reason"]
    assert all(w["status"] == "PASSED" for w in base["workloads"]), base["workloads"]
    from kernelcraft.gauntlet.holdout import holdout_workloads

    for name in (RAGGED, MOE, SAMPLING, PAGED):  # every workload and two holdouts, in this process
        task = load_task(out / name)
        ref = _load_run(task.definition.reference)
        # (a sampler's holdouts of 1000+ rows would take a call per sample: its draws are tested below)
        holdouts = holdout_workloads(task, 5, 1 << 20)[:2] if name != SAMPLING else []
        for w in task.workloads + holdouts:
            r = _check(task, ref, w)
            assert r["status"] == "PASSED", (name, w.axes, r["reason"])


def _judge(task, fn, seed=3):
    ref = _load_run(task.definition.reference)
    return Judge(task, LocalSubject(fn, None), ref, None, "cpu", seed, role="baseline")


def _check(task, fn, workload=None):
    judge = _judge(task, fn)
    judge.subject.judge = judge
    return judge.check(workload or task.workloads[0])


def test_sampling_rule_catches_a_wrong_sampler(imported):
    out, _ = imported
    task = load_task(out / SAMPLING)
    reference = _load_run(task.definition.reference)
    assert _check(task, reference)["status"] == "PASSED"
    argmax = lambda probs, k, p: probs.argmax(-1)  # noqa: E731 - in the kept set, never the distribution
    r = _check(task, argmax)
    assert r["status"] == "INCORRECT_NUMERICAL" and "total-variation distance" in r["reason"], r
    uniform = lambda probs, k, p: torch.randint(0, probs.shape[-1], (probs.shape[0],))  # noqa: E731
    r = _check(task, uniform)
    assert r["status"] == "INCORRECT_NUMERICAL" and "outside the kept set" in r["reason"], r

    def no_top_p(probs, top_k, top_p):  # top-k only: samples past the nucleus
        out = torch.empty(probs.shape[0], dtype=torch.int64)
        for i in range(probs.shape[0]):
            row = torch.zeros_like(probs[i])
            idx = torch.topk(probs[i], min(int(top_k[i]), probs.shape[-1])).indices
            row[idx] = probs[i][idx]
            out[i] = torch.multinomial(row, 1)
        return out

    r = _check(task, no_top_p)
    assert r["status"] == "INCORRECT_NUMERICAL", r


def test_flashinfer_bench_nucleus_would_fail_the_reference(imported):
    """Why the kept set follows the definitions: FlashInfer-Bench 0.1.x's evaluator keeps only entries
    whose cumulative mass, their own included, is within p + 0.05 (evaluators/sampling.py,
    _compute_valid_sampling_mask), so the entry that crosses p, which the references keep, is "invalid"."""
    from kernelcraft.gauntlet.sampling import kept_sets

    out, _ = imported
    task = load_task(out / SAMPLING)
    reference = _load_run(task.definition.reference)
    probs = torch.zeros(1, 32)
    probs[0, :3] = torch.tensor([0.5, 0.3, 0.2])
    top_k, top_p = torch.tensor([32], dtype=torch.int32), torch.tensor([0.6])
    torch.manual_seed(0)
    samples = reference(probs.repeat(400, 1), top_k.repeat(400), top_p.repeat(400))
    assert set(samples.tolist()) == {0, 1}, "the reference keeps the entry that crosses p"
    fib_nucleus = probs[0].sort(descending=True).values.cumsum(0) <= 0.6 + 0.05
    assert fib_nucleus[:2].tolist() == [True, False], "FlashInfer-Bench's rule would call index 1 invalid"
    kept, allowed = kept_sets(probs, top_k, top_p, 0.05)
    assert kept[0, :3].tolist() == [True, True, False] and bool(allowed[0, samples].all())


def test_low_bit_rule_allows_five_percent(imported):
    out, _ = imported
    task = load_task(out / MOE)

    def off(share):
        def run(x, w):
            y = x @ w
            flat = y.view(-1)
            flat[:: round(1 / share)] += 10.0
            return y
        return run

    assert _check(task, off(0.03))["status"] == "PASSED"
    r = _check(task, off(0.1))
    assert r["status"] == "INCORRECT_NUMERICAL" and "requires 95% of elements" in r["reason"], r
    strict = task.contract.model_copy(update={"check": []})
    strict_task = type(task)(task.root, task.definition, task.workloads, strict, task.baseline_path)
    assert _check(strict_task, off(0.03))["status"] == "INCORRECT_NUMERICAL"


SYNC_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
void run(const float* x, float* y, int n) {
  scale<<<(n + 255) / 256, 256>>>(x, y, n);
  cudaDeviceSynchronize();
}
"""


def test_device_sync_is_allowed_where_the_contract_says(imported):
    out, _ = imported
    sol = Solution(name="sync", definition=MOE, author="t",
                   spec=BuildSpec(language="cuda", entry_point="k.cu::run", binding="torch"),
                   sources=[SourceFile(path="k.cu", content=SYNC_SOURCE)])
    task = load_task(out / MOE)
    assert check_static(sol, allowed_groups(task.contract)).passed
    v = check_static(sol)
    assert not v.passed and "cudaDeviceSynchronize" in v.reason


TVM_GEMM = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

// y = x @ w, destination-passing style, float32 on the CPU
void gemm(tvm::ffi::TensorView x, tvm::ffi::TensorView w, tvm::ffi::TensorView y) {
  const float* a = static_cast<const float*>(x.data_ptr());
  const float* b = static_cast<const float*>(w.data_ptr());
  float* c = static_cast<float*>(y.data_ptr());
  int64_t m = x.size(0), k = x.size(1), n = w.size(1);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t t = 0; t < k; ++t) acc += a[i * k + t] * b[t * n + j];
      c[i * n + j] = acc;
    }
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, gemm);
"""


def test_tvm_ffi_solution_builds_and_passes_on_cpu(imported, tmp_path):
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is in the test extra")
    out, _ = imported
    sol = {"name": "tvm_gemm", "definition": MOE, "author": "t",
           "spec": {"language": "cpp", "entry_point": "gemm.cc::run", "binding": "tvm-ffi"},
           "sources": [{"path": "gemm.cc", "content": TVM_GEMM}]}
    path = tmp_path / "tvm_gemm.json"
    path.write_text(json.dumps(sol))
    cuda = out / MOE / "solutions" / "tvm_ffi_cuda_gemm.json"  # the fixture dataset's CUDA tvm-ffi solution
    rep = eval_json(out / MOE, path, cuda, extra=("--no-timing",), tmp=tmp_path)
    cpp, cu = rep["solutions"]
    assert cpp["status"] == "PASSED", cpp["reason"]
    # no GPU here: the .cu is compiled as the tvm-ffi build would (nvcc), then skipped for running
    assert cu["status"] == "SKIPPED" and "compiled for sm_90 (tvm-ffi sources" in cu["reason"], cu["reason"]


def test_tvm_ffi_missing_says_what_to_install(monkeypatch, tmp_path):
    from kernelcraft.solution import build

    monkeypatch.setitem(sys.modules, "tvm_ffi", None)  # import tvm_ffi raises ImportError
    sol = Solution(name="x", definition="d", author="t", spec=BuildSpec(language="cpp", entry_point="a.cc::run"),
                   sources=[SourceFile(path="a.cc", content="int run() { return 0; }\n")])
    with pytest.raises(build.CannotRun, match=r"apache-tvm-ffi package, which is not installed.*pip install apache-tvm-ffi"):
        build.build(sol, "cpu", tmp_path)


def test_reimport_never_loses_a_good_folder(imported, tmp_path):
    out, _ = imported
    ds = tmp_path / "ds"
    shutil.copytree(DATASET, ds)
    dest = tmp_path / "tasks"
    assert [p.name for p in import_fib_dataset(ds, dest).converted].count(PAGED) == 1
    marker = dest / PAGED / "solutions"
    marker.mkdir(exist_ok=True)
    (marker / "mine.py").write_text("def run(*a):\n    pass\n")  # the user's own work in the folder
    # the shipped blob disappears and the integer input has no rule any more: the definition is refused
    (ds / "blob/workloads/paged" / f"{PAGED}_present.safetensors").unlink()
    d = json.loads((ds / "definitions/paged" / f"{PAGED}.json").read_text())
    d["constraints"] = ["len_indptr == batch_size + 1"]  # without the indptr rule, nothing draws kv_indptr
    (ds / "definitions/paged" / f"{PAGED}.json").write_text(json.dumps(d))
    report = import_fib_dataset(ds, dest)
    assert PAGED in dict(report.failures)
    assert (marker / "mine.py").is_file(), "the good folder is still there, untouched"
    assert load_task(dest / PAGED).workloads[0].inputs["kv_indptr"].type == "safetensors"
    assert not [p for p in dest.iterdir() if p.name.startswith(".")], "no temporary folders left"
    with pytest.raises(InputError):
        load_task(dest / REFUSED)


def test_sampling_check_needs_nondeterminism(imported, tmp_path):
    out, _ = imported
    task_dir = tmp_path / SAMPLING
    shutil.copytree(out / SAMPLING, task_dir)
    text = (task_dir / "contract.toml").read_text().replace("deterministic = false", "deterministic = true")
    (task_dir / "contract.toml").write_text(text)
    with pytest.raises(InputError, match="set \\[integrity\\] deterministic = false"):
        load_task(task_dir)


def test_holdouts_of_paged_attention_are_drawn_validly(imported):
    from kernelcraft.gauntlet.holdout import holdout_workloads

    out, _ = imported
    task = load_task(out / PAGED)
    holdouts = holdout_workloads(task, 11, 64 << 20)
    assert holdouts, "some shapes fit the constraints"
    for h in holdouts:
        make_inputs(task, Workload.model_validate(h.model_dump()), 0, "cpu")  # raises if any constraint breaks


def test_undrawable_workloads_are_left_out_with_the_reason(tmp_path):
    """A causal prefill workload with more queries than keys and no blob (the vendored
    gqa_paged_prefill_causal_* have 66 of 71 such) cannot be drawn: it is left out at import with the
    reason, not imported to fail every evaluation; a definition left with none is refused."""
    ds = tmp_path / "ds"
    shutil.copytree(DATASET, ds)
    wl = ds / "workloads/ragged" / f"{RAGGED}.jsonl"
    lines = wl.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["workload"]["uuid"] = "more-queries-than-keys"
    bad["workload"]["axes"] = {"len_indptr": 2, "total_q": 16, "total_kv": 2}
    wl.write_text("\n".join([*lines, json.dumps(bad)]) + "\n")
    report = import_fib_dataset(ds, tmp_path / "tasks")
    assert RAGGED in [p.name for p in report.converted]
    [warn] = [w for w in report.warnings if "not imported" in w]
    assert warn.startswith(f"{RAGGED}: 1 of {len(lines) + 1} workloads not imported") and "total 16 exceeds" in warn
    task = load_task(tmp_path / "tasks" / RAGGED)
    assert [w.uuid for w in task.workloads] == [json.loads(x)["workload"]["uuid"] for x in lines]
    readme = (tmp_path / "tasks" / RAGGED / "README.md").read_text()
    assert "## Workloads not imported" in readme and "`more-queries-than-keys`" in readme
    for w in task.workloads:
        make_inputs(task, w, 0, "cpu")  # every workload kept can be drawn

    wl.write_text(json.dumps(bad) + "\n")  # nothing drawable left: refused, nothing written
    report = import_fib_dataset(ds, tmp_path / "tasks2")
    assert "none of its 1 workloads can be drawn" in dict(report.failures)[RAGGED]
    assert not (tmp_path / "tasks2" / RAGGED).exists()
