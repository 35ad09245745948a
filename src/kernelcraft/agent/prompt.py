"""What a model is told, and how its reply becomes a candidate.

One self-contained request per proposal (no chat memory): the system text states the role and the
rules the gauntlet enforces; the user text carries the brief, the reference, the baseline, the
knowledge pages that match the task's op type and device, what worked on similar tasks (the
ledger's memory, with the starting point's source until the run has a passing candidate of its
own), the best candidates so far and the most recent candidate with its feedback. Every part is
clipped, so the prompt stays bounded however long the run.

A reply is a short plan followed by the complete solution file as its last fenced code block.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from kernelcraft.agent.base import AgentError, CandidateView, Context
from kernelcraft.gauntlet.static import FORBIDDEN_MODULES
from kernelcraft.solution.model import Solution, pack_python_file

SOURCE_LIMIT = 12_000  # characters of one source shown in a prompt
FEEDBACK_LIMIT = 6_000  # characters of one candidate's feedback
BRIEF_LIMIT = 8_000
PLAN_LIMIT = 2_000
FRONTIER_SHOWN = 2
KNOWLEDGE_PAGES = 3  # knowledge pages shown, each clipped to KNOWLEDGE_PAGE_LIMIT characters
KNOWLEDGE_PAGE_LIMIT = 1_500
SIMILAR_SHOWN = 5  # one line each
HISTORY_LINES = 12  # one-line summaries of earlier candidates
ENTRY_FILE = "solution.py"

_SYSTEM = """\
You are a GPU kernel engineer. You write ONE complete Python solution file for the task below; \
kernelcraft's gauntlet (not you) then builds it, checks it against the reference on fresh inputs \
and held-out shapes, and times it against the baseline.

The file must:
- define `run(...)` taking exactly the reference's positional inputs, in the same order, and \
RETURNING the output(s) (a tensor, or a tuple in the reference's output order), with exactly the \
reference's shapes and dtypes;
- do the computation in its own Triton kernel(s): functions decorated with `@triton.jit` \
(`import triton`, `import triton.language as tl`) and launched as `kernel[grid](...)` from `run`;
- use torch in `run` only to allocate outputs and scratch (`torch.empty`, `torch.empty_like`, ...) \
and for views and metadata (`.shape`, `.stride()`, `.view`, `.numel()`); pass strides to the kernel \
rather than copying inputs; \
no torch compute ops (no matmul, sum, softmax, copies, arithmetic on tensors, ...): they are detected and \
rejected;
- leave the inputs unmodified and return fresh tensors that do not alias the inputs;
- be deterministic: two calls on the same inputs must give bit-identical outputs (avoid atomics \
whose order varies);
- handle every shape allowed by the definition's axes and constraints, not only the listed \
workloads (odd sizes, size 1, larger sizes are tested);
- contain no timing, benchmarking, checking, printing or test code, no `if __name__ == "__main__"`, \
and import none of: {forbidden}; create no CUDA streams and never synchronize the device.

Reply with a short plan first (a few lines: the approach and why it should be correct and fast; \
its first line is a one-line summary of the strategy), then the complete file as the LAST fenced \
```python code block of the reply. Only that last block is used; it must be the whole file, not a diff.\
"""


def _clip(text: str, limit: int) -> str:
    """``text`` if it fits, else its head and tail with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... ({cut} characters cut) ...\n{text[-tail:]}"


def _fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.rstrip()}\n```"


def _solution_source(cand: CandidateView, limit: int = SOURCE_LIMIT) -> str:
    sources = cand.solution.sources
    if len(sources) == 1:
        return _fence(_clip(sources[0].content, limit), _lang_of(sources[0].path))
    per = max(limit // len(sources), 1000)
    return "\n".join(f"{s.path}:\n{_fence(_clip(s.content, per), _lang_of(s.path))}" for s in sources)


def _lang_of(path: str) -> str:
    suffix = Path(path).suffix
    return {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".h": "cpp"}.get(suffix, "")


def _speedup(c: CandidateView) -> str:
    return f"{c.speedup_vs_baseline:.3f}x" if c.speedup_vs_baseline else "-"


def _summary_line(c: CandidateView) -> str:
    parent = f" (from #{c.parent})" if c.parent is not None else ""
    return f"- #{c.id}{parent} [{c.agent}] {c.status}, speedup {_speedup(c)}: {c.strategy or '(no note)'}"


def _system_text() -> str:
    return _SYSTEM.format(forbidden=", ".join(sorted(FORBIDDEN_MODULES)))


def brief_and_history_prompt(ctx: Context) -> tuple[str, str]:
    """The (system, user) texts for the next proposal in ``ctx``."""
    task = ctx.task
    parts: list[str] = [f"# Task: {task.name}", f"Device: {ctx.device}"]
    if ctx.device == "cpu":
        parts.append("(On the CPU, Triton kernels run through the Triton interpreter: correctness counts, "
                     "timings are only indicative.)")
    parts.append("## Brief\n" + _clip(ctx.brief.strip(), BRIEF_LIMIT))
    parts.append("## Reference (the definition of correct; `run` takes the inputs in this order)\n"
                 + _fence(_clip(task.definition.reference, SOURCE_LIMIT)))
    try:
        baseline = task.baseline_path.read_text()
    except OSError as e:
        baseline = f"(baseline not readable: {e})"
    parts.append("## Baseline (what to beat)\n" + _fence(_clip(baseline, SOURCE_LIMIT)))
    knowledge = _knowledge_section(ctx)
    if knowledge:
        parts.append(knowledge)
    memory = _memory_section(ctx)
    if memory:
        parts.append(memory)

    history = ctx.history
    best = ctx.frontier[:FRONTIER_SHOWN]
    last = ctx.last
    if not history:
        parts.append("## History\nNo candidate yet.")
    else:
        shown = {c.id for c in best} | ({last.id} if last else set())
        earlier = [c for c in history if c.id not in shown]
        if earlier:
            lines = [_summary_line(c) for c in earlier[-HISTORY_LINES:]]
            if len(earlier) > HISTORY_LINES:
                lines.insert(0, f"({len(earlier) - HISTORY_LINES} older candidates not listed)")
            parts.append("## Earlier candidates (one line each)\n" + "\n".join(lines))
        for rank, c in enumerate(best, 1):
            title = "Best candidate so far" if rank == 1 else f"Candidate ranked {rank}"
            text = (f"## {title}: #{c.id}, PASSED, speedup vs baseline {_speedup(c)}\n"
                    f"Strategy: {c.strategy or '(no note)'}\n{_solution_source(c)}")
            if last is not None and c.id == last.id and c.feedback:
                text += "\nFeedback:\n" + _clip(c.feedback, FEEDBACK_LIMIT)
            parts.append(text)
        if last is not None and last.id not in {c.id for c in best}:
            text = (f"## Most recent candidate: #{last.id}, status {last.status}, "
                    f"speedup vs baseline {_speedup(last)}\nStrategy: {last.strategy or '(no note)'}\n")
            if last.status != "PASSED":
                text += "Feedback from the gauntlet:\n" + _clip(last.feedback or "(none)", FEEDBACK_LIMIT) + "\n"
            elif last.feedback:
                text += "Feedback:\n" + _clip(last.feedback, FEEDBACK_LIMIT) + "\n"
            text += "Its source:\n" + _solution_source(last)
            parts.append(text)
    parts.append("## What to do next\n" + _next_step(ctx))
    return _system_text(), "\n\n".join(parts)


def _knowledge_section(ctx: Context) -> str:
    """The team's measured pages for this op type and device (``kernelcraft knowledge``)."""
    from kernelcraft import knowledge
    from kernelcraft.errors import InputError

    try:
        pages = knowledge.for_task(ctx.task.definition, ctx.hardware or ctx.device, limit=KNOWLEDGE_PAGES)
    except InputError as e:  # no pages installed: say so rather than silently dropping the section
        return f"## What the team measured (knowledge base)\n(not available: {e})"
    if not pages:
        return ""
    where = f" on {ctx.hardware}" if ctx.hardware else ""
    head = (f"## What the team measured (knowledge base)\nPages matching {ctx.task.definition.op_type}{where}, "
            "each with its evidence in the repository (`kernelcraft knowledge search WORDS` finds more):")
    return "\n\n".join([head, *(knowledge.prompt_text(p, KNOWLEDGE_PAGE_LIMIT) for p in pages)])


def _memory_section(ctx: Context) -> str:
    """What worked on similar tasks on this device, and the starting point's source while the run
    has no passing candidate of its own."""
    if not ctx.similar:
        return ""
    lines = ["## What worked on similar tasks (the ledger)"]
    for w in ctx.similar[:SIMILAR_SHOWN]:
        why = ", ".join(w.shared)
        note = w.description or w.strategy or "(no note)"
        lines.append(f"- ledger #{w.candidate_id} on {w.task} ({why}), {w.hardware}: {w.speedup_vs_baseline:.3f}x "
                     f"its baseline; {note}" + (f" [strategy: {w.strategy}]" if w.strategy and w.description else ""))
    start = ctx.starting_point
    if start is not None and not ctx.frontier:
        from kernelcraft.ledger.memory import entry_fits

        fits = entry_fits(start, ctx.task.definition.model_dump(mode="json"))
        how = ("its `run` takes this task's inputs unchanged" if fits else
               "it was written for other inputs: adapt its signature and shapes to this task's reference")
        where = (f"this task in an earlier run, {start.speedup_vs_baseline:.3f}x" if start.same_task else
                 f"{start.task}, {start.speedup_vs_baseline:.3f}x there; another task's speedup is not this one's")
        lines.append(f"\n### Starting point: ledger #{start.candidate_id} ({where})\n"
                     f"Start from this source unless you have a better plan; {how}.")
        srcs = start.solution.get("sources") or []
        if len(srcs) == 1:
            lines.append(_fence(_clip(srcs[0].get("content") or "", SOURCE_LIMIT), _lang_of(srcs[0].get("path", ""))))
        else:
            per = max(SOURCE_LIMIT // max(len(srcs), 1), 1000)
            lines += [f"{x.get('path')}:\n{_fence(_clip(x.get('content') or '', per), _lang_of(x.get('path', '')))}"
                      for x in srcs]
    return "\n".join(lines)


def _next_step(ctx: Context) -> str:
    last, best = ctx.last, (ctx.frontier[0] if ctx.frontier else None)
    if last is None:
        if ctx.starting_point is not None:
            return (f"Write a first kernel that is correct on every allowed shape and reasonably fast, "
                    f"starting from ledger #{ctx.starting_point.candidate_id} above and the knowledge pages; "
                    "correctness first.")
        return ("Write a first kernel that is correct on every allowed shape and reasonably fast; "
                "correctness first.")
    if last.status == "PENDING":
        return (f"Candidate #{last.id} is still being evaluated. Write a different candidate"
                + (f" that improves on #{best.id}." if best else " that is correct on every allowed shape."))
    if last.status != "PASSED":
        fix = (f"Candidate #{last.id} failed ({last.status}). Read its feedback above: fix the cause "
               "(the compiler message, the failing workload, the worst element) and send the corrected "
               "complete file")
        if best is not None:
            fix += (f", or go back to the best candidate #{best.id} ({_speedup(best)}) and improve it "
                    "another way")
        return fix + ". Do not repeat the same mistake."
    if best is not None and best.id != last.id:
        return (f"Candidate #{last.id} passed at {_speedup(last)}, below the best #{best.id} at "
                f"{_speedup(best)}. Start from #{best.id} and try a different optimization.")
    return (f"Candidate #{last.id} is the best so far at {_speedup(last)}. Make it faster: look at the "
            "per-workload timings, find where it loses time (memory traffic, launch overhead, occupancy, "
            "block sizes, number of warps) and try one clear improvement, keeping it correct.")


# A fence line: ``` or ~~~ (three or more), optionally followed by an info string.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)[^`]*$")
_PYTHON_INFO = {"", "python", "py", "python3", "py3"}


def _code_blocks(text: str) -> list[tuple[int, str, str]]:
    """Fenced blocks as (start offset, info string, content); an unclosed last block runs to the end."""
    blocks: list[tuple[int, str, str]] = []
    offset = 0
    open_fence: tuple[str, str, int] | None = None  # (fence, info, start offset)
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        m = _FENCE.match(stripped)
        if open_fence is None:
            if m:
                open_fence = (m["fence"], m["info"].lower(), offset)
                body = []
        else:
            fence, info, start = open_fence
            if (m and not m["info"] and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence)
                    and stripped.strip() == m["fence"]):
                blocks.append((start, info, "".join(body)))
                open_fence = None
            else:
                body.append(line)
        offset += len(line)
    if open_fence is not None and body:
        blocks.append((open_fence[2], open_fence[1], "".join(body)))
    return blocks


def solution_from_reply(text: str, ctx: Context, name: str, author: str) -> tuple[Solution, str]:
    """The reply's last fenced Python block as a value-returning Solution, and the plan before it."""
    blocks = _code_blocks(text or "")
    python = [b for b in blocks if b[1] in _PYTHON_INFO and b[2].strip()]
    if not python:
        others = sorted({b[1] for b in blocks if b[1] not in _PYTHON_INFO})
        detail = f" (only blocks tagged {', '.join(others)})" if others else ""
        raise AgentError(
            f"the model's reply had no fenced code block holding the Python solution file{detail}; "
            f"expected the complete file as the last ```python block. Reply began: {(text or '').strip()[:200]!r}"
        )
    start, _info, code = python[-1]
    plan = text[:start].strip()
    if len(plan) > PLAN_LIMIT:
        plan = plan[:PLAN_LIMIT].rstrip() + " ... (plan truncated)"
    with tempfile.TemporaryDirectory(prefix="kc-reply-") as tmp:
        path = Path(tmp) / ENTRY_FILE
        path.write_text(code if code.endswith("\n") else code + "\n")
        solution = pack_python_file(path, ctx.task.definition.name, name=name, author=author)
    return solution, plan


def strategy_line(plan: str, limit: int = 100) -> str:
    """The plan's first meaningful line, without markdown decoration, at most ``limit`` characters."""
    for line in plan.splitlines():
        line = line.replace("**", "").strip().lstrip("#*->").strip()
        line = re.sub(r"^(plan|strategy|approach)\s*:\s*", "", line, flags=re.IGNORECASE)
        if line:
            return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."
    return "(no plan given)"
