"""A solution whose entry point has the other calling convention's arity fails with a hint that names
the spec field to change (issue 27: 13 of FlashInfer-Bench's gpt-5.2 CUDA solutions return their
outputs while their specs leave destination_passing_style at FlashInfer-Bench's default, true;
results/h200/interop/fib/)."""

from __future__ import annotations

import json
import shutil

from kernelcraft.gauntlet.judge import _accepted_args, calling_convention_hint

from conftest import TASKS, eval_json

# as the H200 run recorded them (results/h200/interop/fib/records/{rmsnorm_h7168,gemm_n128_k2048}.json)
PYBIND = ("TypeError: run(): incompatible function arguments. The following argument types are supported:\n"
          "    1. (arg0: torch.Tensor, arg1: torch.Tensor) -> torch.Tensor\n\nInvoked with: tensor([[ 0.5898]])")
PYBIND_KWARGS = ("TypeError: run(): incompatible function arguments. The following argument types are supported:\n"
                 "    1. (A: torch.Tensor, B: torch.Tensor, kwargs: c10::Dict<std::string, c10::IValue>) -> at::Tensor\n")
NESTED = ("TypeError: run(): incompatible function arguments. The following argument types are supported:\n"
          "    1. (arg0: Dict[str, Tuple[int, int]], arg1: torch.Tensor, arg2: torch.Tensor) -> None\n")


def test_arity_from_the_messages():
    assert _accepted_args(PYBIND) == 2
    assert _accepted_args(NESTED) == 3  # commas inside a type do not count
    assert _accepted_args(PYBIND_KWARGS) is None  # a kwargs catch-all: the arity says nothing
    assert _accepted_args("TypeError: run() takes 3 positional arguments but 4 were given") == 3
    assert _accepted_args("RuntimeError: CUDA error: an illegal memory access was encountered") is None


def test_hint_only_where_the_arity_is_the_other_conventions():
    assert "destination_passing_style\": false" in calling_convention_hint(PYBIND, True, 2, 1)
    assert calling_convention_hint(PYBIND, False, 2, 1) == ""  # value-returning as declared: something else
    assert calling_convention_hint(PYBIND, True, 3, 1) == ""  # neither convention's arity
    assert "destination_passing_style\": true" in calling_convention_hint(NESTED, False, 2, 1)
    assert calling_convention_hint(PYBIND_KWARGS, True, 2, 1) == ""


def test_a_value_returning_run_declared_dps_is_told_which_field(tmp_path):
    task = tmp_path / "rmsnorm"
    shutil.copytree(TASKS / "rmsnorm", task, ignore=shutil.ignore_patterns("solutions"))
    sol = tmp_path / "returns_but_says_dps"
    sol.mkdir()
    shutil.copy(TASKS / "rmsnorm" / "solutions" / "triton_rowwise.py", sol / "main.py")
    (sol / "solution.json").write_text(json.dumps({
        "name": "returns_but_says_dps", "definition": "rmsnorm_bf16_h4096", "author": "test",
        "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": True},
        "sources": [{"path": "main.py"}]}))
    rep = eval_json(task, sol, extra=("--no-timing", "--no-peers"), tmp=tmp_path)
    [s] = [x for x in rep["solutions"] if x["name"] == "returns_but_says_dps"]
    assert s["status"] == "RUNTIME_ERROR" and s["gate"] == "correctness", s["reason"]
    assert "takes 3 positional arguments but 4 were given" in s["reason"]
    assert "[calling-convention]" in s["reason"] and "\"destination_passing_style\": false" in s["reason"]


def test_a_long_message_keeps_its_head():
    """pybind11 prints every argument after the signatures; the H200's gqa records kept only the
    tail (tensor values) and lost the signature. The message's head, shortened arguments, is kept."""
    from kernelcraft.solution._traceback import candidate_traceback

    values = "tensor([[" + ", ".join(["0.7148"] * 3000) + "]])"
    try:
        raise TypeError(PYBIND.split("\nInvoked with:")[0] + "\n\nInvoked with: " + values)
    except TypeError as e:
        text = candidate_traceback(e)
    assert len(text) <= 4000
    assert "incompatible function arguments" in text and "1. (arg0: torch.Tensor, arg1: torch.Tensor)" in text
    assert "the arguments' values left out" in text
    assert _accepted_args(text) == 2
    try:
        raise ValueError("x" * 10000 + "END")
    except ValueError as e:
        text = candidate_traceback(e)
    assert len(text) <= 4000 and text.count("ValueError: xxx") == 1 and text.endswith("END\n")


def test_outputs_left_unwritten_under_dps_are_named(tmp_path):
    """FIB's rmsnorm_h128 solution on the H200: a run that takes the outputs but returns a new tensor
    left every element NaN; the reason says the outputs were never written and which field to change."""
    task = tmp_path / "rmsnorm"
    shutil.copytree(TASKS / "rmsnorm", task, ignore=shutil.ignore_patterns("solutions"))
    sol = tmp_path / "returns_instead"
    sol.mkdir()
    shutil.copy(TASKS / "rmsnorm" / "solutions" / "triton_rowwise.py", sol / "rowwise.py")
    (sol / "main.py").write_text("from .rowwise import run as _run\n\n\n"
                                 "def run(hidden_states, weight, eps, output):\n"
                                 "    return _run(hidden_states, weight, eps)  # never writes output\n")
    (sol / "solution.json").write_text(json.dumps({
        "name": "returns_instead", "definition": "rmsnorm_bf16_h4096", "author": "test",
        "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": True},
        "sources": [{"path": "main.py"}, {"path": "rowwise.py"}]}))
    rep = eval_json(task, sol, extra=("--no-timing", "--no-peers"), tmp=tmp_path)
    [s] = [x for x in rep["solutions"] if x["name"] == "returns_instead"]
    assert s["status"] == "INCORRECT_NUMERICAL", s["reason"]
    assert "disagree on NaN/Inf" in s["reason"] and "no element of any output was written" in s["reason"]
