"""FlashInfer-Trace dtype names, their torch dtypes, and the default tolerances per dtype."""

from __future__ import annotations

from typing import Literal

import torch

# FlashInfer-Trace's DType enum, plus float64 and uint8 (KDA wishlist requests use float64).
DType = Literal[
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "int64", "int32", "int16", "int8", "uint8", "bool",
]

TORCH_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}

# Older FlashInfer-Trace files spell e4m3 without the "fn".
ALIASES = {"float8_e4m3": "float8_e4m3fn"}

# Default (atol, rtol) per output dtype, against a float64 reference. An element fails when its error
# exceeds BOTH atol and rtol * |reference|. Each rtol is about two units in the last place of the
# dtype (rounding the exact result costs half a unit; a different but honest accumulation order
# costs about one more); atol covers values near zero. Integers and bools must match exactly.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-9),
    "float32": (1e-5, 1e-4),
    "float16": (1e-3, 2e-3),
    "bfloat16": (1e-2, 1.6e-2),
    "float8_e4m3fn": (1.6e-2, 1.25e-1),
    "float8_e5m2": (3.2e-2, 2.5e-1),
    "int64": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "int16": (0.0, 0.0),
    "int8": (0.0, 0.0),
    "uint8": (0.0, 0.0),
    "bool": (0.0, 0.0),
}


def torch_dtype(name: str) -> torch.dtype:
    return TORCH_DTYPES[ALIASES.get(name, name)]


def is_floating(name: str) -> bool:
    return torch_dtype(name).is_floating_point
