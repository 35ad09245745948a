"""KernelBench as its authors meant it (issue 27), on small problems of our own in its format
(tests/fixtures/kernelbench_real): imports that scale (meta shapes, a scaled-down check, one process
per problem under a memory limit, the report written as it goes, no leftovers), inputs from the
problem's own get_inputs() so structure is kept, tolerances with a stated rule, degenerate and
ill-conditioned problems refused, TF32 off, parameters read through one mapping per file."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
import torch

from kernelcraft.gauntlet.compare import compare
from kernelcraft.interop.kernelbench import import_kernelbench
from kernelcraft.task import load_task
from kernelcraft.task.inputs import make_inputs

from conftest import FIXTURES, eval_json

SRC = FIXTURES / "kernelbench_real"
CONVERTED = {"tril_matmul", "symmetric_matmul", "hinge_loss", "kl_div", "wide_softmax", "lossy_offset",
             "tf32_guard", "huge_matmul", "mlp_params"}
REFUSED = {  # problem -> what its reason must say
    "cancelled_offset": "ill-conditioned",
    "zero_output": "[degenerate-output]",
    "memory_hog": "--max-memory-mb",  # refused with the numbers before its 64 GB parameter is made (4d6ff5b)
    "hangs": "timed out after 12 s",
    "killed": "killed by signal 9",
}
LIMIT_MB = 3000  # the huge problem's own inputs take 8 GB: it must convert well inside this


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb_real")
    stale = out / ".hangs.kc-import-deadbeef"  # left by an import killed before this one
    stale.mkdir()
    (stale / "definition.json").write_text("{}")
    seen: list[tuple[str, list[str]]] = []

    def on_result(o):  # the report already holds this problem's line when its outcome is known
        seen.append((o.path.stem, [json.loads(ln)["problem"] for ln in (out / "kernelbench_import.jsonl").read_text().splitlines()]))

    report = import_kernelbench([SRC], out, seed=0, max_memory_mb=LIMIT_MB, timeout_s=12, workers=2,
                                on_result=on_result)
    return out, report, seen


def _load_run(text: str):
    ns: dict = {}
    exec(compile(text, "<generated>", "exec"), ns)
    return ns["run"]


def test_every_problem_has_its_outcome_and_nothing_is_left_behind(imported):
    out, report, seen = imported
    assert {p.name for p in report.converted} == CONVERTED
    reasons = {Path(p).stem: why for p, why in report.failures}
    assert set(reasons) == set(REFUSED)
    for stem, words in REFUSED.items():
        assert words in reasons[stem], (stem, reasons[stem])
    assert sorted(p.name for p in out.iterdir()) == sorted(CONVERTED | {"kernelbench_import.jsonl"}), \
        "no temporary folder left, the stale one from an earlier import included"
    lines = [json.loads(ln) for ln in (out / "kernelbench_import.jsonl").read_text().splitlines()]
    assert len(lines) == len(CONVERTED) + len(REFUSED)
    for stem, logged in seen:
        assert str(SRC / f"{stem}.py") in logged, f"{stem}'s line was written before the next problem ran"


def test_a_problem_of_gigabytes_converts_without_allocating_them(imported):
    out, _, _ = imported
    task = load_task(out / "huge_matmul")
    sizes = sorted(w.axes["N"] for w in task.workloads)
    assert 32768 in sizes and max(sizes) == 32768, "the problem's own shapes, no doubled 68 GB variant"
    assert sizes[0] <= 1024 and task.io_bytes({"N": sizes[0]}) <= 16e6, "a workload a CPU run can take"
    [line] = [json.loads(ln) for ln in (out / "kernelbench_import.jsonl").read_text().splitlines()
              if "huge_matmul" in ln]
    assert line["peak_mb"] < LIMIT_MB / 2, line


def test_inputs_keep_their_structure(imported):
    out, _, _ = imported

    def draw(name, seed=5):
        task = load_task(out / name)
        w = max(task.workloads, key=lambda w: task.io_bytes(w.axes))
        return make_inputs(task, w, seed, "cpu")

    a, b = draw("tril_matmul")
    assert torch.equal(a, torch.tril(a)) and torch.equal(b, torch.tril(b)) and bool((a.diagonal() > 0).all())
    a, b = draw("symmetric_matmul")
    assert torch.equal(a, a.T) and torch.equal(b, b.T)
    p, t = draw("hinge_loss")
    assert set(t.unique().tolist()) == {-1.0, 1.0} and bool((p >= 0).all())
    p, q = draw("kl_div")
    assert torch.allclose(p.sum(-1), torch.ones(p.shape[0])) and bool((q > 0).all())
    again = draw("kl_div")
    assert torch.equal(again[0], p), "seeded: the same seed draws the same inputs"
    assert not torch.equal(draw("kl_div", seed=6)[0], p)


def test_structure_aware_kernel_passes(imported, tmp_path):
    out, _, _ = imported
    sol = FIXTURES / "kernelbench_solutions" / "symmetric_bt.py"
    rep = eval_json(out / "symmetric_matmul", sol, extra=("--no-timing",), tmp=tmp_path)
    [s] = rep["solutions"]
    assert s["status"] == "PASSED", s["reason"]


def test_tolerances_follow_the_stated_rule(imported):
    out, _, _ = imported
    plain = tomllib.loads((out / "tril_matmul" / "contract.toml").read_text())["tolerance"]["output"]["output"]
    assert plain == {"atol": 1e-4, "rtol": 1e-4}, "KernelBench's fp32 tolerance where the baseline is well inside it"
    lossy = load_task(out / "lossy_offset")
    tol = lossy.contract.tolerance.for_output("output", "float32")
    assert 1e-4 < tol.rtol <= 1e-2 and tol.atol == tol.rtol, "widened to 4x the fp32 forward's own error"
    assert "4 x the baseline's own error" in (out / "lossy_offset" / "contract.toml").read_text()
    wide = load_task(out / "wide_softmax")
    wtol = wide.contract.tolerance.for_output("output", "float32")
    assert wtol.atol < 1e-6 and wtol.rtol == 1e-4
    w = wide.workloads[0]
    x = make_inputs(wide, w, 0, "cpu")
    ref = _load_run(wide.definition.reference)(*[t.double() for t in x])
    axes = wide.definition.axis_values(w.axes)
    zeros = compare([torch.zeros_like(ref, dtype=torch.float32)], [ref], wide.definition, wide.contract, axes, "cpu", x)
    assert zeros.status == "INCORRECT_NUMERICAL", "an all-zero output must fail"


def test_baselines_pass_their_own_tasks(imported):
    """The judge's correctness check of each converted baseline on its small workloads, in this process
    (the CLI path is the structure-aware kernel's test above)."""
    from kernelcraft.gauntlet.judge import Judge, LocalSubject

    out, _, _ = imported
    for name in sorted(CONVERTED):
        task = load_task(out / name)
        baseline = _load_run((out / name / "baseline.py").read_text())
        judge = Judge(task, None, _load_run(task.definition.reference), None, "cpu", 17, role="baseline")
        judge.subject = LocalSubject(baseline, judge)
        small = [w for w in task.workloads if task.io_bytes(w.axes) <= 16e6]
        assert small, name
        for w in small:
            r = judge.check(w)
            assert r["status"] == "PASSED", (name, w.axes, r["reason"])


def test_tf32_is_off_inside_and_restored_after(imported):
    out, _, _ = imported
    task = load_task(out / "tf32_guard")
    baseline = _load_run((out / "tf32_guard" / "baseline.py").read_text())
    args = make_inputs(task, task.workloads[0], 0, "cpu")
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        baseline(*args)  # the problem's forward raises if TF32 is on
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32, "the caller's flags come back"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_parameters_come_from_one_mapping_per_file(imported, monkeypatch):
    import safetensors

    out, _, _ = imported
    task = load_task(out / "mlp_params")
    assert sum(spec.type == "safetensors" for spec in task.workloads[0].inputs.values()) == 6
    opened = []
    real = safetensors.safe_open

    def counting(path, *a, **k):
        opened.append(path)
        return real(path, *a, **k)

    monkeypatch.setattr(safetensors, "safe_open", counting)
    make_inputs(task, task.workloads[0], 0, "cpu")
    assert len(opened) == 1, opened


def test_reimport_replaces_only_with_a_good_folder(imported, tmp_path):
    out, _, _ = imported
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SRC / "tril_matmul.py", src)
    dest = tmp_path / "dest"
    assert [p.name for p in import_kernelbench([src], dest).converted] == ["tril_matmul"]
    (dest / "tril_matmul" / "NOTES.md").write_text("mine")
    (src / "tril_matmul.py").write_text((SRC / "zero_output.py").read_text())  # the same name, now refused
    report = import_kernelbench([src], dest)
    assert not report.converted and "[degenerate-output]" in report.failures[0][1]
    assert (dest / "tril_matmul" / "NOTES.md").read_text() == "mine", "the good folder was not deleted first"
    assert load_task(dest / "tril_matmul").definition.name == "tril_matmul"
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]


def test_level4_models_without_the_hub(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.delenv("KERNELCRAFT_HF_CONFIGS", raising=False)
    out = tmp_path / "kb4"
    report = import_kernelbench([FIXTURES / "kernelbench_level4"], out)
    assert [p.name for p in report.converted] == ["electra_small_bs2_seq16"]
    [(path, why)] = report.failures
    assert Path(path).stem == "gpt_neo_needs_config"
    assert "KERNELCRAFT_HF_CONFIGS/EleutherAI--gpt-neo-2.7B/config.json" in why
    readme = (out / "electra_small_bs2_seq16" / "README.md").read_text()
    assert "There is no hub here" in readme and "weights are random" in readme
    task = load_task(out / "electra_small_bs2_seq16")
    assert "embeddings__word_embeddings__weight" in "".join(task.definition.inputs)
    # a config.json given locally is used instead of the hub
    cfg = tmp_path / "cfg" / "EleutherAI--gpt-neo-2.7B"
    cfg.mkdir(parents=True)
    (cfg / "config.json").write_text(json.dumps({
        "model_type": "gpt_neo", "hidden_size": 32, "num_layers": 2, "num_heads": 4, "vocab_size": 64,
        "max_position_embeddings": 64, "attention_types": [[["global", "local"], 1]], "window_size": 8}))
    monkeypatch.setenv("KERNELCRAFT_HF_CONFIGS", str(tmp_path / "cfg"))
    again = import_kernelbench([FIXTURES / "kernelbench_level4" / "gpt_neo_needs_config.py"], out)
    assert [p.name for p in again.converted] == ["gpt_neo_needs_config"], again.failures


def test_a_terminated_import_ends_its_children_and_cleans_up(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    problem = FIXTURES / "kernelbench_slow" / "hangs_in_check.py"
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    parent = subprocess.Popen([sys.executable, "-m", "kernelcraft", "import", "kernelbench", str(problem),
                               "--out", str(out), "--timeout", "300"], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    child = None
    for _ in range(1200):  # until the child converting it has made its temporary folder
        found = subprocess.run(["pgrep", "-f", f"kernelbench._child {problem}"], capture_output=True,
                               text=True).stdout.split()
        if found and out.is_dir() and any(p.name.startswith(".hangs_in_check.kc-import-") for p in out.iterdir()):
            child = int(found[0])
            break
        time.sleep(0.1)
    assert child is not None, "the conversion never reached its check run"
    parent.send_signal(signal.SIGTERM)
    parent.wait(timeout=60)
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the child outlived the terminated import")
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "its temporary folder is gone"
