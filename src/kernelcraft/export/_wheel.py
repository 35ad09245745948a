"""A pure-Python wheel from a package folder, without setuptools or network.

``pip install --no-index --no-deps X.whl`` then works in a fresh virtual environment on a machine
with no network (the H200 machine): building from the source tree there would need setuptools in
that environment, or pip's isolated build, which downloads it.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(pkg_dir: Path, dist_name: str, version: str, summary: str, requires: list[str], out_dir: Path,
                readme: str = "") -> Path:
    norm = dist_name.replace("-", "_")
    dist_info = f"{norm}-{version}.dist-info"
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{norm}-{version}-py3-none-any.whl"
    metadata = ["Metadata-Version: 2.1", f"Name: {dist_name}", f"Version: {version}", f"Summary: {summary}",
                "Requires-Python: >=3.10", *[f"Requires-Dist: {r}" for r in requires]]
    if readme:
        metadata += ["Description-Content-Type: text/markdown", "", readme]
    files: list[tuple[str, bytes]] = []
    for f in sorted(pkg_dir.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files.append((f"{pkg_dir.name}/{f.relative_to(pkg_dir).as_posix()}", f.read_bytes()))
    files.append((f"{dist_info}/METADATA", ("\n".join(metadata) + "\n").encode()))
    files.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: kernelcraft\nRoot-Is-Purelib: true\n"
                                        b"Tag: py3-none-any\n"))
    files.append((f"{dist_info}/top_level.txt", f"{pkg_dir.name}\n".encode()))
    record = [f"{name},{_digest(data)},{len(data)}" for name, data in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            z.writestr(name, data)
    return wheel
