"""The knowledge base: every page parses and its cited numbers agree with the records, the search
ranks the page an agent needs first, filters narrow, bad pages are named, and a pip-installed
kernelcraft finds the pages it ships."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, TASKS, kc

KNOWLEDGE = ROOT / "knowledge"


def _search(*args: str) -> list[str]:
    proc = kc("knowledge", "search", *args, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [h["id"] for h in json.loads(proc.stdout)["hits"]]


def test_every_page_parses_and_its_evidence_agrees_with_the_records():
    proc = kc("knowledge", "check", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["pages"] >= 25 and not rec["unsupported"]
    assert len(rec["checks"]) >= 4 * rec["pages"] and all(c["ok"] for c in rec["checks"]), \
        [c for c in rec["checks"] if not c["ok"]]


def test_a_wrong_number_or_quote_fails_the_check_naming_page_and_line(tmp_path):
    pages = tmp_path / "pages"
    shutil.copytree(KNOWLEDGE, pages)
    page = pages / "l2-flush-read-not-write.md"
    text = page.read_text()
    assert "ours_ms` = 0.020608" in text and "timed 23.6 us" in text
    page.write_text(text.replace("ours_ms` = 0.020608", "ours_ms` = 0.0207").replace("timed 23.6 us", "timed 22.6 us"))
    proc = kc("knowledge", "check", "--folder", pages, "--root", ROOT)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if "FAILED" in ln]
    assert len(lines) == 2 and all(ln.startswith("l2-flush-read-not-write.md:") for ln in lines), proc.stderr
    assert "found 0.020608" in proc.stderr and "not in AGENTS.md" in proc.stderr


def test_evidence_selectors_and_rounding(tmp_path):
    from kernelcraft.knowledge.evidence import EvidenceError, _agrees, navigate

    rec = {"solutions": [{"name": "a", "workloads": [{"axes": {"n": 1, "w": 2}, "ms": 0.17214},
                                                     {"axes": {"n": 4, "w": 2}, "ms": 3.0}]},
                         {"name": "torch.compile", "x": {"k.v": 5}}]}
    assert navigate(rec, "solutions[a].workloads[n=4,w=2].ms") == 3.0
    assert navigate(rec, "solutions[torch.compile].x['k.v']") == 5
    assert navigate(rec, "solutions[0].workloads[1].axes.n") == 4
    with pytest.raises(EvidenceError, match="selects 2 elements"):
        navigate(rec, "solutions[a].workloads[w=2].ms")
    with pytest.raises(EvidenceError, match="no key 'nope'"):
        navigate(rec, "solutions[a].nope")
    assert _agrees(0.17214, "0.1721")[0] and not _agrees(0.1723, "0.1721")[0]
    assert _agrees(23798325243.9, "2.38e10")[0] and not _agrees(2.5e10, "2.38e10")[0]
    assert _agrees("NVIDIA H200", '"NVIDIA H200"')[0] and not _agrees(1.0, '"1.0"')[0]


@pytest.mark.parametrize("query,expected", [
    ("my benchmark disagrees with ncu; the L2 flush buffer is written", "l2-flush-read-not-write"),
    ("fp8 e4m3 kernel fails on CPU but the conversion looks right", "fp8-interpreter-conversion-drops-carries"),
    ("exact fp32 distances on tensor cores, argmin near ties", "split-bf16-bf16x3-for-fp32-exact-dots"),
    ("torch extension takes 90 s to compile", "torch-extension-vs-cubin-build-time"),
    ("decode batch 1 kernel timing is dominated by the Python launch", "cuda-graph-replay-for-short-kernels"),
    ("layernorm many tokens registers or chunked second pass from L2", "chunked-two-pass-beats-registers-for-many-wide-rows"),
    ("top-k sampling over a large vocabulary", "topk-threshold-filter-beats-radix-select"),
    ("my custom op made the torch.compile model slower", "opaque-custom-op-under-torch-compile"),
])
def test_search_ranks_the_relevant_page_first(query, expected):
    assert _search(query)[0] == expected


def test_filters_narrow_by_tag_op_type_and_device():
    interp = _search("", "--tag", "interpreter", "--limit", "50")
    assert interp and all(i in interp for i in ("fp8-interpreter-conversion-drops-carries",
                                                "interpreter-bf16-dot-multiplies-storage-bits"))
    assert "l2-flush-read-not-write" not in interp
    from kernelcraft import knowledge

    for pid in interp:
        assert "interpreter" in knowledge.find(pid).tags
    quant = _search("rounding", "--op-type", "quantize", "--limit", "50")
    assert quant[0].startswith("fp8-") and "fused-glu-activations" not in quant
    # a Hopper page applies to an H100 (same architecture), not to an A100
    assert "fp8-hardware-conversion-on-hopper" in _search("fp8 conversion", "--device", "NVIDIA H100 80GB HBM3")
    a100 = _search("fp8 conversion", "--device", "NVIDIA A100-SXM4-80GB", "--limit", "50")
    assert "fp8-hardware-conversion-on-hopper" not in a100


def test_show_prints_the_page_and_unknown_pages_exit_2():
    proc = kc("knowledge", "show", "l2-flush-read")  # a prefix only one page has
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("---\ntitle: Flush the L2 with a read") and "## How to apply" in proc.stdout
    data = json.loads(kc("knowledge", "show", "l2-flush-read-not-write", "--json").stdout)
    assert data["confidence"] == "measured-here" and set(data["sections"]) == {
        "Claim", "Conditions", "Evidence", "Other GPUs", "How to apply"}
    bad = kc("knowledge", "show", "no-such-page")
    assert bad.returncode == 2 and "no page has that id" in bad.stderr


def test_a_malformed_page_is_reported_with_file_and_field(tmp_path, monkeypatch):
    folder = tmp_path / "pages"
    folder.mkdir()
    shutil.copy(KNOWLEDGE / "tf32-is-tl-dot-default.md", folder)
    (folder / "half-done.md").write_text("---\ntitle: x\ntags: fp8\nconfidence: sure\n---\n## Claim\ntext\n")
    env = dict(os.environ, KERNELCRAFT_KNOWLEDGE=str(folder), PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "knowledge", "search", "tf32"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    for field in ("'tags': must be a non-empty list", "'confidence': 'sure' is not one of",
                  "'op_types': missing", "'## Evidence': section missing"):
        assert field in err, err
    assert "half-done.md" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "knowledge", "search", "x"], capture_output=True,
                          text=True, env=dict(env, KERNELCRAFT_KNOWLEDGE=str(empty)), cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and "KERNELCRAFT_KNOWLEDGE" in proc.stderr


def test_the_installed_wheel_ships_and_finds_its_pages(tmp_path):
    """Build the wheel, install it alone into a folder, and search from a directory outside the
    repository: the pages come from the package, not from a checkout."""
    wheel_dir, target = tmp_path / "wheel", tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheel_dir), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheel_dir.glob("kernelcraft-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("kernelcraft/knowledge/pages/")}
    assert shipped == {p.name for p in KNOWLEDGE.glob("*.md")} and "README.md" in shipped
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KERNELCRAFT_KNOWLEDGE"}
    env["PYTHONPATH"] = str(target)
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "knowledge", "search", "fp8 conversion", "--json"],
                          capture_output=True, text=True, env=env, cwd=outside, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert Path(out["pages_dir"]) == target / "kernelcraft" / "knowledge" / "pages"
    assert out["hits"][0]["id"].startswith("fp8-")


def test_the_optimize_prompt_carries_the_pages_for_the_op_type_and_device():
    from kernelcraft import knowledge
    from kernelcraft.agent.base import Context
    from kernelcraft.agent.prompt import KNOWLEDGE_PAGE_LIMIT, KNOWLEDGE_PAGES, brief_and_history_prompt
    from kernelcraft.task.loader import load_task

    task = load_task(TASKS / "fp8_rowwise_quant")
    _, user = brief_and_history_prompt(Context(task=task, device="cuda", brief="b", hardware="NVIDIA H200"))
    section = user[user.index("## What the team measured"):user.index("## History")]
    hw = knowledge.find("fp8-hardware-conversion-on-hopper")
    assert f"### {hw.title}" in section and hw.sections["Claim"][:200] in section
    assert "(page `fp8-hardware-conversion-on-hopper`, confidence: measured-here" in section
    assert section.count("\n### ") == KNOWLEDGE_PAGES
    assert len(section) < KNOWLEDGE_PAGES * (KNOWLEDGE_PAGE_LIMIT + 10) + 400
    # on the CPU every page applies (the interpreter runs GPU kernels): the interpreter's fp8 trap shows
    _, cpu = brief_and_history_prompt(Context(task=task, device="cpu", brief="b", hardware="CPU x86_64"))
    assert knowledge.find("fp8-interpreter-conversion-drops-carries").title in cpu
    # nothing was measured on an A100: Hopper pages stay out of its prompt
    _, a100 = brief_and_history_prompt(Context(task=task, device="cuda", brief="b", hardware="NVIDIA A100-SXM4-80GB"))
    assert hw.title not in a100
