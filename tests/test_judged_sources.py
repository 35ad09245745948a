"""Every judged-sources manifest under results/ rebuilds its candidate files from the repository's history with the
source hash its record carries (scripts/judged_sources.py): a record's variants stay readable and re-runnable after
their CONFIG files were replaced by a manifest, and after a newer run replaced the record (``record_commit``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

MANIFESTS = sorted(ROOT.glob("results/**/judged_sources.json"))


def _history() -> str:
    """Why the history these manifests name is not here, or ""."""
    r = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        return "not a git checkout"
    return "a shallow clone: the commits the manifests name are not here" if r.stdout.strip() == "true" else ""


@pytest.mark.skipif(bool(_history()), reason=_history() or "-")
@pytest.mark.parametrize("manifest", MANIFESTS, ids=[str(m.relative_to(ROOT)) for m in MANIFESTS])
def test_manifest_rebuilds_every_judged_file(manifest, tmp_path):
    r = subprocess.run([sys.executable, "scripts/judged_sources.py", str(manifest), "--out", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    assert lines and all(x.startswith("ok ") for x in lines), r.stdout
