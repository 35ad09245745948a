"""Write a peer of a task as a plain candidate file (its ``PEER`` declaration dropped, nothing else
changed), for an A/A timing check: the same code timed as a trusted row (the judge's process) and as a
candidate (the sandboxed runner) in one `kernelcraft eval`. Any difference between the two rows is the
harness's, not the code's.

    python3 scripts/aa_candidate.py tasks/rmsnorm/peers/liger.py /tmp/aa/aa_liger.py

The other way round (``--to-peer NAME``): a solution written as a peer of a copy of its task, so the
candidate's own code is also timed as a trusted row:

    cp -r tasks/rmsnorm /tmp/aa/rmsnorm
    python3 scripts/aa_candidate.py --to-peer self tasks/rmsnorm/solutions/triton_rowwise.py /tmp/aa/rmsnorm/peers/self.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def strip_peer(source: str) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PEER" for t in node.targets):
            del lines[node.lineno - 1:node.end_lineno]
            return "".join(lines)
    raise SystemExit("no PEER = {...} assignment at the module's top level: is this a peer file?")


def as_peer(source: str, name: str, origin: str) -> str:
    """The solution's source with a ``PEER`` declaration after its docstring (``library`` triton: the
    version the record names is the compiler's)."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        raise SystemExit(f"{origin}: no top-level `def run(...)`: a peer is called through `run`")
    peer = (f'PEER = {{"name": {name!r}, "library": "triton", "modules": ["triton"], "devices": ["cuda"], '
            f'"install": "(A/A copy of {origin})"}}\n')
    lines = source.splitlines(keepends=True)
    first = tree.body[0]
    at = first.end_lineno if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) else 0
    return "".join(lines[:at]) + peer + "".join(lines[at:])


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--to-peer":
        name, src, dst = args[1], Path(args[2]), Path(args[3])
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(as_peer(src.read_text(), name, str(src)))
        print(dst)
        return
    if len(args) != 2:
        raise SystemExit(__doc__)
    src, dst = Path(args[0]), Path(args[1])
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(f'"""A/A copy of {src} (scripts/aa_candidate.py): the peer\'s code as a candidate."""\n'
                   + strip_peer(src.read_text()))
    print(dst)


if __name__ == "__main__":
    main()
