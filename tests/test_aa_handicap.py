"""scripts/aa_handicap.py on session 22's committed A/A records (an H100: Liger's code as a candidate beside
peer:liger, without and with --peers-beside): the figures results/h100/README.md quotes come back."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AA = ROOT / "results/h100/catalog-2026-12-06-s22/beside"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts/aa_handicap.py"), *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_the_a_a_records_give_the_readme_figures():
    alone = _run(*sorted(str(p) for p in AA.glob("*_alone.json")))
    beside = _run(*sorted(str(p) for p in AA.glob("*_beside.json")))
    assert alone.returncode == 0 and beside.returncode == 0, alone.stderr + beside.stderr
    assert "rmsnorm_alone.json: aa_liger - peer:liger: +0.51 +0.45 +0.35 +0.38 +0.54 +0.86 +0.14 us" in alone.stdout
    assert "all: 20 workloads, median +0.37 us, 18 of 20 slower as a candidate" in alone.stdout
    # with --peers-beside the peer's time in the copy's own rotation is the one compared
    assert "rmsnorm_beside.json: aa_liger - peer:liger (beside): +0.03 +0.03 +0.03" in beside.stdout
    assert "all: 20 workloads, median +0.38 us" in beside.stdout


def test_a_second_copy_and_explicit_pairs(tmp_path):
    import json

    record = json.loads((AA / "rmsnorm_alone.json").read_text())
    rows = {s["name"]: s for s in record["solutions"]}
    second = json.loads(json.dumps(rows["aa_liger"]))
    second["name"] = "aa_liger2"
    for w in second["workloads"]:
        w["latency_ms"] += 0.001  # 1 us slower than the first copy everywhere
    record["solutions"].append(second)
    path = tmp_path / "two_copies.json"
    path.write_text(json.dumps(record))
    out = _run(str(path), "--pair", "triton_rowwise=peer:liger").stdout
    assert "aa_liger2 - aa_liger: +1.00 +1.00" in out
    assert "triton_rowwise - peer:liger:" in out


def test_records_without_a_pair_say_so():
    out = _run(str(ROOT / "results/h100/catalog-2026-12-06-s22/chain4/catalog/rmsnorm.json"))
    assert out.returncode == 1 and "no A/A pair" in out.stdout
