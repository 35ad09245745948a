"""The FlashInfer-Trace *Solution*, and how files on disk become one.

Accepted forms (:func:`load_solution`):

- ``name.json``: a Solution record with every source inlined (FlashInfer-Trace as published);
- ``name/solution.json``: a folder; ``sources`` entries may omit ``content``, which is then read
  from the file of that path inside the folder (convenient for CUDA sources kept as files);
- ``name.py``: a bare Python file with a ``run`` function, packed as a value-returning solution
  (``destination_passing_style = false``, like ``baseline.py``); language ``triton`` when it uses
  ``@triton.jit``, else ``python``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernelcraft.errors import InputError, Problem
from kernelcraft.task.contract import pydantic_problems

Language = Literal["python", "triton", "cuda", "cpp"]


class SourceFile(BaseModel):
    path: str = Field(min_length=1)
    content: str

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"source path {v!r} must be relative and stay inside the solution")
        return v


class BuildSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    language: Language
    target_hardware: list[str] = Field(default_factory=list)
    entry_point: str  # "file::function"
    dependencies: list[str] = Field(default_factory=list)
    # FlashInfer-Trace's default: outputs are preallocated and passed after the inputs.
    destination_passing_style: bool = True
    # For cpp/cuda: "torch" (a torch C++ extension), "kernelcraft" (cubins launched from a Python
    # entry file, see solution/cuda_binding.py) or "tvm-ffi" (FlashInfer-Trace's default).
    binding: Literal["torch", "tvm-ffi", "kernelcraft"] | None = None

    @field_validator("entry_point")
    @classmethod
    def _entry(cls, v: str) -> str:
        if v.count("::") != 1 or not all(v.split("::")):
            raise ValueError(f"entry_point {v!r} must look like 'file.py::function'")
        return v

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::")[0]

    @property
    def entry_symbol(self) -> str:
        return self.entry_point.split("::")[1]


class Solution(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    author: str = Field(min_length=1)
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)
    description: str | None = None

    @model_validator(mode="after")
    def _entry_in_sources(self) -> Solution:
        paths = [s.path for s in self.sources]
        if len(set(paths)) != len(paths):
            raise ValueError(f"duplicate source paths in {paths}")
        if self.spec.entry_file not in paths:
            raise ValueError(f"entry_point file {self.spec.entry_file!r} is not among the sources {paths}")
        return self

    @property
    def source_hash(self) -> str:
        """sha256 over the spec and every source: the identity of what was built and judged."""
        blob = json.dumps(
            {"spec": self.spec.model_dump(mode="json"), "sources": [s.model_dump() for s in self.sources]},
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def to_json_dict(self) -> dict:
        return self.model_dump(mode="json", exclude_none=True)


def pack_python_file(path: Path, definition: str, name: str | None = None, author: str = "unknown") -> Solution:
    """Wrap a bare ``.py`` file with a ``run`` function into a value-returning Solution."""
    text = _read_utf8(path)
    language = "triton" if "triton.jit" in text else "python"
    return Solution(
        name=name or path.stem,
        definition=definition,
        author=author,
        spec=BuildSpec(language=language, entry_point=f"{path.name}::run", destination_passing_style=False),
        sources=[SourceFile(path=path.name, content=text)],
        description=_docstring(text),
    )


def _read_utf8(path: Path) -> str:
    """A source's text: UTF-8 whatever the locale, as the builder writes it back and the static gate reads it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(Problem(path, "", f"is not UTF-8 text (byte {e.start}: {e.reason})",
                                 "save the source as UTF-8")) from None


def _docstring(text: str) -> str | None:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(text))
    except SyntaxError:
        return None
    return doc.strip().splitlines()[0] if doc else None


def load_solution(path: str | Path, definition: str) -> Solution:
    """Read a solution from a ``.json`` record, a solution folder, or a bare ``.py`` file."""
    path = Path(path)
    if not path.exists():
        raise InputError(Problem(path, "", "not found", "give the path of a .py, a .json or a solution folder"))
    if path.is_dir():
        record = path / "solution.json"
        if not record.is_file():
            raise InputError(Problem(path, "", "folder has no solution.json", "add one, or pass a .py or .json file"))
        return _load_record(record, definition, base=path)
    if path.suffix == ".py":
        return pack_python_file(path, definition, author="unknown")
    if path.suffix == ".json":
        return _load_record(path, definition, base=None)
    raise InputError(Problem(path, "", f"unknown solution file type {path.suffix!r}", "use .py, .json or a folder with solution.json"))


def _load_record(record: Path, definition: str, base: Path | None) -> Solution:
    try:
        data = json.loads(record.read_text())
    except json.JSONDecodeError as e:
        raise InputError(Problem(record, "", f"not valid JSON: line {e.lineno}: {e.msg}")) from None
    problems = []
    if base is not None and isinstance(data.get("sources"), list):
        for i, src in enumerate(data["sources"]):
            if isinstance(src, dict) and "content" not in src and isinstance(src.get("path"), str):
                f = base / src["path"]
                if f.is_file():
                    src["content"] = _read_utf8(f)
                else:
                    problems.append(Problem(record, f"sources.{i}.path", f"{f} not found", "add the file or fix the path"))
    if problems:
        raise InputError(problems)
    data.setdefault("definition", definition)
    try:
        sol = Solution.model_validate(data)
    except ValidationError as e:
        raise InputError(pydantic_problems(record, e)) from None
    if sol.definition != definition:
        raise InputError(Problem(record, "definition", f"is {sol.definition!r}, the task is {definition!r}", "point the solution at this task's definition"))
    return sol
