"""Task folders: the catalog and a foreign (KDA-style) folder load; broken folders are refused
with exit code 2 and a message naming the file, the field and the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelcraft.errors import InputError
from kernelcraft.task import load_task

from conftest import CATALOG, FIXTURES, TASKS, kc


@pytest.mark.parametrize("name", CATALOG)
def test_catalog_task_checks(name):
    proc = kc("task", "check", TASKS / name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok" in proc.stdout
    task = load_task(TASKS / name)
    assert task.readme_path is not None, "every catalog task has a README"
    assert task.solution_paths(), "every catalog task ships at least one solution"


def test_kda_request_folder_loads_unchanged():
    task = load_task(FIXTURES / "kda_gelu_request")
    assert not (task.root / "contract.toml").exists()
    tol = task.contract.tolerance.for_output("out", "float16")
    assert (tol.atol, tol.rtol) == (1e-3, 2e-3)  # the documented default for float16
    assert [w.axes["num_tokens"] for w in task.workloads] == [1, 3, 8]


def _copy(tmp_path: Path, name: str = "rmsnorm") -> Path:
    dest = tmp_path / name
    shutil.copytree(TASKS / name, dest)
    return dest


def _refused(task_dir: Path, *expected: str) -> str:
    proc = kc("task", "check", task_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for text in expected:
        assert text in proc.stderr, f"{text!r} not in:\n{proc.stderr}"
    return proc.stderr


def test_missing_definition(tmp_path):
    d = _copy(tmp_path)
    (d / "definition.json").unlink()
    _refused(d, "definition.json", "file not found")


def test_definition_not_json(tmp_path):
    d = _copy(tmp_path)
    (d / "definition.json").write_text("{ not json")
    _refused(d, "definition.json", "not valid JSON: line 1")


def test_definition_bad_dtype_names_the_field(tmp_path):
    d = _copy(tmp_path)
    data = json.loads((d / "definition.json").read_text())
    data["inputs"]["weight"]["dtype"] = "bf16"
    (d / "definition.json").write_text(json.dumps(data))
    _refused(d, "definition.json", "field 'inputs.weight.dtype'", "use one of the allowed values")


def test_definition_unknown_axis(tmp_path):
    d = _copy(tmp_path)
    data = json.loads((d / "definition.json").read_text())
    data["inputs"]["weight"]["shape"] = ["hidden"]
    (d / "definition.json").write_text(json.dumps(data))
    _refused(d, "definition.json", "names axis 'hidden', which is not in 'axes'")


def test_reference_without_run(tmp_path):
    d = _copy(tmp_path)
    data = json.loads((d / "definition.json").read_text())
    data["reference"] = "import torch\n\ndef forward(x):\n    return x\n"
    (d / "definition.json").write_text(json.dumps(data))
    _refused(d, "must define a top-level function `run`")


def test_workload_missing_axis_names_line_and_field(tmp_path):
    d = _copy(tmp_path)
    lines = (d / "workloads.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["workload"]["axes"] = {}
    lines[1] = json.dumps(rec)
    (d / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    _refused(d, "workloads.jsonl line 2", "field 'workload.axes.batch_size'", "missing value for var axis")


def test_workload_forbidden_shape(tmp_path):
    d = _copy(tmp_path)
    lines = (d / "workloads.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["workload"]["axes"] = {"batch_size": 0}
    lines[0] = json.dumps(rec)
    (d / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    _refused(d, "workloads.jsonl line 1", "violates the definition's constraint 'batch_size >= 1'")


def test_workload_wrong_definition_name_and_bad_json(tmp_path):
    d = _copy(tmp_path)
    lines = (d / "workloads.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["definition"] = "something_else"
    lines[0] = json.dumps(rec)
    lines.append("{oops")
    (d / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    err = _refused(d, "names 'something_else'", "not valid JSON")
    assert f"line {len(lines)}" in err  # both problems reported at once


def test_contract_typo_is_an_error(tmp_path):
    d = _copy(tmp_path)
    (d / "contract.toml").write_text("[tolerance.bfloat17]\natol = 1e-2\nrtol = 1e-2\n")
    _refused(d, "contract.toml", "field 'tolerance.bfloat17'", "unknown field")


def test_contract_weight_for_unknown_workload(tmp_path):
    d = _copy(tmp_path)
    (d / "contract.toml").write_text('[weights]\n"no-such-uuid" = 2.0\n')
    _refused(d, "contract.toml", "field 'weights.no-such-uuid'", "no workload has this uuid")


def test_baseline_without_run(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").write_text("def forward(x):\n    return x\n")
    _refused(d, "baseline.py", "no top-level function `run`")


def test_malformed_solution_record(tmp_path):
    d = _copy(tmp_path)
    sol = d / "solutions" / "broken.json"
    sol.write_text(json.dumps({"name": "broken", "definition": "rmsnorm_bf16_h4096", "author": "me",
                               "spec": {"language": "triton", "entry_point": "main.py::run"},
                               "sources": [{"path": "kernel.py", "content": "x = 1"}]}))
    _refused(d, "broken.json", "entry_point file 'main.py' is not among the sources")


def test_eval_missing_solution_file_exits_2(tmp_path):
    proc = kc("eval", TASKS / "rmsnorm", tmp_path / "nope.py", "--device", "cpu")
    assert proc.returncode == 2
    assert "nope.py" in proc.stderr and "not found" in proc.stderr


def test_eval_unknown_workload_prefix_exits_2():
    proc = kc("eval", TASKS / "rmsnorm", "--device", "cpu", "--workload", "zzzz")
    assert proc.returncode == 2
    assert "0 workloads match 'zzzz'" in proc.stderr


def test_load_task_collects_every_problem(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").unlink()
    (d / "contract.toml").write_text("[limits]\nbuild_timeout_s = -1\n")
    with pytest.raises(InputError) as e:
        load_task(d)
    text = str(e.value)
    assert "baseline.py" in text and "limits.build_timeout_s" in text


# --- task check runs the task's own code (issue 24): parsing alone said ok for all of these ---

def test_check_refuses_a_baseline_that_raises(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").write_text("def run(hidden_states, weight, eps):\n    raise ValueError('broken on purpose')\n")
    text = _refused(d, "baseline.py", "raised on the smallest workload", "ValueError: broken on purpose")
    assert "batch_size=" in text  # which workload it was called on


def test_check_refuses_a_baseline_of_the_wrong_arity(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").write_text("def run(hidden_states, weight):\n    return hidden_states\n")
    _refused(d, "baseline.py", "has the wrong signature", "cannot take the definition's 3 inputs (hidden_states, weight, eps)")


def test_check_refuses_a_reference_that_raises(tmp_path):
    d = _copy(tmp_path)
    definition = json.loads((d / "definition.json").read_text())
    definition["reference"] = "def run(hidden_states, weight, eps):\n    return hidden_states.no_such_method()\n"
    (d / "definition.json").write_text(json.dumps(definition))
    _refused(d, "definition.json", "field 'reference'", "raised on the smallest workload", "no_such_method")


def test_check_refuses_a_baseline_with_the_wrong_output_shape(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").write_text("def run(hidden_states, weight, eps):\n    return hidden_states[:, :8]\n")
    _refused(d, "baseline.py", "returned the wrong outputs", "the definition says")


def test_check_warns_about_a_baseline_whose_module_is_missing(tmp_path):
    d = _copy(tmp_path)
    (d / "baseline.py").write_text("import kc_no_such_gpu_library\n\n\ndef run(hidden_states, weight, eps):\n"
                                   "    return kc_no_such_gpu_library.rmsnorm(hidden_states, weight, eps)\n")
    proc = kc("task", "check", d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" in proc.stdout and "'kc_no_such_gpu_library'" in proc.stdout and "ok" in proc.stdout


# --- task check's process runs under a memory limit: a FlashInfer-Trace MoE task's float64 reference
# took the whole 24 GB machine and was SIGKILLed, and check said "ended with code -9 and no result: " ---

def _with_reference(tmp_path: Path, body: str) -> Path:
    d = _copy(tmp_path)
    definition = json.loads((d / "definition.json").read_text())
    definition["reference"] = "import os\nimport signal\n\nimport torch\n\n\ndef run(hidden_states, weight, eps):\n" + body
    (d / "definition.json").write_text(json.dumps(definition))
    return d


def test_check_says_the_reference_ran_out_of_its_memory_limit(tmp_path):
    from kernelcraft.task.runcheck import smallest_workload

    # 2 GB against a 512 MB limit: refused at once, so the test itself allocates nothing of it
    d = _with_reference(tmp_path, "    scratch = torch.ones(1 << 28, dtype=torch.float64)\n    return hidden_states\n")
    small = smallest_workload(load_task(d))
    proc = kc("task", "check", d, "--max-memory-mb", "512")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    text = proc.stderr
    for part in ("ran out of memory while calling the reference", f"on the smallest workload {small.uuid} (batch_size=1)",
                 "its inputs take 16.4 kB (65.5 kB as the float64 copies the reference is called with)",
                 "an allocation failed under its memory limit of 512 MB (--max-memory-mb)",
                 "can't allocate memory: you tried to allocate 2147483648 bytes",
                 "fix: run check on a machine with more memory and a larger --max-memory-mb (now 512 MB)"):
        assert part in text, f"{part!r} not in:\n{text}"
    assert "ended with code" not in text


def test_check_names_the_signal_that_killed_its_process(tmp_path):
    # SIGKILL is what the out-of-memory killer sends: the process leaves no result and no traceback
    d = _with_reference(tmp_path, "    os.kill(os.getpid(), signal.SIGKILL)\n")
    text = _refused(d, "was killed by signal 9 (SIGKILL) while calling the reference on the smallest workload",
                    "likely out of memory", "--max-memory-mb")
    assert "its inputs take" in text
    d = _with_reference(tmp_path / "segv", "    os.kill(os.getpid(), signal.SIGSEGV)\n")
    text = _refused(d, "was killed by signal 11 (SIGSEGV) while calling the reference")
    assert "out of memory" not in text
