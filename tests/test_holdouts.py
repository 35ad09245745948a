"""Holdout shapes, stress inputs and value constraints (issue 20 part 4, issue 22's input domain).

Everything here is selection and drawing on CPU with small tensors; the one gauntlet run uses the
rmsnorm copy whose workloads (batch 1 and 16) make every holdout the old generator drew odd.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from kernelcraft.errors import InputError
from kernelcraft.gauntlet.holdout import (
    INT32_ELEMENTS,
    check_bytes,
    holdout_workloads,
    large_holdout,
    stress_workloads,
)
from kernelcraft.gauntlet.stress import atol_floor
from kernelcraft.task import load_task
from kernelcraft.task.constraints import axis_bounds, derived_axes, input_bounds, violated_values
from kernelcraft.task.inputs import make_inputs

from conftest import FIXTURES, TASKS, eval_json, small_task

SEEDS = range(12)


def _drawn(task, seed, max_bytes):
    return [h for h in holdout_workloads(task, seed, max_bytes) if not h.uuid.startswith("holdout-fixed")]


def _cap(task, factor=4):
    return factor * max(task.io_bytes(w.axes) for w in task.workloads)


def test_holdouts_are_odd_and_even_not_16_and_deterministic():
    task = load_task(TASKS / "rmsnorm")
    for seed in SEEDS:
        sizes = [h.axes["batch_size"] for h in _drawn(task, seed, _cap(task))]
        assert len(sizes) == task.contract.generalization.holdouts
        assert any(s % 2 for s in sizes), sizes
        assert any(s % 2 == 0 and s % 16 for s in sizes), sizes  # even, no multiple of 16
        assert all(1 <= s <= 32768 for s in sizes)
    first = [h.axes for h in holdout_workloads(task, 5, _cap(task))]
    assert first == [h.axes for h in holdout_workloads(task, 5, _cap(task))]
    assert first != [h.axes for h in holdout_workloads(task, 6, _cap(task))]
    assert all(h.uuid.startswith("holdout-") for h in holdout_workloads(task, 5, _cap(task)))


def test_holdouts_fall_between_adjacent_workloads_and_above_the_largest():
    task = load_task(TASKS / "softmax")
    widths = sorted({w.axes["width"] for w in task.workloads})
    gaps = [(a, b) for a, b in zip(widths, widths[1:], strict=False) if b - a >= 2]
    assert (4096, 32000) in gaps
    hit, above_rows = set(), 0
    largest_rows = max(w.axes["num_rows"] for w in task.workloads)
    for seed in range(40):
        for h in _drawn(task, seed, _cap(task)):
            w = h.axes["width"]
            hit |= {g for g in gaps if g[0] < w < g[1]}
            above_rows += h.axes["num_rows"] > largest_rows
            assert task.io_bytes(h.axes) <= _cap(task)
    assert hit == set(gaps), set(gaps) - hit  # every gap, 4096 < w < 32000 included
    assert above_rows > 0


def test_several_axes_change_at_once():
    task = load_task(TASKS / "cross_entropy")
    multi = 0
    for seed in SEEDS:
        for h in _drawn(task, seed, _cap(task)):
            closest = min(sum(h.axes[a] != w.axes[a] for a in h.axes) for w in task.workloads)
            multi += closest >= 2
    assert multi >= len(SEEDS)  # about two holdouts in three move both axes


def test_derived_axes_are_solved_not_dropped(tmp_path):
    task = load_task(TASKS / "gelu_tanh_mul")
    assert derived_axes(task.definition) == {"two_i": "2 * intermediate_size"}
    seen = {w.axes["intermediate_size"] for w in task.workloads}
    moved = set()
    for seed in SEEDS:
        for h in _drawn(task, seed, _cap(task)):
            assert h.axes["two_i"] == 2 * h.axes["intermediate_size"]
            moved.add(h.axes["intermediate_size"])
    assert moved - seen

    # An FFT-style definition (nf == nx // 2 + 1): nx moves, nf follows.
    d = json.loads((TASKS / "softmax" / "definition.json").read_text())
    d.update(name="rfft_f32", axes={"batch": {"type": "var"}, "nx": {"type": "var"}, "nf": {"type": "var"}},
             inputs={"x": {"shape": ["batch", "nx"], "dtype": "float32"}},
             outputs={"y": {"shape": ["batch", "nf"], "dtype": "float32"}},
             constraints=["nf == nx // 2 + 1", "batch >= 1", "nx >= 2", "nx <= 4096"],
             reference="import torch\ndef run(x):\n    return torch.fft.rfft(x).abs()\n")
    fft = tmp_path / "rfft"
    fft.mkdir()
    (fft / "definition.json").write_text(json.dumps(d))
    (fft / "baseline.py").write_text("def run(x):\n    raise NotImplementedError\n")
    lines = [{"uuid": f"w{i}", "axes": {"batch": b, "nx": n, "nf": n // 2 + 1}} for i, (b, n) in
             enumerate([(4, 64), (2, 1024)])]
    (fft / "workloads.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    task = load_task(fft)
    assert axis_bounds(task.definition)["nx"] == (2, 4096)
    nxs = set()
    for seed in SEEDS:
        for h in _drawn(task, seed, 1 << 20):
            assert h.axes["nf"] == h.axes["nx"] // 2 + 1 and 2 <= h.axes["nx"] <= 4096
            nxs.add(h.axes["nx"])
    assert nxs - {64, 1024} and any(n % 2 for n in nxs)


def test_holdouts_respect_cross_axis_constraints():
    task = load_task(TASKS / "topk")
    for seed in SEEDS:
        for h in _drawn(task, seed, _cap(task)):
            assert 1 <= h.axes["k"] <= min(1024, h.axes["vocab_size"]), h.axes


def test_large_holdout_selection_without_allocating():
    ce = load_task(TASKS / "cross_entropy")
    big = large_holdout(ce, 80 << 30)
    assert big is not None and big.uuid.startswith("holdout-")
    rows, vocab = big.axes["num_rows"], big.axes["vocab_size"]
    assert rows * vocab > INT32_ELEMENTS and rows <= 65536 and vocab <= 262144
    assert not ce.definition.violated_constraints(ce.definition.axis_values(big.axes))
    assert check_bytes(ce, big.axes) <= 80 << 30
    # the cheapest such shape: the logits just past 2^31 elements (bf16: ~4.3 GB of io)
    assert rows * vocab < INT32_ELEMENTS * 1.01
    assert large_holdout(ce, check_bytes(ce, big.axes) - 1) is None or \
        check_bytes(ce, large_holdout(ce, check_bytes(ce, big.axes) - 1).axes) < check_bytes(ce, big.axes)
    assert large_holdout(ce, 1 << 30) is None  # the budget decides
    assert large_holdout(load_task(TASKS / "rmsnorm"), 1 << 50) is None  # 32768 x 4096 never reaches 2^31


def test_stress_inputs_have_outliers_and_near_zero_rows():
    task = load_task(TASKS / "rmsnorm")
    w = task.workloads[1]  # batch 16
    x, weight, eps = make_inputs(task, w, 3, "cpu", variant="stress")
    rows = x.float()
    big = (rows.abs() > 256).any(-1)
    assert big.any() and (~big).any()
    assert ((rows.abs().amax(-1) < 1e-2) & ~big).any()  # a near-zero row
    assert weight.float().abs().max() >= 100 and eps == 1e-5
    normal = make_inputs(task, w, 3, "cpu")[0]
    assert normal.float().abs().max() < 10  # the normal variant is unchanged: N(0, 1)
    stressed = w.model_copy(update={"uuid": "stress-0-x"})  # the uuid prefix selects the variant
    assert make_inputs(task, stressed, 3, "cpu")[0].float().abs().max() > 256
    assert torch.equal(make_inputs(task, stressed, 3, "cpu")[0], make_inputs(task, stressed, 3, "cpu")[0])
    with pytest.raises(ValueError, match="unknown input variant"):
        make_inputs(task, w, 3, "cpu", variant="extreme")


def test_stress_respects_the_contract_domain_and_switches():
    task = load_task(TASKS / "rope")
    w = task.workloads[1]
    positions, q, k, cache = make_inputs(task, w, 1, "cpu", variant="stress")
    assert positions.min() >= 0 and positions.max() < 8192  # integers are never changed
    assert q.float().abs().max() > 256
    assert cache.abs().max() <= 1.0 and (cache.abs().amax(-1) > 1e-3).all()  # off for the cache
    assert stress_workloads(task, task.workloads)


def test_stress_clamps_outliers_into_a_uniform_domain(tmp_path):
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "kda_gelu_request", d)
    (d / "contract.toml").write_text('[inputs.x]\ndist = "uniform"\nlow = -2.0\nhigh = 3.0\n'
                                     '[inputs.bias]\noutliers = false\nnear_zero_rows = false\n')
    task = load_task(d)
    w = task.workloads[-1]
    x, bias = make_inputs(task, w, 2, "cpu", variant="stress")
    assert x.min() >= -2.0 and x.max() <= 3.0 and ((x == -2.0) | (x == 3.0)).any()
    assert bias.abs().max() < 10  # both switches off: N(0, 1) as drawn (a 1-D input has no near-zero rows)


def test_stress_inputs_of_a_float64_input(tmp_path):
    # the H200 run of the KDA fft3d f64 requests: a float64 input's outlier cap (its finfo max / 4) did not
    # fit the float32 draw, and making every stress input failed ("cannot be converted to type float")
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "kda_gelu_request", d)
    spec = json.loads((d / "definition.json").read_text())
    for io in ("inputs", "outputs"):
        for v in spec[io].values():
            v["dtype"] = "float64"
    (d / "definition.json").write_text(json.dumps(spec))
    (d / "contract.toml").write_text('[inputs.x]\ndist = "uniform"\nlow = -1.0\nhigh = 1.0\n'
                                     '[inputs.bias]\noutliers = false\nnear_zero_rows = false\n')
    task = load_task(d)
    x, _ = make_inputs(task, task.workloads[-1], 2, "cpu", variant="stress")
    assert x.dtype == torch.float64 and x.min() >= -1.0 and x.max() <= 1.0
    assert ((x == -1.0) | (x == 1.0)).any()  # the outliers, clamped into the domain
    (d / "contract.toml").write_text("")
    x, _ = make_inputs(load_task(d), task.workloads[-1], 2, "cpu", variant="stress")
    assert x.dtype == torch.float64 and x.abs().max() > 100  # N(0, 1) with outliers of 100-1000


def _with_constraints(tmp_path, constraints, extra_inputs, reference_args):
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "kda_gelu_request", d)
    spec = json.loads((d / "definition.json").read_text())
    spec["inputs"].update(extra_inputs)
    spec["constraints"] = [*spec.get("constraints", []), *constraints]
    spec["reference"] = spec["reference"].replace("def run(x, bias):", f"def run(x, bias, {reference_args}):")
    (d / "definition.json").write_text(json.dumps(spec))
    return d


def test_value_constraints_bound_the_default_draws(tmp_path):
    d = _with_constraints(tmp_path, ["0 <= fill < 16", "scale > 0", "idx.max() < num_tokens"],
                          {"fill": {"shape": ["num_tokens"], "dtype": "int32"},
                           "scale": {"shape": ["hidden"], "dtype": "float16"},
                           "idx": {"shape": ["num_tokens"], "dtype": "int64"}}, "fill, scale, idx")
    task = load_task(d)
    w = task.workloads[-1]
    axes = task.definition.axis_values(w.axes)
    assert input_bounds(task.definition, "fill", axes).int_range() == (0, 16)
    for variant in ("normal", "stress"):
        x, bias, fill, scale, idx = make_inputs(task, w, 4, "cpu", variant=variant)
        assert fill.min() >= 0 and fill.max() < 16 and len(set(fill.tolist())) > 4
        assert scale.min() > 0
        assert idx.min() >= -1024 and idx.max() < axes["num_tokens"]
    assert not task.definition.violated_constraints(axes)  # value constraints are not axis constraints


def test_a_contract_that_breaks_a_value_constraint_is_reported(tmp_path):
    d = _with_constraints(tmp_path, ["num_tokens == kv_indptr[-1].item()"],
                          {"kv_indptr": {"shape": ["num_tokens"], "dtype": "int32"}}, "kv_indptr")
    task = load_task(d)  # FlashInfer-Trace's form loads
    with pytest.raises(ValueError, match=r"kv_indptr\[-1\].item\(\)") as e:
        make_inputs(task, task.workloads[0], 0, "cpu")
    assert "contract.toml" in str(e.value)
    x = torch.zeros(3)
    assert violated_values(task.definition, {"num_tokens": 3, "hidden": 4},
                           {"x": x, "bias": x, "kv_indptr": torch.tensor([0, 1, 3])}) == []


def test_unsafe_value_constraints_do_not_load(tmp_path):
    d = _with_constraints(tmp_path, ["h.__class__ == 0"], {"h": {"shape": ["num_tokens"], "dtype": "int32"}}, "h")
    with pytest.raises(InputError, match="__class__"):
        load_task(d)


def test_the_stress_floor_is_the_references_own_float32_error():
    task = load_task(TASKS / "rmsnorm")
    ns: dict = {}
    exec(compile(task.definition.reference, "<ref>", "exec"), ns)  # noqa: S102 - the task's reference
    args = make_inputs(task, task.workloads[1], 0, "cpu", variant="stress")
    ref = [ns["run"](*[a.double() if isinstance(a, torch.Tensor) else a for a in args])]
    floor = atol_floor(task.definition, ns["run"], args, ref)
    assert 0 < floor["output"] < 1e-3  # far below bf16's atol: the fp16-square fixture stays caught
    quant = load_task(TASKS / "fp8_rowwise_quant")
    exec(compile(quant.definition.reference, "<ref>", "exec"), ns)  # noqa: S102
    args = make_inputs(quant, quant.workloads[0], 0, "cpu", variant="stress")
    ref = list(ns["run"](*[a.double() for a in args]))
    assert "q" not in atol_floor(quant.definition, ns["run"], args, ref)  # e4m3 rounding is not noise


def test_even_batch_fixture_is_caught_where_old_holdouts_were_all_odd(tmp_path):
    """Workloads 1 and 16: the old holdouts (1, 3, 7, 17, 129, 1025, m - 1, m + 1, 2m + 1) were all odd."""
    t = small_task("rmsnorm", tmp_path, [{"batch_size": 1}, {"batch_size": 16}])
    wrong = t / "solutions" / "wrong"
    rep = eval_json(t, t / "solutions" / "triton_rowwise.py", wrong / "even_batch_pairs.py",
                    extra=("--no-timing", "--seed", "7"), tmp=tmp_path)
    good, bad = rep["solutions"]
    assert good["status"] == "PASSED", good["reason"]
    sizes = [h["axes"]["batch_size"] for h in good["holdouts"] if h["uuid"].startswith("holdout-")]
    assert any(s % 2 == 0 and s % 16 for s in sizes), sizes
    assert bad["status"] == "INCORRECT_NUMERICAL" and bad["gate"] == "generalization", bad["reason"]
    assert "[holdout-shapes]" in bad["reason"]
    assert math.isfinite(good["holdouts"][0]["max_abs_error"])


@pytest.mark.gpu
def test_int32_offsets_fail_past_2_31_on_gpu(tmp_path):
    """On a GPU the gauntlet adds one shape past 2^31 elements of logits: the honest kernel (int64
    offsets) passes it, the same kernel with int32 offsets does not. Run by scripts/h200_holdouts.sh."""
    t = small_task("cross_entropy", tmp_path, [{"num_rows": 3, "vocab_size": 5000}, {"num_rows": 2, "vocab_size": 17000}])
    fixture = FIXTURES / "int32_offsets" / "cross_entropy_int32.py"
    out = tmp_path / "gpu.json"
    from conftest import kc

    proc = kc("eval", t, t / "solutions" / "triton_online.py", fixture, "--device", "cuda", "--no-timing",
              "--no-peers", "--timeout", "600", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    good, bad = [s for s in json.loads(out.read_text())["solutions"] if s["role"] == "candidate"]
    big = [h for h in good["holdouts"] if h["uuid"] == "holdout-int32-overflow"]
    assert big and big[0]["status"] == "PASSED", good["reason"]
    assert big[0]["axes"]["num_rows"] * big[0]["axes"]["vocab_size"] > INT32_ELEMENTS
    assert good["status"] == "PASSED", good["reason"]
    assert bad["status"] in ("INCORRECT_NUMERICAL", "RUNTIME_ERROR"), bad["reason"]
    assert "[holdout-shapes]" in bad["reason"] and "holdout-int32-overflow" in bad["reason"], bad["reason"]


def test_a_float32_fft_passes_the_stress_inputs_a_dropped_outlier_does_not(tmp_path):
    """The KDA c2r request's reference computes in float64 and rounds: run in float32 it is still exact,
    so its float32 error gave a floor of 0, and torch.fft.irfftn in float32 (pocketfft, cuFFT's
    stand-in) failed the stress inputs (2-220 elements). The floor is now at least 4 ulps of the
    output's largest element; a kernel that loses an outlier stays far past it."""
    from kernelcraft.gauntlet.compare import compare
    from kernelcraft.task.workload import Workload

    d = tmp_path / "c2r"
    shutil.copytree(FIXTURES / "kda_fft_c2r_request", d)
    (d / "contract.toml").write_text("[tolerance.float32]\natol = 1e-2\nrtol = 1e-3\n")  # the request's README
    task = load_task(d)
    ns: dict = {}
    exec(compile(task.definition.reference, "<ref>", "exec"), ns)  # noqa: S102 - the fixture's reference
    axes = {"nz": 32, "ny": 32, "nx": 32, "nf": 17}
    for seed in range(3):
        w = Workload(uuid=f"stress-0-floor{seed}", axes=axes, inputs={"input": {"type": "random"}})
        [x] = make_inputs(task, w, seed, "cpu")
        ref = [ns["run"](x.clone())]
        floor = atol_floor(task.definition, ns["run"], [x], ref)
        assert 0.1 < floor["output"] < 0.3, floor  # 4 ulps of ~4e5
        fft32 = torch.fft.irfftn(torch.view_as_complex(x.contiguous()), s=(32, 32, 32), norm="forward")
        err = (fft32.double() - ref[0].double()).abs()
        assert err.max() > 1e-2  # what failed before: past the request's atol
        check = compare([fft32], ref, task.definition, task.contract, axes, "cpu", [x], atol_floor=floor)
        assert check.status == "PASSED", check.reason
        # the largest input element left out: the kind of error stress inputs exist to catch
        lost = x.clone()
        lost.view(-1)[lost.abs().argmax()] = 0
        bad = torch.fft.irfftn(torch.view_as_complex(lost.contiguous()), s=(32, 32, 32), norm="forward")
        check = compare([bad], ref, task.definition, task.contract, axes, "cpu", [x], atol_floor=floor)
        assert check.status == "INCORRECT_NUMERICAL", check.reason
