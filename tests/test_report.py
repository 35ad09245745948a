"""kernelcraft report and summary: the HTML is opened and its plots decoded as PNG images; records that
lack fields (no holdouts, no sol, no calibration, no torch.compile row) still report, saying what is
missing; a ledger run adds the best-so-far and DAG plots; SUMMARY.md repeats the records' numbers."""

from __future__ import annotations

import base64
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from export_support import TRITON, evaluated, kc, ledger_run
from PIL import Image

from conftest import ROOT

H200 = ROOT / "results" / "h200"
FROZEN = ROOT / "tests" / "fixtures" / "records" / "h200"  # real records that do not change (README there)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[dict] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a)
        for key in ("src", "href"):
            if key in a and tag != "img":
                self.links.append(a[key])

    def handle_data(self, data):
        self.text.append(data)


def _open(html: Path) -> tuple[_Page, list[Image.Image]]:
    page = _Page()
    page.feed(html.read_text())
    pngs = []
    for img in page.images:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix), img["src"][:60]  # embedded, nothing fetched
        data = base64.b64decode(img["src"][len(prefix):], validate=True)
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        im = Image.open(io.BytesIO(data))
        im.load()
        assert im.width > 300 and im.height > 200
        pngs.append(im)
    assert not page.links  # a self-contained file: no stylesheet, script or image from elsewhere
    return page, pngs


def test_html_report_of_an_h200_record(tmp_path):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    proc = kc("report", FROZEN / "rmsnorm.json", "--html", html, "--md", md)
    assert proc.returncode == 0, proc.stderr
    page, pngs = _open(html)
    assert [i["alt"] for i in page.images] == ["Per-workload speedup over the baseline", "Roofline"]
    text = " ".join(page.text)
    rec = json.loads((FROZEN / "rmsnorm.json").read_text())
    comp = next(s for s in rec["solutions"] if s["name"] == "torch.compile")
    vec8 = next(s for s in rec["solutions"] if s["name"].endswith("cuda_vec8"))
    for w in comp["workloads"] + vec8["workloads"]:  # the record's numbers, in the latency table
        assert f"{w['latency_ms']:.4f}" in text
    assert f"{vec8['speedup_vs_baseline']:.3f}" in text and "NVIDIA H200" in text
    assert "Not drawn: a single evaluation record has no run history" in text
    # the limits are those of the fastest kernel that passed, from its workloads and holdouts
    best = max((s for s in rec["solutions"] if s["name"] not in ("baseline", "torch.compile") and s["status"] == "PASSED"),
               key=lambda s: s["speedup_vs_baseline"])
    sizes = sorted({w["axes"]["batch_size"] for w in best["workloads"] + best.get("holdouts", []) if w["status"] == "PASSED"})
    assert f"Limits of {best['name']}" in text
    assert f"batch_size: run at {len(sizes)} values in [{sizes[0]}, {sizes[-1]}]" in text
    assert "hidden_size=4096" in text and f"seed {rec['seed']}" in text
    if rec.get("calibration"):  # a record with calibration: sol fractions and no "missing" note
        assert "sol)" in text and "no calibration in the record" not in text
    mdtext = md.read_text()
    assert "![Roofline](r_roofline.png)" in mdtext and (tmp_path / "r_roofline.png").read_bytes()[:4] == b"\x89PNG"


def test_report_of_records_missing_fields(tmp_path):
    from kernelcraft.report.data import from_records
    from kernelcraft.report.render import context, to_html

    rec = json.loads((FROZEN / "softmax.json").read_text())
    rec["solutions"] = [s for s in rec["solutions"] if s["name"] != "torch.compile"]
    stripped = tmp_path / "no_compile.json"
    stripped.write_text(json.dumps(rec))
    ctx = context(from_records([stripped]))
    assert ctx["lat_rows"] and all(row[-2] == "not measured" for row in ctx["lat_rows"])
    # what this older record lacks is said, not invented
    assert any("torch.compile was not measured" in x for x in ctx["limits"])
    assert any("no holdout shapes in this record" in x for x in ctx["limits"])
    assert any("no calibration in the record" in x for x in ctx["limits"])
    assert "sol)" not in " ".join(" ".join(r) for r in ctx["lat_rows"])
    for w in rec["solutions"][1]["workloads"]:  # a newer record: speed-of-light fractions and a ceiling
        w["sol"], w["floor_ms"] = 0.5, w["latency_ms"] / 2
    rec["calibration"] = {"copy_gbs": 4000.0, "matmul_tflops": {"bfloat16": 700.0}, "fingerprint": "f00d"}
    newer = tmp_path / "with_sol.json"
    newer.write_text(json.dumps(rec))
    html = to_html(context(from_records([newer])))
    assert "(50% sol)" in html and "calibrated copy" not in html  # the ceiling is inside the PNG, not text
    assert "no calibration in the record" not in html and "f00d" in html
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**rec, "seed": "not a number"}))
    from kernelcraft.errors import InputError

    with pytest.raises(InputError) as e:
        from_records([bad])
    assert "bad.json" in str(e.value.problems[0]) and "seed" in str(e.value.problems[0])


def test_report_of_a_ledger_run_has_dag_and_best_so_far(tmp_path_factory, tmp_path):
    task, record = evaluated(tmp_path_factory)
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    ids = ledger_run(db, task, record)
    html = tmp_path / "run.html"
    proc = kc("report", task, "--db", db, "--html", html)  # a task folder: its latest run
    assert proc.returncode == 0, proc.stderr
    page, pngs = _open(html)
    assert [i["alt"] for i in page.images] == ["Per-workload speedup over the baseline", "Roofline",
                                              "Best so far across the run's candidates", "Candidate DAG"]
    text = " ".join(page.text)
    assert f"#{ids[TRITON]} {TRITON}" in text and f"promoted: {ids[TRITON]}" in text
    assert "INCORRECT_NUMERICAL" in text and "cpu-wall" in text
    proc = kc("report", "--run", "99", "--db", db)
    assert proc.returncode == 2 and "no run 99" in proc.stderr


def test_summary_markdown_repeats_the_records(tmp_path):
    out = tmp_path / "SUMMARY.md"
    proc = kc("summary", H200, "--out", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    for f in sorted(H200.glob("*.json")):
        rec = json.loads(f.read_text())
        if "solutions" not in rec:  # a calibration or a run summary: named, not read as a record
            assert f"`{f.name}`" in text.split("Other files there")[-1]
            continue
        assert f"## {rec['task']} (`{f.name}`)" in text
        for s in rec["solutions"]:
            fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731 - no speedup for a failed solution
            gate = s["gate"] or ""
            row = f"| {s['name']} | {s['status']} | {gate} | {fmt(s['speedup_vs_baseline'])} | {fmt(s['speedup_vs_reference'])} |"
            assert row in text, row
    committed = (H200 / "SUMMARY.md").read_text()
    body = lambda t: t.split("\n", 3)[3]  # noqa: E731 - the first lines name the command that wrote it
    assert body(committed) == body(text), "results/h200/SUMMARY.md is stale: regenerate it with the command it names"
    from kernelcraft.errors import InputError
    from kernelcraft.report.summary import summary_markdown

    with pytest.raises(InputError, match="nothing_here.json"):
        summary_markdown([tmp_path / "nothing_here.json"], "kernelcraft summary")


def test_report_usage_errors(tmp_path):
    from kernelcraft.errors import InputError
    from kernelcraft.report.command import gather

    with pytest.raises(InputError, match="give an evaluation record"):
        gather(None, None, [], None, None)
    with pytest.raises(InputError, match="give one of them"):
        gather(FROZEN / "rmsnorm.json", 1, [], None, None)
    with pytest.raises(InputError, match="records of several tasks"):
        gather(FROZEN / "rmsnorm.json", None, [FROZEN / "softmax.json"], None, None)
