"""Functions of a task folder that the contract names (``"benchmark.py::random_inputs"``): a KDA
request's own input generators and verifiers. They are the task's code, trusted as its reference
is: imported and called in the judge process only, never in a candidate's runner.

:func:`static_problems` checks, without importing anything, that each named file exists inside the
task folder and defines the function at top level; :func:`load_function` imports the file once per
process and version of the file (every function of one file shares one module, so a generator and a
judge see the same constants; a task folder replaced in place, as a re-import does, is read again),
with the file's folder on ``sys.path`` while it runs (it may import the task's helper modules), and
returns the function.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from kernelcraft.errors import InputError, Problem

_modules: dict[tuple[Path, int, int], object] = {}


def split(ref: str) -> tuple[str, str]:
    file, _, fn = ref.partition("::")
    return file, fn


def _top_level_functions(path: Path) -> set[str] | None:
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def static_problems(root: Path, ref: str, where: Path, field: str, also: tuple[str, ...] = ()) -> list[Problem]:
    """Problems of one ``file.py::function`` reference (and of ``also``, more functions of that file)."""
    file, fn = split(ref)
    path = (root / file).resolve()
    if not path.is_relative_to(root.resolve()):
        return [Problem(where, field, f"{file!r} is outside the task folder", "name a file inside it")]
    if not path.is_file():
        return [Problem(where, field, f"{root / file} does not exist", "name a Python file of the task folder")]
    names = _top_level_functions(path)
    if names is None:
        return [Problem(where, field, f"{root / file} is not valid Python", "fix its syntax")]
    return [Problem(where, field, f"{file} has no top-level function {name!r}",
                    f"use one of {sorted(names)[:12]}") for name in (fn, *also) if name not in names]


def load_module(root: Path, file: str):
    path = (Path(root) / file).resolve()
    try:
        st = path.stat()
    except OSError:
        raise InputError(Problem(Path(root) / file, "", "does not exist", "name a Python file of the task folder")) from None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _modules:
        # a name of its own per file version: two tasks' benchmark.py must not share a module
        name = "kc_taskcode_" + hashlib.sha256(str(key).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look their module up by name
        sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            sys.path.remove(str(path.parent))
        _modules[key] = module
    return _modules[key]


def load_function(root: Path, ref: str) -> Callable:
    file, fn = split(ref)
    module = load_module(root, file)
    f = getattr(module, fn, None)
    if not callable(f):
        raise InputError(Problem(Path(root) / file, fn, "is not a function", "define it at top level"))
    return f
