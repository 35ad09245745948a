"""``--format torch-op``: an installable Python package registering a ``torch.library`` custom op.

Layout written to DEST::

    pyproject.toml                 for `pip install DEST` where setuptools is at hand
    README.md                      what it is, where it was validated, how to use and test it
    src/<package>/                 __init__.py, _runtime.py, _reference.py, _solution/,
                                   kernelcraft_export.json, evaluation.json, tests/
    dist/<package>-<ver>-py3-none-any.whl   the same package as a wheel: `pip install --no-index
                                   --no-deps` installs it offline into any environment with torch

The package needs torch (and triton for a Triton kernel); CUDA sources are built on first use on the
validated device with torch's extension builder (nvcc must be on PATH there).
"""

from __future__ import annotations

from pathlib import Path

from kernelcraft.export._package import identifier, write_package
from kernelcraft.export._wheel import build_wheel
from kernelcraft.review.candidate import Resolved


def package_name(r: Resolved) -> str:
    return "kc_" + identifier(r.task.definition.name)


def readme(r: Resolved, pkg: str, meta: dict, wheel_name: str) -> str:
    env, v = meta["envelope"], meta["verdict"]
    var = "; ".join(f"{a} in [{x['min']}, {x['max']}]" for a, x in env["var_axes"].items()) or "no var axes"
    const = ", ".join(f"{k}={val}" for k, val in env["const_axes"].items()) or "none"
    where = env["hardware"] + (f" (compute capability {env['compute_capability']})" if env["compute_capability"] else "")
    speed = f"{v['speedup_vs_baseline']:.3f}" if v["speedup_vs_baseline"] else "-"
    return f"""# {pkg}

`{r.solution.name}` ({r.solution.spec.language}) for the task `{r.task.definition.name}`, exported by
`kernelcraft export` from {meta['provenance']['evidence']}.

It registers the custom op `torch.ops.{meta['namespace']}.{meta['op_name']}` (`{pkg}.op`), schema
`{meta['op_name']}{_schema(meta)}`. The op runs the kernel only where the gauntlet validated it and the
definition's reference everywhere else, saying why once in the log (`logging.getLogger("{pkg}")`);
`{pkg}.stats()` counts both paths. Its fake implementation makes it work under
`torch.compile(fullgraph=True)`.

## Validated envelope (from `evaluation.json`)

- device: {env['device_type']}, {where}
- dtypes: {', '.join(f'{k} {d}' for k, d in env['dtypes'].items())}; contiguous inputs
- fixed axes: {const}; var axes: {var}{' (exact values only)' if meta['exact_shapes'] else ''}
- verdict: {v['status']}, x baseline {speed} (geometric mean), evaluated {meta['provenance']['evaluated_at']}
  with seed {meta['provenance']['seed']}, {meta['provenance']['harness_version']}

## Install and test

```bash
pip install --no-index --no-deps dist/{wheel_name}   # offline; needs torch{' and triton' if r.solution.spec.language == 'triton' else ''}
python -m pytest --pyargs {pkg}.tests                # the shipped tests: kernel vs reference, fallback, opcheck, compile
```

```python
import {pkg}
out = {pkg}.op(*inputs)                              # inputs in the definition's order
print({pkg}.stats())                                 # {{'kernel': ..., 'fallback': ..., 'fallback_reasons': ...}}
```
"""


def _schema(meta: dict) -> str:
    from kernelcraft.export._runtime import schema

    return schema(meta["definition"])


def export_torch_op(r: Resolved, dest: Path, name: str | None = None, exact_shapes: bool = False) -> dict:
    pkg = identifier(name) if name else package_name(r)
    namespace = f"kcx_{r.solution.source_hash[:10]}"
    meta = write_package(r, dest / "src" / pkg, namespace, exact_shapes, with_tests=True)
    version = f"0.1.0+{r.solution.source_hash[:12]}"
    dist = pkg.replace("_", "-")
    requires = ["torch"] + (["triton"] if r.solution.spec.language == "triton" else [])
    summary = f"{r.solution.name} for {r.task.definition.name} (kernelcraft export)"
    wheel_name = f"{pkg}-{version}-py3-none-any.whl"
    text = readme(r, pkg, meta, wheel_name)
    (dest / "README.md").write_text(text)
    deps = ", ".join(f'"{x}"' for x in requires)
    (dest / "pyproject.toml").write_text(f"""[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
description = "{summary}"
readme = "README.md"
requires-python = ">=3.10"
dependencies = [{deps}]

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
"*" = ["*.json", "_solution/**/*"]
""")
    wheel = build_wheel(dest / "src" / pkg, dist, version, summary, requires, dest / "dist", readme=text)
    return {"format": "torch-op", "dest": str(dest), "package": pkg, "op": f"torch.ops.{namespace}.{meta['op_name']}",
            "wheel": str(wheel), "envelope": meta["envelope"]}
