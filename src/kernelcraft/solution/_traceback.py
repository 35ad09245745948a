"""Tracebacks an agent can act on: the candidate's frames and the library frames it called,
without the harness's or the import machinery's, with the candidate's files named as in its sources."""

from __future__ import annotations

import re
import traceback

_CANDIDATE_DIR = re.compile(r"[^\s\"']*kc_worker_[^/\s]+/kc_sol_[0-9a-f]+/")
_NOISE = ("/kernelcraft/", "<frozen importlib", "importlib/__init__.py", "/multiprocessing/")


def candidate_traceback(e: BaseException, limit: int = 4000) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not any(n in f.filename for n in _NOISE)]
    text = "".join(traceback.format_list(frames))
    if frames:
        text = "Traceback (most recent call last):\n" + text
    text += "".join(traceback.format_exception_only(type(e), e))
    text = _CANDIDATE_DIR.sub("", text)
    return text if len(text) <= limit else "...\n" + text[-limit:]
