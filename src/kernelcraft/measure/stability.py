"""When a comparison of two timed rows decides nothing: bimodal samples, or a gap inside the placement noise.

A row's timing keeps its quartiles (``Timing.p25_ms``/``p75_ms``). Where they lie far apart, the samples
come from two populations, a clean call and a disturbed one, and the median sits on whichever holds more
than half of them; an identical run minutes later can land on the other. Measured: on one H100 (session 18,
2026-12-06) 67 of 446 rows under 20 us had p75/p25 > 1.3 (none of 306 rows above 50 us), and rmsnorm's batch-1
Liger row read 0.0048, 0.0129 and 0.0054 ms in three runs; the same harness on another H100 and on the H200
had no such rows (``scripts/timing_spread.py`` counts them in any records).

So a candidate's x best peer at a workload is *unsettled* when the candidate's own samples are bimodal, or when
a trusted row's are and its 25th percentile lies below the candidate's median (that row's clean population may
be faster than the candidate although its median says otherwise). Only rows with a median under ``SHORT_MS``
count: that is where a few microseconds of disturbance split the samples (no row above 50 us was bimodal in
those records), while a long row's spread is mostly its own work varying with the fresh inputs of each call
(balanced_kmeans_step's iterations on the H200: p75/p25 up to 1.56 at 3-9 ms), which the median summarizes
as it should.

Placement: the same kernel on the same inputs at other addresses is not the same row at these sizes. Session 19
(``scripts/placement_bias.py``: eight copies of the inputs plus four graphs on one copy, one interleaved rotation,
the promoted rmsnorm) had the copies' medians spread over 0.16, 0.16-0.26 and 0.35-0.42 us at 1, 16 and 128 rows
on an H100 (4.5-5 us kernels, each median's confidence interval a few hundredths), 0.13-0.24 us at 4096 rows (21 us);
0.29-1.04 us on an H200 whose short rows were bimodal. A candidate (timed in its runner, on the judge's shared
arena) and a peer (in the judge, on its own copies) never share a placement, so a gap under ``PLACEMENT_MS``
between two short rows is no evidence either way: neither a miss nor a win.

Asymmetry: the baseline is timed twice in every run, alone in its own row (in the judge, on its own copies, beside
nothing but the reference) and beside each candidate (in the judge, on the candidate's shared arena, interleaved
with the candidate's runner: ``WorkloadResult.baseline_latency_ms``). The same code under the two conditions
differed by a median +0.50 us at rows under 20 us, 39 of 40 beside-rows slower (session 19's H100 catalog chain,
``scripts/harness_asymmetry.py``), which is the size of every decode-size "miss" against a peer timed alone.
On the H200 records of sessions 3-16 it went the other way (median -0.19 us beside a
candidate; 9 of 49 slower). One workload's pair of baseline medians is no estimate of it: each sits at its own placement (above), and a
baseline of many small kernels (rope's eager one, 30-50 us) moves by several microseconds where a one-kernel
candidate would not. So a candidate's asymmetry is the median, over its workloads whose baseline alone is under
``ASYM_SHORT_MS``, of beside minus alone, given at ``ASYM_MIN_N`` such workloads or more
(:func:`asymmetry_ms`). Where a short candidate row is behind the fastest trusted row by less than that slowdown,
or ahead of it by less than a speed-up, the comparison is unsettled too: the conditions differ by at least the
gap, in the gap's direction. A miss against the asymmetry's direction (or a win against it) stands.

Cut short: a row whose timing ended on its wall bound before its median converged (``stop`` "wall") has the
confidence interval its few samples give. Before kc-timing/8 the tasks with a token-by-token reference (gdn_prefill,
kda_prefill) had most rows at exactly 5 such samples (the interval is then the whole range), and one candidate read
1.19x and 1.03x of FLA in two runs. Where the candidate or the fastest trusted row was cut short and their medians'
intervals overlap, the comparison is unsettled.

Unsettled workloads are recorded
(``WorkloadResult.unsettled``), counted, kept out of promotion against a peer rule, and given no verdict by
``benchmarks/peer_targets.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

SPREAD_MAX = 1.3  # p75/p25 above this: two populations of samples
SHORT_MS = 0.05  # only rows whose median is below this are judged (see above)
PLACEMENT_MS = 0.0004  # gaps below this between two short rows: inside the spread of one kernel's placements
ASYM_SHORT_MS = 0.02  # the baseline rows the asymmetry is read from (alone under 20 us: one or a few kernels)
ASYM_MIN_N = 3  # workloads a candidate's asymmetry needs (a median of fewer is one placement's luck)


def spread(timing: Mapping | None) -> float | None:
    """p75/p25 of a row's samples; None without quartiles."""
    t = timing or {}
    lo, hi = t.get("p25_ms"), t.get("p75_ms")
    return hi / lo if lo and hi and lo > 0 else None


def bimodal(timing: Mapping | None) -> bool:
    """Two populations of samples in a short GPU row (median under SHORT_MS, a CUDA timing method). A CPU
    row (``cpu-wall``, the Triton interpreter) is not judged: its spread is the shared CPU's, and it is never
    a performance claim."""
    t = timing or {}
    x = spread(t)
    median = t.get("median_ms")
    return (x is not None and x > SPREAD_MAX and median is not None and median < SHORT_MS
            and str(t.get("method", "")).startswith("cuda"))


def cut_short(timing: Mapping | None) -> bool:
    """A GPU row whose timing ended on its wall bound before its median converged (``stop`` "wall"): its
    confidence interval is whatever its few samples give (the whole range at 5 or fewer)."""
    t = timing or {}
    return t.get("stop") == "wall" and str(t.get("method", "")).startswith("cuda")


def _interval(timing: Mapping | None) -> tuple[float, float] | None:
    t = timing or {}
    lo, hi = t.get("ci_low_ms"), t.get("ci_high_ms")
    return (lo, hi) if lo is not None and hi is not None and hi >= lo > 0 else None


def _cut_short(name: str, timing: Mapping | None, trusted: list[tuple[str, Mapping | None]]) -> str:
    """The candidate against the fastest trusted row, where either was cut short and their medians' 95% intervals
    overlap: too few samples to tell them apart (kc-timing/7 records of slow-reference tasks: 5 samples a row)."""
    timed = [(n, t) for n, t in trusted if (t or {}).get("median_ms") is not None]
    if not timed or timing is None:
        return ""
    best, bt = min(timed, key=lambda x: x[1]["median_ms"])
    a, b = _interval(timing), _interval(bt)
    short = [(n, t) for n, t in ((name, timing), (best, bt)) if cut_short(t)]
    if not short or a is None or b is None or a[1] < b[0] or b[1] < a[0]:
        return ""
    who = ", ".join(f"{n} {t.get('reps')} samples" for n, t in short)
    return (f"timing cut short by the wall bound ({who}): {name}'s median interval {a[0]:.4f}-{a[1]:.4f} ms overlaps "
            f"{best}'s {b[0]:.4f}-{b[1]:.4f}, so the comparison here decides nothing")


def unsettled(name: str, timing: Mapping | None, latency_ms: float | None,
              trusted: Iterable[tuple[str, Mapping | None]], asymmetry: float | None = None) -> str:
    """Why the candidate ``name`` (its ``timing`` and median ``latency_ms``) against the ``trusted`` rows
    (name, timing) at one workload decides nothing, or "" when it decides. ``asymmetry``: the candidate's
    :func:`asymmetry_ms` (ms, None where it has none)."""
    trusted = list(trusted)
    bad = []
    if bimodal(timing):
        bad.append((name, spread(timing)))
    for tname, t in trusted:
        p25 = (t or {}).get("p25_ms")
        if bimodal(t) and latency_ms and p25 is not None and p25 < latency_ms:
            bad.append((tname, spread(t)))
    if bad:
        return ("bimodal timing (" + ", ".join(f"{n} p75/p25 {x:.2f}" for n, x in bad)
                + f" > {SPREAD_MAX}): the comparison here decides nothing")
    return (_placement(timing, latency_ms, trusted)
            or _asymmetry(timing, latency_ms, trusted, asymmetry)
            or _cut_short(name, timing, trusted))


def _asymmetry(timing: Mapping | None, latency_ms: float | None, trusted: list[tuple[str, Mapping | None]],
               asym: float | None) -> str:
    """A short candidate row behind the fastest short trusted row by less than the baseline's slowdown beside
    the candidate (``asym`` > 0), or ahead of it by less than the baseline's speed-up there (< 0)."""
    fastest = _fastest_short(trusted)
    if fastest is None or not _short_cuda(timing, latency_ms) or not asym:
        return ""
    name, best = fastest
    gap = latency_ms - best
    if gap == 0 or (gap > 0) != (asym > 0) or abs(asym) < abs(gap):
        return ""
    return (f"within the harness's asymmetry: {latency_ms * 1e3:.2f} us against {name}'s {best * 1e3:.2f} us, "
            f"{abs(gap) * 1e3:.2f} us {'behind' if gap > 0 else 'ahead'}, while the baseline itself took a median "
            f"{abs(asym) * 1e3:.2f} us {'longer' if asym > 0 else 'less'} beside this candidate than in its own row: "
            "the conditions differ by at least the gap, its way (measure/stability.py), so the comparison here "
            "decides nothing")


def asymmetry_pairs(workloads: Iterable, trusted_rows: Iterable, short_ms: float = ASYM_SHORT_MS) -> list[float]:
    """Over ``workloads`` (a candidate's, records' dicts or pydantic models): the baseline timed beside the
    candidate (``baseline_latency_ms``) minus the baseline's own row at the same workload (ms), where that row
    is a CUDA timing under ``short_ms``."""
    base = next((r for r in trusted_rows if (_get(r, "role") or _get(r, "name")) == "baseline"), None)
    if base is None or _get(base, "timing_process") == "runner":
        # a baseline row timed in a runner (--trusted-timing runner) took the candidate's path: its own row
        # against its copy timed by the judge beside a candidate is the judge's advantage, which no longer
        # stands between the candidate and any trusted row
        return []
    alone = {_get(w, "uuid"): _get(w, "latency_ms") for w in _get(base, "workloads") or []
             if _get(w, "status") == "PASSED" and _short_cuda(_get(w, "timing"), _get(w, "latency_ms"))}
    return [_get(w, "baseline_latency_ms") - alone[_get(w, "uuid")] for w in workloads
            if _get(w, "baseline_latency_ms") and alone.get(_get(w, "uuid")) and alone[_get(w, "uuid")] < short_ms]


def asymmetry_ms(workloads: Iterable, trusted_rows: Iterable) -> float | None:
    """The median of :func:`asymmetry_pairs`; None with fewer than ``ASYM_MIN_N`` of them."""
    diffs = asymmetry_pairs(workloads, trusted_rows)
    return statistics.median(diffs) if len(diffs) >= ASYM_MIN_N else None


def _short_cuda(t: Mapping | None, median: float | None) -> bool:
    return (median is not None and 0 < median < SHORT_MS
            and str((t or {}).get("method", "")).startswith("cuda"))


def _fastest_short(trusted: Iterable[tuple[str, Mapping | None]]) -> tuple[str, float] | None:
    """(name, median) of the fastest trusted row that is a short CUDA row, or None."""
    rows = [(n, (t or {}).get("median_ms")) for n, t in trusted if _short_cuda(t, (t or {}).get("median_ms"))]
    return min(rows, key=lambda r: r[1]) if rows else None


def _placement(timing: Mapping | None, latency_ms: float | None,
               trusted: Iterable[tuple[str, Mapping | None]]) -> str:
    """The candidate and the fastest trusted row, both short CUDA rows, closer than PLACEMENT_MS."""
    fastest = _fastest_short(trusted)
    if fastest is None or not _short_cuda(timing, latency_ms):
        return ""
    name, best = fastest
    gap = latency_ms - best
    if abs(gap) >= PLACEMENT_MS:
        return ""
    return (f"within placement noise: {latency_ms * 1e3:.2f} us against {name}'s {best * 1e3:.2f} us, a gap of "
            f"{abs(gap) * 1e3:.2f} us under {PLACEMENT_MS * 1e3:.1f} us (one kernel's medians at other addresses "
            "spread that far: measure/stability.py): the comparison here decides nothing")


def _get(obj, key: str):
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def unsettled_at(name: str, workload, trusted_rows: Iterable, asymmetry: float | None = None) -> str:
    """:func:`unsettled` for the candidate ``name``'s ``workload`` against every trusted row's PASSED, timed
    result at the same workload, with the candidate's ``asymmetry`` (:func:`asymmetry_ms`, computed once over
    its workloads). Rows and workloads may be records' dicts or their pydantic models."""
    return unsettled(name, _get(workload, "timing"), _get(workload, "latency_ms"), _timed_at(workload, trusted_rows),
                     asymmetry)


def _timed_at(workload, trusted_rows: Iterable) -> list[tuple[str, Mapping | None]]:
    """(name, timing) of every trusted row PASSED and timed at ``workload``'s uuid."""
    uuid = _get(workload, "uuid")
    return [(_get(r, "name"), _get(w, "timing")) for r in trusted_rows for w in _get(r, "workloads") or []
            if _get(w, "uuid") == uuid and _get(w, "status") == "PASSED" and _get(w, "latency_ms")]


def cut_short_at(name: str, workload, trusted_rows: Iterable) -> str:
    """:func:`_cut_short` for a recorded workload (the summary's check of records written before the rule: their
    ``unsettled`` says nothing about it)."""
    return _cut_short(name, _get(workload, "timing"), _timed_at(workload, trusted_rows))
