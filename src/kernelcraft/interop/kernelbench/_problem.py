"""A KernelBench problem file executed in its own module namespace, sampled with its constants changed."""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from ._errors import ConversionError, _stage


@contextmanager
def no_tf32() -> Iterator[None]:
    """fp32 as KernelBench means it (the generated reference and baseline do the same)."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _describe_outputs(out: Any) -> list[tuple[tuple[int, ...] | None, Any]]:
    """forward()'s result -> [(shape or None for a Python number, torch dtype or Python type)]."""
    items = list(out) if isinstance(out, tuple | list) else [out]
    if not items:
        raise ConversionError("forward() returns an empty tuple; a task needs at least one output")
    desc = []
    for i, o in enumerate(items):
        if isinstance(o, torch.Tensor):
            desc.append((tuple(o.shape), o.dtype))
        elif isinstance(o, bool | int | float):
            desc.append((None, type(o)))
        else:
            where = f"item {i} of its result" if isinstance(out, tuple | list) else "its result"
            raise ConversionError(f"forward() returns {type(o).__name__} as {where}; only tensors and "
                                  "Python numbers can be outputs")
    return desc


def _structure(desc: list[tuple[tuple[int, ...] | None, Any]]) -> list[Any]:
    return [(None if s is None else len(s), d) for s, d in desc]


class _Sample:
    """One call of get_inputs() (and get_init_inputs()) with some module constants changed."""

    def __init__(self, items: list[Any], init: list[Any]):
        self.items, self.init = items, init
        self.shapes = [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in items]

    def kinds(self) -> list[Any]:
        return [(x.dtype, x.dim()) if isinstance(x, torch.Tensor) else type(x) for x in self.items]


class _Problem:
    def __init__(self, path: Path, seed: int):
        self.path, self.seed = path, seed
        with _stage("reading the file"):
            self.raw = path.read_bytes()
            self.source = self.raw.decode("utf-8")
        self.module = types.ModuleType("kernelbench_problem")
        self.module.__file__ = str(path)
        self.ns = self.module.__dict__
        with _stage("executing the problem file"), _seeded(seed):
            exec(compile(self.source, str(path), "exec"), self.ns)  # noqa: S102 - the problem is trusted code
        model_cls = self.ns.get("Model")
        if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
            raise ConversionError("the file defines no `class Model(nn.Module)`")
        if not callable(self.ns.get("get_inputs")):
            raise ConversionError("the file defines no `get_inputs()`")
        self.model_cls = model_cls
        self.get_inputs = self.ns["get_inputs"]
        self.get_init_inputs = self.ns.get("get_init_inputs") or list
        self.consts = {k: v for k, v in self.ns.items()
                       if type(v) is int and not k.startswith("_") and k.isidentifier() and v >= 1}
        self._samples: dict[tuple, _Sample] = {}
        self._outputs: dict[tuple, list] = {}
        self.meta_model: torch.nn.Module | None = None
        self.cpu_model: torch.nn.Module | None = None
        self.probe_device = "meta"

    def sample(self, overrides: dict[str, int], real: bool = False) -> _Sample:
        """get_inputs() under torch.manual_seed(seed), with module constants patched; on the meta
        device unless ``real`` (or unless get_inputs() cannot run there)."""
        key = (tuple(sorted(overrides.items())), real)
        if key not in self._samples:
            saved = {k: self.ns[k] for k in overrides}
            self.ns.update(overrides)
            try:
                s = None
                if not real:
                    try:
                        with _seeded(self.seed), torch.device("meta"):
                            items = list(self.get_inputs())
                        s = _Sample([x.to("meta") if isinstance(x, torch.Tensor) else x for x in items], [])
                    except Exception:  # noqa: BLE001 - data-dependent get_inputs(): make the real tensors
                        s = None
                if s is None:
                    with _seeded(self.seed):
                        s = _Sample(list(self.get_inputs()), [])
                s.init = list(self.get_init_inputs())
            finally:
                self.ns.update(saved)
            self._samples[key] = s
        return self._samples[key]

    def forward(self, overrides: dict[str, int]) -> list[tuple[tuple[int, ...] | None, Any]]:
        """Output shapes and dtypes of forward() on the inputs of ``overrides`` (meta, else CPU)."""
        key = tuple(sorted(overrides.items()))
        if key not in self._outputs:
            if self.probe_device == "meta":
                s = self.sample(overrides)
                args = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in s.items]
                model = self.meta_model
            else:
                args = self.sample(overrides, real=True).items
                model = self.cpu_model
            with torch.no_grad(), no_tf32():
                self._outputs[key] = _describe_outputs(model(*args))
        return self._outputs[key]


def _loose_tensors(model: torch.nn.Module) -> list[str]:
    """Tensors a module keeps as plain attributes (neither parameters nor buffers). References to its
    own parameters do not count (an RNN's ``_flat_weights`` lists them: built on meta, they are meta)."""
    own = {id(t) for t in list(model.parameters()) + list(model.buffers())}
    found = []
    for mname, m in model.named_modules():
        for k, v in vars(m).items():
            if k in ("_parameters", "_buffers", "_modules"):
                continue
            values = list(v) if isinstance(v, list | tuple) else list(v.values()) if isinstance(v, dict) else [v]
            if any(isinstance(x, torch.Tensor) and id(x) not in own for x in values):
                found.append(f"{mname}.{k}" if mname else k)
    return found
