"""A report a kernel engineer would forward: one self-contained HTML file (plots embedded as base64
PNG, no external resource), or Markdown with the plots as PNG files beside it.

Sections: where the numbers come from; the contract in brief; every candidate's verdict, led by its
speedup over the best peer (the fastest trusted row of its run: static torch.compile, the task's peers,
the baseline; "no peer measured" where the records have none); the trusted rows it was compared with
and the peers that were unavailable, with why; per-workload latency with the best peer named, against
the baseline, torch.compile, the peers and the reference, with speed-of-light fractions; the plots; the
limits of the chosen kernel (validated shapes, dtypes and hardware, what was not tested); provenance
(environment, versions, seeds, source hashes).
"""

from __future__ import annotations

import base64
from pathlib import Path

from jinja2 import Environment

from kernelcraft.report import peers
from kernelcraft.report.data import COMPILE, ReportData, Row
from kernelcraft.report.plots import PLOTS
from kernelcraft.review.candidate import can_promote

MAX_COLUMNS = 6  # kernel columns in the latency table


def _f(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


def _sol(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.0%}" if x >= 0.1 else f"{x:.2%}"


def chosen(data: ReportData) -> Row | None:
    """The kernel the limits are about: the run's promoted one, else the fastest that PASSED (against
    the best peer where the records have one, else against the baseline)."""
    if data.run and data.run.get("promoted") is not None:
        for r in data.rows:
            if r.candidate and r.candidate["id"] == data.run["promoted"]:
                return r
    passed = [r for r in data.kernels if r.result.status == "PASSED"]
    return max(passed, key=_rank, default=None)


def _rank(r: Row) -> tuple:
    v = r.headline().value
    return (v is not None, v or 0, r.result.speedup_vs_baseline or 0)


def _contract(data: ReportData) -> list[str]:
    t = data.task
    if t is None:
        return [data.task_problem]
    d, c = t.definition, t.contract
    out = [f"{d.name} ({d.op_type}): {d.description or 'no description'}"]
    out.append("axes: " + ", ".join(f"{n}={a.value}" if a.type == "const" else f"{n} (var)" for n, a in d.axes.items()))
    for kind, specs in (("inputs", d.inputs), ("outputs", d.outputs)):
        out.append(f"{kind}: " + ", ".join(
            f"{n} {s.dtype}{list(s.shape) if s.shape is not None else ' scalar'}" for n, s in specs.items()))
    if d.constraints:
        out.append("constraints: " + "; ".join(d.constraints))
    from kernelcraft.gauntlet.checkers import describe_checks

    out += [f"check {line}" for line in describe_checks(d, c)]
    out.append(f"workloads: {len(t.workloads)}; holdout shapes per run: {c.generalization.holdouts}"
               + (f" plus {len(c.generalization.shapes)} fixed" if c.generalization.shapes else ""))
    peer_rule = c.promotion.min_speedup_vs_best_peer
    out.append(f"promotion: every gate PASSED and x baseline >= {c.promotion.min_speedup_vs_baseline:g}"
               + (f" and x best peer >= {peer_rule:g} (a peer measured at every timed workload)" if peer_rule else "")
               + ("; a person's approval is required" if c.promotion.require_approval else ""))
    out.append(f"timing: {c.timing.budget_ms:g} ms per function per workload, {c.timing.min_reps}-{c.timing.max_reps} reps; "
               f"integrity: deterministic={c.integrity.deterministic}, allowed torch ops {c.integrity.allowed_torch_ops or 'none'}")
    if c.target_hardware:
        out.append("target hardware: " + ", ".join(c.target_hardware))
    return out


def _verdicts(data: ReportData) -> list[dict]:
    """The candidates, best first: a trusted row is what they are compared with, never one of them."""
    out = []
    for r in sorted(data.kernels, key=_rank, reverse=True):
        res, h = r.result, r.headline()
        wl = [w for w in res.workloads]
        out.append({
            "label": r.label, "status": res.status, "gate": res.gate or "",
            "x_best_peer": h.text if h.value is None else f"{h.value:.3f}", "best_peers": ", ".join(h.peers),
            "x_baseline": _f(res.speedup_vs_baseline, ".3f"), "x_reference": _f(res.speedup_vs_reference, ".3f"),
            "promotable": "yes" if can_promote(res) else "no",
            "workloads": f"{sum(w.status == 'PASSED' for w in wl)}/{len(wl)}",
            "holdouts": f"{sum(h.status == 'PASSED' for h in res.holdouts)}/{len(res.holdouts)}" if res.holdouts else "not run",
            "reason": (res.reason.strip().splitlines() or [""])[0][:240],
        })
    return out


def _trusted(data: ReportData) -> list[dict]:
    out = []
    for r in data.trusted:
        res = r.result
        impl = res.implementation or {}
        what = ", ".join(f"{k} {v}" for k, v in impl.items() if k in ("library", "version", "mode")) or (
            "the task's baseline.py" if peers.role(res) == "baseline" else "not recorded")
        out.append({"label": r.label, "role": peers.role(res), "status": res.status, "implementation": what,
                    "x_baseline": _f(res.speedup_vs_baseline, ".3f"),
                    "reason": "" if res.status == "PASSED" else peers.why(res)})
    return out


def _headline_note(data: ReportData) -> str:
    """One sentence on what the x best peer column stands on."""
    heads = [r.headline() for r in data.kernels]
    if any(h.value is not None for h in heads):
        strong = sorted({p for h in heads for p in h.peers})
        return "x best peer: each candidate against the fastest trusted row of its run at each workload " \
               f"(weighted geometric mean); fastest somewhere: {', '.join(strong) or 'none'}."
    if data.kernels and any(r.trusted is not None for r in data.kernels):
        return peers.weak_note([t.result for t in data.trusted]) + ": no x best peer figure."
    return peers.NO_PEER + ": no x best peer figure."


def _cell(w) -> str:
    if w is None:
        return ""
    if w.status != "PASSED" or not w.latency_ms:
        return w.status.lower()
    return _f(w.latency_ms)


def _latency(data: ReportData) -> tuple[list[str], list[list[str]]]:
    kernels = sorted(data.kernels, key=_rank, reverse=True)[:MAX_COLUMNS]
    promoted = chosen(data)
    if promoted is not None and promoted not in kernels:
        kernels.append(promoted)
    # every trusted row but the baseline (its own column, from the rows timed beside it), torch.compile
    # first; without one, a torch.compile column that says so
    others = sorted((r for r in data.trusted if peers.role(r.result) != "baseline"),
                    key=lambda r: peers.role(r.result) != COMPILE)
    heads = {id(r): r.headline() for r in kernels}
    from kernelcraft.report.terminal import headers

    header = ["workload", "best peer (ms)", *headers([r.label for r in kernels], data.task_name), "baseline.py",
              *([] if data.compile_row else [COMPILE]), *(r.label for r in others), "reference"]
    rows = []
    for uuid, axes in data.workload_order():
        cells = [f"{uuid[:8]} " + ", ".join(f"{k}={v}" for k, v in axes.items())]
        best = next((wp for r in kernels for wp in heads[id(r)].workloads if wp.uuid == uuid and wp.peer), None)
        cells.append(f"{best.peer} {_f(best.peer_ms)}" if best else peers.NO_PEER)
        base = ref = None
        for r in kernels:
            w = next((w for w in r.result.workloads if w.uuid == uuid), None)
            cell = _cell(w)
            notes = []
            wp = next((wp for wp in heads[id(r)].workloads if wp.uuid == uuid), None)
            if wp is not None and wp.speedup is not None and w is not None and w.status == "PASSED":
                notes.append(f"{peers.speed(wp.speedup)} best peer")
            if w is not None and getattr(w, "sol", None) is not None and w.status == "PASSED":
                notes.append(f"{_sol(w.sol)} sol")
            cells.append(cell + (f" ({', '.join(notes)})" if notes else ""))
        for r in data.rows:  # the baseline's and reference's latency from any row that has them
            w = next((w for w in r.result.workloads if w.uuid == uuid), None)
            if w is not None:
                base, ref = base or w.baseline_latency_ms, ref or w.reference_latency_ms
        cells.append(_f(base))
        if data.compile_row is None:
            cells.append("not measured")
        cells += [_cell(next((w for w in r.result.workloads if w.uuid == uuid), None)) or "-" for r in others]
        cells.append(_f(ref))
        rows.append(cells)
    return header, rows


def _limits(data: ReportData) -> tuple[str, list[str]]:
    from kernelcraft.review.limits import envelope, not_tested

    row = chosen(data)
    notes = list(data.notes)
    if data.compile_row is None:
        notes.append("torch.compile was not measured in these records (kernelcraft eval --with-compile adds it)")
    elif data.trusted and all(peers.is_weak(r.result) for r in data.trusted if peers.role(r.result) == COMPILE):
        notes.append("the torch.compile of these records compiled one graph with dynamic shapes for every workload, "
                     "the weakest compile a user could run: no speedup is headlined against it")
    if not any(r.headline().value is not None for r in data.kernels):
        notes.append(f"{peers.NO_PEER} in these records: no x best peer figure (a GPU run of kernelcraft eval "
                     "times torch.compile per shape and the task's peers; a CPU run, only the baseline)")
    if not data.first.calibration:
        notes.append("no calibration in the record: speed-of-light fractions and the roofline ceiling are absent")
    if row is None:
        return "No kernel passed every gate: nothing is validated.", notes
    if data.task is None:
        return f"Limits of {row.label}: unknown without the task folder.", notes
    env = envelope(data.task, row.report, row.result)
    return f"Limits of {row.label}", not_tested(data.task, row.report, row.result, env) + notes


def _provenance(data: ReportData) -> list[dict]:
    seen, out = set(), []
    for r in data.rows:
        rep = r.report
        key = (rep.seed, rep.timestamp)
        if key not in seen:
            seen.add(key)
            e = rep.environment
            out.append({"what": f"evaluation at {rep.timestamp}", "text": (
                f"seed {rep.seed}; {e.get('hardware')} ({rep.device}); {rep.harness_version}, {rep.timing_version}; "
                + (f"task sources sha256 {rep.task_sources['sha256']} ({len(rep.task_sources['files'])} files); "
                   if rep.task_sources else "task sources not recorded (a record from before kernelcraft-gauntlet/0.6.1); ") +
                f"libs {', '.join(f'{k} {v}' for k, v in (e.get('libs') or {}).items())}; "
                f"device {', '.join(f'{k} {v}' for k, v in (e.get('device_info') or {}).items())}; host {e.get('host', '?')}"
                + (f"; calibration {rep.calibration.get('fingerprint')} ({rep.calibration.get('copy_gbs', 0):,.0f} GB/s copy)"
                   if rep.calibration else "; no calibration"))})
    for r in data.rows:
        res = r.result
        out.append({"what": r.label, "text": f"{res.language or '?'} {res.entry_point}, source sha256 {res.source_hash or '?'}, "
                    f"from {res.path or '?'}, author {res.author or '?'}, evaluated in {res.wall_s:.1f} s"})
    return out


def context(data: ReportData) -> dict:
    header, lat_rows = _latency(data)
    limits_title, limits = _limits(data)
    plots = []
    for key, (fn, title, missing) in PLOTS.items():
        png = fn(data)
        plots.append({"key": key, "title": title, "png": png, "missing": missing})
    rep = data.first
    method = next((w.timing.get("method") for r in data.rows for w in r.result.workloads if w.timing), None)
    note = next((r.report.timing_note for r in data.rows if r.report.timing_note), "")
    if not note and method == "cpu-wall":  # a CPU record written before records carried the note
        from kernelcraft.measure.cpu import NOTE

        note = NOTE
    return {
        "note": note,
        "title": f"kernelcraft report: {data.task_name}",
        "source": data.source,
        "device": f"{rep.environment.get('hardware')} ({rep.device})",
        "timing": method or "not timed",
        "contract": _contract(data),
        "verdicts": _verdicts(data),
        "headline_note": _headline_note(data),
        "trusted": _trusted(data),
        "unavailable": data.unavailable(),
        "lat_header": header, "lat_rows": lat_rows,
        "plots": plots,
        "limits_title": limits_title, "limits": limits,
        "provenance": _provenance(data),
        "run": data.run,
    }


HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ c.title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { overflow-wrap: anywhere; }
.scroll { max-width: 100%; overflow-x: auto; } .scroll table { margin-bottom: 0.5em; }
img { max-width: 100%; height: auto; }
.note { background: #fff8e1; border-left: 4px solid #f9a825; padding: 0.4em 0.8em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.PASSED { color: #2e7d32; font-weight: 600; } .SKIPPED { color: #b26a00; } .bad { color: #c62828; font-weight: 600; }
figure { margin: 1em 0; } figcaption { font-weight: 600; } .missing { color: #777; font-style: italic; }
code { background: #f4f4f4; padding: 0 3px; }
</style></head><body>
<h1>{{ c.title }}</h1>
<p>From {{ c.source }}. Device: {{ c.device }}. Timing: {{ c.timing }} (medians).</p>
{% if c.note %}<p class="note">{{ c.note }}.</p>{% endif %}
{% if c.run %}<p>Run {{ c.run.run_id }} with {{ c.run.agent }}: {{ c.run.candidates | length }} candidates,
promoted: {{ c.run.promoted if c.run.promoted is not none else "none" }}{% if c.run.awaiting_approval %};
awaiting a person's approval: {{ c.run.awaiting_approval | join(", ") }}{% endif %}.</p>{% endif %}
<h2>Contract</h2>
<ul>{% for line in c.contract %}<li>{{ line }}</li>{% endfor %}</ul>
<h2>Verdicts</h2>
<p>{{ c.headline_note }}</p>
<div class="scroll"><table><tr><th>solution</th><th>status</th><th>gate</th><th>x best peer</th><th>best peers</th><th>x baseline</th>
<th>x reference</th><th>promotable</th><th>workloads</th><th>holdouts</th><th>reason</th></tr>
{% for v in c.verdicts %}<tr><td>{{ v.label }}</td>
<td class="{{ v.status if v.status in ('PASSED', 'SKIPPED') else 'bad' }}">{{ v.status }}</td><td>{{ v.gate }}</td>
<td class="num">{{ v.x_best_peer }}</td><td>{{ v.best_peers }}</td>
<td class="num">{{ v.x_baseline }}</td><td class="num">{{ v.x_reference }}</td><td>{{ v.promotable }}</td>
<td>{{ v.workloads }}</td><td>{{ v.holdouts }}</td><td>{{ v.reason }}</td></tr>{% endfor %}
{% if not c.verdicts %}<tr><td colspan="11" class="missing">no candidate in these records</td></tr>{% endif %}
</table></div>
<h2>Compared with</h2>
<p>The trusted rows of the run: what a user could run instead. They are never ranked or promoted.</p>
{% if c.trusted %}<div class="scroll"><table><tr><th>trusted row</th><th>role</th><th>implementation</th><th>status</th>
<th>x baseline</th><th>why not measured</th></tr>
{% for t in c.trusted %}<tr><td>{{ t.label }}</td><td>{{ t.role }}</td><td>{{ t.implementation }}</td>
<td class="{{ t.status if t.status in ('PASSED', 'SKIPPED') else 'bad' }}">{{ t.status }}</td>
<td class="num">{{ t.x_baseline }}</td><td>{{ t.reason }}</td></tr>{% endfor %}
</table></div>{% else %}<p class="missing">No trusted row in these records (a ledger run keeps its candidates only).</p>{% endif %}
<p>Peers unavailable: {% if c.unavailable %}</p><ul>{% for u in c.unavailable %}<li>{{ u }}</li>{% endfor %}</ul>
{% else %}none recorded.</p>{% endif %}
<h2>Median latency per workload, ms</h2>
<div class="scroll"><table><tr>{% for h in c.lat_header %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in c.lat_rows %}<tr><td>{{ row[0] }}</td>{% for cell in row[1:] %}<td class="num">{{ cell }}</td>{% endfor %}</tr>{% endfor %}
</table></div>
<h2>Plots</h2>
{% for p in c.plots %}<figure><figcaption>{{ p.title }}</figcaption>
{% if p.png %}<img alt="{{ p.title }}" src="data:image/png;base64,{{ p.b64 }}">
{% else %}<p class="missing">Not drawn: {{ p.missing }}.</p>{% endif %}</figure>{% endfor %}
<h2>{{ c.limits_title }}</h2>
<ul>{% for line in c.limits %}<li>{{ line }}</li>{% endfor %}</ul>
<h2>Provenance</h2>
<table>{% for p in c.provenance %}<tr><td>{{ p.what }}</td><td>{{ p.text }}</td></tr>{% endfor %}</table>
</body></html>
"""


def to_html(ctx: dict) -> str:
    for p in ctx["plots"]:
        p["b64"] = base64.b64encode(p["png"]).decode() if p["png"] else ""
    return Environment(autoescape=True).from_string(HTML).render(c=ctx)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(ctx: dict, md_path: Path) -> str:
    """Markdown; each plot is written as ``<stem>_<plot>.png`` beside ``md_path``."""
    L = [f"# {ctx['title']}", "", f"From {ctx['source']}. Device: {ctx['device']}. Timing: {ctx['timing']} (medians).", ""]
    if ctx["note"]:
        L += [f"> {ctx['note']}.", ""]
    run = ctx["run"]
    if run:
        L += [f"Run {run['run_id']} with {run['agent']}: {len(run['candidates'])} candidates, promoted: "
              f"{run['promoted'] if run['promoted'] is not None else 'none'}"
              + (f"; awaiting approval: {', '.join(map(str, run['awaiting_approval']))}" if run.get("awaiting_approval") else "")
              + ".", ""]
    L += ["## Contract", "", *[f"- {_md_cell(x)}" for x in ctx["contract"]], "", "## Verdicts", "",
          ctx["headline_note"], "",
          "| solution | status | gate | x best peer | best peers | x baseline | x reference | promotable | workloads | holdouts | reason |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for v in ctx["verdicts"]:
        L.append("| " + " | ".join(_md_cell(v[k]) for k in ("label", "status", "gate", "x_best_peer", "best_peers", "x_baseline",
                                                               "x_reference", "promotable", "workloads", "holdouts",
                                                               "reason")) + " |")
    L += ["", "## Compared with", "", "The trusted rows of the run: what a user could run instead. They are never "
          "ranked or promoted.", ""]
    if ctx["trusted"]:
        L += ["| trusted row | role | implementation | status | x baseline | why not measured |", "|---|---|---|---|---|---|"]
        L += ["| " + " | ".join(_md_cell(t[k]) for k in ("label", "role", "implementation", "status", "x_baseline", "reason"))
              + " |" for t in ctx["trusted"]]
    else:
        L.append("No trusted row in these records (a ledger run keeps its candidates only).")
    L += ["", "Peers unavailable: " + ("; ".join(map(_md_cell, ctx["unavailable"])) if ctx["unavailable"] else "none recorded") + "."]
    L += ["", "## Median latency per workload, ms", "", "| " + " | ".join(map(_md_cell, ctx["lat_header"])) + " |",
          "|" + "---|" * len(ctx["lat_header"])]
    L += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in ctx["lat_rows"]]
    L += ["", "## Plots", ""]
    for p in ctx["plots"]:
        if p["png"]:
            name = f"{md_path.stem}_{p['key']}.png"
            (md_path.parent / name).write_bytes(p["png"])
            L += [f"![{p['title']}]({name})", ""]
        else:
            L += [f"{p['title']}: not drawn: {p['missing']}.", ""]
    L += [f"## {ctx['limits_title']}", "", *[f"- {_md_cell(x)}" for x in ctx["limits"]], "", "## Provenance", ""]
    L += [f"- {_md_cell(p['what'])}: {_md_cell(p['text'])}" for p in ctx["provenance"]]
    return "\n".join(L) + "\n"
