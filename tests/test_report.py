"""kernelcraft report and summary: the HTML is opened and its plots decoded as PNG images; records that
lack fields (no holdouts, no sol, no calibration, no torch.compile row, no peer rows) still report,
saying what is missing; a ledger run adds the best-so-far and DAG plots; SUMMARY.md repeats the
records' numbers. Both lead with x best peer, name the peer per workload, list the unavailable peers
with why, and never headline a figure against the baseline or a dynamic torch.compile alone."""

from __future__ import annotations

import base64
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from export_support import TRITON, evaluated, kc, ledger_run
from PIL import Image

from conftest import ROOT, TASKS

H200 = ROOT / "results" / "h200"
FROZEN = ROOT / "tests" / "fixtures" / "records" / "h200"  # real records that do not change (README there)
PEER_RUN = ROOT / "tests" / "fixtures" / "records" / "h200-peers" / "rmsnorm.json"  # real trusted rows, failed candidates
# the candidates of FROZEN/rmsnorm.json against PEER_RUN's trusted rows: a test input, not a measurement
DERIVED = ROOT / "tests" / "fixtures" / "records" / "derived" / "rmsnorm_with_peers.DERIVED.json"
TRUSTED = ("baseline", "torch.compile", "peer")


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
    # a CPU run times the baseline only: its "best peer" is the baseline, never a headline
    assert "no peer measured" in text and "Not drawn: no peer measured" in text
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
        section = text.split(f"(`{f.name}`)\n")[1].split("\n## ")[0]
        for s in rec["solutions"]:
            assert _summary_row(rec, s) in section, _summary_row(rec, s)
    committed = (H200 / "SUMMARY.md").read_text()
    body = lambda t: t.split("\n", 3)[3]  # noqa: E731 - the first lines name the command that wrote it
    assert body(committed) == body(text), "results/h200/SUMMARY.md is stale: regenerate it with the command it names"
    from kernelcraft.errors import InputError
    from kernelcraft.report.summary import summary_markdown

    with pytest.raises(InputError, match="nothing_here.json"):
        summary_markdown([tmp_path / "nothing_here.json"], "kernelcraft summary")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"  # no speedup for a failed solution


def _role(s: dict) -> str:
    # records before roles: their baseline and torch.compile rows by name
    return s.get("role") if s.get("role") in TRUSTED else s["name"] if s["name"] in ("baseline", "torch.compile") else "candidate"


def _has_peer(rec: dict) -> bool:
    """A PASSED peer or static torch.compile row: what a headline may stand on."""
    return any(s["status"] == "PASSED" and (_role(s) == "peer" or (
        _role(s) == "torch.compile" and s.get("implementation") and not s["implementation"]["dynamic"]))
        for s in rec["solutions"])


def _summary_row(rec: dict, s: dict) -> str:
    """The row SUMMARY.md must hold for solution ``s``: the headline before x baseline for a candidate;
    a trusted row in the trusted table, torch.compile of the old harness named for what it was."""
    if _role(s) != "candidate":
        if s.get("implementation"):  # named with its library and version
            return f"| {s['name']} ("
        old_compile = _role(s) == "torch.compile" and s["status"] == "PASSED"
        name = "torch.compile (dynamic, old harness)" if old_compile else s["name"]
        return f"| {name} | {s['status']} | {_fmt(s['speedup_vs_baseline'])} |"
    head = "no peer measured" if not _has_peer(rec) else "-" if s.get("speedup_vs_best_peer") is None \
        else f"{s['speedup_vs_best_peer']:.2f}x"
    if head.endswith("x"):  # workloads whose comparison decides nothing (bimodal samples) are counted beside it
        from kernelcraft.measure import stability

        trusted = [t for t in rec["solutions"] if _role(t) != "candidate"]
        # the record's own per-workload verdict where it has one (it counts the run's measured asymmetry, kc-timing/7
        # records), else worked out from the samples with the candidate's asymmetry (older records); a recorded
        # "settled" written before the cut-short rule gets that rule alone (kc-timing/8, session 28)
        asym = stability.asymmetry_ms(s.get("workloads") or [], trusted)
        n = 0
        for w in s.get("workloads") or []:
            note = w.get("unsettled")
            if w.get("speedup_vs_best_peer") is not None:
                if note is None:
                    note = stability.unsettled_at(s["name"], w, trusted, asym)
                elif not note:
                    note = stability.cut_short_at(s["name"], w, trusted)
            n += bool(note)
        head += f" ({n} unsettled)" if n else ""
    return f"| {s['name']} | {s['status']} | {s['gate'] or ''} | {head} | "


def test_summary_leads_with_the_best_peer_and_names_it_per_workload(tmp_path):
    text = kc_summary(tmp_path, DERIVED, PEER_RUN, FROZEN / "softmax.json")
    derived, peer_run = (json.loads(p.read_text()) for p in (DERIVED, PEER_RUN))
    assert "| solution | status | gate | x best peer (geomean) | best peers | x baseline (geomean) |" in text
    section = text.split(f"(`{DERIVED.name}`)\n")[1].split("\n## ")[0]
    assert "DERIVED TEST FIXTURE" in section  # the record says what it is
    cands = [s for s in derived["solutions"] if s["role"] == "candidate"]
    assert len(cands) == 3 and all(c["speedup_vs_best_peer"] for c in cands)
    for c in cands:  # the figure first, the peers that were fastest named, then x baseline
        unsettled = f" ({c['unsettled_workloads']} unsettled)" if c.get("unsettled_workloads") else ""
        assert (f"| {c['name']} | PASSED |  | {c['speedup_vs_best_peer']:.2f}x{unsettled} | peer:liger (liger-kernel 0.8.5), "
                f"torch.compile (static shapes, torch 2.11.0+cu130) | {c['speedup_vs_baseline']:.2f} |") in section
    best = max(cands, key=lambda c: c["speedup_vs_best_peer"])
    unsettled = f" ({best['unsettled_workloads']} unsettled)" if best.get("unsettled_workloads") else ""
    assert f"| rmsnorm_bf16_h4096 | `{DERIVED.name}` | {best['name']} | {best['speedup_vs_best_peer']:.2f}x{unsettled} |" in text
    if best.get("timing_asymmetry_ms") is not None:  # the run's own asymmetry, in the leader's words
        a = best["timing_asymmetry_ms"] * 1e3
        assert (f"Timing asymmetry: the baseline took a median {abs(a):.2f} us {'longer' if a >= 0 else 'less'} "
                f"beside {best['name']}") in section
    rows = {t["name"]: t for t in derived["solutions"]}
    for w in best["workloads"]:  # per workload: which peer, its latency, the candidate's there
        peer = rows[w["best_peer"]]
        name = f"{peer['name']} ({peer['implementation']['library']} {peer['implementation']['version']})" \
            if peer["role"] == "peer" else f"torch.compile (static shapes, torch {peer['implementation']['version']})"
        axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items())
        assert (f"| {axes} | {name} | {w['best_peer_latency_ms']:.4f} | {w['latency_ms']:.4f} | "
                f"{w['speedup_vs_best_peer']:.2f}x |") in section
    # the unavailable peers, each with why: quack's import error (its last line), flashinfer's install command
    gone = section.split("Peers unavailable: ")[1].split("\n")[0]
    assert "peer:quack: RUNTIME_ERROR: " in gone and "No CTK flavor installed" in gone
    assert "peer:flashinfer: module 'flashinfer' is not installed here (pip install flashinfer-python)" in gone
    # trusted rows: their own table, never among the candidates (the baseline row says promotable: true)
    cand_table, trusted_table = section.split("Best peer per workload")[0], section.split("Trusted rows")[1]
    assert rows["baseline"]["promotable"] and "| baseline |" not in cand_table and "| baseline | PASSED | 1.00 |" in trusted_table
    for name in ("torch.compile (static shapes", "peer:fla (fla-core 0.6.0)", "peer:quack (quack-kernels 0.6.5) | RUNTIME_ERROR",
                 "peer:flashinfer | SKIPPED"):
        assert f"| {name}" in trusted_table and f"| {name}" not in cand_table
    # the real peer run: its trusted rows compared with, its candidates failed (no figure, not a crash)
    section = text.split(f"(`{PEER_RUN.name}`)\n")[1].split("\n## ")[0]
    assert "Compared with: torch.compile (static shapes, torch 2.11.0+cu130), peer:fla (fla-core 0.6.0)" in section
    for c in (s for s in peer_run["solutions"] if s["role"] == "candidate"):
        assert f"| {c['name']} | RUNTIME_ERROR | generalization | - | - |" in section
    # an old record: no peer, said so, and its torch.compile named for what it was
    section = text.split("(`softmax.json`)\n")[1]
    assert "No peer measured in this record (it measured only baseline, torch.compile (dynamic, old harness))" in section
    assert "| softmax_bf16_cuda_vec8 | PASSED |  | no peer measured | - | 1.74 |" in section
    assert "| torch.compile (dynamic, old harness) | PASSED | 0.15 |" in section


def kc_summary(tmp_path, *records) -> str:
    out = tmp_path / "SUMMARY.md"
    proc = kc("summary", *records, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def _dynamic_only(tmp_path) -> Path:
    """The derived record with its peers and static compile replaced by a torch.compile(dynamic) row (the
    old record's real dynamic-shape timings, as the new harness names that row), compared again."""
    from kernelcraft.gauntlet.evaluate import compare_with_peers
    from kernelcraft.gauntlet.records import EvalReport
    from kernelcraft.task import load_task

    rec = EvalReport.model_validate_json(DERIVED.read_text())
    old = EvalReport.model_validate_json((FROZEN / "rmsnorm.json").read_text())
    dyn = next(s for s in old.solutions if s.name == "torch.compile").model_copy(update={
        "name": "torch.compile(dynamic)", "role": "torch.compile",
        "implementation": {"library": "torch", "version": "2.11.0+cu130", "mode": "default", "dynamic": True}})
    trusted = [s for s in rec.solutions if s.role == "baseline"] + [dyn]
    cands = [s.model_copy(update={"promotable": True, "reason": ""}) for s in rec.solutions if s.role == "candidate"]
    task = load_task(ROOT / "tasks" / "rmsnorm")
    for c in cands:
        compare_with_peers(c, trusted, task)
    assert all(c.speedup_vs_best_peer for c in cands)  # the harness did compute a figure...
    out = tmp_path / "dynamic_only.json"
    out.write_text(rec.model_copy(update={"solutions": trusted + cands}).model_dump_json())
    return out


def test_no_headline_against_a_dynamic_torch_compile_alone(tmp_path):
    """...but against the baseline and a dynamic-shape compile only, no page headlines it."""
    path = _dynamic_only(tmp_path)
    rec = json.loads(path.read_text())
    figures = [f"{s['speedup_vs_best_peer']:.2f}x" for s in rec["solutions"] if s["role"] == "candidate"]
    text = kc_summary(tmp_path, path)
    assert "No peer measured in this record (it measured only baseline, torch.compile(dynamic) (dynamic shapes" in text
    for s in rec["solutions"]:
        if s["role"] == "candidate":
            assert f"| {s['name']} | PASSED |  | no peer measured | - | {s['speedup_vs_baseline']:.2f} |" in text
    assert not any(f in text for f in figures), figures
    html = tmp_path / "r.html"
    assert kc("report", path, "--html", html).returncode == 0
    page, _ = _open(html)
    body = " ".join(page.text)
    assert "Not drawn: no peer measured in these records" in body
    assert "no peer measured in these records: no x best peer figure" in body
    from kernelcraft.report.data import from_records
    from kernelcraft.report.render import context

    ctx = context(from_records([path]))  # (a verdict's reason may quote the harness's rule check, not a headline)
    assert {v["x_best_peer"] for v in ctx["verdicts"]} == {"no peer measured"} and all(r[1] == "no peer measured"
                                                                                      for r in ctx["lat_rows"])
    assert not any("best peer" in cell for r in ctx["lat_rows"] for cell in r[2:])


def test_html_report_leads_with_the_best_peer(tmp_path):
    from kernelcraft.report.data import from_records
    from kernelcraft.report.render import context

    rec = json.loads(DERIVED.read_text())
    for s in rec["solutions"]:  # the old records marked trusted rows promotable: none may be shown so
        s["promotable"] = s["promotable"] or s["role"] != "candidate"
    path = tmp_path / "all_promotable.json"
    path.write_text(json.dumps(rec))
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    proc = kc("report", path, "--html", html, "--md", md)
    assert proc.returncode == 0, proc.stderr
    page, pngs = _open(html)
    assert [i["alt"] for i in page.images] == ["Per-workload speedup over the best peer",
                                              "Per-workload speedup over the baseline", "Roofline"]
    text = html.read_text()
    verdicts = text.split("<h2>Verdicts</h2>")[1].split("<h2>Compared with</h2>")[0]
    heads = [h.split("</th>")[0] for h in verdicts.split("<th>")[1:]]
    assert heads.index("x best peer") < heads.index("x baseline") and heads[heads.index("x best peer") + 1] == "best peers"
    cands = [s for s in rec["solutions"] if s["role"] == "candidate"]
    for c in cands:
        assert f"<td class=\"num\">{c['speedup_vs_best_peer']:.3f}</td>" in verdicts
    for s in rec["solutions"]:  # trusted rows are compared with, not listed or ranked as verdicts
        assert (f"<tr><td>{s['name']}</td>" in verdicts) == (s["role"] == "candidate"), s["name"]
    order = [verdicts.index(f"<tr><td>{c['name']}</td>") for c in sorted(cands, key=lambda c: -c["speedup_vs_best_peer"])]
    assert order == sorted(order)  # best first, by x best peer
    ctx = context(from_records([path]))
    assert [v["promotable"] for v in ctx["verdicts"]] == ["no"] * 3  # the contract asks to beat the best peer
    assert {t["label"].split(" (")[0] for t in ctx["trusted"]} == {s["name"] for s in rec["solutions"] if s["role"] != "candidate"}
    compared = text.split("<h2>Compared with</h2>")[1].split("<h2>")[0]
    assert "peer:flashinfer" in compared and "module &#39;flashinfer&#39; is not installed here (pip install flashinfer-python)" in compared
    assert "No CTK flavor installed" in compared and "liger-kernel 0.8.5" in compared
    # the latency table names the best peer per workload, with its latency, and each kernel against it
    header, rows = ctx["lat_header"], ctx["lat_rows"]
    assert header[1] == "best peer (ms)"
    best = max(cands, key=lambda c: c["speedup_vs_best_peer"])
    for row, w in zip(rows, best["workloads"], strict=True):
        assert row[1].startswith(w["best_peer"] + " (") and row[1].endswith(f" {w['best_peer_latency_ms']:.4f}")
        col = header.index(best["name"].removeprefix("rmsnorm_bf16_h4096_"))
        assert row[col].startswith(f"{w['latency_ms']:.4f} ({w['speedup_vs_best_peer']:.2f}x best peer")
    assert ctx["limits_title"] == f"Limits of {best['name']}"  # the chosen kernel: the best against the peers
    mdtext = md.read_text()
    assert "| solution | status | gate | x best peer | best peers | x baseline |" in mdtext and "![Per-workload speedup over the best peer](r_peer.png)" in mdtext


def test_old_records_say_no_peer_measured(tmp_path):
    from kernelcraft.report.data import from_records
    from kernelcraft.report.render import context, to_html

    ctx = context(from_records([FROZEN / "softmax.json"]))
    assert {v["x_best_peer"] for v in ctx["verdicts"]} == {"no peer measured"}
    assert all(row[1] == "no peer measured" for row in ctx["lat_rows"])
    assert "torch.compile (dynamic, old harness)" in ctx["lat_header"]
    assert [t["label"] for t in ctx["trusted"]] == ["baseline", "torch.compile (dynamic, old harness)"]
    assert any("weakest compile a user could run" in x for x in ctx["limits"])
    html = to_html(ctx)
    assert "Not drawn: no peer measured in these records" in html and "none recorded" in html


def test_headline_of_a_ledger_candidate_from_the_names_it_carries():
    """A ledger run keeps its candidates only, each naming the rows that were fastest: a peer there is a
    headline; the baseline alone (a CPU run) is not."""
    from kernelcraft.report.peers import headline

    rec = json.loads(DERIVED.read_text())
    cand = next(s for s in rec["solutions"] if s["role"] == "candidate")
    h = headline(cand, None)
    assert h.value == cand["speedup_vs_best_peer"] and h.peers == ["peer:liger", "torch.compile"]
    assert [wp.peer for wp in h.workloads] == [w["best_peer"] for w in cand["workloads"]]
    cpu = json.loads(json.dumps(cand))
    for w in cpu["workloads"]:
        w["best_peer"] = "baseline"
    cpu["best_peers"] = ["baseline"]
    h = headline(cpu, None)
    assert h.value is None and h.text == "no peer measured" and not any(wp.peer for wp in h.workloads)
    assert headline({"name": "baseline", "status": "PASSED"}, None).text == "trusted row"


def test_derived_fixture_matches_the_harness():
    """The derived record's comparisons are what compare_with_peers makes of its rows (README there)."""
    from kernelcraft.gauntlet.evaluate import compare_with_peers
    from kernelcraft.gauntlet.records import EvalReport
    from kernelcraft.task import load_task

    rec = EvalReport.model_validate_json(DERIVED.read_text())
    old = {s.name: s for s in EvalReport.model_validate_json((FROZEN / "rmsnorm.json").read_text()).solutions}
    trusted = [s for s in rec.solutions if s.role != "candidate"]
    for c in (s for s in rec.solutions if s.role == "candidate"):
        again = old[c.name].model_copy(deep=True)
        compare_with_peers(again, trusted, load_task(ROOT / "tasks" / "rmsnorm"))
        assert again.model_dump() == c.model_dump()


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


def test_eval_output_says_when_rows_were_cut_short_by_the_wall_bound():
    """Real H100 records of the same gdn_prefill kernels: kc-timing/7's (every row 5 samples, most stopped on the
    wall bound) gets a line saying so and what to do; kc-timing/8's (every row converged) none."""
    from rich.console import Console

    from kernelcraft.gauntlet.records import EvalReport
    from kernelcraft.report.terminal import print_report

    def lines(path: str) -> list[str]:
        r = EvalReport.model_validate(json.loads((ROOT / "results" / "h100" / "catalog-2026-12-07-s28" / path).read_text()))
        buf = io.StringIO()
        print_report(Console(file=buf, width=200), r)
        return [x for x in buf.getvalue().splitlines() if x.startswith("timing:")]

    assert lines("timing7/gdn_prefill.json") == [
        "timing: 20 of 27 timed rows stopped on their wall bound before converging (fewest samples 5); where their "
        "intervals overlap the comparison is unsettled; a larger --budget-ms narrows them"]
    assert lines("la/gdn_prefill.json") == []


def test_summary_names_a_peer_the_task_has_now_that_the_record_never_ran(tmp_path):
    """A record of the real H100 kda_prefill run (its one peer row: peer:fla), beside a copy of its task folder
    that has a second peer file: the summary names the peer with no row, in the section and next to the headline.
    The same record beside a folder with only its own peer names nothing; a folder that cannot be found, nothing."""
    import shutil

    rec = json.loads((ROOT / "results" / "h100" / "kda_prefill.json").read_text())
    assert [s["name"] for s in rec["solutions"] if s.get("role") == "peer"] == ["peer:fla"]
    task = tmp_path / "tasks" / "kc_test_kda"  # no such folder under the repository: found beside the record
    task.mkdir(parents=True)
    shutil.copy(TASKS / "kda_prefill" / "definition.json", task)
    (task / "peers").mkdir()
    shutil.copy(TASKS / "kda_prefill" / "peers" / "fla.py", task / "peers")
    rec["task_dir"] = "tasks/kc_test_kda"
    path = tmp_path / "results" / "kda_prefill.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rec))
    assert "with no row in this record" not in kc_summary(tmp_path, path)
    shutil.copy(TASKS / "kda_prefill" / "peers" / "fla_recurrent.py", task / "peers")
    text = kc_summary(tmp_path, path)
    assert ("Peers of tasks/kc_test_kda/peers/ with no row in this record (added since, or left out of the run; its "
            "best peer may be weaker than what a user runs today): peer:fla_recurrent.") in text
    overview = next(line for line in text.splitlines() if line.startswith(f"| {rec['task']} |"))
    assert "| 0.99x (not run: peer:fla_recurrent) |" in overview, overview
    rec["task_dir"] = "tasks/kc_no_such_task"
    path.write_text(json.dumps(rec))
    assert "not run:" not in kc_summary(tmp_path, path)
