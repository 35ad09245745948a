"""scripts/triton_pipeline_lint.py reads Triton's sm_90 TTGIR for the pipelined-loop race session 26 found in
gdn_prefill (a two-buffer load zero-filled while an async wgmma still reads it): compiled here, on a machine with
no GPU, by the installed Triton's CUDA backend (the race's form is the same in Triton 3.6, the GPU machine's)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, kc

sys.path.insert(0, str(ROOT / "scripts"))

triton = pytest.importorskip("triton")

from triton_pipeline_lint import lint  # noqa: E402
from triton_race_repro import compile_only  # noqa: E402


def _verdicts(path) -> list[bool]:
    return [f["race"] for f in lint(path.read_text())]


def test_the_smallest_racy_loop_is_found_and_its_two_fixes_are_not(tmp_path):
    racy, three_buffers, unpipelined = compile_only(tmp_path)
    assert _verdicts(racy) == [True]  # the Gram's tile also used in registers: two buffers, pendings 1
    assert _verdicts(three_buffers) == [False]  # Triton's usual three-buffer matmul pipeline
    assert not any(_verdicts(unpipelined))  # num_stages=1: no multi-buffered load at all
    f = lint(racy.read_text())[0]
    assert (f["buffers"], f["distance"], f["pendings"]) == (2, 2, 1)


@pytest.mark.parametrize("name, racy", [("candidates/triton_chunk5.py", False), ("solutions/triton_chunk6.py", False),
                                        ("solutions/triton_chunk7.py", False), ("solutions/triton_chunk8.py", False),
                                        ("candidates/triton_chunk9.py", False),
                                        ("candidates/triton_chunk4.py", True), ("candidates/triton_chunk2.py", False)])
def test_gdn_prefill_candidates(name, racy, tmp_path):
    """chunk5-9 run their Gram loops unpipelined (session 26 on); chunk4 (racy on the H100 in session 25)
    keeps the loop that raced; chunk2 (deterministic there) never had one."""
    axes = "total_seq_len=8192,num_seqs=1,len_cu_seqlens=2,num_q_heads=4,num_k_heads=4,num_v_heads=8,head_size=128"
    r = subprocess.run([sys.executable, "scripts/triton_regs.py", "tasks/gdn_prefill",
                        f"tasks/gdn_prefill/{name}", "--axes", axes, "--dump", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    irs = sorted(tmp_path.glob("*.ttgir"))
    assert irs, r.stdout
    found = [f["race"] for p in irs for f in lint(p.read_text())]
    assert any(found) == racy, found


def test_const_axes_come_from_the_definition_and_a_missing_var_axis_is_named():
    """gdn_prefill's head counts and head size are const axes: --axes needs only the var ones; a var axis left
    out is an error naming the definition, the input and the axis, not a KeyError."""
    base = [sys.executable, "-m", "kernelcraft.measure.triton_static", "tasks/gdn_prefill",
            "tasks/gdn_prefill/solutions/triton_chunk6.py", "--lint-only", "--json", "--axes"]
    bad = subprocess.run(base + ["total_seq_len=256"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert "definition.json" in bad.stderr and "num_seqs=N" in bad.stderr and "Traceback" not in bad.stderr
    wrong = subprocess.run(base + ["total_seq_len=256,num_seqs=2,len_cu_seqlens=3,head_size=64"], cwd=ROOT,
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and "head_size = 128" in wrong.stderr, wrong.stderr[-2000:]
    ok = subprocess.run(base + ["total_seq_len=256,num_seqs=2,len_cu_seqlens=3"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-3000:]
    rows = json.loads(ok.stdout)["launches"]
    assert {"_kkt", "_wu"} <= {r["kernel"] for r in rows}
    assert not any(f["race"] for r in rows for f in r["pipeline"])


def test_eval_lint_names_the_race_and_keeps_the_verdict(tmp_path):
    """`eval --lint` (the default on a GPU): gdn_prefill chunk4, which passes every gate on CPU, gets its `_kkt` race
    in the record and on the console, and stays PASSED; chunk6 gets none; without --lint on CPU, no lint runs."""
    gdn = ROOT / "tasks" / "gdn_prefill"
    out = tmp_path / "lint.json"
    proc = kc("eval", gdn, gdn / "candidates" / "triton_chunk4.py", gdn / "solutions" / "triton_chunk6.py", "--device",
              "cpu", "--no-timing", "--lint", "--workload", "7f152d68", "--json", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = {s["name"]: s for s in json.loads(out.read_text())["solutions"]}
    c4, c6 = got["triton_chunk4"], got["triton_chunk6"]
    assert c4["status"] == "PASSED" and c6["status"] == "PASSED"
    assert c4["static_lint"]["races"] and all(r.startswith("_kkt (TTGIR line") for r in c4["static_lint"]["races"])
    assert c4["static_lint"]["workload"].startswith("d790aa8b")  # the workload moving the most bytes
    assert c4["static_lint"]["input_device"] == "meta"  # no GPU here: meta tensors (a GPU run uses CUDA ones)
    assert c6["static_lint"]["races"] == [] and "_kkt" in c6["static_lint"]["kernels"]
    assert "triton_chunk4: pipeline race" in proc.stdout and "triton_chunk6: pipeline race" not in proc.stdout
    out2 = tmp_path / "nolint.json"
    proc = kc("eval", gdn, gdn / "solutions" / "triton_chunk6.py", "--device", "cpu", "--no-timing", "--workload",
              "7f152d68", "--json", out2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [c6] = [s for s in json.loads(out2.read_text())["solutions"] if s["name"] == "triton_chunk6"]
    assert c6["static_lint"] is None
