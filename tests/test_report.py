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


# --- issue 24: the page's layout and the plots' axes ---

def test_latency_table_scrolls_inside_the_page_and_names_solutions_apart(tmp_path):
    html = tmp_path / "r.html"
    assert kc("report", FROZEN / "rmsnorm.json", "--html", html).returncode == 0
    text = html.read_text()
    assert ".scroll { max-width: 100%; overflow-x: auto; }" in text and "img { max-width: 100%" in text
    lat = text.split("<h2>Median latency per workload, ms</h2>")[1].split("</table>")[0]
    assert lat.lstrip().startswith('<div class="scroll"><table>')
    heads = [h.split("</th>")[0] for h in lat.split("<th>")[1:]]
    assert heads[0] == "workload" and {"cuda_cubin", "cuda_vec8", "triton_dps"} <= set(heads), heads  # not rmsnorm_bf16_h4096_...
    assert len(set(heads)) == len(heads)


def _visible_labels(fig, axis):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    return [(t.label1.get_text(), t.label1.get_window_extent(renderer)) for t in ticks
            if t.label1.get_visible() and t.label1.get_text()]


def test_log_axis_tick_labels_do_not_overlap():
    """A CPU record spans 0.001x-1x: every minor tick labelled at once overlapped."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from kernelcraft.report.data import from_records
    from kernelcraft.report.plots import speedup_figure

    for low in (0.001, 0.4):  # three decades, and less than one (minor labels then help)
        data = from_records([FROZEN / "rmsnorm.json"])
        for r in data.rows:
            for i, w in enumerate(r.result.workloads):
                if w.speedup_vs_baseline:
                    w.speedup_vs_baseline = low * (1 / low) ** (i / max(1, len(r.result.workloads) - 1))
        fig = speedup_figure(data)
        FigureCanvasAgg(fig)
        ax = fig.axes[0]
        labels = [(t, b) for t, b in _visible_labels(fig, ax.yaxis) if ax.get_ylim()[0] <= float(t) <= ax.get_ylim()[1]]
        assert len(labels) >= 3, labels
        boxes = sorted((b.y0, b.y1, t) for t, b in labels)
        for (_, top, a), (bottom, _, b) in zip(boxes, boxes[1:], strict=False):
            assert bottom >= top - 0.5, f"tick labels {a} and {b} overlap ({low}x-1x)"


def test_best_so_far_numbers_candidates_by_their_ids():
    """Candidates 2-4 of a run (the baseline is 1) were plotted at x = 1-3."""
    from kernelcraft.report.data import ReportData
    from kernelcraft.report.plots import best_so_far_figure

    run = {"run_id": 1, "promoted": 4, "candidates": [
        {"id": 1, "agent": "baseline", "status": "PASSED", "speedup_vs_baseline": 1.0, "parent": None},
        {"id": 2, "agent": "tuner", "status": "PASSED", "speedup_vs_baseline": 1.2, "parent": None},
        {"id": 3, "agent": "tuner", "status": "INCORRECT_NUMERICAL", "speedup_vs_baseline": None, "parent": 2},
        {"id": 4, "agent": "tuner", "status": "PASSED", "speedup_vs_baseline": 1.5, "parent": 2}]}
    fig = best_so_far_figure(ReportData(task_name="t", source="test", rows=[], run=run))
    ax = fig.axes[0]
    xs = sorted(float(x) for coll in ax.collections for x, _ in coll.get_offsets())
    assert xs == [2.0, 3.0, 4.0]
    lo, hi = ax.get_xlim()
    assert lo < 2 and hi > 4 and not lo < 1
