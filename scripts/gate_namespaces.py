"""Run the static gate over every honest Python source in the repository, and tally what it reaches of torch,
triton and numpy.

    python3 scripts/gate_namespaces.py            # findings only (exit 1 if a required source is refused)
    python3 scripts/gate_namespaces.py --names    # also: every torch/triton/numpy module reached, with counts
    python3 scripts/gate_namespaces.py --quick    # the representative subset tests/test_static.py checks

Honest sources: tasks/*/solutions and tasks/*/candidates (not their wrong/ folders), the tasks' baselines,
tests/fixtures' honest solutions (not adversarial/ nor the KernelBench reference models, which are harness code
the gate refuses by design), every judged copy under results/ (records of what ran: they must still pass), and the
```python blocks of the agent's templates and skills (src/kernelcraft) and of knowledge/ pages. Snippets are
checked by the Python rules only (they are fragments, not solutions with a launched kernel).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelcraft.gauntlet import static_python as sp  # noqa: E402
from kernelcraft.gauntlet.static import check_static  # noqa: E402
from kernelcraft.solution import Solution, pack_python_file  # noqa: E402

# fixtures that are known-bad, or harness code the gate refuses by design (a trusted row never gated)
FIXTURE_SKIP = ("adversarial", "kernelbench", "kernelbench_level4", "kernelbench_real", "kernelbench_slow")
# found by the walk but not candidates: never gated (listed, not counted as refusals)
NOT_CANDIDATES = {
    "tests/fixtures/kda_ring_request/benchmark.py": "a request's benchmark script (argparse, importlib)",
    "tests/fixtures/records/derived/": "a script that writes a record (imports the harness)",
    "results/h100/catalog-2026-12-06-s18/call1/profiles/": "a peer (Liger-Kernel) profiled as a solution: "
    "peers are trusted rows, never gated",
    "src/kernelcraft/export/hf_kernels.py": "user code that loads an exported kernel, not a kernel",
}


def _not_candidate(label: str) -> str:
    for prefix, why in NOT_CANDIDATES.items():
        if label.startswith(prefix) and (not prefix.endswith("profiles/") or label.endswith("/liger")):
            return why
    return ""
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _record(path: Path, base: Path | None) -> Solution | None:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list) or "spec" not in data:
        return None
    for src in data["sources"]:
        if isinstance(src, dict) and "content" not in src and base is not None \
                and (base / src.get("path", "")).is_file():
            src["content"] = (base / src["path"]).read_text()
    data.setdefault("definition", "d")
    try:
        return Solution.model_validate(data)
    except Exception:  # noqa: BLE001 - not a solution record (a report, a trace)
        return None


def _walk(top: Path, category: str, skip_dirs: tuple[str, ...] = ("wrong",)) -> list[tuple[str, str, Solution]]:
    """Every solution under top: folders with solution.json, JSON records with sources, bare .py files."""
    units = []
    folders = {p.parent for p in top.rglob("solution.json")}
    for p in sorted(top.rglob("*")):
        rel = p.relative_to(top)
        if any(part in skip_dirs or part in ("__pycache__", "peers") for part in rel.parts):
            continue
        if any(f in p.parents for f in folders):
            continue  # a source of a solution folder: checked with its folder
        if p.is_dir() and p in folders:
            sol = _record(p / "solution.json", p)
        elif p.is_file() and p.suffix == ".json":
            sol = _record(p, None)
        elif p.is_file() and p.suffix == ".py" and p.name not in ("inputs.py", "reference.py"):
            sol = pack_python_file(p, "d")
        else:
            continue
        if sol is not None:
            cat = "baseline" if p.name == "baseline.py" else category  # trusted, but honest torch code
            units.append((str(p.relative_to(ROOT)), cat, sol))
    return units


def honest_units() -> list[tuple[str, str, Solution]]:
    units = []
    for task in sorted((ROOT / "tasks").iterdir()):
        for sub in ("solutions", "candidates"):
            if (task / sub).is_dir():
                units += _walk(task / sub, sub)
        # the known-wrong fixtures of every gate after this one must reach their gate (as tests/test_static.py)
        wrong = task / "solutions" / "wrong"
        if (wrong / "expected.toml").is_file():
            for name, exp in tomllib.loads((wrong / "expected.toml").read_text()).items():
                if exp.get("gate", "static" if exp["status"] == "REJECTED" else None) != "static":
                    f = wrong / f"{name}.py" if (wrong / f"{name}.py").exists() else wrong / name
                    sol = (_record(f / "solution.json", f) if f.is_dir() else
                           _record(f, None) if f.suffix == ".json" else pack_python_file(f, "d"))
                    if sol is not None:
                        units.append((str(f.relative_to(ROOT)), "wrong-later-gate", sol))
        if (task / "baseline.py").is_file():
            units.append((str((task / "baseline.py").relative_to(ROOT)), "baseline",
                          pack_python_file(task / "baseline.py", "d")))
    for d in sorted((ROOT / "tests" / "fixtures").iterdir()):
        if d.is_dir() and d.name not in FIXTURE_SKIP:
            units += _walk(d, "fixtures")
    units += _walk(ROOT / "results", "results")
    return units


def snippets() -> list[tuple[str, str]]:
    """```python blocks given to agents (templates, skills) and in knowledge/ pages: (label, code)."""
    found = []
    files = [*(ROOT / "src" / "kernelcraft").rglob("*.py"), *(ROOT / "src" / "kernelcraft").rglob("*.md"),
             *(ROOT / "knowledge").rglob("*.md")]
    for f in sorted(files):
        text = f.read_text()
        for i, m in enumerate(FENCE.finditer(text)):
            code = m.group(1)
            try:
                ast.parse(code)
            except SyntaxError:
                continue
            if "torch" in code or "triton" in code or "numpy" in code:
                found.append((f"{f.relative_to(ROOT)}#block{i}", code))
    return found


QUICK = ("tasks/rmsnorm/solutions", "tasks/kda_prefill/candidates", "tasks/gdn_prefill/solutions",
         "tests/fixtures/kda_ring_solutions", "results/h100/catalog-2026-12-07-s25/judged")


# ------------------------------------------------------------------------------------------------
# what a source reaches of torch/triton/numpy, as the gate qualifies it


def reached(units, snips) -> collections.Counter:
    """Each module of torch/triton/numpy a qualified name reaches (its real name, as the allowlist judges it), with
    `allowed`/`REFUSED`, and each object reached under it with the module that defines it (``__module__``)."""
    seen: collections.Counter = collections.Counter()
    orig_q, orig_m = sp._Checker.check_qualified, sp._Checker.check_module_path

    def note(q: str) -> None:
        r = sp.reached_module(q)
        if r is None:
            return
        seen[f"module {r[0]}  {'allowed' if sp.module_allowed(r[0]) else 'REFUSED'}"] += 1
        obj = sp.resolve(q)
        if r[1] != q and obj is not sp._MISSING:
            seen[f"  object {q}  (defined in {sp._origin(obj) or '?'})"] += 1

    def check_qualified(self, node, qualified, allowlist=True):
        note(qualified)
        return orig_q(self, node, qualified, allowlist)

    def check_module_path(self, node, module, verb):
        note(module)
        return orig_m(self, node, module, verb)

    sp._Checker.check_qualified, sp._Checker.check_module_path = check_qualified, check_module_path
    try:
        for label, _, sol in units:
            if _not_candidate(label):
                continue
            for s in sol.sources:
                if s.path.endswith(".py"):
                    tree, _ = sp.parse_source(s.path, s.content)
                    if tree is not None:
                        sp.python_findings(s.path, tree)
        for label, code in snips:
            if not _not_candidate(label):
                sp.python_findings(label, ast.parse(code))
    finally:
        sp._Checker.check_qualified, sp._Checker.check_module_path = orig_q, orig_m
    return seen


def findings(units, snips) -> list[tuple[str, str, str]]:
    """(label, category, reason) of every refused unit."""
    out = []
    for label, cat, sol in units:
        v = check_static(sol)
        if not v.passed:
            out.append((label, cat, v.reason))
    for label, code in snips:
        f = sp.python_findings(label, ast.parse(code))
        if f:
            out.append((label, "snippet", "; ".join(f)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--names", action="store_true", help="tally the torch/triton/numpy modules and names reached")
    ap.add_argument("--quick", action="store_true", help="only the representative subset")
    args = ap.parse_args()
    units = honest_units()
    snips = snippets()
    if args.quick:
        units = [u for u in units if u[0].startswith(QUICK)]
        snips = snips[:4]
    by_cat = collections.Counter(c for _, c, _ in units)
    print(f"{len(units)} solutions ({', '.join(f'{k} {v}' for k, v in sorted(by_cat.items()))}), "
          f"{len(snips)} snippets")
    if args.names:
        for name, n in sorted(reached(units, snips).items()):
            print(f"  {n:5d}  {name}")
    bad, skipped = [], []
    trusted = []  # baselines outside tasks/: trusted rows, never gated (those captured import `operator`)
    for label, cat, reason in findings(units, snips):
        if _not_candidate(label):
            skipped.append((label, cat, reason))
        elif cat == "baseline" and not label.startswith("tasks/"):
            trusted.append((label, cat, reason))
        else:
            bad.append((label, cat, reason))
    for label, _, reason in trusted:
        print(f"trusted baseline (never gated), refused: {label}: {reason[:300]}")
    for label, _, _ in skipped:
        print(f"not a candidate, refused as expected: {label} ({_not_candidate(label)})")
    for label, cat, reason in bad:
        print(f"REFUSED [{cat}] {label}: {reason}")
    print(f"{len(bad)} refused")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
