"""Errors for unusable input. The CLI turns them into exit code 2 with the message as printed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file: where, which field, what, and how to fix it."""

    path: Path | str  # the file (or folder) at fault
    field: str  # dotted field path inside it, or "" for the file as a whole
    problem: str  # what is wrong
    fix: str = ""  # what to do about it

    def __str__(self) -> str:
        where = f"{self.path}"
        if self.field:
            where += f": field '{self.field}'"
        text = f"{where}: {self.problem}"
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class InputError(Exception):
    """A task folder, solution or record that cannot be used. Carries every problem found."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
