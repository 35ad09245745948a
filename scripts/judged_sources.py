"""Rebuild the candidate files a device call judged, from the repository's history, and check each against the
source hash its record carries (kernelcraft.solution.model.Solution.source_hash), so a record's
solution can be read and re-run without a copy of every CONFIG variant in the tree.

    PYTHONPATH=src python scripts/judged_sources.py results/h200/design/leapquant_step_sweep-2026-12-03/judged_sources.json
    PYTHONPATH=src python scripts/judged_sources.py <manifest> --out /tmp/judged   # and write the files there

The manifest: {"definition": NAME, "rows": [{"record": PATH, "name": SOLUTION, "file": PATH, "commit": REV,
"config": {...}, "record_commit": REV (optional: read the record as it was then, for a record since replaced by a
newer run)}]}; each file is `git show REV:PATH` with its CONFIG updated as the tuner writes it
(kernelcraft.agent.tuner.with_config), named SOLUTION.py. Exits 1 if any hash differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelcraft.agent.tuner import config_of, with_config
from kernelcraft.solution.model import load_solution


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    doc = json.loads(args.manifest.read_text())
    out = args.out or Path(tempfile.mkdtemp(prefix="kc_judged_"))
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    for r in doc["rows"]:
        text = subprocess.run(["git", "show", f"{r['commit']}:{r['file']}"], capture_output=True, text=True,
                              check=True).stdout
        path = out / r["record"].split("/")[-2] / f"{r['name']}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        # no config: the file as committed (with_config would rewrite an equal CONFIG on one line: another hash)
        path.write_text(with_config(text, {**config_of(text), **r["config"]}) if r["config"] else text)
        got = load_solution(path, doc["definition"]).source_hash
        record = (subprocess.run(["git", "show", f"{r['record_commit']}:{r['record']}"], capture_output=True, text=True,
                                 check=True).stdout if r.get("record_commit") else Path(r["record"]).read_text())
        want = {s["name"]: s.get("source_hash") for s in json.loads(record)["solutions"]}
        ok = got == want.get(r["name"])
        bad += not ok
        print(f"{'ok  ' if ok else 'DIFF'} {r['record']} {r['name']} {got[:12]} {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
