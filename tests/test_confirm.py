"""The out-of-process timing confirmation (gauntlet/confirm.py): Nsight Compute's CSV read back, calls
told apart by their marker kernels, the verdicts; and a runner started as a program under a launcher
(what ncu wraps), which speaks the same protocol as a forked one. The profile itself needs a GPU
(tests/test_gpu.py, results/h200/*.json's `confirmation`)."""

from __future__ import annotations

import stat
import sys

import pytest

from kernelcraft.gauntlet import confirm

MARK = "at::cuda::(anonymous namespace)::spin_kernel(long)"


def _details_csv(rows: list[tuple[str, float]]) -> str:
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    lines = ["==PROF== Connected to process 123", head]
    for i, (name, ns) in enumerate(rows):
        lines.append(f'"{i}","123","python3","h","{name}","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0",'
                     f'"Command line profiler metrics","gpu__time_duration.sum","nsecond","{ns:,.0f}"')
    return "\n".join(lines) + "\n==PROF== Disconnected from process 123\n"


def test_calls_are_split_at_the_markers_and_summed_over_streams():
    rows = []
    for _ in range(3):
        rows += [(MARK, 1000), ("kc_sol::my_kernel", 20_000), ("kc_sol::finish", 5_000)]
    launches = confirm.parse(_details_csv(rows))
    assert launches[1] == ("kc_sol::my_kernel", 20000.0)  # thousands separators read
    calls = confirm.per_call(launches)
    assert [len(c) for c in calls] == [2, 2, 2]
    ok = confirm.judge(calls, [0.026], torch_ops_allowed=False)
    assert ok["confirmed"] and abs(ok["per_workload"][0]["ncu_ms"] - 0.025) < 1e-9


def test_a_reported_time_far_below_the_kernels_is_a_timing_mismatch():
    rows = [(MARK, 1000), ("my_kernel", 100_000)] * 3
    out = confirm.judge(confirm.per_call(confirm.parse(_details_csv(rows))), [0.05], torch_ops_allowed=False)
    assert out["status"] == "REJECTED" and out["reason"].startswith("[timing-mismatch]")
    assert "0.10000 ms" in out["reason"]


def test_torch_compute_kernels_seen_from_outside():
    rows = [(MARK, 1000), ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>", 9000),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 500)] * 3
    calls = confirm.per_call(confirm.parse(_details_csv(rows)))
    out = confirm.judge(calls, [0.01], torch_ops_allowed=False)
    assert out["status"] == "REJECTED" and "[torch-compute]" in out["reason"] and "MulFunctor" in out["reason"]
    assert "FillFunctor" not in out["reason"]  # a fill (torch.zeros) is allocation, not compute
    assert confirm.judge(calls, [0.01], torch_ops_allowed=True)["confirmed"]


def test_a_profile_that_cannot_be_matched_is_unconfirmed_not_rejected():
    rows = [(MARK, 1000), ("k", 1000)] * 2  # two calls where three were made
    out = confirm.judge(confirm.per_call(confirm.parse(_details_csv(rows))), [0.001], torch_ops_allowed=False)
    assert out["confirmed"] is False and "status" not in out and "cannot be matched" in out["reason"]


def test_a_runner_started_under_a_launcher_speaks_the_protocol(tmp_path, monkeypatch):
    """A stand-in for ncu (a script that runs its target the way ncu does, as a child with the same
    descriptors) wraps a runner started as a program: it enters its sandbox (no pid namespace: a
    profiler must see its target), builds and calls a real Triton candidate on an arena the judge
    made, and the launcher's output lands where it was asked to."""
    import torch

    from kernelcraft.runner.client import RunnerClient
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task

    from conftest import ROOT, built_subject

    stand_in = tmp_path / "fake_ncu"
    stand_in.write_text(f"#!{sys.executable}\nimport subprocess, sys\nprint('==PROF== stand-in', flush=True)\n"
                        "sys.exit(subprocess.call(sys.argv[1:], close_fds=False))\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    task = load_task(ROOT / "tasks/rmsnorm")
    sol = pack_python_file(ROOT / "tasks/rmsnorm/solutions/triton_rowwise.py", task.definition.name)
    out_file = tmp_path / "launcher.out"
    client = RunnerClient("cpu", launcher=[str(stand_in)], launcher_output=out_file)
    try:
        client.wait_ready(120)
        assert any("no pid namespace" in d for d in client.sandbox["degraded"]), client.sandbox
        judge, subject = built_subject(client, task, sol)
        x = torch.randn(2, 4096).to(torch.bfloat16)
        w = torch.randn(4096).to(torch.bfloat16)
        subject.place([x, w, 1e-5], {"batch_size": 2, "hidden_size": 4096})
        called = subject.call()
        assert called.error == "" and called.wrong is None, called
        xf = x.float()
        ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).to(torch.bfloat16)
        # bf16 outputs of |x| up to ~8: one bf16 step there is 0.0625, so the bound is relative
        torch.testing.assert_close(called.outputs[0].float(), ref.float(), rtol=1.6e-2, atol=1e-2)
    finally:
        client.close()
    assert out_file.read_text().startswith("==PROF== stand-in")


@pytest.mark.parametrize("unit,scale", [("usecond", 1e3), ("msecond", 1e6)])
def test_units_are_read(unit, scale):
    text = _details_csv([(MARK, 1), ("k", 2)]).replace('"nsecond","2"', f'"{unit}","2"')
    assert confirm.parse(text)[1] == ("k", 2 * scale)


def test_a_gpu_candidate_timed_without_confirmation_is_not_promotable():
    from kernelcraft.gauntlet.evaluate import _unconfirmed
    from kernelcraft.gauntlet.records import SolutionResult
    from kernelcraft.worker.child import Job

    def job(device: str, time_it: bool = True) -> Job:
        return Job(task_root="t", solution={}, role="candidate", device=device, seed=1, workload_uuids=[],
                   log_path="l", time_it=time_it)

    def row(role: str = "candidate") -> SolutionResult:
        return SolutionResult(name="c", status="PASSED", role=role, promotable=True)

    r = row()
    _unconfirmed(r, job("cuda:0"))  # eval --no-confirm on a GPU: the record said promotable (gdn_prefill, s23)
    assert not r.promotable and "not confirmed out of process" in r.reason
    for r, j in ((row(), job("cpu")), (row(), job("cuda", time_it=False))):
        _unconfirmed(r, j)  # a CPU row is never confirmed (nor timed by default); an untimed one has nothing to confirm
        assert r.promotable and r.reason == ""
