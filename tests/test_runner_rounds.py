"""The judge's round trips to a runner, made cheaper without giving anything up: placements share an
arena where it fits (no new descriptor, no new mapping), and a thaw continues exactly what the last
freeze stopped (a frozen process starts nothing), while every freeze reads the process tree again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from conftest import ROOT, built_subject

CANDIDATE = """import os, time
import torch

FORK = {fork}

def run(x, w, eps):
    if FORK and not os.environ.get("KC_TEST_FORKED"):
        os.environ["KC_TEST_FORKED"] = "1"
        if os.fork() == 0:  # a child the candidate leaves running
            time.sleep(60)
            os._exit(0)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
"""


def _runner(tmp_path, fork: bool = False, exec_runner: bool = False):
    """A judge and its runner for the rmsnorm task. ``exec_runner``: the runner a fresh interpreter
    (the launcher path, with no launcher) rather than forked from this process: a pytest worker has
    run parallel torch ops by then, and a runner forked after that hangs at its first parallel op
    (OpenMP's pool does not survive a fork; measured: rms_norm on 64 x 4096 bf16, no progress in 120 s).
    kernelcraft's own workers fork their runner before any torch work, as the template is."""
    from kernelcraft.runner.client import RunnerClient
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task

    task = load_task(ROOT / "tasks/rmsnorm")
    f = tmp_path / "cand.py"
    f.write_text(CANDIDATE.format(fork=fork))
    sol = pack_python_file(f, task.definition.name)
    client = RunnerClient("cpu", launcher=[]) if exec_runner else RunnerClient("cpu")
    client.wait_ready(120)
    judge, subject = built_subject(client, task, sol)
    return client, judge, subject


def _inputs(rows: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, 4096, generator=g).to(torch.bfloat16), torch.randn(4096, generator=g).to(torch.bfloat16),
            1e-5]


def _right(subject, inputs) -> None:
    called = subject.call()
    assert called.error == "" and called.wrong is None, called
    x, w, eps = inputs
    want = torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
    assert torch.equal(called.outputs[0], want)


def test_placements_share_an_arena_where_they_fit(tmp_path, monkeypatch):
    import kernelcraft.gauntlet.judge as judge_mod

    client, judge, subject = _runner(tmp_path, exec_runner=True)
    sent = []
    request = client.request

    def spy(op, *a, fds=None, **payload):
        if op == "arena":
            sent.append((len(fds or []), payload["reuse"]))
        return request(op, *a, fds=fds, **payload)

    client.request = spy
    axes = lambda rows: {"batch_size": rows, "hidden_size": 4096}  # noqa: E731
    try:
        first = _inputs(2, 1)
        subject.place(first, axes(2))
        arena = subject.arena
        _right(subject, first)
        again = _inputs(2, 2)  # the same layout, new values: the runner's views see them
        subject.place(again, axes(2))
        _right(subject, again)
        smaller = _inputs(1, 3)
        subject.place(smaller, axes(1))
        _right(subject, smaller)
        assert subject.arena is arena and sent == [(1, False), (0, True), (0, True)]
        larger = _inputs(64, 4)
        subject.place(larger, axes(64))
        _right(subject, larger)
        assert subject.arena is not arena and sent[-1] == (1, False)

        # one arena reserved for a phase's placements: each of them maps nothing new
        sizes = [judge.arena_bytes(w) for w in judge.task.workloads if w.axes["batch_size"] <= 128]
        subject.reserve(sizes)
        reserved = subject.arena
        assert reserved.size == max(sizes)
        for rows in (1, 128, 16):
            inputs = _inputs(rows, rows)
            subject.place(inputs, axes(rows))
            _right(subject, inputs)
        assert subject.arena is reserved and sent[-3:] == [(1, False), (0, True), (0, True)]  # mapped once

        # an arena much larger than a placement needs is not kept for it
        monkeypatch.setattr(judge_mod, "ARENA_KEEP_SLACK", 0)
        tiny = _inputs(1, 5)
        subject.place(tiny, axes(1))
        _right(subject, tiny)
        assert subject.arena is not reserved and sent[-1] == (1, False)
    finally:
        subject.close()
        client.close()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_freeze_stops_what_the_call_started_and_a_thaw_continues_it(tmp_path):
    from kernelcraft.runner.client import descendants

    client, judge, subject = _runner(tmp_path, fork=True)
    try:
        before = set(descendants(client.pid))
        inputs = _inputs(2, 1)
        subject.place(inputs, {"batch_size": 2, "hidden_size": 4096})
        _right(subject, inputs)  # the call forks a child that keeps running
        tree = descendants(client.pid)
        started = set(tree) - before
        assert started, "the candidate's child is not in the runner's tree"
        deadline = time.monotonic() + 10
        while any(_state(p) != "T" for p in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(_state(p) == "T" for p in tree), {p: _state(p) for p in tree}  # frozen with the runner
        client.thaw()
        deadline = time.monotonic() + 10
        while any(_state(p) == "T" for p in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(_state(p) == "T" for p in tree), {p: _state(p) for p in tree}
        client.freeze()
        assert set(client._stopped) == set(tree)
        _right(subject, inputs)  # requests go on as before
    finally:
        subject.close()
        client.close()
    for p in started:
        assert not Path(f"/proc/{p}").exists() or _state(p) == "Z"


def test_closing_a_runner_kills_what_it_left_and_nothing_else_of_the_judges(tmp_path):
    """A closed runner's orphans (the candidate's child, handed to the judge as subreaper with no pid
    namespace in between) are killed; the judge's own other children are not, and their exit statuses
    stay theirs (CI: closing a runner killed the multiprocessing forkserver a later evaluate() needed,
    and its waitpid(-1) could take a sanitizer run's exit code)."""
    import subprocess

    from kernelcraft.runner.client import descendants

    sleeper = subprocess.Popen(["sleep", "60"])
    quick = subprocess.Popen(["sh", "-c", "exit 3"])
    deadline = time.monotonic() + 10
    while _state(quick.pid) != "Z" and time.monotonic() < deadline:  # a zombie nobody has waited for yet
        time.sleep(0.01)
    client, judge, subject = _runner(tmp_path, fork=True, exec_runner=True)  # launcher path: no pid namespace
    try:
        before = set(descendants(client.pid))
        inputs = _inputs(2, 1)
        subject.place(inputs, {"batch_size": 2, "hidden_size": 4096})
        _right(subject, inputs)  # the call forks a child that keeps running
        started = set(descendants(client.pid)) - before
        assert started, "the candidate's child is not in the runner's tree"
    finally:
        subject.close()
        client.close()
    try:
        for p in started:
            assert not Path(f"/proc/{p}").exists() or _state(p) == "Z", (p, _state(p))
        assert sleeper.poll() is None, "closing the runner killed a child of the judge's that was not the runner's"
        assert quick.wait(5) == 3  # its status was not taken by a waitpid(-1)
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("text", ["n >= 1", "x.min() >= 0", "idx[-1].item() == total"])
def test_constraint_names_are_read_once(text):
    from kernelcraft.task import constraints

    assert constraints.names(text) is constraints.names(text)  # cached: a frozenset
    assert constraints.value_names(text) is constraints.value_names(text)
