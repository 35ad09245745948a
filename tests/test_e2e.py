"""kernelcraft e2e on the CPU (issue 25): the exported Triton rmsnorm, fused_add_rmsnorm and silu_mul
kernels (run by the Triton interpreter) in a 1-layer tiny Llama with random weights, a real decode
step (one token after a KV cache), eager and torch.compile(fullgraph=True, aot_eager: CPU Inductor
cannot generate code around user Triton kernels, AGENTS.md). CPU timings are noisy and the interpreter
is slow, so the test checks that the record is consistent (predictions recomputed from its own
measured fields, the graph facts, provenance), never how fast anything is."""

from __future__ import annotations

import json

import pytest
import torch
from e2e_support import exported

from tests.conftest import kc

pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e '.[test]')")


def test_e2e_tiny_llama_decode_eager_and_compiled(tmp_path_factory, tmp_path):
    pkgs = exported(tmp_path_factory)
    out = tmp_path / "e2e.json"
    args = [a for p in pkgs.values() for a in ("--package", p)]
    proc = kc("e2e", *args, "--model", "llama-tiny", "--layers", "1", "--batch", "2", "--seq", "8", "--phase", "decode",
              "--device", "cpu", "--compile-backend", "aot_eager", "--budget-ms", "1", "--reps", "3",
              "--profile-iters", "1", "--json", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Amdahl predicts" in proc.stdout and "never ran" not in proc.stdout
    rec = json.loads(out.read_text())
    assert rec["format"] == "kc-e2e/2"
    env = rec["environment"]
    assert env["harness_source_sha256"] and env["libs"]["torch"] and env["libs"]["transformers"] and rec["timestamp"]
    assert {k: v["source_hash"][:8] for k, v in rec["kernels"].items()}.keys() == set(pkgs)
    assert all(v["reference_vs_model_region_bad_elements"] == [0] * len(v["reference_vs_model_region_bad_elements"])
               for v in rec["kernels"].values())
    assert rec["model"]["patch"]["regions"] == {"rmsnorm": 1, "fused_add_rmsnorm": 2, "silu_mul": 1}
    ph = rec["phases"]["decode"]
    assert ph["tokens"] == 2 and ph["layout_bit_exact"] is True
    c = ph["correctness"]
    assert c["kernels_ran"] and c["max_abs_logit_diff"] < 0.05 * c["max_abs_logit"], c
    assert {k: d["kernel"] for k, d in c["dispatch"].items()} == {"rmsnorm": 1, "fused_add_rmsnorm": 2, "silu_mul": 1}
    assert all(d["fallback"] == 0 for d in ph["dispatch_during_timing"].values())
    assert set(ph["latency_ms"]) == {"eager", "eager+kernels", "torch.compile", "torch.compile+kernels",
                                     "decode inputs (cache copy)"}
    # compiled: one graph, no break, one exported node per region, no RMSNorm or SiLU left as aten ops
    comp = ph["compile"]["torch.compile+kernels"]
    assert comp["fullgraph"] is True and comp["graphs"] == 1 and comp["graph_breaks"] == 0, comp
    assert comp["graph"]["exported_op_nodes"] == 4 and comp["graph"]["rsqrt_nodes"] == 0 and comp["graph"]["silu_nodes"] == 0
    assert ph["compile"]["torch.compile"]["graph"]["rsqrt_nodes"] == 3  # the stock graph's three norms
    f = ph["fusion"]
    assert f["one_node_per_region"] is True and f["fusion_kept"] is None and "aot_eager" in f["note"]
    # the Amdahl arithmetic on the record's own measured numbers
    iso, prof, pred = ph["isolated"], ph["profile"]["kinds"], ph["prediction"]["eager"]
    for k, e in iso.items():
        assert e["speedup"] == pytest.approx(e["stock_ms"] / e["kernel_ms"])
        assert pred["speedups"][k] == e["speedup"] and pred["shares"][k] == prof[k]["share"]
    assert prof["fused_add_rmsnorm"]["calls_per_step"] == 2 and prof["silu_mul"]["calls_per_step"] == 1
    want = 1 / ((1 - sum(pred["shares"].values())) + sum(f / pred["speedups"][k] for k, f in pred["shares"].items()))
    assert pred["amdahl_speedup"] == pytest.approx(want)
    lat = {k: v["median_ms"] for k, v in ph["latency_ms"].items()}
    assert ph["measured"]["eager_speedup"] == pytest.approx(lat["eager"] / lat["eager+kernels"])
    assert ph["measured"]["compiled_speedup"] == pytest.approx(lat["torch.compile"] / lat["torch.compile+kernels"])
    if ph["measured"]["compiled_speedup"] < 1:  # the interpreter is slow: the record must say why
        causes = {r["cause"] for r in ph["why_slower"]["reasons"]}
        assert "backend aot_eager generates no code" in causes, ph["why_slower"]


def test_e2e_refuses_kernels_that_do_not_fit(tmp_path_factory):
    from kernelcraft.e2e.run import E2EError, E2EOptions, load_package, run_e2e

    pkgs = [load_package(str(p)) for p in exported(tmp_path_factory).values()]
    with pytest.raises(E2EError, match=r"\(rmsnorm\) at the decode shape \(1 tokens\): hidden_states is float32; "
                                       "validated for bfloat16 only"):
        run_e2e(pkgs, E2EOptions(model="llama-tiny", layers=1, batch=1, seq=4, dtype="float32"))
    with pytest.raises(E2EError, match=r"at the prefill shape \(64 tokens\): batch_size=64 outside the validated range"):
        run_e2e(pkgs, E2EOptions(model="llama-tiny", layers=1, batch=8, seq=8))
    with pytest.raises(E2EError, match="both replace rmsnorm regions"):
        run_e2e([pkgs[0], pkgs[0]], E2EOptions())
    assert torch.get_default_dtype() == torch.float32
