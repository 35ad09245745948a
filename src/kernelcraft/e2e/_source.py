"""Reading a model method's source, for the e2e checks that a region's code is what it replaces."""

from __future__ import annotations

import inspect
import textwrap


def read_source(fn) -> tuple[str, str]:
    """A function's dedented source and where it is (``file:line``); OSError or TypeError where it
    cannot be read."""
    raw = inspect.unwrap(fn)
    return textwrap.dedent(inspect.getsource(fn)), f"{inspect.getsourcefile(raw)}:{inspect.getsourcelines(raw)[1]}"
