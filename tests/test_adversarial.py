"""Candidates written to forge a PASSED by someone who read kernelcraft's source (issue 19).

Each fixture in tests/fixtures/adversarial/ attacks one part of what used to share a process with
candidate code: the worker's pipe, the checkers, the tolerance, the reference, the seed, the record,
the CLI, the calibration, the timer. They run with the static gate off, so that what stands behind it
(the judge/runner split, the sandbox, the timed-output checks) is what decides; on CPU, through the
real `kernelcraft eval`, in one batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, small_task

ADV = FIXTURES / "adversarial"
EXPECTED = tomllib.loads((ADV / "expected.toml").read_text())
SECRET_SEED = 918273645546372819


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adversarial")
    task = small_task("rmsnorm", tmp, [{"batch_size": 1}, {"batch_size": 3}])
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), KERNELCRAFT_TEST_NO_STATIC_GATE="1")
    cal = subprocess.run([sys.executable, "-m", "kernelcraft", "calibrate", "--device", "cpu"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert cal.returncode == 0, cal.stderr
    cache = Path(os.environ["KERNELCRAFT_CACHE"]) / "calibration"
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.glob("*.json")}
    assert before, "calibrate wrote no cache file"
    out = tmp / "record.json"
    names = list(EXPECTED)
    proc = subprocess.run(
        [sys.executable, "-m", "kernelcraft", "eval", str(task), *[str(ADV / f"{n}.py") for n in names],
         "--device", "cpu", "--time", "--budget-ms", "20", "--seed", str(SECRET_SEED), "--workers", "2",
         "--json", str(out)],
        env=env, capture_output=True, text=True, timeout=1500, cwd=tmp)
    time.sleep(1.0)  # what an orphan would have done by now, it has done
    record_text = out.read_text() if out.exists() else ""
    (Path(os.environ.get("KC_ADVERSARIAL_KEEP", tmp)) / "adversarial_record.json").write_text(record_text)
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.glob("*.json")}
    survivors = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"61.7316" in Path(f"/proc/{pid}/cmdline").read_bytes():
                survivors.append(pid)
        except OSError:
            continue
    return {"proc": proc, "record_text": record_text, "names": names, "cal_before": before, "cal_after": after,
            "survivors": survivors}


def test_the_batch_survives_every_attack(batch):
    proc = batch["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rep = json.loads(batch["record_text"])  # the orphan did not rewrite it: still the whole record
    assert [s["name"] for s in rep["solutions"]] == batch["names"]
    assert rep["test_switches"], "a run with the static gate off must say so in its record"


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_attack_gets_its_verdict(batch, name):
    rep = json.loads(batch["record_text"])
    s = {x["name"]: x for x in rep["solutions"]}[name]
    exp = EXPECTED[name]
    assert s["status"] == exp["status"], s["reason"]
    for fragment in exp.get("reason_contains", []):
        assert fragment in s["reason"], s["reason"]
    held = " ".join(s["sandbox"]["held"])
    assert "pid namespace" in held and "landlock" in held, s["sandbox"]


def test_no_process_of_a_candidate_outlives_the_evaluation(batch):
    assert batch["survivors"] == [], "a candidate's detached grandchild is still running"


def test_the_calibration_cache_is_untouched(batch):
    assert batch["cal_after"] == batch["cal_before"]


def test_a_changed_calibration_file_is_measured_again(tmp_path, monkeypatch):
    from kernelcraft.measure import calibrate

    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path))
    cal = calibrate.Calibration(device="cpu", hardware="CPU test", fingerprint="f", fingerprint_fields={},
                                copy_gbs=10.0, matmul_tflops={}, timing_version="t", timestamp="now")
    path = calibrate.cache_path("cpu")
    calibrate.save(cal, path)
    assert calibrate.cached("cpu").copy_gbs == 10.0
    data = json.loads(path.read_text())
    data["calibration"]["copy_gbs"] = 1e12  # what a candidate would write, if it could
    path.write_text(json.dumps(data))
    assert calibrate.cached("cpu") is None


def test_a_result_for_an_unplanned_workload_costs_only_that_solution(tmp_path):
    """A worker outcome naming a workload nobody planned: that solution's record says harness error,
    the next solution in the batch is recorded as usual."""
    from kernelcraft.gauntlet.evaluate import Options, drain, prepare
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task
    from kernelcraft.worker.executor import Done
    from kernelcraft.worker.pool import JobOutcome

    task = load_task(small_task("rmsnorm", tmp_path, [{"batch_size": 1}]))
    sol = pack_python_file(task.root / "solutions" / "triton_rowwise.py", task.definition.name)
    opts = Options(device="cpu", time_it=False)
    preps = {i: prepare(task, "candidate", sol, "x.py", 1, opts) for i in range(2)}
    uuid = task.workloads[0].uuid
    good = JobOutcome(build=("PASSED", ""), workloads={uuid: {"correctness": {"status": "PASSED", "gate": "correctness"}}})
    for h in preps[1].res.holdouts:
        good.workloads[h.uuid] = {"generalization": {"status": "PASSED", "gate": "generalization"}}
    forged = JobOutcome(build=("PASSED", ""), workloads={"never-planned": {"correctness": {"status": "PASSED"}}})
    events = [Done(0, forged, "cpu#0"), Done(1, good, "cpu#0")]

    class Fake:
        def next_event(self):
            return events.pop(0)

    out = dict(drain(Fake(), preps, task, None, 2, {}))
    assert out[0].status == "RUNTIME_ERROR" and "never planned" in out[0].reason
    assert out[1].status == "PASSED", out[1].reason


def test_a_runner_dies_with_its_judge(tmp_path):
    """The recording process kills a judge that overran its deadline (SIGKILL): its runner, and the
    runner's pid-1 process in its own namespace, must not outlive it (parent-death signals down the
    chain; seen otherwise: a spinning candidate's runner orphaned for 45 minutes)."""
    import multiprocessing
    import signal

    ctx = multiprocessing.get_context("fork")
    r, w = ctx.Pipe(duplex=False)

    def judge(conn):
        from kernelcraft.runner.client import RunnerClient, descendants

        client = RunnerClient("cpu")
        client.wait_ready(60)
        conn.send(descendants(client.pid))
        time.sleep(600)

    p = ctx.Process(target=judge, args=(w,))
    p.start()
    pids = r.recv()
    assert len(pids) >= 2  # the runner and its pid-1 child
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [q for q in pids if Path(f"/proc/{q}").exists()
                 and "Z" not in Path(f"/proc/{q}/stat").read_text().split()[2]]
        time.sleep(0.1)
    assert alive == [], f"processes of the runner outlived their judge: {alive}"
