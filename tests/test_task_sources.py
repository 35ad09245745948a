"""A record names the version of the task its verdicts were computed against (kernelcraft.task.sources)."""

from __future__ import annotations

from kernelcraft.gauntlet.evaluate import Options, new_report
from kernelcraft.task.loader import load_task
from kernelcraft.task.sources import task_sources

from conftest import small_task


def test_the_report_hashes_the_files_that_define_the_task(tmp_path):
    root = small_task("rmsnorm", tmp_path)
    (root / "solutions" / "__pycache__").mkdir(exist_ok=True)
    (root / "solutions" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    report, _ = new_report(load_task(root), Options(device="cpu", time_it=False, calibrate=False), seed=1)
    src = report.task_sources
    assert {"definition.json", "workloads.jsonl", "contract.toml", "baseline.py"} <= set(src["files"])
    assert not [f for f in src["files"] if f.startswith(("solutions/", "candidates/")) or "README" in f]
    assert src == task_sources(root)  # the same folder, the same hashes

    # a changed contract (a wider tolerance) is a different task version; a changed README or solution is not
    (root / "README.md").write_text("edited")
    (root / "solutions" / "new.py").write_text("def run(*a):\n    pass\n")
    assert task_sources(root)["sha256"] == src["sha256"]
    contract = (root / "contract.toml").read_text()
    (root / "contract.toml").write_text(contract + "\n# widened\n")
    changed = task_sources(root)
    assert changed["sha256"] != src["sha256"]
    assert [f for f in changed["files"] if changed["files"][f] != src["files"][f]] == ["contract.toml"]
