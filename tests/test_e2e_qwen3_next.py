"""Qwen3-Next in e2e, on the CPU: its offset RMSNorm (``rmsnorm(x) * (1 + weight)`` in float32) replaced
by the exported rmsnorm / fused_add_rmsnorm kernels (Triton interpreter) given ``1 + weight``, in a
tiny Qwen3-Next (hidden 64, three gated delta-net layers and one full-attention layer, MoE MLPs) with
random norm weights (zeros, transformers' init, would hide a missing offset). The restructured hybrid
layers with stock regions equal the model bit for bit; with the kernels the logits stay within bf16
rounding; the region report lists every norm, replaced or left (the gated norms, the per-head q/k
norms) with the reason; a norm of another form is refused naming its class."""

from __future__ import annotations

import copy

import pytest
import torch
from e2e_support import exported, interpreted, ran_in_the_interpreter, random_norm_weights
from e2e_support import logits as _logits

pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e '.[test]')")
pytest.importorskip("transformers.models.qwen3_next", reason="this transformers has no Qwen3-Next")

INTERPRETED = ("test_exported_kernels_replace_the_offset_norms", "test_fullgraph_compile_of_the_hybrid_layers",
               "test_e2e_run_on_qwen3_next_records_the_norms")
# 4 layers: layer 0's input norm is plain, every other residual-stream norm fused (7 in layers, the final norm)
FUSED = {"rmsnorm": 1, "fused_add_rmsnorm": 8}


@pytest.fixture(scope="module")
def tiny():
    from kernelcraft.capture.models import build

    s = build("qwen3-next-tiny", "cpu", torch.bfloat16, 2, 8)
    assert s.model.config.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    random_norm_weights(s.model)
    return s


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory):
    from kernelcraft.e2e.run import by_kind, load_package

    paths = exported(tmp_path_factory)
    return by_kind([load_package(str(paths[k])) for k in ("rmsnorm", "fused_add_rmsnorm")])


@pytest.fixture(scope="module")
def under_interpreter(tmp_path_factory):
    return interpreted(__file__, INTERPRETED, tmp_path_factory)


def _check_norm_report(placed, fused: bool):
    norms = {n["module"]: n for n in placed["norms"]}
    stream = [f"model.layers.{i}.{n}" for i in range(4) for n in ("input_layernorm", "post_attention_layernorm")]
    stream.append("model.norm")
    for name in stream:
        n = norms[name]
        assert n["class"] == "Qwen3NextRMSNorm" and n["scale"] == "1 + weight", n
        assert n["region"] == ("rmsnorm" if not fused or name == "model.layers.0.input_layernorm" else "fused_add_rmsnorm")
    for i in range(3):
        n = norms[f"model.layers.{i}.linear_attn.norm"]
        assert n["class"] == "Qwen3NextRMSNormGated" and n["region"] is None and "gated norm" in n["left"], n
        assert "no catalog task" in n["left"]
    for qk in ("q_norm", "k_norm"):
        n = norms[f"model.layers.3.self_attn.{qk}"]
        assert n["region"] is None and "over 16 channels inside model.layers.3.self_attn" in n["left"], n
    assert len(norms) == len(stream) + 3 + 2
    off = placed["offset_scale"]
    assert off["norms"] == len(stream) and off["dtype"] == "bfloat16"
    assert 0 < off["max_rel_rounding"] <= 2**-8, off  # one bf16 rounding of 1 + w


def test_stock_regions_in_the_fused_layout_equal_the_model_bit_for_bit(tiny):
    from kernelcraft.e2e import regions as R

    for kinds, want in ((("rmsnorm",), {"rmsnorm": 9}), (("rmsnorm", "fused_add_rmsnorm"), FUSED)):
        m = copy.deepcopy(tiny.model)
        placed = R.patch(m, {}, stock=kinds)
        assert placed["regions"] == want and placed["layer_forms"] == ["qwen3_next"], placed
        _check_norm_report(placed, "fused_add_rmsnorm" in kinds)
        for phase in ("prefill", "decode"):
            assert torch.equal(_logits(m, tiny, phase), _logits(tiny.model, tiny, phase)), (kinds, phase)


def test_the_offset_scale_is_one_plus_weight_in_float32_rounded_once(tiny):
    from kernelcraft.e2e import regions as R

    norm = tiny.model.model.layers[0].input_layernorm
    r = R.RMSNormRegion(norm)
    assert r.form.offset and r.eps == norm.eps and r.weight.dtype == torch.bfloat16
    assert torch.equal(r.weight, (1.0 + norm.weight.float()).to(torch.bfloat16))
    assert r.weight.float().sub(1.0 + norm.weight.float()).abs().max() > 0  # the rounding the record reports
    assert norm.weight.float().abs().max() > 0.3  # nonzero weights: a missing offset would show
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    ln = LlamaRMSNorm(64)
    llama = R.RMSNormRegion(ln)  # Llama's form: the weight itself, no copy
    assert llama.form.name == "weight" and llama.weight is ln.weight and llama.scale is None


def test_exported_kernels_replace_the_offset_norms(request, under_interpreter):
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from kernelcraft.e2e import regions as R

    tiny, pkgs = request.getfixturevalue("tiny"), request.getfixturevalue("pkgs")
    ops = {k: p.op for k, p in pkgs.items()}
    # the kernel on one norm: within the export's tolerance of the model's norm; without the offset it is not
    norm = tiny.model.model.layers[1].post_attention_layernorm
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    want = norm(x).float()
    got = R.RMSNormRegion(norm, ops["rmsnorm"])(x).float()
    assert ((got - want).abs() <= 1e-2 + 1.6e-2 * want.abs()).all(), (got - want).abs().max()
    assert (ops["rmsnorm"](x, norm.weight, norm.eps).float() - want).abs().max() > 0.5

    for kinds, want_regions in ((("rmsnorm",), {"rmsnorm": 9}), (("rmsnorm", "fused_add_rmsnorm"), FUSED)):
        m = copy.deepcopy(tiny.model)
        placed = R.patch(m, {k: ops[k] for k in kinds})
        assert placed["regions"] == want_regions and placed["kernel_regions"] == 9
        _check_norm_report(placed, "fused_add_rmsnorm" in kinds)
        for phase in ("prefill", "decode"):
            for p in pkgs.values():
                p.reset_stats()
            got, ref = _logits(m, tiny, phase).float(), _logits(tiny.model, tiny, phase).float()
            # bf16 rounding differs (the kernels round once, with 1 + w rounded to bf16; the model's norm
            # scales by the float32 1 + w; the model rounds the residual sum before the norm)
            err = (got - ref).abs()
            assert err.max() < 0.05 * ref.abs().max() and err.mean() < 0.03 * ref.abs().mean(), (kinds, phase, err.max())
            assert (got.argmax(-1) == ref.argmax(-1)).float().mean() > 0.9
            assert {k: pkgs[k].stats()["kernel"] for k in kinds} == want_regions, (kinds, phase)
            assert all(pkgs[k].stats()["fallback"] == 0 for k in kinds)


def test_fullgraph_compile_of_the_hybrid_layers(request, under_interpreter):
    """torch.compile(fullgraph=True, aot_eager) of the patched decode step: one graph, one exported node
    per placed norm, and the stock graph's rsqrt nodes less exactly those norms' (the gated and q/k norms
    and the delta rule's l2 norms stay aten ops)."""
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from kernelcraft.e2e import compiled as C
    from kernelcraft.e2e import regions as R

    tiny, pkgs = request.getfixturevalue("tiny"), request.getfixturevalue("pkgs")
    ns = {p.export_info["namespace"] for p in pkgs.values()}
    graphs = {}
    for name, ops in (("stock", None), ("kernels", {k: p.op for k, p in pkgs.items()})):
        m = copy.deepcopy(tiny.model)
        if ops:
            R.patch(m, ops)
        fn, info = C.compile_step(m, lambda cm: cm(**tiny.inputs("decode")).logits, "aot_eager", ns, "cpu")
        assert fn is not None and info["fullgraph"] is True and info["graphs"] == 1 and info["graph_breaks"] == 0, info
        graphs[name] = info["graph"]
        if ops:
            assert torch.allclose(fn().float(), _logits(m, tiny, "decode").float())
    assert graphs["kernels"]["exported_op_nodes"] == 9 and graphs["stock"]["exported_op_nodes"] == 0, graphs
    assert graphs["kernels"]["rsqrt_nodes"] == graphs["stock"]["rsqrt_nodes"] - 9, graphs


def test_e2e_run_on_qwen3_next_records_the_norms(request, under_interpreter):
    """run_e2e end to end (decode, eager only): the kernels fit the offset norms (their references on
    1 + w against the model's norm), every norm in the record, the logits difference reported."""
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from kernelcraft.e2e.run import E2EOptions, run_e2e

    pkgs = request.getfixturevalue("pkgs")
    rec = run_e2e(list(pkgs.values()), E2EOptions(model="qwen3-next-tiny", batch=2, seq=8, phases=("decode",),
                                                  compile=False, budget_ms=1, reps=1, profile_iters=1))
    patch = rec["model"]["patch"]
    assert patch["regions"] == FUSED and patch["layer_forms"] == ["qwen3_next"]
    _check_norm_report(patch, True)
    assert all(not any(v["reference_vs_model_region_bad_elements"]) for v in rec["kernels"].values())
    ph = rec["phases"]["decode"]
    assert ph["layout_bit_exact"] is True
    c = ph["correctness"]
    assert c["kernels_ran"] and 0 < c["max_abs_logit_diff"] < 0.05 * c["max_abs_logit"], c
    assert {k: d["kernel"] for k, d in c["dispatch"].items()} == FUSED


def test_a_norm_of_another_form_is_refused_naming_its_class(tiny):
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNorm

    from kernelcraft.e2e import regions as R

    class HalfOffsetRMSNorm(Qwen3NextRMSNorm):  # rounds before scaling: not what rmsnorm(x, 1 + w) computes
        def forward(self, x):
            return self._norm(x.float()).type_as(x) * (1.0 + self.weight)

    m = copy.deepcopy(tiny.model)
    m.model.layers[2].post_attention_layernorm.__class__ = HalfOffsetRMSNorm
    for kinds in (("rmsnorm",), ("fused_add_rmsnorm",)):
        with pytest.raises(R.PatchError, match=r"HalfOffsetRMSNorm is neither RMSNorm form e2e replaces.*"
                                               r"HalfOffsetRMSNorm.forward \(.*\) is not the RMSNorm \(1 \+ weight\) "
                                               r"pattern e2e replaces: statement 1 is `return self._norm"):
            R.patch(copy.deepcopy(m), {}, stock=kinds)
    with pytest.raises(R.PatchError, match="Qwen3NextSparseMoeBlock.forward .* is not the gated MLP pattern.*MoE"):
        R.patch(copy.deepcopy(tiny.model), {}, stock=("silu_mul",))


def test_a_hybrid_layer_that_is_not_the_pattern_is_refused(tiny):
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextDecoderLayer

    from kernelcraft.e2e import regions as R

    class NoCache(Qwen3NextDecoderLayer):  # the linear attention called without its cache: not the pattern
        def forward(self, hidden_states, position_embeddings, attention_mask=None, position_ids=None, cache=None,
                    **kwargs):
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
            if self.block_type == "linear_attention":
                hidden_states = self.linear_attn(hidden_states=hidden_states, attention_mask=attention_mask)
            return residual + hidden_states

    m = copy.deepcopy(tiny.model)
    m.model.layers[0].__class__ = NoCache
    with pytest.raises(R.PatchError, match=r"NoCache.forward \(.*\) is not the decoder layer \(Qwen3-Next hybrid\) "
                                           r"pattern e2e replaces: statement 3 is `if self.block_type"):
        R.patch(m, {}, stock=("fused_add_rmsnorm",))
