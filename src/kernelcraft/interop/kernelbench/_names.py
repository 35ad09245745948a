"""Names in the written task: FlashInfer-Trace dtype names, input and axis identifiers, the task name."""

from __future__ import annotations

import keyword
import re
from typing import Any

import torch

from kernelcraft.task.dtypes import TORCH_DTYPES

from ._errors import ConversionError

_DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}


def _dtype_name(dtype: torch.dtype, what: str) -> str:
    if dtype not in _DTYPE_NAMES:
        raise ConversionError(f"{what} has dtype {dtype}, which FlashInfer-Trace cannot describe")
    return _DTYPE_NAMES[dtype]


def _scalar_dtype(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "int64" if isinstance(value, int) else "float32"


def _identifier(name: str, prefix: str) -> str:
    name = re.sub(r"\W", "_", name)
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_kb"):
        name = f"{prefix}_{name}"
    return name


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 1
    while out in taken:
        out, i = f"{name}_{i}", i + 1
    taken.add(out)
    return out


def _task_name(stem: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", stem).strip("_").lower() or "kernelbench_problem"
