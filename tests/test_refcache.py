"""The judge's cache of slow reference outputs (kernelcraft.gauntlet.refcache): a second call with
byte-identical inputs does not run the reference again, any other input does, and an entry changed
outside kernelcraft is refused (its signature) and computed again. In a whole evaluation:
tests/test_gauntlet_cpu.py::test_catalog_solutions_on_cpu[rmsnorm] (every reference call through the
cache, later solutions reading earlier ones' outputs back, all still PASSED)."""

import io

import pytest
import torch


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "kc_cache"))
    monkeypatch.setenv("KERNELCRAFT_REFCACHE_MIN_S", "0")
    from kernelcraft.gauntlet import refcache

    refcache._slow.clear()
    return refcache


def _counted(calls):
    def compute_for(inputs):
        def compute():
            calls.append(1)
            x, w = inputs
            return [(x.double() * w.double()).sum(-1)], "float64"
        return compute
    return compute_for


def test_identical_inputs_hit_and_others_miss(cache):
    calls = []
    make = _counted(calls)
    x, w = torch.randn(4, 8), torch.randn(8)
    first, prec = cache.cached_call(make([x, w]), [x, w], "def run(x, w): ...", False, "cpu")
    again, prec2 = cache.cached_call(make([x.clone(), w.clone()]), [x.clone(), w.clone()], "def run(x, w): ...", False, "cpu")
    assert len(calls) == 1 and prec == prec2 == "float64" and torch.equal(first[0], again[0])
    y = x.clone()
    y[0, 0] += 1.0  # one element: another call
    cache.cached_call(make([y, w]), [y, w], "def run(x, w): ...", False, "cpu")
    cache.cached_call(make([x, w]), [x, w], "def run(x, w): return 0", False, "cpu")  # another reference
    cache.cached_call(make([x, w]), [x, w], "def run(x, w): ...", True, "cpu")  # the native path
    assert len(calls) == 4


def test_an_entry_changed_outside_kernelcraft_is_refused(cache, tmp_path, capsys):
    calls = []
    make = _counted(calls)
    x, w = torch.randn(4, 8), torch.randn(8)
    good, _ = cache.cached_call(make([x, w]), [x, w], "ref", False, "cpu")
    (entry,) = (tmp_path / "kc_cache" / "refcache").glob("*.pt")
    signature, _, data = entry.read_bytes().partition(b"\n")
    forged = torch.load(io.BytesIO(data), weights_only=True)
    forged["outputs"] = [torch.zeros_like(good[0])]  # what a candidate would want the judge to expect
    buf = io.BytesIO()
    torch.save(forged, buf)
    entry.write_bytes(signature + b"\n" + buf.getvalue())  # the old signature over new bytes
    got, _ = cache.cached_call(make([x, w]), [x, w], "ref", False, "cpu")
    assert len(calls) == 2 and torch.equal(got[0], good[0])
    assert "changed outside kernelcraft" in capsys.readouterr().err


def test_a_fast_reference_is_not_stored(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_REFCACHE_MIN_S", "60")
    calls = []
    x, w = torch.randn(4, 8), torch.randn(8)
    for _ in range(2):
        cache.cached_call(_counted(calls)([x, w]), [x, w], "ref", False, "cpu")
    assert len(calls) == 2 and not list((tmp_path / "kc_cache" / "refcache").glob("*.pt"))


def _slow_call(log, x, w, ready):
    import time

    from kernelcraft.gauntlet import refcache

    def compute():
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(1.0)
        return [(x.double() * w.double()).sum(-1)], "float64"

    ready.wait()
    out, _ = refcache.cached_call(compute, [x, w], "slow ref", False, "cpu")
    torch.save(out[0], f"{log}.{__import__('os').getpid()}")


def test_parallel_judges_compute_a_slow_call_once(cache, tmp_path, monkeypatch):
    """Two judges that reach the same slow call together: the second waits for the first's entry
    (the shape key's lock) instead of running the reference beside it."""
    import multiprocessing as mp

    monkeypatch.setenv("KERNELCRAFT_REFCACHE_MIN_S", "0.5")
    log = tmp_path / "calls.log"
    x, w = torch.randn(4, 8), torch.randn(8)
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    procs = [ctx.Process(target=_slow_call, args=(str(log), x, w, ready)) for _ in range(2)]
    for p in procs:
        p.start()
    ready.set()
    for p in procs:
        p.join(timeout=30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text().count("computed") == 1
    outs = [torch.load(f) for f in tmp_path.glob("calls.log.*")]
    assert len(outs) == 2 and torch.equal(outs[0], outs[1])


def test_a_reference_that_ran_out_of_device_memory_runs_once_more(cache, monkeypatch):
    """On the H200 the LeapQuant request's holdout reference (batch 4097) failed with torch.OutOfMemoryError
    while another judge's cache held the device: the candidate got RUNTIME_ERROR [reference] for nothing it
    did. The judge now gives its cache back, waits and runs the reference once more; a second failure stays
    the task's RUNTIME_ERROR."""
    from kernelcraft.gauntlet import judge as judge_mod
    from kernelcraft.gauntlet.judge import Judge, LocalSubject
    from kernelcraft.task.loader import load_task

    from conftest import ROOT

    monkeypatch.setattr(judge_mod, "OOM_RETRY_S", 0.0)
    task = load_task(ROOT / "tasks" / "rmsnorm")
    ns: dict = {}
    exec(task.definition.reference, ns)
    real, failures = ns["run"], []

    def flaky(*args):
        if len(failures) < budget[0]:
            failures.append(1)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return real(*args)

    w = min(task.workloads, key=lambda w: task.io_bytes(w.axes))
    budget = [2]  # the float64 attempt and the native-precision fallback both fail, the next round passes
    judge = Judge(task, None, flaky, None, "cpu", 3)
    judge.subject = LocalSubject(real, judge)
    r = judge.check(w)
    assert r["status"] == "PASSED" and failures == [1, 1], r["reason"]

    budget[0], failures[:] = 10, []
    cache._slow.clear()
    judge = Judge(task, None, flaky, None, "cpu", 4)
    judge.subject = LocalSubject(real, judge)
    r = judge.check(w)
    assert r["status"] == "RUNTIME_ERROR" and r["gate"] == "reference" and "out of memory" in r["reason"], r
    assert len(failures) == 4  # float64 then native, once and once more
