"""Shared by test_report, test_review, test_export and test_e2e: one real CPU evaluation of a small
RMSNorm task (hidden 64, so the tiny Llama of test_e2e fits its validated envelope), made once per
test session, and ledger runs built from its records."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, kc, small_task

TRITON = "triton_rowwise"  # the Triton solution that passes
WRONG = "slightly_off"  # a fixture that fails the correctness gate
_CACHE: dict = {}


def rms64_task(dest: Path, require_approval: bool = False) -> Path:
    """tasks/rmsnorm with hidden_size 64, three small workloads, a promotion bar the Triton interpreter
    clears, and optionally a contract that requires approval."""
    task = small_task("rmsnorm", dest, [{"batch_size": 1}, {"batch_size": 4}, {"batch_size": 8}])
    d = json.loads((task / "definition.json").read_text())
    d["axes"]["hidden_size"]["value"] = 64
    d["constraints"] = [c.replace("4096", "64") for c in d["constraints"]]
    (task / "definition.json").write_text(json.dumps(d, indent=2))
    # The Triton interpreter runs ~100x slower than the baseline on the CPU: a low bar lets CPU runs promote.
    contract = task / "contract.toml"
    text = re.sub(r"(?ms)^\[(promotion|generalization)\]\n.*?(?=^\[|\Z)", "", contract.read_text())
    contract.write_text(text + f"\n[promotion]\nmin_speedup_vs_baseline = 0.0001\nrequire_approval = "
                        f"{str(require_approval).lower()}\n"
                        "\n[generalization]\nholdouts = 1  # one drawn shape, plus the fresh-values repeat: CI time\n")
    return task


def evaluated(tmp_path_factory) -> tuple[Path, Path]:
    """(task folder, record): triton_rowwise PASSED and slightly_off failing, evaluated on the CPU."""
    if "eval" not in _CACHE:
        base = tmp_path_factory.mktemp("issue8")
        task = rms64_task(base)
        record = base / "rms64.json"
        sols = [task / "solutions" / f"{TRITON}.py", task / "solutions" / "wrong" / f"{WRONG}.py"]
        # --no-calibrate: the H200 records carry calibrations and sol for the report tests; CI time here
        # --time: the records' speedups decide promotion (review, approve, export) and e2e's predictions
        proc = kc("eval", task, *sols, "--device", "cpu", "--time", "--budget-ms", "20", "--no-calibrate",
                  "--json", record)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        _CACHE["eval"] = (task, record)
    return _CACHE["eval"]


def solution_record(record: Path, name: str) -> dict:
    rep = json.loads(record.read_text())
    rep["solutions"] = [s for s in rep["solutions"] if s["name"] == name]
    assert rep["solutions"], name
    return rep


def ledger_run(db_url: str, task: Path, record: Path) -> dict[str, int]:
    """A finished run: slightly_off (root, failed) -> triton_rowwise (its child, PASSED), selected."""
    from kernelcraft.agent.loop import select
    from kernelcraft.ledger import Ledger
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task import load_task

    t = load_task(task)
    ledger = Ledger(db_url)
    run = ledger.new_run(t.definition.name, str(task), t.definition.to_json_dict(), "files:test", "cpu", 2, {})
    ids: dict[str, int] = {"run": run}
    parent = None
    for name, path in ((WRONG, task / "solutions" / "wrong" / f"{WRONG}.py"), (TRITON, task / "solutions" / f"{TRITON}.py")):
        sol = load_solution(path, t.definition.name)
        cid = ledger.add_candidate(run, parent, "files:test", f"file {path.name}", "", sol.to_json_dict(), sol.source_hash)
        ev = solution_record(record, name)
        res = ev["solutions"][0]
        ledger.record(cid, res["status"], res["gate"], res["reason"], res["speedup_vs_baseline"], "", ev)
        ids[name] = parent = cid
    select(ledger, run, t)
    return ids


def venv_with(wheel: Path, where: Path) -> Path:
    """A fresh virtual environment with only this wheel installed, seeing torch and the rest where
    this interpreter sees them. Not `venv --system-site-packages`: run from inside a virtual
    environment, that reaches the *base* interpreter's site-packages, which lack torch (seen: the
    README's set-up in a venv failed this test). A .pth file adds this interpreter's site
    directories after the new venv's own, so the wheel is what gets imported."""
    import site

    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    own = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                         text=True, check=True).stdout.strip()
    dirs = [d for d in [*site.getsitepackages(), site.getusersitepackages()] if Path(d).is_dir()]
    # addsitedir, not a bare path: the .pth files there (editable installs, namespace packages) apply too
    (Path(own) / "kc_outer_site.pth").write_text(f"import site; list(map(site.addsitedir, {dirs!r}))\n")
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return py


def run_isolated(py: Path, script: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a script where kernelcraft cannot be imported: the package must stand on its own."""
    guard = "import sys\nsys.modules['kernelcraft'] = None  # any import of kernelcraft fails\n"
    f = cwd / "isolated_script.py"
    f.write_text(guard + script)
    e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    e.update(env or {})
    return subprocess.run([str(py), str(f)], capture_output=True, text=True, cwd=cwd, env=e, timeout=600)


__all__ = ["ROOT", "TRITON", "WRONG", "evaluated", "kc", "ledger_run", "rms64_task", "run_isolated",
           "solution_record", "venv_with"]
