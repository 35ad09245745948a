"""Tests shipped inside an exported torch-op package (``pytest --pyargs PACKAGE.tests``).

Copied verbatim by ``kernelcraft export --format torch-op``; they import only torch, pytest and the
package. They check, on the machine they run on:

- inside the validated envelope (when this machine has the validated device), the op runs the
  kernel, not the reference, and agrees with the reference within the contract's tolerance;
- outside it, the op runs the reference and returns exactly what the reference returns;
- ``torch.library.opcheck`` passes on both paths (schema, fake tensor, autograd registration);
- ``torch.compile(fullgraph=True, dynamic=True)`` runs the op without graph breaks and without
  recompiling for a second shape.
"""

from __future__ import annotations

import importlib

import pytest
import torch

PKG = importlib.import_module(__package__.rsplit(".", 1)[0])
META = PKG.export_info
ENV = META["envelope"]
DEFN = META["definition"]
DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
          "bool": torch.bool}
FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _device_ok() -> bool:
    if ENV["device_type"] == "cpu":
        return True
    return torch.cuda.is_available() and (not ENV["hardware"] or torch.cuda.get_device_name() == ENV["hardware"])


def _small_shapes(n: int = 2, min_size: int = 0) -> list[dict]:
    seen, out = set(), []
    for axes in sorted(ENV["shapes_run"], key=lambda a: (sorted(a.values()), sorted(a.items()))):
        key = tuple(sorted(axes.items()))
        if key not in seen and all(v >= min_size for v in axes.values()):
            seen.add(key)
            out.append(axes)
    return out[:n]


def _inputs(axes: dict, device: str, float_dtype: torch.dtype | None = None, seed: int = 0) -> tuple:
    g = torch.Generator().manual_seed(seed)
    values = dict(ENV["const_axes"], **axes)
    args = []
    for name, spec in DEFN["inputs"].items():
        if spec["shape"] is None:
            tested = ENV["scalars_tested"].get(name)
            kind = spec["dtype"]
            default = True if kind == "bool" else (1 if kind.startswith(("int", "uint")) else 1e-5)
            args.append(tested[0] if tested else default)
            continue
        shape = [values[a] for a in spec["shape"]]
        dtype = DTYPES[spec["dtype"]]
        if dtype in FLOATS:
            t = torch.randn(shape, generator=g).to(float_dtype or dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=g).bool()
        else:
            t = torch.randint(-8, 8, shape, generator=g).to(dtype)
        args.append(t.to(device))
    return tuple(args)


def _outside_envelope() -> tuple | None:
    """Arguments the kernel was not validated for, on a device this machine has."""
    axes = _small_shapes(1)[0]
    if ENV["device_type"] == "cuda":
        return _inputs(axes, "cpu")
    validated = {DTYPES[d] for d in ENV["dtypes"].values()}
    if any(d in FLOATS and d != torch.float32 for d in validated):
        return _inputs(axes, "cpu", float_dtype=torch.float32)
    for ax, r in ENV["var_axes"].items():
        return _inputs(dict(axes, **{ax: r["max"] + 1}), "cpu")
    return None


def _tuple(x):
    return x if isinstance(x, tuple | list) else (x,)


def _assert_close(got, ref) -> None:
    for (name, _), g, r in zip(DEFN["outputs"].items(), _tuple(got), _tuple(ref), strict=True):
        assert g.shape == r.shape and g.dtype == r.dtype, (name, g.shape, r.shape, g.dtype, r.dtype)
        tol = META["tolerance"][name]
        g64, r64 = g.double().cpu(), r.double().cpu()
        err = (g64 - r64).abs()
        bad = (err > tol["atol"]) & (err > tol["rtol"] * r64.abs())
        bad |= g64.isnan() != r64.isnan()
        assert not bad.any(), f"{name}: {int(bad.sum())} elements beyond atol={tol['atol']} and rtol={tol['rtol']}"


@pytest.mark.skipif(not _device_ok(), reason=f"validated on {ENV['hardware'] or ENV['device_type']}, not present here")
def test_kernel_runs_inside_the_envelope_and_matches_the_reference():
    dev = "cuda" if ENV["device_type"] == "cuda" else "cpu"
    PKG.reset_stats()
    shapes = _small_shapes()
    for i, axes in enumerate(shapes):
        args = _inputs(axes, dev, seed=i)
        _assert_close(PKG.op(*args), PKG.reference(*args))
    stats = PKG.stats()
    assert stats["kernel"] == len(shapes) and stats["fallback"] == 0, stats


def test_outside_the_envelope_runs_the_reference():
    args = _outside_envelope()
    if args is None:
        pytest.skip("every argument this machine can make is inside the envelope")
    PKG.reset_stats()
    got, ref = _tuple(PKG.op(*args)), _tuple(PKG.reference(*args))
    assert all(torch.equal(g, r) for g, r in zip(got, ref, strict=True))
    stats = PKG.stats()
    assert stats["kernel"] == 0 and stats["fallback"] == 1, stats


def test_opcheck():
    cases = [a for a in [_outside_envelope()] if a is not None]
    if _device_ok():
        cases.append(_inputs(_small_shapes(1)[0], "cuda" if ENV["device_type"] == "cuda" else "cpu"))
    for args in cases:
        torch.library.opcheck(PKG.op, args)


def test_compile_fullgraph_without_recompiles():
    shapes = _small_shapes(min_size=2)  # torch.compile specializes sizes 0 and 1
    if not _device_ok() or len(shapes) < 2:
        pytest.skip("needs the validated device and two validated shapes")
    dev = "cuda" if ENV["device_type"] == "cuda" else "cpu"
    torch._dynamo.reset()
    fn = torch.compile(lambda *a: PKG.op(*a), fullgraph=True, dynamic=True)
    PKG.reset_stats()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for i, axes in enumerate(shapes):
            args = _inputs(axes, dev, seed=10 + i)
            _assert_close(fn(*args), PKG.reference(*args))
    assert PKG.stats()["kernel"] == len(shapes)
