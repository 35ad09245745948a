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

INTERPRETED = ("test_fullgraph_compile_of_the_gdn_decode_step", "test_e2e_run_with_the_gdn_kernels",
               "test_a_peer_function_the_step_never_calls_fails_loudly")
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
    # called as the model calls FLA's, each call counted (the function itself, not the region's counter)
    mp = request.getfixturevalue("monkeypatch")
    called = dict.fromkeys(G.KINDS, 0)
    mp.setattr(G, "fla_functions", lambda: {k: _counting(Q, k, called) for k in G.KINDS})
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
    # the stand-in itself ran: 3 calls per step of its phase (the correctness step and the timed eager+fla rows)
    assert all(n >= 3 and n % 3 == 0 for n in called.values()), called


def _counting(Q, kind, called):
    """transformers' torch function for ``kind``, counting its calls in ``called``."""
    from kernelcraft.e2e import gdn as G

    fn = G.model_function(Q.Qwen3NextGatedDeltaNet, kind, "torch")

    def peer(query, key, value, **kw):
        called[kind] += 1
        return fn(query, key, value, **kw)

    return peer


def test_a_peer_function_the_step_never_calls_fails_loudly(request, under_interpreter):
    """A peer row must come from the peer's function: when the step never reaches it (here the peer's patch
    leaves stock regions, as a forward calling the rule by another route would), run_e2e stops naming the peer,
    the kind and the phase instead of recording a row that is the stock model's (the old record's FLA decode
    rows equalled the stock rows exactly, with nothing counting whether FLA ran)."""
    if ran_in_the_interpreter(request, under_interpreter):
        return
    from transformers.models.qwen3_next import modeling_qwen3_next as Q

    from kernelcraft.e2e import gdn as G
    from kernelcraft.e2e.run import E2EError, E2EOptions, run_e2e

    pkgs = request.getfixturevalue("pkgs")
    mp = request.getfixturevalue("monkeypatch")
    called = dict.fromkeys(G.KINDS, 0)
    mp.setattr(G, "fla_functions", lambda: {k: _counting(Q, k, called) for k in G.KINDS})
    real = G.patch_layers

    def unreached(model, ops, stock=(), which="model", op_interface="task"):
        if op_interface == "model":  # the peer's patch: stock regions where the peer's function should be
            return real(model, {}, tuple(ops), which)
        return real(model, ops, stock, which, op_interface)

    mp.setattr(G, "patch_layers", unreached)
    with pytest.raises(E2EError, match=r"--peer fla: its function for gdn_decode was never called by 3 of 3 regions "
                                       r"in the decode step"):
        run_e2e([pkgs["gdn_decode"]], E2EOptions(model="qwen3-next-gdn-tiny", batch=2, seq=8, phases=("decode",),
                                                 compile=False, budget_ms=1, reps=1, profile_iters=1, peers=("fla",)))
    assert called == dict.fromkeys(G.KINDS, 0)  # (placed as run_e2e places it: test_e2e_run_with_the_gdn_kernels)


def _forward_source() -> str:
    import inspect
    import textwrap

    from transformers.models.qwen3_next import modeling_qwen3_next as Q

    return textwrap.dedent(inspect.getsource(inspect.unwrap(Q.Qwen3NextGatedDeltaNet.forward)))


def variant(name, old, new):
    """A subclass of the model's gated delta-net whose forward is the model's with ``old`` replaced by ``new``
    (every occurrence), its source readable (linecache)."""
    import linecache

    from transformers.models.qwen3_next import modeling_qwen3_next as Q

    src = _forward_source()
    assert old in src
    src = src.replace(old, new)
    fname = f"<kc test {name}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = dict(vars(Q))
    exec(compile(src, fname, "exec"), ns)
    return type(name, (Q.Qwen3NextGatedDeltaNet,), {"forward": ns["forward"]})


# transformers 5.25: the prefill keeps the recurrent state after each of the last
# cache.get_recurrent_states_to_keep(layer) tokens (a cache recording its past, as speculative decoding's)
KEEPS_STATES = "get_recurrent_states_to_keep" in _forward_source()


def test_settings_the_op_does_not_compute_are_refused(tiny, pkgs):
    from kernelcraft.e2e import regions as R
    from kernelcraft.e2e.run import E2EError, E2EOptions, run_e2e

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


def test_rule_calls_on_gates_e2e_cannot_follow_are_refused(tiny):
    """A call whose g or beta is not the forward's g / beta (or a tensor_split part of it, indexed): the region
    could not hand the op the a and b they were made from, so the patch refuses naming the call; so does a g made
    twice."""
    from kernelcraft.e2e import regions as R

    m = copy.deepcopy(tiny.model)
    m.model.layers[1].linear_attn.__class__ = variant("ClonedGateGatedDeltaNet", "g=g,", "g=g.clone(),")
    with pytest.raises(R.PatchError, match=r"ClonedGateGatedDeltaNet.forward .*`torch_(chunk|recurrent)_gated_delta_"
                                           r"rule\(query, key, value, g=g.clone\(\).* is not torch_\w+_gated_delta_"
                                           r"rule\(query, key, value, g=\.\.\., beta=\.\.\., \.\.\.\) with g and beta the "
                                           r"forward's g and beta or parts of a torch.tensor_split of them"):
        R.patch(m, {}, stock=("gdn_decode",))
    m.model.layers[1].linear_attn.__class__ = variant("TwiceGatedDeltaNet", "beta = b.sigmoid()",
                                                      "beta = b.sigmoid()\n    g = g * 1")
    with pytest.raises(R.PatchError, match=r"TwiceGatedDeltaNet.forward .* binds g 2 times"):
        R.patch(m, {}, stock=("gdn_decode",))
    if KEEPS_STATES:  # 5.25's split of g, of something else than g: refused
        m.model.layers[1].linear_attn.__class__ = variant(
            "OtherSplitGatedDeltaNet", "torch.tensor_split(g, [", "torch.tensor_split(g.flip(1), [")
        with pytest.raises(R.PatchError, match=r"OtherSplitGatedDeltaNet.forward .*`torch_chunk_gated_delta_rule\("
                                               r"chunked_query, chunked_key, chunked_value, g=chunked_g"):
            R.patch(m, {}, stock=("gdn_prefill",))


@pytest.mark.skipif(not KEEPS_STATES, reason="this transformers' forward keeps no intermediate recurrent states "
                                             "(transformers 5.25 does)")
def test_kept_intermediate_recurrent_states(tiny, pkgs):
    """transformers 5.25 with a cache recording its past (speculative decoding): a forward of n tokens keeping the
    last 2 states runs the chunked rule on the first n - 2 and the recurrent rule per kept token. Stock regions
    equal the model bit for bit (logits, kept states); with the ops' references (the task interface, adapted as
    the kernels are) each region gets the a and b of its part of the tokens: the logits within bf16 rounding and
    every kept state within 3% of its largest element (a and b of the wrong tokens: 20% off). With 2 new tokens
    the chunked call has none and goes to the model's function."""
    from kernelcraft.e2e import gdn as G
    from kernelcraft.e2e import regions as R

    stock, refs = copy.deepcopy(tiny.model), copy.deepcopy(tiny.model)
    R.patch(stock, {}, stock=("gdn_prefill", "gdn_decode"))
    placed = R.patch(refs, {k: p.reference for k, p in pkgs.items()})
    assert "5.25" in placed["gdn"]["forward_form"], placed["gdn"]
    assert placed["gdn"]["rule_calls"]["gdn_prefill"] == ["g=chunked_g, beta=chunked_beta"], placed["gdn"]
    gen = torch.Generator().manual_seed(0)
    vocab = tiny.model.config.vocab_size
    with torch.no_grad():
        cache = tiny.model(input_ids=torch.randint(0, vocab, (2, 8), generator=gen), use_cache=True).past_key_values
        for new, chunked in ((5, 1), (2, 0)):
            ids = torch.randint(0, vocab, (2, new), generator=gen)
            got = {}
            for name, m in (("model", tiny.model), ("stock", stock), ("refs", refs)):
                for r in R.regions(m):
                    r.calls = 0
                c = copy.deepcopy(cache)
                c.activate_past_recording(recurrent_states_to_keep=2)
                logits = m(input_ids=ids, cache=c, use_cache=True).logits.float()
                kept = [[*layer.recurrent_states_history[0], layer.recurrent_states[0]] for layer in c.layers
                        if getattr(layer, "is_recurrent_states_initialized", [False])[0]]
                got[name] = logits, kept
            want_logits, want_kept = got["model"]
            assert len(want_kept) == 3 and all(len(k) == 3 for k in want_kept)
            assert torch.equal(got["stock"][0], want_logits)
            assert all(torch.equal(x, y) for a, b in zip(got["stock"][1], want_kept, strict=True)
                       for x, y in zip(a, b, strict=True))
            logits, kept = got["refs"]
            assert (logits - want_logits).abs().max() <= 0.02 * want_logits.abs().max(), new
            for a, b in zip(kept, want_kept, strict=True):
                for x, y in zip(a, b, strict=True):
                    assert (x - y).abs().max() <= 0.03 * y.abs().max(), new
            assert {k: [r.calls for r in R.regions(refs) if r.kind == k] for k in G.KINDS} == {
                "gdn_prefill": [chunked] * 3, "gdn_decode": [2] * 3}, new


# -- what one region call costs around the op ---------------------------------------------------------------
# aten ops that only make a view (no device work, no allocation)
_VIEWS = {"aten.view.default", "aten.slice.Tensor", "aten.detach.default", "aten._unsafe_view.default",
          "aten.transpose.int", "aten.as_strided.default", "aten._reshape_alias.default", "aten.select.int",
          "aten.expand.default", "aten.unsqueeze.default"}
# a host-device sync (.item(), .tolist(), bool/int/float of a tensor) or a tensor made from Python data
_SYNCS = ("aten._local_scalar_dense", "aten.lift_fresh", "aten.item")


class _OpLog:
    """Every aten op a call dispatches (a TorchDispatchMode), the exported ops answered with empty outputs of the
    declared shapes instead of running (the kernel's own work is the gauntlet's to judge; this is what the
    region adds around it)."""

    def __init__(self, namespaces):
        from torch.utils._python_dispatch import TorchDispatchMode

        log = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = str(func)
                log.ops.append(name)
                if name.split(".")[0] in namespaces:
                    v, state = args[2], args[3]
                    return torch.empty(v.shape, dtype=v.dtype), torch.empty_like(state)
                return func(*args, **(kwargs or {}))

        self.mode, self.ops = Mode(), []

    def __enter__(self):
        self.ops = []
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)

    def work(self) -> list[str]:
        """The ops other than views and the exported op: each one device work (a kernel launch on a GPU)."""
        return sorted(o for o in self.ops if o not in _VIEWS and not o.startswith("kcx_"))


def _namespaces(pkgs):
    return {p.export_info["namespace"] for p in pkgs.values()}


@pytest.mark.parametrize("kind", ["gdn_prefill", "gdn_decode"])
@pytest.mark.parametrize("pre_repeated", [False, True])
def test_a_region_call_adds_no_sync_and_only_the_layout_copies(tiny, pkgs, kind, pre_repeated):
    """One eager region call after the first (the isolated row's call, region_inputs' contiguous tensors):
    no host-device sync, no tensor from Python data, and no device work but the op and the copies the layouts
    force (q and k back from the forward's repeat_interleave; decode's initial state to k-last). The gate
    parameters' float32 copies, the zero initial state and cu_seqlens are made by the first call only."""
    from kernelcraft.e2e import regions as R

    m = copy.deepcopy(tiny.model)
    R.patch(m, {k: p.op for k, p in pkgs.items()})
    reg = next(r for r in R.regions(m) if r.kind == kind)
    reg.pre_repeated = pre_repeated
    x = R.region_inputs(kind, 16 if kind == "gdn_prefill" else 2, m.config, "cpu", torch.bfloat16, seed=2, batch=2,
                        region=reg)
    log = _OpLog(_namespaces(pkgs))
    with torch.no_grad():
        with log:
            R.call(reg, x)
        first = log.work()
        with log:
            out, state = R.call(reg, x)
    assert not [o for o in log.ops if o.startswith(_SYNCS)], log.ops
    assert sum(o.startswith("kcx_") for o in log.ops) == 1, log.ops
    copies = (2 if pre_repeated else 0) + (kind == "gdn_decode")  # q, k; decode's state transpose
    assert log.work() == ["aten.clone.default"] * copies, log.ops
    assert len(log.ops) <= (11 if kind == "gdn_prefill" else 8), log.ops
    made_once = (["aten._to_copy.default"] * 2  # A_log, dt_bias in float32 (bf16 here)
                 + (["aten.arange.start_step", "aten.zeros.default"] if kind == "gdn_prefill" else []))
    assert first == sorted(log.work() + made_once), first
    assert out.shape == x.args[2].shape and out.dtype == x.args[2].dtype


def test_a_region_call_inside_the_model_copies_only_what_the_layout_needs(tiny, pkgs):
    """The regions as the model calls them (q, k, v views of the conv's transposed output): per call no sync and
    at most the q, k, v copies (and decode's state) besides the op."""
    from kernelcraft.e2e import regions as R

    m = copy.deepcopy(tiny.model)
    R.patch(m, {k: p.op for k, p in pkgs.items()})
    per_call = {}
    for r in R.regions(m):
        def logged(*a, _call=r.forward, _kind=r.kind, **k):
            log = _OpLog(_namespaces(pkgs))
            with log:
                out = _call(*a, **k)
            per_call.setdefault(_kind, []).append(log)
            return out
        r.forward = logged
    with torch.no_grad():
        for phase in ("prefill", "decode"):
            for _ in range(2):  # the second step is the one checked: the first makes the kept tensors
                per_call.clear()
                m(**tiny.inputs(phase))
            kind = f"gdn_{phase}"
            assert len(per_call[kind]) == 3, (phase, per_call)
            for log in per_call[kind]:
                assert not [o for o in log.ops if o.startswith(_SYNCS)], log.ops
                assert sum(o.startswith("kcx_") for o in log.ops) == 1, log.ops
                work = log.work()
                assert set(work) <= {"aten.clone.default"} and len(work) <= (3 if phase == "prefill" else 4), log.ops


def test_kept_tensors_equal_fresh_ones_and_follow_the_parameters(tiny, pkgs):
    """What an eager call reuses is what a fresh call makes, bit for bit; an in-place change of a gate parameter
    (its version counter), another dtype or another shape is seen; inference mode gets tensors of its own."""
    from kernelcraft.e2e import gdn as G
    from kernelcraft.e2e import regions as R

    m = copy.deepcopy(tiny.model)
    R.patch(m, {k: p.op for k, p in pkgs.items()})
    reg = next(r for r in R.regions(m) if r.kind == "gdn_prefill")

    def args(region, x):
        return region.op_args(*x.args, {k: x.kwargs[k] for k in G.EXTRA},
                              **{k: v for k, v in x.kwargs.items() if k not in G.EXTRA})

    def fresh(x):
        r = G.GDNRegion(reg.kind, reg.fn, (reg.num_k_heads, reg.num_v_heads), reg.head_k_dim, reg.pre_repeated,
                        reg.op)
        return args(r, x)

    def same(got, want):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if isinstance(g, torch.Tensor):
                assert g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w)
            else:
                assert g == w

    x = R.region_inputs("gdn_prefill", 16, m.config, "cpu", torch.bfloat16, seed=2, batch=2, region=reg)
    with torch.no_grad():
        a1, a2 = args(reg, x), args(reg, x)
        same(a2, fresh(x))
        for i in (3, 4, 6, 8):  # state, A_log, dt_bias, cu_seqlens: the same tensors the second time
            assert a2[i] is a1[i]
        x.kwargs["kc_A_log"].add_(0.5)  # in place: the version counter moves
        a3 = args(reg, x)
        assert a3[4] is not a1[4] and torch.equal(a3[4], x.kwargs["kc_A_log"].float())
        same(a3, fresh(x))
        x.kwargs["kc_dt_bias"] = x.kwargs["kc_dt_bias"].float()  # another tensor, float32 already
        same(args(reg, x), fresh(x))
        y = R.region_inputs("gdn_prefill", 16, m.config, "cpu", torch.bfloat16, seed=3, batch=1, region=reg)
        b = args(reg, y)  # one sequence of 16: another state and cu_seqlens
        assert b[3].shape[0] == 1 and b[8].tolist() == [0, 16]
        same(b, fresh(y))
    with torch.inference_mode():
        c = args(reg, y)
        assert c[3].is_inference() and c[3] is not b[3]
    with torch.no_grad():  # and a call outside it none of those
        d = args(reg, y)
        assert not d[3].is_inference() and not d[4].is_inference()
        same(d, fresh(y))
