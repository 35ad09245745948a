"""A submitted task folder, from a zip or from the form, checked as ``kernelcraft task check`` checks
it: :func:`kernelcraft.task.loader.load_task` and :func:`kernelcraft.solution.model.load_solution`.

Nothing submitted is executed. Those two functions only parse (``json``, ``tomllib``, ``ast.parse``;
constraints are evaluated by an AST whitelist of arithmetic). ``task check``'s degenerate-output
warning is *not* run here: it executes the definition's reference. Beyond the loader, uploads get
what a server needs and a local folder does not:

- the zip: size-limited before it is read (:mod:`kernelcraft.web.limits`), at most
  :data:`MAX_ENTRIES` entries and :data:`MAX_UNZIPPED` bytes unpacked, counted while unpacking (a
  zip's own sizes can lie); no absolute names, ``..``, backslashes, symlinks or encrypted
  entries; every target checked to stay inside the extraction folder (zip slip);
- ``safetensors`` workload inputs must name files inside the folder (the loader also accepts
  absolute paths, which would let an upload probe the server's files);
- a ``**`` in a constraint needs a constant exponent <= 64 (the loader evaluates constraints).
"""

from __future__ import annotations

import ast
import io
import json
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernelcraft.errors import InputError, Problem

MAX_ENTRIES = 200
MAX_UNZIPPED = 16 << 20
MAX_POW_EXPONENT = 64
# form field -> file of the task folder
FORM_FILES = {"definition": "definition.json", "workloads": "workloads.jsonl", "baseline": "baseline.py",
              "readme": "README.md", "contract": "contract.toml"}
FILE_FIELDS = {v: k for k, v in FORM_FILES.items()}


@dataclass
class Checked:
    """A task folder that passed: what the wishlist stores."""

    name: str
    op_type: str
    description: str
    definition: dict
    workloads: list
    contract: str | None
    readme: str
    baseline: str
    archive: bytes  # the folder, re-zipped as <name>/...
    solutions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _zip_problem(problem: str, fix: str = "", entry: str = "") -> InputError:
    return InputError(Problem("upload.zip", entry, problem, fix))


def extract_zip(data: bytes, dest: Path) -> Path:
    """Unpack a task-folder zip into ``dest`` safely; return the task folder inside it."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise _zip_problem(f"not a readable zip archive ({e})", "zip the task folder (zip -r task.zip FOLDER)") from None
    infos = [i for i in infos if not i.filename.startswith("__MACOSX/")]
    if len(infos) > MAX_ENTRIES:
        raise _zip_problem(f"{len(infos)} entries; at most {MAX_ENTRIES}", "submit only the task folder")
    if sum(i.file_size for i in infos) > MAX_UNZIPPED:
        raise _zip_problem(f"unpacks to more than {MAX_UNZIPPED >> 20} MiB", "leave large files out")
    dest = dest.resolve()
    names: set[str] = set()
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name).parts
        if ("\\" in name or "\x00" in name or name.startswith("/") or (parts and ":" in parts[0])
                or ".." in parts or not parts):
            raise _zip_problem("entry name leaves the folder (absolute, '..', drive or backslash)",
                               "zip the folder with relative names", name)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise _zip_problem("is a symbolic link", "put the file itself in the zip", name)
        if info.flag_bits & 0x1:
            raise _zip_problem("is encrypted", "zip without a password", name)
        target = (dest / name).resolve()
        if not target.is_relative_to(dest) or target == dest:
            raise _zip_problem("entry name leaves the folder", "zip the folder with relative names", name)
        if name.rstrip("/") in names:
            raise _zip_problem("appears twice", "zip each file once", name)
        names.add(name.rstrip("/"))
    written = 0
    try:
        for info in infos:
            target = (dest / info.filename).resolve()
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 16):
                    written += len(chunk)
                    if written > MAX_UNZIPPED:
                        raise _zip_problem(f"unpacks to more than {MAX_UNZIPPED >> 20} MiB", "leave large files out",
                                           info.filename)
                    out.write(chunk)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as e:
        raise _zip_problem(f"could not be unpacked ({e})", "re-create the zip", "") from None
    if (dest / "definition.json").is_file():
        return dest
    tops = {PurePosixPath(n).parts[0] for n in names}
    if len(tops) == 1 and (dest / next(iter(tops)) / "definition.json").is_file():
        return dest / next(iter(tops))  # the usual `zip -r x.zip folder/`
    raise _zip_problem("no definition.json at the top, nor in one top-level folder",
                       "zip one task folder (definition.json, workloads.jsonl, baseline.py, README.md)")


def folder_from_form(fields: dict[str, str], dest: Path) -> Path:
    for fname, filename in FORM_FILES.items():
        text = (fields.get(fname) or "").replace("\r\n", "\n")
        if text.strip():
            (dest / filename).write_text(text if text.endswith("\n") else text + "\n")
    return dest


def _precheck(root: Path) -> list[Problem]:
    """What the loader allows locally but a server must not: see the module docstring."""
    problems: list[Problem] = []
    try:
        constraints = json.loads((root / "definition.json").read_text()).get("constraints") or []
    except (OSError, ValueError, AttributeError, RecursionError):
        constraints = []  # the loader reports it
    for i, c in enumerate(constraints if isinstance(constraints, list) else []):
        try:
            tree = ast.parse(c, mode="eval") if isinstance(c, str) else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not (
                    isinstance(node.right, ast.Constant) and type(node.right.value) is int
                    and 0 <= node.right.value <= MAX_POW_EXPONENT):
                problems.append(Problem(root / "definition.json", f"constraints.{i}",
                                        f"{c!r}: '**' needs a constant exponent from 0 to {MAX_POW_EXPONENT} in a submitted task",
                                        "write the bound without a large power"))
    wl = root / "workloads.jsonl"
    lines = wl.read_text(errors="replace").splitlines() if wl.is_file() else []
    for lineno, line in enumerate(lines, start=1):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        w = rec.get("workload", rec) if isinstance(rec, dict) else None
        inputs = w.get("inputs") if isinstance(w, dict) else None
        for name, spec in (inputs.items() if isinstance(inputs, dict) else []):
            path = spec.get("path") if isinstance(spec, dict) else None
            if isinstance(path, str):
                p = PurePosixPath(path)
                if p.is_absolute() or ".." in p.parts or "\\" in path:
                    problems.append(Problem(f"{wl} line {lineno}", f"workload.inputs.{name}.path",
                                            "must name a file inside the task folder", "use a relative path, without '..'"))
    return problems


def _relative(problems: list[Problem], root: Path) -> list[Problem]:
    prefix = str(root) + "/"
    return [Problem(str(p.path).replace(prefix, ""), p.field, p.problem.replace(prefix, ""), p.fix) for p in problems]


def check_folder(root: Path) -> Checked:
    """Validate like ``task check`` (without running anything); raise InputError whose problems
    name files relative to the folder."""
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    problems = _precheck(root)
    if problems:
        raise InputError(_relative(problems, root))
    try:
        task = load_task(root)
        solutions = [load_solution(p, task.definition.name) for p in task.solution_paths()]
    except InputError as e:
        raise InputError(_relative(e.problems, root)) from None
    except (RecursionError, MemoryError, ValueError, UnicodeDecodeError, OSError) as e:
        raise InputError(Problem("task folder", "", f"could not be read: {type(e).__name__}: {e}")) from None
    d = task.definition
    contract = root / "contract.toml"
    return Checked(
        name=d.name, op_type=d.op_type, description=d.description or "",
        definition=d.model_dump(mode="json"), workloads=[w.model_dump(mode="json", exclude_none=True) for w in task.workloads],
        contract=contract.read_text() if contract.is_file() else None,
        readme=task.readme_path.read_text() if task.readme_path else "",
        baseline=task.baseline_path.read_text(), archive=_rezip(root, d.name),
        solutions=[s.name for s in solutions], warnings=[w.replace(str(root) + "/", "") for w in task.warnings],
    )


def _rezip(root: Path, name: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.is_symlink():
                info = zipfile.ZipInfo(f"{name}/{p.relative_to(root).as_posix()}", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, p.read_bytes())
    return buf.getvalue()
