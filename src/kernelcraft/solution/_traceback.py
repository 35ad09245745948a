"""Tracebacks an agent can act on: the candidate's frames and the library frames it called,
without the harness's or the import machinery's, with the candidate's files named as in its sources."""

from __future__ import annotations

import re
import traceback

_CANDIDATE_DIR = re.compile(r"[^\s\"']*kc_worker_[^/\s]+/kc_sol_[0-9a-f]+/")
_NOISE = ("/kernelcraft/", "<frozen importlib", "importlib/__init__.py", "/multiprocessing/")


def candidate_traceback(e: BaseException, limit: int = 4000) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not any(n in f.filename for n in _NOISE)]
    tb = "".join(traceback.format_list(frames))
    if frames:
        tb = "Traceback (most recent call last):\n" + tb
    tb = _CANDIDATE_DIR.sub("", tb)
    msg = _CANDIDATE_DIR.sub("", "".join(traceback.format_exception_only(type(e), e)))
    # The message matters most, and its head most of all: pybind11's "incompatible function arguments"
    # names the signatures first and then prints every argument ("Invoked with: tensor([[...]])"),
    # which cut from the front lost the signature on the H200 (FlashInfer-Bench's gqa solutions).
    cut = msg.find("\nInvoked with:")
    if cut >= 0 and len(msg) - cut > 400:
        msg = msg[:cut + 400].rstrip() + " ... (the arguments' values left out)\n"
    if len(msg) > limit * 3 // 4:
        msg = msg[:limit // 2] + "\n...\n" + msg[-(limit // 4):]
    room = limit - len(msg)
    if len(tb) > room:
        tb = "...\n" + tb[-max(room - 4, 0):] if room > 4 else ""
    return tb + msg
