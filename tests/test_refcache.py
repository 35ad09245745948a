"""The judge's cache of slow reference outputs (kernelcraft.gauntlet.refcache): a second call with
byte-identical inputs does not run the reference again, any other input does, and an entry changed
outside kernelcraft is refused (its signature) and computed again."""

import io
import json

import pytest
import torch

from conftest import eval_json, small_task


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


def test_an_evaluation_again_on_the_same_seed_reuses_the_reference(tmp_path, monkeypatch):
    """Two evaluations of the same solution on the same seed (as two solutions of one batch are checked
    on the same inputs): the second runs the reference only where it is not called through the cache
    (the stress gate's float32 error floor), with the same verdict and errors."""
    task = small_task("rmsnorm", tmp_path)
    d = json.loads((task / "definition.json").read_text())
    log = tmp_path / "reference_calls.log"
    d["reference"] = d["reference"].replace(
        "def run(hidden_states, weight, eps):\n",
        f"def run(hidden_states, weight, eps):\n    open({str(log)!r}, 'a').write('call\\n')\n")
    (task / "definition.json").write_text(json.dumps(d))
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "kc_cache"))
    monkeypatch.setenv("KERNELCRAFT_REFCACHE_MIN_S", "0")
    sol = task / "solutions" / "triton_rowwise.py"
    counts, reps = [], []
    for _ in range(2):
        before = log.read_text().count("call") if log.exists() else 0
        reps.append(eval_json(task, sol, extra=("--no-timing", "--seed", "7"), tmp=tmp_path))
        counts.append(log.read_text().count("call") - before)
    first, second = (next(s for s in r["solutions"] if s["name"] == "triton_rowwise") for r in reps)
    assert first["status"] == second["status"] == "PASSED", (first["reason"], second["reason"])
    assert [w["max_abs_error"] for w in first["workloads"]] == [w["max_abs_error"] for w in second["workloads"]]
    assert counts[0] > 0 and counts[1] < counts[0] / 2, counts
    assert first["reference_cache"]["hits"] == 0 and first["reference_cache"]["stored"] > 0, first["reference_cache"]
    assert second["reference_cache"]["hits"] > 0 and second["reference_cache"]["rejected"] == 0, second["reference_cache"]
