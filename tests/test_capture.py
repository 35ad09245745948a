"""kernelcraft capture on a tiny transformers Llama (random weights, CPU): regions found, task folders
that pass `task check`, references that reproduce the model's own tensors, catalog links."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch

from tests.conftest import kc

pytest.importorskip("transformers")

from kernelcraft.capture.models import CaptureError, build  # noqa: E402
from kernelcraft.capture.run import CaptureOptions, capture  # noqa: E402
from kernelcraft.capture.write import _compile_reference, max_abs_error  # noqa: E402
from kernelcraft.task.loader import load_task  # noqa: E402


@pytest.fixture(scope="module")
def eager_capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "eager"
    # top 6: which regions rank first follows the CPU's timings; 6 always hold an mm seen in both phases
    index = capture(CaptureOptions(spec="llama-tiny", out=out, top=6, seq=8, batch=2, iters=2, command="test"))
    return out, index


def _tasks(index):
    return [r for r in index["regions"] if r.get("task_dir")]


def test_eager_capture_ranks_operators_and_writes_checked_tasks(eager_capture):
    out, index = eager_capture
    assert index["format"] == "kc-capture/1" and set(index["phases"]) == {"prefill", "decode"}
    for ph in index["phases"].values():  # the captured graph is the model: same logits, bit for bit
        assert ph["graph_check"]["max_abs_diff"] == 0.0
    shares = [r["share"] for r in index["regions"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1.0 + 1e-9
    assert {"mm", "_scaled_dot_product_flash_attention_for_cpu", "mean"} <= {op for r in index["regions"] for op in r["ops"]}
    written = _tasks(index)
    assert len(written) == 6
    for r in written:
        task = load_task(r["task_dir"])
        assert len(task.workloads) == len(r["observations"])
        assert r["reference_check"]["native_max_abs_error"] == 0.0
    proc = kc("task", "check", written[0]["task_dir"])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr
    assert (out / "README.md").read_text().count("| ") > 4 and json.loads((out / "capture.json").read_text())
    # every row of a task README's share table starts the line (an indented one renders as code)
    text = (pathlib.Path(written[0]["task_dir"]) / "README.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.lstrip().startswith("| prefill") or ln.lstrip().startswith("| decode")]
    # one row per phase the region was seen in (which regions rank first varies with the CPU's timings)
    assert len(rows) == len(written[0]["observations"]) >= 1 and all(ln.startswith("| ") for ln in rows), rows
    assert not any(ln.startswith("    #") for ln in text.splitlines()), text[:300]


class _Event:
    def __init__(self, name, device_type, cpu=0.0, device=0.0):
        self.name, self.device_type, self.cpu_time_total = name, device_type, cpu
        self.device_time_total = self.device_time = device


def test_reference_check_counts_equal_infinities_and_shared_nans_as_exact():
    # CI (session 20): a captured region that builds a -inf attention mask read as error NaN, since -inf - -inf
    # is NaN; the same infinity or NaN in both is a match, a NaN or infinity in one only is not.
    mask = torch.tensor([[0.0, float("-inf")], [0.0, 0.0]], dtype=torch.bfloat16)
    assert max_abs_error(mask, mask.clone()) == 0.0
    nan = torch.tensor([float("nan"), 1.0])
    assert max_abs_error(nan, nan.clone()) == 0.0
    assert max_abs_error(nan, torch.tensor([0.0, 1.0])) == float("inf")
    assert max_abs_error(mask, torch.zeros(2, 2, dtype=torch.bfloat16)) == float("inf")
    assert max_abs_error(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])) == 0.5
    assert max_abs_error(torch.tensor([1, 2]), torch.tensor([1, 3])) == 1.0


def test_a_node_without_kernels_takes_no_share_of_the_device_step():
    """On CUDA a node's share is the device time of its kernels: an allocation (empty_like) that
    launched none is 0, not its CPU time (an H200 capture ranked empty_like at 4.2% of decode)."""
    from torch.autograd import DeviceType

    from kernelcraft.capture.graphs import node_ms

    ev = [_Event("kc::node::empty_like", DeviceType.CPU, cpu=50.0, device=0.0),
          _Event("kc::node::mm", DeviceType.CPU, cpu=10.0, device=30.0),
          _Event("kc::graph", DeviceType.CPU, cpu=200.0),
          _Event("gemm_kernel", DeviceType.CUDA, device=30.0), _Event("other", DeviceType.CUDA, device=10.0)]
    t, total = node_ms(ev, cuda=True, iters=2)
    assert t == {"empty_like": 0.0, "mm": 0.015} and total == pytest.approx(0.02)
    t, total = node_ms(ev, cuda=False, iters=2)  # on the CPU the CPU time is the time
    assert t == {"empty_like": 0.025, "mm": 0.005} and total == pytest.approx(0.1)


def test_eager_mm_reference_is_the_models_linear_with_prefill_decode_axes(eager_capture):
    _, index = eager_capture
    mm = next(r for r in _tasks(index) if r["ops"] == ["mm"] and len(r["observations"]) == 2)
    # batch 2 (fixed) x 8 prefill tokens, then 2 x 1 decode: the flattened rows follow as a derived axis
    assert mm["axes"]["var"] == {"seq_len": [8, 1], "seq_len_x2": [16, 2]}
    assert mm["axes"]["derived"] == {"seq_len_x2": "2 * seq_len"}
    task = load_task(mm["task_dir"])
    assert "seq_len_x2 == 2 * seq_len" in task.definition.constraints
    ref = _compile_reference(task.definition.reference)
    subject = build("llama-tiny", "cpu", torch.bfloat16, 2, 8)
    linears = [m for m in subject.model.modules() if isinstance(m, torch.nn.Linear)]
    axes = {**{a: v.value for a, v in task.definition.axes.items() if v.type == "const"}, "seq_len": 3, "seq_len_x2": 6}
    shape_of = {n: task.definition.shape(s, axes) for n, s in task.definition.inputs.items()}
    w_name = next(n for n, sh in shape_of.items() if len(sh) == 2)
    x_name = next(n for n in shape_of if n != w_name)
    lin = next(m for m in linears if list(m.weight.shape) == list(shape_of[w_name]))
    x = torch.randn(*shape_of[x_name]).to(torch.bfloat16)  # 3 tokens per sequence: a size neither phase had
    args = {w_name: lin.weight.detach(), x_name: x}
    with torch.no_grad():
        got = ref(*[args[n] for n in task.definition.inputs])
        want = lin(x).reshape(got.shape)
    assert torch.equal(got, want)


def test_compile_capture_maps_inductor_kernels_and_links_the_catalog(tmp_path):
    out = tmp_path / "compiled"
    index = capture(CaptureOptions(spec="llama-tiny", out=out, compile=True, top=20, seq=8, layers=1, iters=2,
                                   command="test"))
    for ph in index["phases"].values():
        assert ph["kernels"] >= 10 and ph["graph_check"]["max_abs_diff"] == 0.0
        assert 0 < ph["mapped_ms"] <= ph["step_ms"]
    kinds = {r["kind"] for r in index["regions"]}
    assert kinds == {"kernel", "extern"}
    # the residual add + RMSNorm Inductor fused is the catalog's fused_add_rmsnorm: linked, not rewritten
    linked = [r for r in index["regions"] if r.get("link")]
    assert any(r["link"]["task"] == "fused_add_rmsnorm" for r in linked), [r["label"] for r in index["regions"]]
    link = next(r for r in linked if r["link"]["task"] == "fused_add_rmsnorm")
    assert {"add", "pow", "mean", "rsqrt", "mul"} <= set(link["ops"])
    # the SiLU-and-multiply kernel: one fused region, a task whose reference is the model's act_fn(gate) * up
    silu = next(r for r in _tasks(index) if "exp" in r["ops"] and "div" in r["ops"])
    assert silu["axes"]["var"] == {"num_tokens": [8, 1]}
    task = load_task(silu["task_dir"])
    ref = _compile_reference(task.definition.reference)
    mlp = build("llama-tiny", "cpu", torch.bfloat16, 1, 8, layers=1).model.model.layers[0].mlp
    gate, up = (torch.randn(1, 5, 128).to(torch.bfloat16) for _ in range(2))
    want = mlp.act_fn(gate) * up
    shapes = [task.definition.inputs[n].shape for n in task.definition.inputs]
    feeds = [t.reshape(-1, 128) if len(s) == 2 else t for t, s in zip((gate, up), shapes, strict=True)]
    got = ref(*feeds)
    assert torch.allclose(got.float().reshape(want.shape), want.float(), atol=1e-2, rtol=1.6e-2)
    assert kc("task", "check", silu["task_dir"]).returncode == 0


def test_bad_model_specs_say_what_to_do(tmp_path):
    with pytest.raises(CaptureError, match="unknown MODEL_SPEC 'gpt9'.*preset"):
        build("gpt9", "cpu", torch.float32, 1, 4)
    with pytest.raises(CaptureError, match="not key=value"):
        build("hf:llama,hidden_size", "cpu", torch.float32, 1, 4)
    with pytest.raises(CaptureError, match="cannot import 'no_such_mod'"):
        build("no_such_mod:make", "cpu", torch.float32, 1, 4)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    with pytest.raises(CaptureError, match="not an empty folder"):
        capture(CaptureOptions(spec="llama-tiny", out=tmp_path / "x"))


def test_qwen3_next_ops_without_float64_get_a_native_reference(tmp_path):
    """Qwen3-Next's experts run through aten._grouped_mm, which has no float64 kernel: the written
    reference runs float64 inputs in the model's dtype, so task check (which feeds float64) passes."""
    index = capture(CaptureOptions(spec="qwen3-next-tiny", out=tmp_path / "q", top=1000, seq=8, layers=1, iters=1,
                                   phases=("prefill",), command="test"))
    assert index["model"]["arch"] == "Qwen3NextForCausalLM"
    assert index["phases"]["prefill"]["graph_check"]["max_abs_diff"] == 0.0
    grouped = next(r for r in index["regions"] if r["ops"] == ["_grouped_mm"] and r.get("task_dir"))
    ref = load_task(grouped["task_dir"]).definition.reference
    assert "run in the captured dtypes" in ref
    proc = kc("task", "check", grouped["task_dir"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
