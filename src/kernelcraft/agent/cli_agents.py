"""``claude-code`` and ``codex``: a coding-agent CLI, run non-interactively in a fresh workspace.

Each proposal prepares a temporary workspace holding

- ``TASK.md``: the same system and user texts a model agent gets
  (:func:`kernelcraft.agent.prompt.brief_and_history_prompt`: the brief, reference, baseline, best
  candidates and the last candidate's feedback), plus how to work in this folder;
- ``task/``: a copy of the task folder, so ``kernelcraft eval task solution.py --device DEV``
  works from the workspace;
- the kernelcraft skill (:mod:`kernelcraft.agent.skill`) at the CLI's project-scope skill place:
  ``.claude/skills/kernelcraft`` for Claude Code, ``.agents/skills/kernelcraft`` for Codex;

runs the CLI there with a timeout (default 1800 s), and collects ``solution.py``. The gauntlet,
not the CLI's own checks, judges the result.

The command lines (flags as documented by each CLI):

- Claude Code ("Run Claude Code programmatically", code.claude.com/docs/en/headless, and the CLI
  reference): ``claude -p PROMPT --output-format json --permission-mode acceptEdits
  --allowedTools "Read,Write,Edit,Glob,Grep,Skill,Bash(kernelcraft eval *),Bash(kernelcraft task check *),Bash(kernelcraft knowledge *)"``.
  ``-p`` runs non-interactively and prints the result; ``json`` output carries the final text in
  ``result``; ``acceptEdits`` lets it write files in the working directory without a prompt;
  ``--allowedTools`` pre-approves reading, searching, the skill and the kernelcraft commands (eval, task check, knowledge),
  so nothing waits for an approval (a tool that is not allowed is refused, not asked about).
  The prompt comes right after ``-p`` because ``--allowedTools`` takes a variable number of values.
- Codex ("Non-interactive mode", developers.openai.com/codex/noninteractive, and codex's
  docs/exec.md): ``codex exec --sandbox workspace-write --skip-git-repo-check --cd WORKSPACE
  --output-last-message FILE PROMPT``. ``exec`` never asks for approvals; its default sandbox is
  read-only, ``workspace-write`` lets it edit the workspace and run commands there (no network);
  the workspace is not a Git repository, hence ``--skip-git-repo-check``; ``--cd`` sets the
  working root; ``--output-last-message`` writes the final message to a file (stdout holds it
  too). stdin is closed: ``codex exec`` appends piped stdin to the prompt.

Both run with the workspace as the working directory, in their own process group (killed whole
on timeout), with ``TRITON_CACHE_DIR`` and ``TORCH_EXTENSIONS_DIR`` inside the workspace so
builds stay within a sandbox's writable root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import tempfile
from pathlib import Path

from kernelcraft.agent.base import AgentError, Context, Proposal
from kernelcraft.agent.prompt import (
    ENTRY_FILE,
    PLAN_LIMIT,
    brief_and_history_prompt,
    solution_from_reply,
    strategy_line,
)
from kernelcraft.agent.skill import Target, project_skill_dir, write_skill

TIMEOUT_S = 1800.0
TAIL_CHARS = 3000
TASK_FILE = "TASK.md"
TASK_COPY = "task"

PROMPT = (
    f"Read {TASK_FILE} in the current directory and do what it says: write the complete solution file "
    f"to ./{ENTRY_FILE}, checking it only with `kernelcraft eval` as {TASK_FILE} and the kernelcraft "
    "skill describe. Finish with a short plan of what you wrote and why; its first line is a "
    "one-line summary of the strategy."
)


def _workspace_notes(ctx: Context, skill_dir: str) -> str:
    dev = ctx.device
    return f"""\
## How to work in this folder

You are running non-interactively in a scratch folder prepared for this one candidate.

- `{TASK_COPY}/` is a copy of the task folder (`definition.json`, `workloads.jsonl`, `baseline.py`,
  `README.md`, `contract.toml` if any, `solutions/`). `kernelcraft task check {TASK_COPY}` summarizes it.
- Instead of replying with the file, WRITE the complete solution file to `./{ENTRY_FILE}` (this
  folder, beside this {TASK_FILE}). Only that file is collected; it must be the whole file, not a diff.
- To check it, if you want to, use ONLY the gauntlet:
  `kernelcraft eval {TASK_COPY} {ENTRY_FILE} --device {dev} --json result.json`
  and read the verdict, the reason and the per-workload numbers in `result.json`. Do not write your
  own timing, benchmarking or checking code: the gauntlet's verdict is the only one that counts,
  and it runs again on fresh inputs after you finish.
- The kernelcraft skill (`{skill_dir}/SKILL.md` and `{skill_dir}/references/`) explains the
  workflow, the solution format and every verdict.
- Your final message is the short plan: its first line a one-line summary of the strategy, then a
  few lines on the approach and why it should be correct and fast.
"""


def _task_md(ctx: Context, skill_dir: str) -> str:
    system, user = brief_and_history_prompt(ctx)
    return f"{system}\n\n---\n\n{user}\n\n---\n\n{_workspace_notes(ctx, skill_dir)}"


def _tail(*texts: str, limit: int = TAIL_CHARS) -> str:
    text = "\n".join(t.strip() for t in texts if t and t.strip())
    if not text:
        return "(no output)"
    return text if len(text) <= limit else "... " + text[-limit:]


def _fenced(code: str) -> str:
    """``code`` as one fenced python block whose fence no line of ``code`` can close."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}python\n{code.rstrip()}\n{fence}\n"


def _scripts_on_path(env: dict[str, str]) -> None:
    """Put this interpreter's scripts folder (where the ``kernelcraft`` command lives) on PATH."""
    scripts = sysconfig.get_path("scripts")
    if scripts and (Path(scripts) / "kernelcraft").exists():
        parts = env.get("PATH", "").split(os.pathsep)
        if scripts not in parts:
            env["PATH"] = os.pathsep.join([scripts, *[p for p in parts if p]])


class _CLIAgent:
    name: str
    prefix: str
    default_executable: str
    install_hint: str
    skill_target: Target

    def __init__(self, executable: str | None = None, *, timeout: float = TIMEOUT_S):
        exe = executable or self.default_executable
        path = shutil.which(exe)
        if path is None:
            raise AgentError(
                f"{self.name}: the `{exe}` executable is not on PATH; install it with "
                f"`{self.install_hint}` (and sign in once interactively), or put it on PATH"
            )
        self.executable = path
        self.timeout = timeout

    # -- per CLI ---------------------------------------------------------------------------
    def command(self, workspace: Path, scratch: Path) -> list[str]:
        raise NotImplementedError

    def final_text(self, stdout: str, scratch: Path) -> str:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------
    def _prepare(self, ctx: Context, workspace: Path) -> None:
        workspace.mkdir(parents=True)
        shutil.copytree(ctx.task.root, workspace / TASK_COPY,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"))
        skill_dir = write_skill(project_skill_dir(self.skill_target, workspace))
        (workspace / TASK_FILE).write_text(_task_md(ctx, skill_dir.relative_to(workspace).as_posix()))

    def _run(self, cmd: list[str], workspace: Path) -> tuple[int, str, str]:
        env = dict(os.environ)
        _scripts_on_path(env)
        env["TRITON_CACHE_DIR"] = str(workspace / ".cache" / "triton")
        env["TORCH_EXTENSIONS_DIR"] = str(workspace / ".cache" / "torch_extensions")
        try:
            proc = subprocess.Popen(cmd, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    errors="replace", start_new_session=True)
        except OSError as e:
            raise AgentError(f"{self.name}: cannot start {cmd[0]}: {e}") from None
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the CLI and every tool process it started
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            raise AgentError(f"{self.name}: `{Path(cmd[0]).name}` did not finish within {self.timeout:g} s; "
                             f"output tail:\n{_tail(out, err)}") from None
        return proc.returncode, out, err

    def propose(self, ctx: Context) -> Proposal:
        with tempfile.TemporaryDirectory(prefix=f"kc-{self.prefix}-") as tmp:
            scratch = Path(tmp)
            workspace = scratch / "workspace"
            self._prepare(ctx, workspace)
            cmd = self.command(workspace, scratch)
            code, out, err = self._run(cmd, workspace)
            exe = Path(cmd[0]).name
            if code != 0:
                raise AgentError(f"{self.name}: `{exe}` exited with status {code}; output tail:\n{_tail(out, err)}")
            path = workspace / ENTRY_FILE
            if not path.is_file():
                raise AgentError(f"{self.name}: `{exe}` finished without writing {ENTRY_FILE} in its workspace; "
                                 f"output tail:\n{_tail(out, err)}")
            code_text = path.read_text(errors="replace")
            if not code_text.strip():
                raise AgentError(f"{self.name}: `{exe}` wrote an empty {ENTRY_FILE}; output tail:\n{_tail(out, err)}")
            final = self.final_text(out, scratch).strip()
        name = f"{self.prefix}-{len(ctx.history) + 1}"
        solution, _ = solution_from_reply(_fenced(code_text), ctx, name=name, author=self.name)
        plan = final or (f"{self.name} wrote {ENTRY_FILE} for {ctx.task.definition.name}"
                         + (f": {solution.description}" if solution.description else ""))
        if len(plan) > PLAN_LIMIT:
            plan = plan[:PLAN_LIMIT].rstrip() + " ... (plan truncated)"
        parent = ctx.default_parent
        return Proposal(solution=solution, parent=parent, plan=plan, strategy=strategy_line(plan))


class ClaudeCodeAgent(_CLIAgent):
    """Anthropic's Claude Code CLI (``claude -p``)."""

    name = "claude-code"
    prefix = "claude-code"
    default_executable = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    skill_target: Target = "claude"
    allowed_tools = ("Read", "Write", "Edit", "Glob", "Grep", "Skill",
                     "Bash(kernelcraft eval *)", "Bash(kernelcraft task check *)",
                     "Bash(kernelcraft knowledge *)")

    def command(self, workspace: Path, scratch: Path) -> list[str]:
        return [self.executable, "-p", PROMPT, "--output-format", "json",
                "--permission-mode", "acceptEdits", "--allowedTools", ",".join(self.allowed_tools)]

    def final_text(self, stdout: str, scratch: Path) -> str:
        text = stdout.strip()
        try:
            record = json.loads(text)
        except ValueError:
            # stream or text output: the last JSON line with a result, else the raw text
            for line in reversed(text.splitlines()):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "result" in record:
                    break
            else:
                return text
        if isinstance(record, list):  # older releases printed the whole message list
            record = next((m for m in reversed(record) if isinstance(m, dict) and "result" in m), None)
        if isinstance(record, dict) and isinstance(record.get("result"), str):
            return record["result"]
        return ""


class CodexAgent(_CLIAgent):
    """OpenAI's Codex CLI (``codex exec``)."""

    name = "codex"
    prefix = "codex"
    default_executable = "codex"
    install_hint = "npm install -g @openai/codex"
    skill_target: Target = "codex"
    LAST_MESSAGE = "last-message.txt"

    def command(self, workspace: Path, scratch: Path) -> list[str]:
        return [self.executable, "exec", "--sandbox", "workspace-write", "--skip-git-repo-check",
                "--cd", str(workspace), "--output-last-message", str(scratch / self.LAST_MESSAGE), PROMPT]

    def final_text(self, stdout: str, scratch: Path) -> str:
        path = scratch / self.LAST_MESSAGE
        if path.is_file():
            text = path.read_text(errors="replace")
            if text.strip():
                return text
        return stdout
