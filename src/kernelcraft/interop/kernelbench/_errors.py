"""How a failure becomes the one-line reason an import report gives for a problem."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class ConversionError(Exception):
    """A problem that cannot become a task folder; the message says why."""


def _describe_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    msg = text[0] if text else ""
    if len(msg) > 500:
        msg = msg[:500] + "..."
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


@contextmanager
def _stage(what: str) -> Iterator[None]:
    """Turn any failure inside into a ConversionError that says what was being done."""
    try:
        yield
    except ConversionError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001
        raise ConversionError(f"{what} failed: {_describe_error(e)}") from e
