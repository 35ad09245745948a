"""The claude-code and codex agents against fake `claude` and `codex` executables on PATH.

Each fake is a small Python script that records its argv, its working directory and what the
workspace held, then behaves as told by FAKE_CLI_MODE: write a known-good solution.py (the
catalog's triton_rowwise.py), write nothing, fail, or hang. No real CLI, network or GPU.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from kernelcraft.agent.base import AgentError, CandidateView, Context
from kernelcraft.agent.cli_agents import ClaudeCodeAgent, CodexAgent
from kernelcraft.agent.skill import install, skill_files
from kernelcraft.solution.model import load_solution
from kernelcraft.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "tasks" / "rmsnorm"
GOOD = TASK_DIR / "solutions" / "triton_rowwise.py"
BRIEF = "rmsnorm brief: y = x * rsqrt(mean(x^2) + eps) * w, bf16, BRIEF_MARKER_42"
PLAN = "One program per row, whole row in registers\nfp32 sum of squares, one rounding at the store."

FAKE = '''#!{python}
import json, os, sys, time
from pathlib import Path

kind = {kind!r}
cwd = Path.cwd()
files = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*") if p.is_file())
task_md = (cwd / "TASK.md").read_text() if (cwd / "TASK.md").exists() else None
Path(os.environ["FAKE_CLI_RECORD"]).write_text(json.dumps(
    {{"argv": sys.argv, "cwd": str(cwd), "files": files, "task_md": task_md,
      "path": os.environ.get("PATH", ""), "triton_cache": os.environ.get("TRITON_CACHE_DIR")}}))
mode = os.environ.get("FAKE_CLI_MODE", "good")
plan = os.environ.get("FAKE_CLI_PLAN", "")
if mode == "hang":
    time.sleep(60)
if mode == "fail":
    print("fatal: not logged in (FAKE_FAIL_MARKER)", file=sys.stderr)
    sys.exit(3)
if mode == "good":
    (cwd / "solution.py").write_text(Path(os.environ["FAKE_CLI_SOLUTION"]).read_text())
else:
    print("I looked around but wrote nothing. FAKE_NOTHING_MARKER")
if kind == "claude":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": plan}}))
else:
    print("codex progress on stderr", file=sys.stderr)
    out = sys.argv[sys.argv.index("--output-last-message") + 1]
    Path(out).write_text(plan)
    print(plan)
'''


def _fake(bin_dir: Path, kind: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / kind
    path.write_text(FAKE.format(python=sys.executable, kind=kind))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "claude")
    _fake(bin_dir, "codex")
    record = tmp_path / "record.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    monkeypatch.setenv("FAKE_CLI_SOLUTION", str(GOOD))
    monkeypatch.setenv("FAKE_CLI_PLAN", PLAN)
    monkeypatch.setenv("FAKE_CLI_MODE", "good")
    return record


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def _ctx(task, history=None) -> Context:
    return Context(task=task, device="cpu", brief=BRIEF, history=history or [])


def _check_good(proposal, record_path: Path, skill_dir: str, agent: str):
    sol = proposal.solution
    assert sol.spec.language == "triton"
    assert sol.spec.destination_passing_style is False
    assert sol.spec.entry_point == "solution.py::run"
    assert [s.content for s in sol.sources] == [GOOD.read_text()]
    assert sol.author == agent and sol.name == f"{agent}-1"
    assert proposal.plan == PLAN
    assert proposal.strategy == "One program per row, whole row in registers"
    assert proposal.parent is None

    rec = json.loads(record_path.read_text())
    files = set(rec["files"])
    assert "TASK.md" in files
    assert f"{skill_dir}/SKILL.md" in files
    assert {f"{skill_dir}/references/solution-format.md", f"{skill_dir}/references/verdicts.md"} <= files
    assert {"task/definition.json", "task/workloads.jsonl", "task/baseline.py"} <= files
    md = rec["task_md"]
    assert "BRIEF_MARKER_42" in md  # the brief
    assert "## Reference" in md and "## Baseline" in md  # brief_and_history_prompt's user text
    assert "GPU kernel engineer" in md  # its system text
    assert f"`{skill_dir}/SKILL.md`" in md
    assert "./solution.py" in md and "kernelcraft eval task solution.py --device cpu" in md
    assert rec["triton_cache"].startswith(rec["cwd"])
    assert not Path(rec["cwd"]).exists()  # the workspace is removed afterwards
    return rec


def test_claude_code_proposes_the_file_it_wrote(fakes, task):
    agent = ClaudeCodeAgent()
    assert agent.name == "claude-code"
    proposal = agent.propose(_ctx(task))
    rec = _check_good(proposal, fakes, ".claude/skills/kernelcraft", "claude-code")
    argv = rec["argv"]
    assert Path(argv[0]).name == "claude"
    assert argv[1:3] == ["-p", argv[2]] and "TASK.md" in argv[2]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    tools = argv[argv.index("--allowedTools") + 1].split(",")
    assert {"Read", "Write", "Edit", "Bash(kernelcraft eval *)"} <= set(tools)
    assert "--dangerously-skip-permissions" not in argv


def test_codex_proposes_the_file_it_wrote(fakes, task):
    agent = CodexAgent()
    assert agent.name == "codex"
    proposal = agent.propose(_ctx(task))
    rec = _check_good(proposal, fakes, ".agents/skills/kernelcraft", "codex")
    argv = rec["argv"]
    assert Path(argv[0]).name == "codex" and argv[1] == "exec"
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert "--skip-git-repo-check" in argv
    assert argv[argv.index("--cd") + 1] == rec["cwd"]
    assert "--output-last-message" in argv
    assert "TASK.md" in argv[-1]


def test_parent_is_the_best_candidate(fakes, task):
    sol = load_solution(GOOD, task.definition.name)
    history = [
        CandidateView(id=4, parent=None, agent="x", strategy="a", status="PASSED", speedup_vs_baseline=1.3,
                      feedback="", solution=sol),
        CandidateView(id=5, parent=4, agent="x", strategy="b", status="INCORRECT_NUMERICAL",
                      speedup_vs_baseline=None, feedback="element 7 off by 3%", solution=sol),
    ]
    proposal = ClaudeCodeAgent().propose(_ctx(task, history))
    assert proposal.parent == 4
    assert proposal.solution.name == "claude-code-3"
    md = json.loads(fakes.read_text())["task_md"]
    assert "element 7 off by 3%" in md  # the last candidate's feedback reaches the CLI


@pytest.mark.parametrize("cls", [ClaudeCodeAgent, CodexAgent])
def test_cli_that_writes_nothing_is_an_agent_error(fakes, task, monkeypatch, cls):
    monkeypatch.setenv("FAKE_CLI_MODE", "nothing")
    with pytest.raises(AgentError) as e:
        cls().propose(_ctx(task))
    msg = str(e.value)
    assert "solution.py" in msg and "FAKE_NOTHING_MARKER" in msg


@pytest.mark.parametrize("cls", [ClaudeCodeAgent, CodexAgent])
def test_cli_failure_is_an_agent_error_with_its_output(fakes, task, monkeypatch, cls):
    monkeypatch.setenv("FAKE_CLI_MODE", "fail")
    with pytest.raises(AgentError) as e:
        cls().propose(_ctx(task))
    assert "status 3" in str(e.value) and "FAKE_FAIL_MARKER" in str(e.value)


def test_cli_that_hangs_is_killed(fakes, task, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    with pytest.raises(AgentError, match="did not finish within 1 s"):
        CodexAgent(timeout=1).propose(_ctx(task))


@pytest.mark.parametrize(("cls", "exe", "package"), [
    (ClaudeCodeAgent, "claude", "@anthropic-ai/claude-code"),
    (CodexAgent, "codex", "@openai/codex"),
])
def test_missing_cli_names_the_executable(tmp_path, monkeypatch, cls, exe, package):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(AgentError) as e:
        cls()
    assert f"`{exe}`" in str(e.value) and f"npm install -g {package}" in str(e.value)


def test_executable_override(tmp_path, monkeypatch):
    fake = _fake(tmp_path / "elsewhere", "claude")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert ClaudeCodeAgent(executable=str(fake)).executable == str(fake)
    with pytest.raises(AgentError, match="my-claude"):
        ClaudeCodeAgent(executable="my-claude")


@pytest.mark.parametrize("target", ["claude", "codex"])
def test_skill_install_writes_skill_md_and_references(tmp_path, target):
    dest = tmp_path / "skills" / "kernelcraft"
    assert install(target, dest) == dest
    text = (dest / "SKILL.md").read_text()
    front = text.split("---\n")
    assert front[0] == "" and "name: kernelcraft\n" in front[1] and "description: " in front[1]
    assert "kernelcraft eval TASK_DIR SOLUTION --device cuda|cpu --json" in text
    assert "kernelcraft task check" in text and "kernelcraft profile TASK_DIR SOLUTION" in text
    # every command the skill names exists (it once named a `profile` the CLI did not have)
    import re

    import typer

    from kernelcraft.cli import app

    commands = set(typer.main.get_command(app).commands)
    named = set(re.findall(r"`kernelcraft ([a-z][a-z-]*)", text)) | set(re.findall(r"^\s*kernelcraft ([a-z][a-z-]*)", text, re.M))
    assert named and named <= commands, named - commands
    assert "Do not write your own timing or checking code" in text
    verdicts = (dest / "references" / "verdicts.md").read_text()
    for status in ("PASSED", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "INCORRECT_SHAPE",
                   "INCORRECT_DTYPE", "INCORRECT_NUMERICAL", "REJECTED", "SKIPPED"):
        assert f"`{status}`" in verdicts
    fmt = (dest / "references" / "solution-format.md").read_text()
    for word in ("destination_passing_style", "PYBIND11_MODULE", "kernel.cu", "binding.cpp"):
        assert word in fmt
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == sorted(skill_files())


def test_skill_default_destinations(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert install("claude") == tmp_path / ".claude" / "skills" / "kernelcraft"
    assert install("codex") == tmp_path / ".agents" / "skills" / "kernelcraft"
    assert (tmp_path / ".agents" / "skills" / "kernelcraft" / "SKILL.md").is_file()
    with pytest.raises(ValueError):
        install("cursor", tmp_path / "x")  # type: ignore[arg-type]
