"""``kernelcraft summary RECORD|DIR ... [--out PATH]``: one Markdown page over a set of evaluation
records (``results/<gpu>/SUMMARY.md``), every number read from the records it names."""

from __future__ import annotations

import math
from pathlib import Path

from kernelcraft.errors import InputError, Problem
from kernelcraft.gauntlet.records import EvalReport
from kernelcraft.report import peers


def _f(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _is_record(path: Path) -> bool:
    import json

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "solutions" in data and "task" in data


def record_paths(args: list[Path]) -> tuple[list[Path], list[Path]]:
    """(records, other JSON files of the folders given): a folder may also hold calibrations and run
    summaries, which are listed, not read as records; a file named explicitly must be a record."""
    out: list[Path] = []
    others: list[Path] = []
    for a in args:
        if a.is_dir():
            found = sorted(a.glob("*.json"))
            out += [p for p in found if _is_record(p)]
            others += [p for p in found if not _is_record(p)]
            if not any(_is_record(p) for p in found):
                raise InputError(Problem(a, "", "holds no evaluation record (*.json with task and solutions)",
                                         "give records written by kernelcraft eval --json"))
        else:
            out.append(a)
    return out, others


def _axes(axes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items())


def _largest(s) -> str:
    timed = [w for w in s.workloads if w.latency_ms]
    if not timed:
        return "-"
    w = max(timed, key=lambda w: math.prod(w.axes.values()))
    return f"{_axes(w.axes)}: {w.latency_ms:.4f} ({_f(w.baseline_latency_ms, '.4f')})"


def _best_sol(s) -> str:
    sols = [w.sol for w in s.workloads if getattr(w, "sol", None) is not None and w.status == "PASSED"]
    return f"{max(sols):.1%}" if sols else "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def top_candidate(candidates: list, heads: dict):
    """The record's best candidate: by x best peer where it has one, else by x baseline."""
    passed = [c for c in candidates if c.status == "PASSED"]
    return max(passed, key=lambda c: (heads[c.name].value is not None, heads[c.name].value or 0,
                                      c.speedup_vs_baseline or 0), default=None)


def _record(p: Path, r: EvalReport) -> tuple[list[str], list[str]]:
    """(the record's section, its line of the overview table)."""
    e = r.environment
    trusted = peers.trusted_rows(r.solutions)
    candidates = [s for s in r.solutions if not peers.is_trusted(s)]
    heads = {c.name: peers.headline(c, trusted) for c in candidates}
    strong = peers.strong_rows(trusted)
    method = next((w.timing.get("method") for s in r.solutions for w in s.workloads if w.timing), "not timed")
    L = [f"## {r.task} (`{p.name}`)", "",
         f"{e.get('hardware')} ({r.device}), {r.timestamp}, seed {r.seed}, {r.harness_version}, {r.timing_version} "
         f"({method}); torch {(e.get('libs') or {}).get('torch', '?')}"
         + ("" if r.calibration else "; no calibration in the record"), ""]
    if r.timing_note:
        L += [f"> {_cell(r.timing_note)}", ""]
    if strong:
        L.append("Compared with: " + ", ".join(peers.label(t) for t in strong) + ".")
    else:
        note = peers.weak_note(trusted)
        L.append(note[:1].upper() + note[1:] + ": no x best peer figure; x baseline is against the task's baseline.py only.")
    gone = peers.unavailable(trusted, candidates)
    if gone or any(peers.role(t) == "peer" for t in trusted):
        L.append("Peers unavailable: " + ("; ".join(_cell(g) for g in gone) if gone else "none") + ".")
    later = peers.not_run(p, r.task_dir, r.solutions)
    if later:
        L.append(f"Peers of {r.task_dir}/peers/ with no row in this record (added since, or left out of the run; its "
                 f"best peer may be weaker than what a user runs today): {', '.join(later)}.")
    L.append("")
    L += ["| solution | status | gate | x best peer (geomean) | best peers | x baseline (geomean) | x reference | best sol "
          "| largest workload: latency ms (baseline ms) |",
          "|---|---|---|---|---|---|---|---|---|"]
    for s in candidates:
        h = heads[s.name]
        L.append(f"| {s.name} | {s.status} | {s.gate or ''} | {h.shown} | {_cell(', '.join(h.peers)) or '-'} | "
                 f"{_f(s.speedup_vs_baseline, '.2f')} | {_f(s.speedup_vs_reference, '.2f')} | {_best_sol(s)} | {_largest(s)} |")
    if not candidates:
        L.append("| (no candidate in this record) | | | | | | | | |")
    best = top_candidate(candidates, heads)
    if strong and best is not None:
        from kernelcraft.measure.stability import asymmetry_ms

        asym = best.timing_asymmetry_ms if best.timing_asymmetry_ms is not None else asymmetry_ms(best.workloads, trusted)
        if asym is not None:
            L += ["", f"Timing asymmetry: the baseline took a median {abs(asym) * 1e3:.2f} us {'longer' if asym >= 0 else 'less'} "
                  f"beside {best.name} (its arena, interleaved with its runner) than in its own row, over the workloads "
                  "where it runs under 20 us; a gap to the best peer inside it, its way, is unsettled "
                  "(measure/stability.py)."]
        beside = sum(bool(w.best_peer_beside) for w in best.workloads)
        if beside:
            L += ["", f"At {beside} of {len(best.workloads)} workloads the best peer's latency below was timed beside "
                  f"{best.name} (`--peers-beside`: in its rotation, on an arena of the judge's); the trusted rows' "
                  "table has each row timed alone."]
        L += ["", f"Best peer per workload, and {best.name} there:", "",
              "| workload | best peer | best peer ms | candidate ms | x best peer |", "|---|---|---|---|---|"]
        by = {w.uuid: w for w in best.workloads}
        for wp in heads[best.name].workloads:
            w = by[wp.uuid]
            L.append(f"| {_axes(wp.axes)} | {_cell(wp.peer or peers.NO_PEER)} | {_f(wp.peer_ms, '.4f')} | "
                     f"{_f(w.latency_ms, '.4f')} | {peers.speed(wp.speedup)} |")
    L += ["", "Trusted rows (what a user could run instead: compared with, never ranked or promoted):", "",
          "| trusted row | status | x baseline (geomean) | x reference | best sol | largest workload: latency ms (baseline ms) |",
          "|---|---|---|---|---|---|"]
    for t in trusted:
        L.append(f"| {_cell(peers.label(t))} | {t.status} | {_f(t.speedup_vs_baseline, '.2f')} | "
                 f"{_f(t.speedup_vs_reference, '.2f')} | {_best_sol(t)} | {_largest(t)} |")
    if not any(peers.role(t) == "torch.compile" for t in trusted):
        L += ["", "torch.compile: not measured in this record."]
    L.append("")
    if best is None:
        line = f"| {r.task} | `{p.name}` | (none passed) | - | - | - |"
    else:
        h = heads[best.name]
        shown = h.shown + (f" (not run: {', '.join(later)})" if later and h.value is not None else "")
        line = (f"| {r.task} | `{p.name}` | {best.name} | {shown} | {_cell(', '.join(h.peers)) or '-'} | "
                f"{_f(best.speedup_vs_baseline, '.2f')} |")
    return L, [line]


def summary_markdown(paths: list[Path], command: str) -> str:
    from kernelcraft.review.candidate import read_record

    paths, others = record_paths(paths)
    records: list[tuple[Path, EvalReport]] = [(p, read_record(p)) for p in paths]
    if not records:
        raise InputError(Problem("RECORDS", "", "none given", "give evaluation records or a folder of them"))
    hw = sorted({r.environment.get("hardware", r.device) for _, r in records})
    L = [f"# Evaluation records: {', '.join(hw)}", "",
         f"Generated by `{command}` from the records listed below; every number is read from them.",
         "The headline is x best peer: a candidate against the fastest trusted row of the same run at each workload",
         "(torch.compile with static shapes, every peer of the task's peers/ that ran, the baseline), weighted geometric",
         "mean. A record whose only compiled row is the old harness's torch.compile (one dynamic-shape graph for",
         "every workload, the weakest a user could run) says \"no peer measured\" instead of a figure.",
         "Latencies are medians of the record's timing method; `sol` is the best fraction of the device's calibrated",
         "speed of light over the solution's workloads (`-`: the record has none). \"(N unsettled)\": at N workloads",
         "the comparison decides nothing, because the candidate's timing samples, or a faster-looking trusted row's,",
         "are bimodal (p75/p25 > 1.3), or two short rows differ by less than one kernel's medians at other addresses",
         "do (0.4 us), or one of the two was cut short by its wall bound and their medians' 95% intervals overlap",
         "(kernelcraft/measure/stability.py); the figure still counts them.", "",
         "| task | record | best candidate | x best peer | best peers | x baseline |", "|---|---|---|---|---|---|"]
    body: list[str] = []
    for p, r in records:
        section, line = _record(p, r)
        body += section
        L += line
    L += ["", *body]
    if others:
        L += ["Other files there, not evaluation records: " + ", ".join(f"`{p.name}`" for p in others) + ".", ""]
    return "\n".join(L)
