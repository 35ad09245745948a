"""The gated delta rule in e2e, on the CPU: Qwen3-Next's chunked (prefill) and recurrent (decode) rule
calls replaced by the exported gdn_prefill (triton_chunk) and gdn_decode (triton_decode) kernels (Triton
interpreter) in ``qwen3-next-gdn-tiny`` (hidden 64, the tasks' linear-attention heads: 4 q/k, 8 value,
head size 128; three gated delta-net layers, one full-attention layer) with random norm weights. Stock
regions equal the model bit for bit; with the kernels the logits stay within bf16 rounding and every
rule call ran the kernel; settings the op does not compute are refused naming them."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from e2e_support import FIXTURES, interpreted, ran_in_the_interpreter, random_norm_weights
from e2e_support import logits as _logits

pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e '.[test]')")
pytest.importorskip("transformers.models.qwen3_next", reason="this transformers has no Qwen3-Next")

INTERPRETED = ("test_fullgraph_compile_of_the_gdn_decode_step", "test_e2e_run_with_the_gdn_kernels")
KERNELS = {"gdn_prefill": "triton_chunk", "gdn_decode": "triton_decode"}
_CACHE: dict = {}


@pytest.fixture(scope="module")
def tiny():
    from kernelcraft.capture.models import build

    s = build("qwen3-next-gdn-tiny", "cpu", torch.bfloat16, 2, 8)
    random_norm_weights(s.model)
    return s


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory):
    from kernelcraft.e2e.run import by_kind, load_package

    if "pkgs" not in _CACHE:
        from kernelcraft.export import export
        from kernelcraft.review.candidate import resolve

        base = tmp_path_factory.mktemp("gdn_exports")
        for task, sol in KERNELS.items():
            export(resolve(str(FIXTURES / f"{task}.json"), sol, None, FIXTURES / task), "torch-op", base / task)
        _CACHE["pkgs"] = by_kind([load_package(str(base / t)) for t in KERNELS])
    return _CACHE["pkgs"]


@pytest.fixture(scope="module")
def under_interpreter(tmp_path_factory):
    return interpreted(__file__, INTERPRETED, tmp_path_factory)


def test_stock_gdn_regions_equal_the_model_bit_for_bit(tiny):
    from kernelcraft.e2e import regions as R

    for fn in ("model", "torch"):
        m = copy.deepcopy(tiny.model)
        placed = R.patch(m, {}, stock=("gdn_prefill", "gdn_decode"), gdn_function=fn)
        assert placed["regions"] == {"gdn_prefill": 3, "gdn_decode": 3} and placed["kernel_regions"] == 0
        assert [e["module"] for e in placed["gdn"]["layers"]] == [f"model.layers.{i}.linear_attn" for i in range(3)]
        for phase in ("prefill", "decode"):
            assert torch.equal(_logits(m, tiny, phase), _logits(tiny.model, tiny, phase)), (fn, phase)
    # the stock model's class is untouched: only the patched copies' layers are the redirected subclass
    assert "kc gdn" not in type(tiny.model.model.layers[0].linear_attn).__qualname__
    assert "kc gdn" in type(m.model.layers[0].linear_attn).__qualname__


def test_exported_gdn_kernels_replace_the_rule(request):
    """The patch puts the exported ops at every rule call and says how it adapts the model's arguments.
    Nothing runs here: the logits with the kernels, each call the kernel, each phase its own rule, are
    checked by test_e2e_run_with_the_gdn_kernels in the interpreter (running both phases here as well
    cost CI ~21 s of interpreter for the same checks)."""
    from kernelcraft.e2e import regions as R

    tiny, pkgs = request.getfixturevalue("tiny"), request.getfixturevalue("pkgs")
    m = copy.deepcopy(tiny.model)
    placed = R.patch(m, {k: p.op for k, p in pkgs.items()})
    assert placed["regions"] == {"gdn_prefill": 3, "gdn_decode": 3} and placed["kernel_regions"] == 6
    text = " ".join(placed["gdn"]["adaptation"])
    for what in ("A_log", "sigmoid(b) in float32", "use_qk_l2norm_in_kernel=True", "k-last", "cu_seqlens"):
        assert what in text, what
    assert sorted(r.kind for r in R.regions(m) if r.kind in pkgs) == ["gdn_decode"] * 3 + ["gdn_prefill"] * 3


def test_fullgraph_compile_of_the_gdn_decode_step(request, under_interpreter):
    """torch.compile(fullgraph=True, aot_eager) of the patched decode step: one graph, one exported node per
    linear-attention layer."""
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from kernelcraft.e2e import compiled as C
    from kernelcraft.e2e import regions as R

    tiny, pkgs = request.getfixturevalue("tiny"), request.getfixturevalue("pkgs")
    m = copy.deepcopy(tiny.model)
    R.patch(m, {"gdn_decode": pkgs["gdn_decode"].op})
    ns = {pkgs["gdn_decode"].export_info["namespace"]}
    fn, info = C.compile_step(m, lambda cm: cm(**tiny.inputs("decode")).logits, "aot_eager", ns, "cpu")
    assert fn is not None and info["fullgraph"] is True and info["graphs"] == 1 and info["graph_breaks"] == 0, info
    assert info["graph"]["exported_op_nodes"] == 3, info["graph"]
    assert torch.allclose(fn().float(), _logits(m, tiny, "decode").float())


def test_e2e_run_with_the_gdn_kernels(request, under_interpreter):
    """run_e2e, prefill and decode, eager: each package fits (its reference on the adapted arguments against
    the model's function), runs in its own phase only, every call the kernel; Amdahl beside the measurement."""
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from transformers.models.qwen3_next import modeling_qwen3_next as Q

    from kernelcraft.e2e import gdn as G
    from kernelcraft.e2e.run import E2EOptions, run_e2e

    pkgs = request.getfixturevalue("pkgs")
    # the peer rows' plumbing with a stand-in for FLA (not installed here): transformers' torch functions,
    # called as the model calls FLA's
    mp = request.getfixturevalue("monkeypatch")
    mp.setattr(G, "fla_functions", lambda: {k: G.model_function(Q.Qwen3NextGatedDeltaNet, k, "torch") for k in G.KINDS})
    rec = run_e2e(list(pkgs.values()), E2EOptions(model="qwen3-next-gdn-tiny", batch=2, seq=8, compile=False,
                                                  budget_ms=1, reps=1, profile_iters=1, peers=("fla",)))
    json.dumps(rec)
    assert all(v["reference_vs_model_region_bad_elements"] == [0, 0] for v in rec["kernels"].values()), rec["kernels"]
    gdn = rec["model"]["patch"]["gdn"]
    assert gdn["counts"] == {"gdn_prefill": 3, "gdn_decode": 3} and gdn["adaptation"]
    for phase, kind in (("prefill", "gdn_prefill"), ("decode", "gdn_decode")):
        ph = rec["phases"][phase]
        assert ph["layout_bit_exact"] is True
        c = ph["correctness"]
        assert c["kernels_ran"] and list(c["dispatch"]) == [kind] and c["gdn_region_kernel_calls"] == {kind: 3}, c
        assert c["dispatch"][kind]["fallback"] == 0 and 0 < c["max_abs_logit_diff"] < 0.05 * c["max_abs_logit"], c
        assert list(ph["isolated"]) == [kind] and ph["prediction"]["eager"]["amdahl_speedup"] > 0
        assert ph["dispatch_during_timing"][kind]["fallback"] == 0
        assert "eager_speedup" in ph["measured"] and "eager_speedup_fla" in ph["measured"]
        assert {"eager", "eager+kernels", "eager+fla"} <= set(ph["latency_ms"])
        assert ph["peers"]["fla"]["max_abs_logit_diff"] == 0  # the stand-in is the stock function itself
        assert ph["peers"]["fla"]["region_calls"] == {kind: 3}, ph["peers"]  # and the peer's regions took it


def test_settings_the_op_does_not_compute_are_refused(tiny, pkgs):
    import inspect
    import linecache
    import textwrap

    from transformers.models.qwen3_next import modeling_qwen3_next as Q

    from kernelcraft.e2e import regions as R
    from kernelcraft.e2e.run import E2EError, E2EOptions, run_e2e

    def variant(name, old, new):  # the model's forward with one change, its source readable (linecache)
        src = textwrap.dedent(inspect.getsource(inspect.unwrap(Q.Qwen3NextGatedDeltaNet.forward)))
        assert old in src
        src = src.replace(old, new)
        fname = f"<kc test {name}>"
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        ns = dict(vars(Q))
        exec(compile(src, fname, "exec"), ns)
        return type(name, (Q.Qwen3NextGatedDeltaNet,), {"forward": ns["forward"]})

    # the model asking for q/k without the in-kernel l2 norm: the op normalises them, so it is refused
    NoL2 = variant("NoL2GatedDeltaNet", "use_qk_l2norm_in_kernel=True", "use_qk_l2norm_in_kernel=False")
    m = copy.deepcopy(tiny.model)
    m.model.layers[1].linear_attn.__class__ = NoL2
    with pytest.raises(R.PatchError, match=r"NoL2GatedDeltaNet.forward .* use_qk_l2norm_in_kernel=False: the "
                                           r"exported gdn_(prefill|decode) op l2-normalises q and k inside"):
        R.patch(m, {}, stock=("gdn_decode",))
    # a gate computed otherwise (decay, not log decay): refused naming the statement
    m.model.layers[1].linear_attn.__class__ = variant("OtherGateGatedDeltaNet", "g = -self.A_log.float().exp()",
                                                      "g = self.A_log.float().exp()")
    with pytest.raises(R.PatchError, match=r"does not make the log decay g as `g = -self.A_log"):
        R.patch(m, {}, stock=("gdn_prefill",))
    # a definition taking g and beta (not the raw gate inputs): no region
    d = json.loads(json.dumps(pkgs["gdn_decode"].export_info["definition"]))
    d["inputs"] = {("g" if k == "a" else k): v for k, v in d["inputs"].items()}
    with pytest.raises(R.PatchError, match="the region passes the raw gate inputs"):
        R.kind_of(d)
    # the model's heads (qwen3-next-tiny: 2 q/k heads, 4 value heads, 16) are not the op's: refused naming the axis
    with pytest.raises(E2EError, match=r"do not fit this model.*gdn_decode.*num_q_heads=2; the definition fixes "
                                       r"num_q_heads=4"):
        run_e2e([pkgs["gdn_decode"]], E2EOptions(model="qwen3-next-tiny", batch=2, seq=8, phases=("decode",),
                                                 compile=False))
    with pytest.raises(E2EError, match="peer fla: flash-linear-attention does not import"):
        run_e2e([pkgs["gdn_decode"]], E2EOptions(model="qwen3-next-gdn-tiny", batch=2, seq=8, phases=("decode",),
                                                 compile=False, peers=("fla",)))
