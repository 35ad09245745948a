"""The headline every page leads with (issue 21): a candidate against the fastest trusted row of its
run, the implementation a user would otherwise run. Shared by ``summary``, ``report`` and the web
leaderboard, on records as read (:class:`SolutionResult`) or as stored (plain dicts).

Trusted rows: the baseline, torch.compile and ``peer:<name>`` rows. Records older than roles (harness
0.4.0 and before) have no ``role`` field: their ``baseline`` and ``torch.compile`` rows are known by
name, and that torch.compile was the one compiled once for every shape, so every axis symbolic (the
weakest compile a user could run; issue 21 measured it 1.4-2.8x slower than a static compile on the
H200). A figure against it, or against the baseline alone, is never the headline: "no peer measured".
"""

from __future__ import annotations

from dataclasses import dataclass, field

TRUSTED = ("baseline", "torch.compile", "peer")
NO_PEER = "no peer measured"
OLD_COMPILE = "dynamic, old harness"


def _get(row, key: str, default=None):
    if isinstance(row, dict):
        return row.get(key, default)
    return getattr(row, key, default)


def role(row) -> str:
    """candidate, baseline, torch.compile or peer. A recorded trusted role is kept; rows of records
    older than roles are known by their names (a candidate cannot be named baseline or torch.compile
    in one of those, and naming a new candidate so only takes it out of the ranking)."""
    r = _get(row, "role") or "candidate"
    if r in TRUSTED:
        return r
    name = _get(row, "name", "")
    if name == "baseline":
        return "baseline"
    if name == "torch.compile":
        return "torch.compile"
    return "candidate"


def is_trusted(row) -> bool:
    return role(row) != "candidate"


def _dynamic_compile(row) -> bool:
    impl = _get(row, "implementation") or {}
    if impl:
        return bool(impl.get("dynamic"))
    # no implementation: a row of the old harness (which compiled dynamically), or a new one that
    # never built (it then has no latency to mislead with); the new harness names its dynamic row so
    return _get(row, "name", "") == "torch.compile" or _get(row, "name", "").endswith("(dynamic)")


def is_weak(row) -> bool:
    """A trusted row no figure may be headlined against on its own: the baseline (what the task's
    author wrote, not what a user would run) or a dynamic-shape torch.compile."""
    r = role(row)
    return r == "baseline" or (r == "torch.compile" and _dynamic_compile(row))


def label(row) -> str:
    """What a page calls the row: trusted rows with their implementation, the old harness's
    torch.compile as what it was."""
    name, r, impl = _get(row, "name", "?"), role(row), _get(row, "implementation") or {}
    if r == "torch.compile":
        if not impl:
            return f"{name} ({OLD_COMPILE})" if name == "torch.compile" and _get(row, "status") == "PASSED" else name
        shapes = "dynamic shapes" if impl.get("dynamic") else "static shapes"
        return f"{name} ({shapes}, torch {impl.get('version', '?')})"
    if r == "peer" and impl.get("library"):
        return f"{name} ({impl['library']} {impl.get('version') or '?'})"
    return name


@dataclass
class WorkloadPeer:
    uuid: str
    axes: dict
    peer: str | None  # the fastest trusted row's label there; None: no peer measured at this workload
    peer_ms: float | None
    speedup: float | None  # the candidate's x best peer there


@dataclass
class Headline:
    value: float | None  # x best peer (weighted geometric mean); None: not headlined, ``text`` says why
    text: str  # "1.04x" or "no peer measured" or "-" (the candidate was not timed)
    peers: list[str] = field(default_factory=list)  # labels of the rows that were fastest somewhere
    why: str = ""  # why there is no figure, in words
    workloads: list[WorkloadPeer] = field(default_factory=list)
    unsettled: int = 0  # workloads where the comparison decides nothing (measure/stability.py)

    @property
    def shown(self) -> str:
        """``text``, with the count of unsettled workloads when there are any."""
        return self.text + (f" ({self.unsettled} unsettled)" if self.unsettled and self.value is not None else "")


def speed(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


def strong_rows(trusted: list) -> list:
    """The trusted rows a headline may stand on: peers and static torch.compile rows that PASSED at some
    workload (a peer wrong at one shape still counts where it passed: worker/child.py times it there)."""
    return [t for t in trusted if not is_weak(t) and (_get(t, "status") == "PASSED" or any(
        _get(w, "status") == "PASSED" and _get(w, "latency_ms") for w in _get(t, "workloads") or []))]


def weak_note(trusted: list | None) -> str:
    """Why a record has no headline, naming what it did measure."""
    if trusted is None:
        return f"{NO_PEER}: the best trusted row of the run was only the baseline or a dynamic torch.compile"
    ran = [label(t) for t in trusted if _get(t, "status") == "PASSED"]
    return f"{NO_PEER} in this record" + (f" (it measured only {', '.join(ran)})" if ran else "")


def headline(row, trusted: list | None) -> Headline:
    """``row``'s x best peer. ``trusted``: the trusted rows of its record (None when they were not
    kept, as in a ledger run, whose candidates carry the best peers' names only)."""
    if is_trusted(row):
        return Headline(None, "trusted row", why="a trusted row is what candidates are compared with")
    names = {_get(t, "name"): t for t in trusted or []}
    strong = strong_rows(trusted) if trusted is not None else None
    wls: list[WorkloadPeer] = []
    for w in _get(row, "workloads") or []:
        uuid, name = _get(w, "uuid"), _get(w, "best_peer")
        if strong is not None:
            ok = any(_passed_at(t, uuid) for t in strong)
        else:  # a ledger run: only the winner's name is known; a weak winner may have beaten a peer
            ok = name is not None and not _weak_name(name)
        peer = label(names[name]) if name in names else name
        wls.append(WorkloadPeer(uuid, dict(_get(w, "axes") or {}), peer if ok and name else None,
                                _get(w, "best_peer_latency_ms") if ok else None,
                                _get(w, "speedup_vs_best_peer") if ok else None))
    value = _get(row, "speedup_vs_best_peer")
    peers = [label(names[n]) if n in names else n for n in _get(row, "best_peers") or []]
    measured = any(p.peer for p in wls) if strong is None else bool(strong)
    if not measured:
        return Headline(None, NO_PEER, why=weak_note(trusted), workloads=wls)
    if value is None:
        return Headline(None, "-", peers, why="not timed against the peers (it failed or was not timed)", workloads=wls)
    return Headline(value, speed(value), peers, workloads=wls, unsettled=_unsettled(row, trusted))


def _unsettled(row, trusted: list | None) -> int:
    """How many of ``row``'s workloads the comparison decides nothing at: the record's own
    ``unsettled`` where it has one, else worked out from the samples' quartiles (older records)."""
    from kernelcraft.measure import stability

    n = 0
    asym = stability.asymmetry_ms(_get(row, "workloads") or [], trusted) if trusted is not None else None
    for w in _get(row, "workloads") or []:
        note = _get(w, "unsettled")
        if trusted is not None and _get(w, "speedup_vs_best_peer") is not None:
            if note is None:
                note = stability.unsettled_at(_get(row, "name"), w, trusted, asym)
            elif not note:  # recorded before the cut-short rule: that rule alone, on the recorded samples
                note = stability.cut_short_at(_get(row, "name"), w, trusted)
        n += bool(note)
    return n


def _weak_name(name: str) -> bool:
    return name == "baseline" or name.startswith("torch.compile(dynamic")


def _passed_at(row, uuid: str) -> bool:
    return any(_get(w, "uuid") == uuid and _get(w, "status") == "PASSED" and _get(w, "latency_ms")
               for w in _get(row, "workloads") or [])


def unavailable(trusted: list | None, rows: list = ()) -> list[str]:
    """Peer rows that gave no figure, each with why: SKIPPED ones (library missing, device not
    supported, with the install command) and ones that failed; and, where the trusted rows were not
    kept (a ledger run), what the candidates recorded of them."""
    out: dict[str, str] = {}
    for t in trusted or []:
        if role(t) == "peer" and _get(t, "status") != "PASSED":
            out[_get(t, "name")] = why(t)
    for r in rows:
        for line in _get(r, "peers_unavailable") or []:
            name, _, text = line.partition(": ")  # "peer:quack: why" (a row name holds ':' but not ': ')
            out.setdefault(name, _first_line(text, name) or line)
    return [f"{n}: {text}" for n, text in out.items()]


def not_run(record_path, task_dir: str, rows: list) -> list[str]:
    """Peers the task has now that the record has no row for: ``peers/*.py`` files of its task folder
    whose ``peer:<name>`` is not among ``rows`` (not even SKIPPED). Such a peer was never measured
    there (added to the task since, or the run was told to leave it out), so the record's best peer
    may be weaker than what a user can run today: the linear-attention prefill tasks gained FLA's
    fused recurrent kernel after their records. The folder is ``task_dir`` under the working
    directory or under a folder holding the record; [] where it is not found."""
    from pathlib import Path

    from kernelcraft.task.peers import peer_paths

    if not task_dir:
        return []
    rel = Path(task_dir)
    places = [rel] if rel.is_absolute() else [Path.cwd() / rel, *(d / rel for d in Path(record_path).resolve().parents)]
    folder = next((d for d in places if (d / "definition.json").is_file()), None)
    if folder is None:
        return []
    have = {_get(r, "name") for r in rows}
    return [f"peer:{f.stem}" for f in peer_paths(folder) if f"peer:{f.stem}" not in have]


def why(row) -> str:
    """Why a row gave no figure, in one line ("RUNTIME_ERROR: ..." when it failed, not SKIPPED)."""
    status = _get(row, "status")
    text = _first_line(_get(row, "reason") or "", _get(row, "name", "")) or "no reason recorded"
    return text if status == "SKIPPED" else f"{status}: {text}"


def _first_line(reason: str, name: str) -> str:
    """The reason in one line: task.peers.unavailable starts it with the row's name, which the list
    already gives; a traceback ("workload X: Traceback ...") is told by where and its last line."""
    lines = [x for x in reason.strip().removeprefix(f"{name}: ").splitlines() if x.strip()]
    if not lines:
        return ""
    first = lines[0]
    if first.endswith("Traceback (most recent call last):") and len(lines) > 1:
        where = first[: -len("Traceback (most recent call last):")].rstrip(": ")
        first = (f"{where}: " if where else "") + lines[-1].strip()
    return first[:400]


def trusted_rows(rows: list) -> list:
    return [r for r in rows if is_trusted(r)]
