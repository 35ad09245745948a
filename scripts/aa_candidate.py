"""Write a peer of a task as a plain candidate file (its ``PEER`` declaration dropped, nothing else
changed), for an A/A timing check: the same code timed as a trusted row (the judge's process) and as a
candidate (the sandboxed runner) in one `kernelcraft eval`. Any difference between the two rows is the
harness's, not the code's.

    python3 scripts/aa_candidate.py tasks/rmsnorm/peers/liger.py /tmp/aa/aa_liger.py
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


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(f'"""A/A copy of {src} (scripts/aa_candidate.py): the peer\'s code as a candidate."""\n'
                   + strip_peer(src.read_text()))
    print(dst)


if __name__ == "__main__":
    main()
