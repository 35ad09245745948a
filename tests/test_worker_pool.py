"""The worker pool: each job a process of its own, started warm from a spare spawned ahead of need."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kernelcraft.worker import pool


def _stop(proc, conn):
    conn.close()
    proc.kill()
    proc.join(timeout=10)


def test_next_job_takes_the_spare_and_a_changed_environment_does_not(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    try:
        first = pool._take("cpu")
        spare_pid = pool._spares[("cpu", None)][0][0].pid
        second = pool._take("cpu")
        assert second[0].pid == spare_pid and second[0].pid != first[0].pid  # a fresh process, already started
        stale_pid = pool._spares[("cpu", None)][0][0].pid
        monkeypatch.setenv("KERNELCRAFT_TEST_MARKER", str(os.getpid()))  # the spare saw another environment
        third = pool._take("cpu")
        assert third[0].pid != stale_pid
        for p, c in (first, second, third):
            _stop(p, c)
    finally:
        pool.shutdown_spares()


def test_no_spare_when_no_job_follows(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    proc, conn = pool._take("cpu", spare_next=False)
    try:
        assert ("cpu", None) not in pool._spares
    finally:
        _stop(proc, conn)


def test_spares_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "0")
    pool.shutdown_spares()
    proc, conn = pool._take("cpu")
    try:
        assert ("cpu", None) not in pool._spares
    finally:
        _stop(proc, conn)


def test_a_two_job_lane_keeps_two_spares_and_prestart_waits_until_they_are_warm(monkeypatch):
    """keep=2: after a take, two spares wait; prestart returns once each has imported the gauntlet
    (its ("warm",) word read), and a job run on such a spare still completes normally."""
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    try:
        seconds = pool.prestart("cpu", keep=2, timeout_s=120)
        waiting = pool._spares[("cpu", None)]
        assert len(waiting) == 2 and all(p.is_alive() for p, _, _ in waiting)
        assert seconds > 0
        assert not any(c.poll(0) for _, c, _ in waiting)  # their ("warm",) was read by prestart
        oldest = waiting[0][0].pid
        first = pool._take("cpu", keep=2)
        assert first[0].pid == oldest  # the oldest spare, warm
        assert len(pool._spares[("cpu", None)]) == 2  # topped up
        _stop(*first)
    finally:
        pool.shutdown_spares()


# -- the template workers are forked from, and what a worker may send ---------------------------------

MARKER_BASELINE = '''
import os
from pathlib import Path

# at import, in the worker (the judge: a task's baseline is trusted code and runs there): which
# environment and which parent it has, and how many objects it inherited frozen
import gc
Path(os.environ["KC_TEST_OUT"]).write_text(os.environ.get("KC_TEST_MARKER", "") + " " + str(os.getppid())
                                           + " " + str(gc.get_freeze_count()))


def run(x, weight, eps):
    raise RuntimeError("not a kernel: this test reads what the import wrote")
'''

FORGING_SOLUTION = '''
import gc
import multiprocessing.connection
import pathlib


class _Payload:
    """Unpickling this creates a file: it runs code wherever it is unpickled."""

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(MARKER),))


for _o in gc.get_objects():
    if isinstance(_o, multiprocessing.connection.Connection) and not _o.closed and _o.writable:
        _o.send(_Payload())  # a pickle on the harness's pipe


def run(x, weight, eps):
    return x
'''


def _job(tmp_path, text: str, role: str = "candidate"):
    import shutil

    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task
    from kernelcraft.worker.child import Job

    from conftest import ROOT

    root = ROOT / "tasks/rmsnorm"
    if role == "baseline":
        root = Path(shutil.copytree(root, tmp_path / "rmsnorm"))
        (root / "baseline.py").write_text(text)
    task = load_task(root)
    f = tmp_path / "cand.py"
    f.write_text(text)
    sol = pack_python_file(task.baseline_path if role == "baseline" else f, task.definition.name)
    return Job(task_root=str(task.root), solution=sol.to_json_dict(), role=role, device="cpu", seed=1,
               workload_uuids=[task.workloads[0].uuid], log_path=str(tmp_path / "worker.log"), time_it=False)


def test_workers_are_forked_from_the_template_and_see_the_parents_environment(monkeypatch, tmp_path):
    """With the forkserver, a worker is the template's child, not this process's, and starts in a
    few milliseconds; its environment is the parent's when it was asked for (set here after the
    template started), not the template's."""
    from kernelcraft.worker import template

    if not template.enabled():
        pytest.skip("no forkserver on this platform")
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    try:
        pool.prestart("cpu", keep=1, timeout_s=120)  # the template is up and has forked a spare
        t0 = time.monotonic()
        proc, conn = pool._spawn("cpu")[:2]
        assert time.monotonic() - t0 < 2.0  # a fork, not a fresh interpreter importing torch
        _stop(proc, conn)
        monkeypatch.setenv("KC_TEST_MARKER", "set-after-the-template-started")
        monkeypatch.setenv("KC_TEST_OUT", str(tmp_path / "seen.txt"))
        out = pool.run_job(_job(tmp_path, MARKER_BASELINE, role="baseline"), 120, 120)
        marker, ppid, frozen = (tmp_path / "seen.txt").read_text().split()
        assert marker == "set-after-the-template-started"
        assert int(ppid) != os.getpid()  # forked by the template
        assert int(frozen) > 100_000  # torch and the gauntlet, frozen by the template before it forked
        assert out.build is not None and out.cpu_s is not None and out.cpu_s > 0
    finally:
        pool.shutdown_spares()


def test_template_kind_is_fixed_and_can_be_turned_off(monkeypatch):
    from kernelcraft.worker import template

    monkeypatch.setenv("KERNELCRAFT_FORKSERVER", "0")
    assert template.context("cpu").get_start_method() == "spawn"
    monkeypatch.setenv("KERNELCRAFT_FORKSERVER", "1")
    if not template.enabled():
        pytest.skip("no forkserver on this platform")
    kind = template._kind or template.kind_of("cpu")
    other = "cuda:0" if kind == "cpu" else "cpu"
    assert template.context("cpu" if kind == "cpu" else "cuda:0").get_start_method() == "forkserver"
    assert template.context(other).get_start_method() == "spawn"  # the other kind starts cold


def test_a_pickle_on_the_pipe_never_reaches_the_parent(tmp_path):
    """Candidate code that looks for the worker's pipe to write a pickle on it: in its runner the
    pipe's descriptor is closed (the Connection object it inherited leads nowhere), the payload
    (which would create a file when unpickled) never runs, and the candidate does not pass."""
    marker = tmp_path / "unpickled-in-the-parent"
    out = pool.run_job(_job(tmp_path, f"MARKER = {str(marker)!r}\n" + FORGING_SOLUTION), 120, 120)
    assert not marker.exists()
    assert out.build is not None and out.build[0] != "PASSED", out
    assert "Bad file descriptor" in out.build[1] or "closed" in out.build[1], out.build


def test_forged_results_on_the_recording_pipe_are_still_refused():
    """The recording process still refuses anything of the worker's that is not an answer to the
    phase it announced (defence in depth: the worker is the trusted judge now)."""
    assert "unknown message" in pool._out_of_protocol(("verdict", "PASSED"), ("correctness", "u"), set())
    assert pool.decode(b"\x80\x04not json") is None


def test_decode_takes_only_plain_messages():
    import pickle

    assert pool.decode(b'["phase", "build", null, 1.5]') == ("phase", "build", None, 1.5)
    assert pool.decode(b'["workload", "correctness", "u", {"max_abs_error": NaN}]')[3]["max_abs_error"] != 0
    assert pool.decode(pickle.dumps(("done",))) is None
    assert pool.decode(b'{"kind": "done"}') is None and pool.decode(b"[]") is None and pool.decode(b"[1]") is None


# -- a check gives up its shared hold on the GPU while Triton compiles ------------------------------

def _judge_side(sock, heard):
    """The judge's side of the compile events, played by a thread: every ``compiled`` is answered
    with ``resume`` (as RunnerClient.request does once its shared hold is back)."""
    from kernelcraft.runner import wire

    while True:
        try:
            msg, _ = wire.recv(sock)
        except wire.WireError:
            return
        heard.append(msg["event"])
        if msg["event"] == "compiled":
            wire.send(sock, {"op": "resume"})


def test_a_check_gives_up_the_gpu_while_a_kernel_compiles_and_takes_it_back_before_the_launch():
    """The runner's side over a real socket: a compile in the middle of a call that may release is
    preceded by ``compiling`` and followed by ``compiled`` and the judge's ``resume``, also when the
    compile fails; outside such a call nothing is said."""
    import socket
    import threading
    import types

    from kernelcraft.runner.main import release_slot_while_compiling

    judge, mine = socket.socketpair()
    heard: list[str] = []
    t = threading.Thread(target=_judge_side, args=(judge, heard), daemon=True)
    t.start()
    runner = types.SimpleNamespace(sock=mine, release=False)

    class Kernel:  # stands in for triton's JITFunction
        def _do_compile(self, key):
            if key == "bad":
                raise RuntimeError("the compiler failed")
            return f"binary for {key}"

    assert release_slot_while_compiling(runner, Kernel)
    assert Kernel()._do_compile("the build") == "binary for the build"  # not a releasing call: silent
    assert heard == []
    runner.release = True
    assert Kernel()._do_compile("k1") == "binary for k1"
    with pytest.raises(RuntimeError, match="compiler failed"):
        Kernel()._do_compile("bad")
    runner.release = False
    Kernel()._do_compile("a timing's compile")
    mine.close()
    t.join(timeout=10)
    assert heard == ["compiling", "compiled", "compiling", "compiled"]


def test_the_compile_of_this_triton_is_the_method_that_is_wrapped():
    """Triton's JITFunction compiles through ``_do_compile`` (3.4-3.9); if a Triton renames it, this
    fails here rather than the pool silently holding the GPU through compiles again."""
    import types

    jit = pytest.importorskip("triton.runtime.jit", reason="triton is not installed")
    from kernelcraft.runner.main import release_slot_while_compiling

    class Sub(jit.JITFunction):  # wrapped on a subclass: the class every test shares stays as it is
        pass

    assert release_slot_while_compiling(types.SimpleNamespace(sock=None, release=False), Sub)
    assert Sub._do_compile is not jit.JITFunction._do_compile
    assert Sub._do_compile.__wrapped__ is jit.JITFunction._do_compile


def test_a_compile_inside_the_candidates_graph_capture_keeps_the_hold(monkeypatch):
    """While the candidate captures a CUDA graph no synchronize may run (it would break the
    capture), so a compile there says nothing. CUDA's capture state is stood in for: this machine
    may have no GPU."""
    import socket
    import types

    import torch

    from kernelcraft.runner.main import release_slot_while_compiling

    judge, mine = socket.socketpair()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)

    class Kernel:
        def _do_compile(self, key):
            return key

    assert release_slot_while_compiling(types.SimpleNamespace(sock=mine, release=True), Kernel)
    assert Kernel()._do_compile("k") == "k"
    judge.settimeout(0.2)
    with pytest.raises(TimeoutError):
        judge.recv(1)


def test_a_job_that_never_gets_the_gpu_slot_ends_timeout_naming_the_holder(tmp_path):
    """A job's pool thread that waits for the GPU slot reads nothing from its worker, so the phase's own
    no-progress deadline cannot end the wait; the wait's bound (SLOT_WAIT_FACTOR x that deadline with nothing
    moving on the lane) does, with a TIMEOUT that names who held the GPU. Here another "job" holds it alone for the whole run: the
    worker (a CPU job with the slot protocol on) builds, asks for the GPU and is refused in words."""
    import dataclasses
    import time

    good = "import torch\n\n\ndef run(x, weight, eps):\n    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\n"
    job = dataclasses.replace(_job(tmp_path, good), gpu_slot=True)
    slot = pool.GpuSlot()
    assert slot.acquire_exclusive(1.0, "triton_other (candidate)")
    t0 = time.monotonic()
    out = pool.run_job(job, 4.0, 4.0, slot=slot)
    waited = time.monotonic() - t0
    assert out.died_status == "TIMEOUT", out
    assert "waited for the GPU (to check)" in out.died and "for 12 s nothing on its lane moved" in out.died, out.died
    assert "timing alone: triton_other (candidate)" in out.died, out.died
    assert "--no-overlap" in out.died
    assert pool.SLOT_WAIT_FACTOR * 4.0 <= waited < 60, waited
    assert out.slot_wait_s >= pool.SLOT_WAIT_FACTOR * 4.0 - 0.1
    slot.release_exclusive()
    assert slot.acquire_shared(1.0, "next")  # the refused job left no hold and no waiter behind
