"""kernelcraft e2e on the CPU: the exported Triton RMSNorm (run by the Triton interpreter) replaces
every RMSNorm of a tiny random-weight Llama; the record holds correctness, the kernel's own dispatch
counts, isolated and end-to-end latencies (eager and torch.compile fullgraph) and the Amdahl
prediction computed from what it recorded. CPU timings are noisy and the interpreter is slow, so the
test checks that the numbers are consistent, not how fast anything is."""

from __future__ import annotations

import json

import pytest
from export_support import TRITON, evaluated, kc

from kernelcraft.measure.timing import TIMING_VERSION


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e '.[test]')")
    return evaluated(tmp_path_factory)


def test_e2e_tiny_llama_on_cpu(ev, tmp_path):
    task, record = ev
    out = tmp_path / "e2e.json"
    proc = kc("e2e", record, "--solution", TRITON, "--task", task, "--config", "llama-tiny", "--batch", "1", "--seq", "4",
              "--device", "cpu", "--compile-backend", "aot_eager", "--budget-ms", "30", "--json", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Amdahl predicts" in proc.stdout and "never ran" not in proc.stdout
    rec = json.loads(out.read_text())
    assert rec["format"] == "kc-e2e/1" and rec["timing_version"] == TIMING_VERSION
    m, c = rec["model"], rec["correctness"]
    assert m["arch"] == "LlamaForCausalLM" and m["config"]["hidden_size"] == 64 and m["config"]["num_hidden_layers"] == 2
    # 2 layers x (input + post-attention norm) + the final norm, each called once per forward.
    assert m["rmsnorm_modules_replaced"] == 5 and c["kernel_calls"] == 5 and c["fallback_calls"] == 0
    # bf16 rounding differs (the kernel rounds once, LlamaRMSNorm twice): close, not equal
    assert 0 < c["mean_abs_logit_diff"] < 0.05 * c["mean_abs_logit"] and c["max_abs_logit_diff"] < 0.1 * c["max_abs_logit"], c
    assert rec["dispatch_during_timing"]["fallback"] == 0 and rec["dispatch_during_timing"]["kernel"] >= 5 * 10
    assert rec["kernel"]["solution"]["source_hash"] in record.read_text()
    assert set(rec["latency_ms"]) == {"eager", "eager+kernel", "torch.compile", "torch.compile+kernel"}
    assert rec["compile"]["torch.compile+kernel"]["fullgraph"] is True  # the custom op breaks no graph
    assert all(t["reps"] >= 10 and t["method"] == "cpu-wall" for t in rec["latency_ms"].values())
    p, prof, iso = rec["prediction"], rec["profile"], rec["isolated"]
    assert prof["op_calls_per_forward"] == 5 and 0 < prof["share"] < 1
    assert iso["shape"] == [4, 64] and iso["speedup"] == pytest.approx(iso["stock_ms"] / iso["kernel_ms"])
    assert p["amdahl_speedup"] == pytest.approx(1 / ((1 - prof["share"]) + prof["share"] / iso["speedup"]))
    lat = rec["latency_ms"]
    assert rec["measured"]["eager_speedup"] == pytest.approx(lat["eager"]["median_ms"] / lat["eager+kernel"]["median_ms"])


def test_e2e_refuses_a_model_outside_the_envelope(ev, tmp_path):
    task, record = ev
    proc = kc("e2e", record, "--solution", TRITON, "--task", task, "--config", "llama-tiny", "--device", "cpu",
              "--dtype", "float32", "--no-compile")
    assert proc.returncode == 2 and "validated for bfloat16, the model is float32" in proc.stderr, proc.stderr
    from types import SimpleNamespace

    from kernelcraft.e2e.models import E2EError, make_config
    from kernelcraft.e2e.run import E2EOptions, _check_fit
    from kernelcraft.export._package import export_meta
    from kernelcraft.review.candidate import resolve

    pkg = SimpleNamespace(export_info=export_meta(resolve(str(record), TRITON, task_dir=task), "ns", False))
    _check_fit(pkg, E2EOptions(), make_config("llama-tiny").hidden_size)  # fits
    with pytest.raises(E2EError, match="fixes hidden_size=64, the model's hidden size is 4096"):
        _check_fit(pkg, E2EOptions(config="llama3-8b"), make_config("llama3-8b").hidden_size)
    with pytest.raises(E2EError, match="validated on cpu, the model runs on cuda"):
        _check_fit(pkg, E2EOptions(device="cuda"))
