"""Messages between the judge and a runner: length-prefixed JSON over a Unix stream socket, file
descriptors (shared arenas) alongside. Never pickles: the runner runs candidate code, and whatever it
writes to the socket is read by the judge as data (:mod:`kernelcraft.runner.protocol` validates it).
"""

from __future__ import annotations

import json
import math
import select
import socket
import struct
import time

MAX_MESSAGE = 8 << 20  # a runner's reply: output shapes, timings, a traceback; never tensors
_HEADER = struct.Struct("<I")


class WireError(Exception):
    """The other side sent something that is not a message, or went away."""


class Timeout(WireError):
    pass


def _plain(x: object) -> object:
    try:
        return float(x)
    except (TypeError, ValueError):
        return repr(x)


def send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg, default=_plain, allow_nan=True).encode()
    frame = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], list(fds))
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def _recv_exactly(sock: socket.socket, n: int, deadline: float, fds: list[int], max_fds: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], None if math.isinf(left) else left)[0]:
            raise Timeout("no reply in time")
        try:
            if max_fds and not fds:
                chunk, got, _, _ = socket.recv_fds(sock, n - len(buf), max_fds)
                fds.extend(got)
            else:
                chunk = sock.recv(n - len(buf))
        except OSError as e:  # reset by a process that died
            raise WireError(f"the other side closed the connection ({e})") from None
        if not chunk:
            raise WireError("the other side closed the connection")
        buf += chunk
    return bytes(buf)


def recv(sock: socket.socket, timeout: float = math.inf, max_fds: int = 0) -> tuple[dict, list[int]]:
    """One message (a JSON object) and the descriptors that came with it."""
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    size = _HEADER.unpack(_recv_exactly(sock, _HEADER.size, deadline, fds, max_fds))[0]
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes (at most {MAX_MESSAGE})")
    raw = _recv_exactly(sock, size, deadline, fds, max_fds)
    try:
        msg = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise WireError("bytes that are not JSON") from None
    if not isinstance(msg, dict):
        raise WireError(f"a JSON {type(msg).__name__}, not an object")
    return msg, fds
