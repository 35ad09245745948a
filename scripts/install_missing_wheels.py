"""Install, from a folder of wheels, only the distributions this Python cannot import yet.

Usage: python3 scripts/install_missing_wheels.py WHEEL_DIR TARGET [--check MODULE ...]

A wheel's import names are its top-level packages and modules. Those already importable here
(torch's own dependencies, whatever the machine has) are left alone; the rest are installed with
``pip install --no-index --no-deps --target TARGET``. Then each ``--check`` module is imported with
TARGET on the path; if one fails (an installed dependency too old for the new ones), every wheel is
installed into TARGET, which then shadows the machine's versions, and the check runs again.
Exit 0 when the checks pass, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path


def top_level(wheel: Path) -> set[str]:
    names = set()
    with zipfile.ZipFile(wheel) as z:
        for n in z.namelist():
            first = n.split("/")[0]
            if first.endswith((".dist-info", ".data")):
                continue
            if "/" in n or n.endswith(".py"):
                names.add(first.removesuffix(".py"))
    return {n for n in names if n.isidentifier()}


def install(wheels: list[Path], target: Path) -> None:
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--upgrade",
                        "--target", str(target), *map(str, wheels)], check=True)


def check(modules: list[str], target: Path) -> str:
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    path = os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path})
    return "" if proc.returncode == 0 else proc.stderr.strip().splitlines()[-1]


def main() -> int:
    args = sys.argv[1:]
    checks = args[args.index("--check") + 1:] if "--check" in args else []
    wheel_dir, target = Path(args[0]), Path(args[1])
    wheels = sorted(wheel_dir.glob("*.whl"))
    missing = [w for w in wheels if not any(importlib.util.find_spec(n) for n in top_level(w))]
    print(f"{len(wheels)} wheels in {wheel_dir}; missing here: {[w.name.split('-')[0] for w in missing] or 'none'}")
    try:
        install(missing, target)
        problem = check(checks, target)
        if problem:
            print(f"with only the missing ones installed, the check fails ({problem}); installing all of them")
            install(wheels, target)
            problem = check(checks, target)
    except subprocess.CalledProcessError as e:
        print(f"pip failed ({e.returncode}): are these wheels for this Python ({sys.version.split()[0]})?")
        return 1
    print("checks passed: " + ", ".join(checks) if not problem else f"checks still fail: {problem}")
    return 0 if not problem else 1


if __name__ == "__main__":
    raise SystemExit(main())
