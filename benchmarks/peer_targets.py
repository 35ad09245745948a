"""Issue 21's targets, checked from evaluation records (reads JSON, needs no GPU).

    PYTHONPATH=src python3 benchmarks/peer_targets.py                      # the 12 catalog records
    PYTHONPATH=src python3 benchmarks/peer_targets.py results/h200/softmax.json --out /tmp/t.json
    PYTHONPATH=src python3 benchmarks/peer_targets.py --candidate softmax=softmax_bf16_cuda_vec8

Per record and workload: the bytes the workload moves, the candidate's latency, the best peer (the
fastest trusted row of the same run at that workload: torch.compile with static shapes, every peer
that ran, the baseline; the old harness's dynamic-shape torch.compile is left out, as the summary
leaves it out), their ratio (best peer ms / candidate ms: above 1 the candidate is ahead) and whether
each target of issue 21 holds there:

- a workload moving >= 64 MB (1e6 bytes, as ``--cpu-max-mb`` counts them): ratio >= 0.98 (within 2%);
- a decode workload (<= 64 rows: the first axis of the definition's first tensor input): ratio > 1;
- over the catalog: the geometric mean of the records' x best peer >= 1.10.

No verdict where the timing cannot give one (kernelcraft/measure/stability.py): when the candidate's or the best
peer's samples at a workload are bimodal (p75/p25 above ``SPREAD_MAX``), the median sits on either population and
a second identical run can land on the other; and when two short rows (under 50 us) differ by less than
``PLACEMENT_MS`` (0.4 us), the spread of one kernel's medians at other addresses; and when a short candidate
row trails (or leads) the best peer by less than the baseline itself slowed down (or sped up) beside that
candidate against its own row (the run's measured asymmetry: scripts/harness_asymmetry.py). That workload's target says
"no verdict (unsettled timing)" instead of holds or missed, and is counted apart (scripts/timing_spread.py shows
the spread of every row).

Bytes: from the workload if the record states them (``bytes``/``nbytes``), else the task's own
speed-of-light model, ``Task.roofline`` (the contract's ``[roofline] bytes`` or every input read and
every output written once: what the record's ``floor_ms``/``sol`` were computed from), else the
record's ``floor_ms`` x its calibration's copy bandwidth. Where the task loads, the floor the
calibration gives for those bytes is checked against the record's ``floor_ms`` (a mismatch: the
definition or contract changed since the record was made; reported, not hidden).

The candidate: the one the summary ranks first (``report/summary.py::top_candidate``: the best x best
peer, else x baseline) unless ``--candidate TASK=NAME`` names it; each workload also names the fastest
candidate there. A record that measured no peer (only the baseline or the dynamic torch.compile) has
no targets checked and is left out of the catalog's geometric mean, saying so.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelcraft.gauntlet.records import weighted_geomean  # noqa: E402
from kernelcraft.measure import stability  # noqa: E402
from kernelcraft.measure.calibrate import Calibration  # noqa: E402
from kernelcraft.report import peers  # noqa: E402

LARGE_BYTES = 64e6
LARGE_MIN_RATIO = 0.98
DECODE_MAX_ROWS = 64
CATALOG_MIN_GEOMEAN = 1.10
SPREAD_MAX = stability.SPREAD_MAX  # p75/p25 of a row's samples above this: two populations, no verdict
CATALOG = ("rmsnorm", "softmax", "cross_entropy", "fused_add_rmsnorm", "layernorm", "silu_mul",
           "gelu_tanh_mul", "rope",  # catalog I
           "topk", "fp8_rowwise_quant", "kmeans_assign", "balanced_kmeans_step")  # catalog II
DEFAULT_RECORDS = [ROOT / "results" / "h200" / f"{t}.json" for t in CATALOG]
DEFAULT_OUT = ROOT / "results" / "h200" / "peer_targets.json"


def _rel(p: Path) -> str:
    p = Path(p).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def load_task(record: dict, record_path: Path):
    """The record's task folder (``task_dir``, relative to the repository root or to the record's
    folder), or None when it is not here or does not load."""
    from kernelcraft.task.loader import load_task as _load

    td = record.get("task_dir")
    if not td:
        return None
    for base in (ROOT, Path(record_path).resolve().parent, Path.cwd()):
        p = Path(td) if Path(td).is_absolute() else base / td
        if (p / "definition.json").is_file():
            try:
                return _load(p)
            except Exception:  # noqa: BLE001 - an unloadable task only loses the bytes model
                return None
    return None


def rows_axis(task) -> str | None:
    """The axis counting rows (tokens, sequences): the first axis of the first tensor input."""
    if task is None:
        return None
    for spec in task.definition.inputs.values():
        if spec.shape:
            return spec.shape[0]
    return None


def workload_bytes(w: dict, task, calibration: dict | None) -> tuple[float | None, str, str]:
    """(bytes, where they come from, a note when the record's floor disagrees with them)."""
    for key in ("bytes", "nbytes"):
        if isinstance(w.get(key), int | float):
            return float(w[key]), "record", ""
    if task is not None:
        nbytes, flops, dtype = task.roofline(w["axes"])
        source = "contract [roofline] bytes" if task.contract.roofline.bytes else "inputs + outputs once"
        note = ""
        if calibration and w.get("floor_ms"):
            cal = SimpleNamespace(copy_gbs=calibration["copy_gbs"], matmul_tflops=calibration.get("matmul_tflops") or {})
            floor = Calibration.floor_ms(cal, nbytes, flops, dtype)
            if not math.isclose(floor, w["floor_ms"], rel_tol=1e-6):
                note = (f"the task's bytes give a floor of {floor:.6g} ms, the record says {w['floor_ms']:.6g} ms: "
                        "the task changed since the record")
        return nbytes, source, note
    if calibration and w.get("floor_ms"):
        return w["floor_ms"] * 1e-3 * calibration["copy_gbs"] * 1e9, "record floor_ms x calibration copy_gbs", ""
    return None, "unknown (no task folder, no floor in the record)", ""


def target_rows(record: dict) -> list[dict]:
    """Trusted rows a target is measured against: baseline, static torch.compile and peers."""
    return [r for r in record["solutions"]
            if peers.is_trusted(r) and not (peers.role(r) == "torch.compile" and peers.is_weak(r))]


def _timed(w: dict) -> bool:
    return w.get("status") == "PASSED" and bool(w.get("latency_ms"))


def best_at(rows: list[dict], uuid: str) -> tuple[dict, dict] | None:
    """(row, workload) of the fastest row that PASSED at this workload with a latency."""
    best = None
    for r in rows:
        for w in r.get("workloads") or []:
            if w["uuid"] == uuid and _timed(w) and (best is None or w["latency_ms"] < best[1]["latency_ms"]):
                best = (r, w)
    return best


def choose_candidate(record: dict, name: str | None = None) -> dict | None:
    candidates = [r for r in record["solutions"] if not peers.is_trusted(r)]
    if name is not None:
        hit = [r for r in candidates if r["name"] == name]
        if not hit:
            raise SystemExit(f"{record['task']}: no candidate named {name!r} (candidates: "
                             f"{', '.join(r['name'] for r in candidates) or 'none'})")
        return hit[0]
    trusted = peers.trusted_rows(record["solutions"])
    heads = {c["name"]: peers.headline(c, trusted) for c in candidates}
    passed = [c for c in candidates if c.get("status") == "PASSED"]
    return max(passed, key=lambda c: (heads[c["name"]].value is not None, heads[c["name"]].value or 0,
                                      c.get("speedup_vs_baseline") or 0), default=None)


def spread(w: dict | None) -> float | None:
    """p75/p25 of a workload's timing samples (None when the record has no quartiles)."""
    return stability.spread((w or {}).get("timing"))


def unstable_note(cand_w: dict | None, cand_name: str, rows: list[dict], uuid: str,
                  asymmetry: float | None = None) -> str:
    """Why the comparison at this workload decides nothing, or "" (kernelcraft.measure.stability.unsettled:
    the candidate's samples bimodal, or a trusted row's while its 25th percentile is below the candidate's
    median). Read from the samples' quartiles, so records made before ``WorkloadResult.unsettled`` get it too."""
    return stability.unsettled_at(cand_name, cand_w or {"uuid": uuid}, rows, asymmetry)


def _target(applies: bool, ratio: float | None, need: float, strict: bool, unstable: str = "") -> dict | None:
    if not applies:
        return None
    if ratio is None:
        return {"need": need, "holds": None, "why": "no peer or no candidate latency at this workload"}
    if unstable:
        return {"need": need, "strict": strict, "holds": None, "unstable": True, "why": unstable}
    holds = ratio > need if strict else ratio >= need
    out = {"need": need, "strict": strict, "holds": holds}
    if not holds:
        # how much of the candidate's time has to go for the target to hold (at the boundary)
        out["short_by_x"] = need - ratio
        out["cut_needed_pct"] = (1 - ratio / need) * 100
    return out


def analyse(record: dict, path: Path, candidate: str | None = None) -> dict:
    task = load_task(record, path)
    axis = rows_axis(task)
    cal = record.get("calibration")
    rows = target_rows(record)
    strong = peers.strong_rows(peers.trusted_rows(record["solutions"]))
    cand = choose_candidate(record, candidate)
    others = [r for r in record["solutions"] if not peers.is_trusted(r) and r.get("status") == "PASSED"]
    out = {
        "record": _rel(path), "task": record["task"], "task_dir": record.get("task_dir"),
        "timestamp": record.get("timestamp"), "seed": record.get("seed"),
        "harness_version": record.get("harness_version"), "timing_version": record.get("timing_version"),
        "calibration": {k: (cal or {}).get(k) for k in ("copy_gbs", "fingerprint", "timestamp")} if cal else None,
        "candidate": cand["name"] if cand else None,
        "candidate_path": cand.get("path") if cand else None,
        "candidate_status": cand.get("status") if cand else None,
        "rows_axis": axis,
        "compared_with": [peers.label(r) for r in rows if r.get("status") == "PASSED"],
        "peers_unavailable": peers.unavailable(peers.trusted_rows(record["solutions"]), [cand] if cand else []),
        "peer_measured": bool(strong),
        "workloads": [],
    }
    if cand is None:
        out["why"] = "no candidate PASSED in this record"
        return out
    ratios, weights = [], []
    asym = stability.asymmetry_ms(cand.get("workloads") or [], rows)
    out["timing_asymmetry_ms"] = asym
    for w in cand.get("workloads") or []:
        nbytes, source, note = workload_bytes(w, task, cal)
        nrows = w["axes"].get(axis) if axis else None
        if nrows is None and task is not None and axis:
            nrows = task.definition.axis_values(w["axes"]).get(axis)
        best = best_at(rows, w["uuid"])
        fastest = best_at(others, w["uuid"])
        ms = w["latency_ms"] if _timed(w) else None
        peer_ms = best[1]["latency_ms"] if best else None
        ratio = peer_ms / ms if (ms and peer_ms) else None
        large = nbytes is not None and nbytes >= LARGE_BYTES
        decode = nrows is not None and nrows <= DECODE_MAX_ROWS
        checked = bool(strong)
        unstable = unstable_note(w if ms else None, cand["name"], rows, w["uuid"], asym) if ratio is not None else ""
        row = {
            "uuid": w["uuid"], "axes": w["axes"], "rows": nrows,
            "bytes": nbytes, "bytes_source": source, "mb": None if nbytes is None else nbytes / 1e6,
            "candidate_ms": ms, "candidate_sol": w.get("sol") if ms else None,
            "best_peer": best[0]["name"] if best else None,
            "best_peer_label": peers.label(best[0]) if best else None,
            "best_peer_ms": peer_ms, "best_peer_sol": best[1].get("sol") if best else None,
            "ratio": ratio,
            "fastest_candidate": fastest[0]["name"] if fastest else None,
            "fastest_candidate_ms": fastest[1]["latency_ms"] if fastest else None,
            "recorded_best_peer": w.get("best_peer"), "recorded_best_peer_ms": w.get("best_peer_latency_ms"),
            "large": large, "decode": decode,
            "candidate_spread": spread(w), "best_peer_spread": spread(best[1]) if best else None,
            "targets": {
                "large": _target(large and checked, ratio, LARGE_MIN_RATIO, strict=False, unstable=unstable),
                "decode": _target(decode and checked, ratio, 1.0, strict=True, unstable=unstable),
            },
        }
        if unstable:
            row["unstable"] = unstable
        if note:
            row["note"] = note
        if w.get("best_peer") is not None and best and w["best_peer"] != best[0]["name"]:
            row["note"] = (row.get("note", "") + "; " if row.get("note") else "") + (
                f"the record's best peer is {w['best_peer']} (it counts every trusted row)")
        out["workloads"].append(row)
        if ratio is not None:
            ratios.append(ratio)
            weights.append(task.contract.weight(w["uuid"]) if task is not None else 1.0)
    out["geomean"] = weighted_geomean(ratios, weights) if strong else None
    out["recorded_geomean"] = cand.get("speedup_vs_best_peer")
    missed = [{"axes": r["axes"], "target": k, "ratio": r["ratio"], **t}
              for r in out["workloads"] for k, t in r["targets"].items() if t and t["holds"] is False]
    out["targets_missed"] = missed
    out["targets_unstable"] = [{"axes": r["axes"], "target": k, "ratio": r["ratio"], "why": t["why"]}
                               for r in out["workloads"] for k, t in r["targets"].items() if t and t.get("unstable")]
    if not strong:
        out["why"] = peers.weak_note(peers.trusted_rows(record["solutions"]))
    return out


def catalog(results: list[dict]) -> dict:
    counted = [r for r in results if r.get("geomean")]
    g = math.exp(sum(math.log(r["geomean"]) for r in counted) / len(counted)) if counted else None
    return {
        "geomean": g, "need": CATALOG_MIN_GEOMEAN, "holds": None if g is None else g >= CATALOG_MIN_GEOMEAN,
        "tasks": [r["task"] for r in counted],
        "left_out": [{"task": r["task"], "why": r.get("why", "no x best peer")} for r in results if not r.get("geomean")],
        "workload_targets_missed": sum(len(r.get("targets_missed") or []) for r in results),
        "workload_targets_checked": sum(1 for r in results for w in r["workloads"] for t in w["targets"].values() if t),
        "workload_targets_unstable": sum(len(r.get("targets_unstable") or []) for r in results),
    }


def _f(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _mark(t: dict | None, label: str) -> str:
    if t is None:
        return ""
    if t.get("unstable"):
        return f"{label}:NO-VERDICT(unsettled)"
    if t["holds"] is None:
        return f"{label}:?"
    return f"{label}:ok" if t["holds"] else f"{label}:MISS(-{t['cut_needed_pct']:.1f}%)"


def table(results: list[dict], cat: dict) -> str:
    head = ("task", "candidate", "workload", "MB", "rows", "cand ms", "best peer", "peer ms", "ratio", "targets")
    lines = []
    for r in results:
        for w in r["workloads"]:
            axes = ",".join(f"{k}={v}" for k, v in w["axes"].items())
            marks = " ".join(m for m in (_mark(w["targets"]["large"], ">=64MB"), _mark(w["targets"]["decode"], "decode")) if m)
            lines.append((r["task"], r["candidate"] or "-", axes, _f(w["mb"], ".1f"), _f(w["rows"], "d"),
                          _f(w["candidate_ms"], ".4f"), w["best_peer"] or "-", _f(w["best_peer_ms"], ".4f"),
                          _f(w["ratio"], ".3f"), marks))
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{'>' if i in (3, 4, 5, 7, 8) else '<'}{n}}}" for i, n in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * n for n in widths))] + [fmt.format(*x) for x in lines]
    out.append("")
    for r in results:
        g = _f(r.get("geomean"), ".3f") + "x" if r.get("geomean") else (r.get("why") or "no figure")
        n = len(r.get("targets_missed") or [])
        u = len(r.get("targets_unstable") or [])
        out.append(f"{r['task']}: {r['candidate']} x best peer {g} (record: {_f(r.get('recorded_geomean'), '.3f')}); "
                   f"{n} workload target(s) missed" + (f", {u} without a verdict (unsettled timing)" if u else "")
                   + (f"; peers unavailable: {len(r['peers_unavailable'])}" if r["peers_unavailable"] else ""))
    verdict = "-" if cat["holds"] is None else ("holds" if cat["holds"] else "MISSED")
    out.append(f"catalog geomean over {len(cat['tasks'])} task(s): {_f(cat['geomean'], '.3f')}x "
               f"(target >= {CATALOG_MIN_GEOMEAN:.2f}x: {verdict}); workload targets missed "
               f"{cat['workload_targets_missed']} of {cat['workload_targets_checked']}"
               + (f", {cat['workload_targets_unstable']} without a verdict (unsettled timing: p75/p25 > {SPREAD_MAX} "
                  f"or a short-row gap under {stability.PLACEMENT_MS * 1e3:.1f} us or the run's measured asymmetry)"
                  if cat["workload_targets_unstable"] else ""))
    return "\n".join(out)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def markdown(r: dict) -> str:
    """One record's per-workload table in Markdown (what the task READMEs quote)."""
    rows = ["| workload | MB moved | candidate ms (sol) | best peer | best peer ms (sol) | x best peer | target |",
            "|---|---|---|---|---|---|---|"]
    for w in r["workloads"]:
        axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items())
        marks = []
        for key, label in (("large", ">= 64 MB: within 2%"), ("decode", "<= 64 rows: ahead")):
            t = w["targets"][key]
            if t is not None:
                marks.append(f"{label}: " + ("no verdict (unsettled timing)" if t.get("unstable") else
                                             "?" if t["holds"] is None else "holds" if t["holds"] else
                                             f"**missed** (needs {'>' if t['strict'] else '>='} {t['cut_needed_pct']:.1f}% less time)"))
        mb = "-" if w["mb"] is None else f"{w['mb']:.1f}" if w["mb"] >= 10 else f"{w['mb']:.3g}"
        rows.append(f"| {axes} | {mb} | {_f(w['candidate_ms'], '.4f')} ({_pct(w['candidate_sol'])}) | "
                    f"{w['best_peer_label'] or '-'} | {_f(w['best_peer_ms'], '.4f')} ({_pct(w['best_peer_sol'])}) | "
                    f"{_f(w['ratio'], '.3f')} | {'; '.join(marks) or '-'} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="*", type=Path, help="evaluation records (default: the 8 catalog records of results/h200)")
    ap.add_argument("--out", type=Path, default=None, help=f"JSON to write (default {_rel(DEFAULT_OUT)} for the default records)")
    ap.add_argument("--candidate", action="append", default=[], metavar="TASK=NAME",
                    help="the candidate to judge in TASK's record (TASK: the record's file stem or task name)")
    ap.add_argument("--markdown", action="store_true", help="print each record's table in Markdown instead")
    a = ap.parse_args(argv)
    paths = a.records or DEFAULT_RECORDS
    out_path = a.out or (DEFAULT_OUT if not a.records else None)
    picks = dict(x.split("=", 1) for x in a.candidate)
    results = []
    for p in paths:
        record = json.loads(Path(p).read_text())
        pick = picks.get(Path(p).stem, picks.get(record["task"]))
        results.append(analyse(record, Path(p), pick))
    cat = catalog(results)
    if a.markdown:
        for r in results:
            print(f"{r['record']}: {r['candidate']}, x best peer {_f(r.get('geomean'), '.3f')}\n\n{markdown(r)}\n")
        return 0
    print(table(results, cat))
    if out_path is not None:
        command = "PYTHONPATH=src python3 benchmarks/peer_targets.py" + "".join(f" {_rel(p)}" for p in a.records) + (
            f" --out {_rel(a.out)}" if a.out else "") + "".join(f" --candidate {c}" for c in a.candidate)
        doc = {"generated_by": command,
               "note": "derived from the records named in each entry; every latency is read from them",
               "thresholds": {"large_bytes": LARGE_BYTES, "large_min_ratio": LARGE_MIN_RATIO,
                              "decode_max_rows": DECODE_MAX_ROWS, "catalog_min_geomean": CATALOG_MIN_GEOMEAN},
               "catalog": cat, "records": results}
        Path(out_path).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"\nwrote {_rel(out_path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
