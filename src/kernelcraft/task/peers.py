"""Peers: the strongest implementations a user could run instead of a candidate, timed in the same
run (``tasks/<t>/peers/*.py``). Trusted code of the task, like ``baseline.py``.

A peer file::

    PEER = {
        "name": "liger",                        # row name: "peer:liger"
        "library": "liger-kernel",              # the distribution whose version the record names
        "modules": ["liger_kernel"],            # must import, else the row is SKIPPED naming it
        "devices": ["cuda"],                    # device types it runs on ("cuda", "cpu")
        "min_capability": [8, 0],               # optional: lowest CUDA compute capability
        "install": "pip install liger-kernel",  # the fix a SKIPPED row names
    }

    def prepare(*inputs): ...   # optional, once per workload outside timing: the arguments of run
    def run(*inputs): ...       # the definition's inputs (or prepare's tuple); returns like the reference

The module's top level imports only torch and the standard library (the library itself inside
``run``/``prepare``), so ``task check`` reads ``PEER`` on any machine. ``PEER`` is read with
``ast.literal_eval``, never by running the file, outside a worker.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelcraft.errors import InputError, Problem

_KEYS = {"name", "library", "modules", "devices", "min_capability", "install"}


@dataclass(frozen=True)
class PeerSpec:
    name: str
    path: Path
    library: str
    modules: tuple[str, ...]
    devices: tuple[str, ...]
    install: str
    min_capability: tuple[int, int] | None = None

    @property
    def row(self) -> str:
        return f"peer:{self.name}"


def peer_paths(root: Path) -> list[Path]:
    folder = Path(root) / "peers"
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_")) if folder.is_dir() else []


def read_spec(path: Path) -> PeerSpec:
    """The file's ``PEER`` dict, checked field by field (an unusable peer is a task-folder problem)."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError) as e:
        raise InputError(Problem(path, "", f"cannot be parsed: {e}", "fix the Python syntax")) from None
    node = next((n.value for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "PEER" for t in n.targets)), None)
    if node is None:
        raise InputError(Problem(path, "PEER", "no module-level PEER dict", "add PEER = {\"name\": ..., ...}"))
    try:
        d = ast.literal_eval(node)
    except ValueError:
        raise InputError(Problem(path, "PEER", "must be a literal dict (strings, lists, numbers)",
                                 "write it without computed values")) from None
    if not isinstance(d, dict):
        raise InputError(Problem(path, "PEER", "must be a dict", "PEER = {\"name\": ..., ...}"))
    problems = []
    unknown = set(d) - _KEYS
    if unknown:
        problems.append(Problem(path, f"PEER.{sorted(unknown)[0]}", "unknown field", f"use only {sorted(_KEYS)}"))
    for key in ("name", "library", "install"):
        if not isinstance(d.get(key), str) or not d.get(key):
            problems.append(Problem(path, f"PEER.{key}", "missing or not a non-empty string", "add it"))
    for key in ("modules", "devices"):
        v = d.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            problems.append(Problem(path, f"PEER.{key}", "must be a non-empty list of strings", "add it"))
    bad_dev = [x for x in d.get("devices") or [] if x not in ("cuda", "cpu")]
    if bad_dev:
        problems.append(Problem(path, "PEER.devices", f"unknown device type {bad_dev[0]!r}", "use \"cuda\" and/or \"cpu\""))
    cap = d.get("min_capability")
    if cap is not None and not (isinstance(cap, list | tuple) and len(cap) == 2 and all(isinstance(x, int) for x in cap)):
        problems.append(Problem(path, "PEER.min_capability", "must be [major, minor]", "e.g. [8, 0]"))
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        problems.append(Problem(path, "run", "no function run(...)", "define run with the definition's inputs"))
    if problems:
        raise InputError(problems)
    return PeerSpec(name=d["name"], path=path, library=d["library"], modules=tuple(d["modules"]),
                    devices=tuple(d["devices"]), install=d["install"],
                    min_capability=tuple(cap) if cap is not None else None)


def read_specs(root: Path) -> list[PeerSpec]:
    specs, problems, seen = [], [], {}
    for p in peer_paths(root):
        try:
            s = read_spec(p)
        except InputError as e:
            problems += e.problems
            continue
        if s.name in seen:
            problems.append(Problem(p, "PEER.name", f"{s.name!r} is also the name of {seen[s.name].name}",
                                    "give each peer its own name"))
        seen[s.name] = p
        specs.append(s)
    if problems:
        raise InputError(problems)
    return specs


def unavailable(spec: PeerSpec, device: str) -> str:
    """Why this peer cannot run on ``device`` in this process's environment ("" when it can)."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    if kind not in spec.devices:
        return f"{spec.row} runs on {'/'.join(spec.devices)} only, not on {kind}"
    for m in spec.modules:
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{spec.row}: module {m!r} is not installed here ({spec.install})"
    if kind == "cuda" and spec.min_capability is not None:
        import torch

        cap = torch.cuda.get_device_capability(device if ":" in device else None)
        if tuple(cap) < spec.min_capability:
            return (f"{spec.row} needs compute capability {spec.min_capability[0]}.{spec.min_capability[1]} or "
                    f"higher; this GPU has {cap[0]}.{cap[1]}")
    return ""


def library_version(spec: PeerSpec) -> str | None:
    """The named distribution's version; where it is not installed but the modules are (FLA's kernels from
    ``fla-core`` without the ``flash-linear-attention`` meta-package, as on the device machines: session 23's
    gdn_prefill record said null), the version of the distribution that provides the first module, naming it."""
    try:
        return importlib.metadata.version(spec.library)
    except importlib.metadata.PackageNotFoundError:
        pass
    for dist in importlib.metadata.packages_distributions().get(spec.modules[0], []):
        try:
            return f"{importlib.metadata.version(dist)} ({dist})"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@dataclass
class LoadedPeer:
    spec: PeerSpec
    run: Callable[..., Any]
    prepare: Callable[..., tuple] | None = None
    info: dict = field(default_factory=dict)


def load_peer(root: Path, name: str, device: str) -> LoadedPeer:
    """Import a peer's file (trusted task code, in the judge) after checking it can run here;
    :class:`LookupError` with the reason when it cannot."""
    spec = next((s for s in read_specs(root) if s.name == name), None)
    if spec is None:
        raise LookupError(f"no peer named {name!r} under {Path(root) / 'peers'}")
    why = unavailable(spec, device)
    if why:
        raise LookupError(why)
    for m in spec.modules:  # installed is not enough: quack imports, then its CuTe DSL libraries may not
        try:
            importlib.import_module(m)
        except Exception as e:  # noqa: BLE001 - whatever a library raises at import makes the row SKIPPED
            raise LookupError(f"{spec.row}: importing {m!r} failed here ({type(e).__name__}: {str(e)[:300]}); "
                              f"{spec.install}") from None
    module_spec = importlib.util.spec_from_file_location(f"kc_peer_{name}", spec.path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    info = {"library": spec.library, "version": library_version(spec), "install": spec.install,
            "path": str(spec.path)}
    return LoadedPeer(spec, module.run, getattr(module, "prepare", None), info)
