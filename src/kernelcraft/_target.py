"""What the processes that run one candidate under an outside tool share (Nsight Compute:
:mod:`kernelcraft.measure._profile_target`; compute-sanitizer: :mod:`kernelcraft.gauntlet._sanitize_target`),
and how their parents stop them. Nothing here imports torch or triton: a target sets its environment
(``TRITON_INTERPRET``) before those imports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path


def write_result(path: str, result: dict) -> None:
    """The target's result JSON, written atomically: the parent never reads half a file."""
    tmp = Path(path + ".partial")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)


def target_main(run: Callable[[dict], int]) -> None:
    """``python -m <target> JOB.json``: run the job; whatever escapes becomes a RUNTIME_ERROR result
    (the parent must learn what went wrong) and exit code 3."""
    job = json.loads(Path(sys.argv[1]).read_text())
    try:
        code = run(job)
    except BaseException:  # noqa: BLE001 - the parent must learn what went wrong, whatever it was
        write_result(job["result_path"], {"status": "RUNTIME_ERROR", "reason": traceback.format_exc()[-6000:]})
        code = 3
    sys.exit(code)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a tool started with ``start_new_session=True`` and every process it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
