"""``--format hf-kernels``: the layout Hugging Face's ``kernels`` library loads.

Layout written to DEST (``kernels.get_local_kernel(DEST)`` loads it; a Hub kernel repository has
the same shape)::

    build.toml                       kernel-builder configuration (edition 5): name, backends, noarch torch
    torch-ext/<module>/...           the Python package, as kernel-builder's sources would hold it
    build/torch-<backend>/           the build variant `kernels` resolves for this machine's backend:
        __init__.py ... metadata.json   the same package plus the variant's metadata.json
    README.md                        provenance and the validated envelope
    kernelcraft.json                 the export's metadata (the evaluation is in the package)

The variant is a *noarch* torch variant (``torch-cuda`` or ``torch-cpu``, the backend the kernel was
validated on): its Python runs on any torch version, and a CUDA kernel's sources are compiled by
torch's extension builder on first use, for the device's own architecture, instead of shipping a
binary per torch/CUDA version (kernel-builder's arch variants, built with Nix). ``metadata.json``
declares the validated compute capability, so ``kernels`` itself refuses the variant on another GPU
architecture.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelcraft.export._package import identifier, write_package
from kernelcraft.review.candidate import Resolved


def kernel_name(r: Resolved) -> str:
    # kernels: ^[a-z][-a-z0-9]*[a-z0-9]$
    return ("kc-" + identifier(r.task.definition.name).replace("_", "-")).strip("-")


def export_hf_kernels(r: Resolved, dest: Path, name: str | None = None, license: str = "apache-2.0",
                      exact_shapes: bool = False) -> dict:
    kname = identifier(name).replace("_", "-") if name else kernel_name(r)
    module = kname.replace("-", "_")
    backend = "cuda" if r.report.device.startswith("cuda") else "cpu"
    namespace = f"kchf_{r.solution.source_hash[:10]}"
    src_pkg = dest / "torch-ext" / module
    meta = write_package(r, src_pkg, namespace, exact_shapes, with_tests=False)
    variant = dest / "build" / f"torch-{backend}"
    shutil.copytree(src_pkg, variant)
    backend_meta: dict = {"type": backend}
    cc = meta["envelope"].get("compute_capability")
    if backend == "cuda" and cc:
        backend_meta["archs"] = [cc]
    (variant / "metadata.json").write_text(json.dumps({
        "name": kname,
        "id": f"_{module}_{backend}_{r.solution.source_hash[:10]}",
        "version": 1,
        "license": license,
        "python-depends": [],
        "backend": backend_meta,
    }, indent=2) + "\n")
    (dest / "build.toml").write_text(f"""[general]
edition = 5
name = "{kname}"
version = 1
license = "{license}"
backends = ["{backend}"]

# Python only at build time: the kernel's sources travel in the package (torch-ext/{module}/_solution)
# and, for CUDA, are compiled on first use for the device they run on.
[torch-noarch]
""")
    (dest / "kernelcraft.json").write_text(json.dumps(meta, indent=2) + "\n")
    env = meta["envelope"]
    (dest / "README.md").write_text(f"""# {kname}

`{r.solution.name}` ({r.solution.spec.language}) for `{r.task.definition.name}`, exported by
`kernelcraft export --format hf-kernels` from {meta['provenance']['evidence']}.

```python
from pathlib import Path
from kernels import get_local_kernel

k = get_local_kernel(Path("{dest.name}"))   # or get_kernel("ORG/{kname}", version=1) once on the Hub
out = k.op(*inputs)                           # torch.ops.{namespace}.{meta['op_name']}
print(k.stats())                              # kernel calls vs reference fallbacks
```

Validated on {env['device_type']} ({env['hardware']}) for {', '.join(f'{a} {d}' for a, d in env['dtypes'].items())},
var axes {json.dumps({a: [x['min'], x['max']] for a, x in env['var_axes'].items()})},
fixed axes {json.dumps(env['const_axes'])}. Outside that the op runs the definition's reference and
says so once in the log. Provenance: `kernelcraft.json` and `build/torch-{backend}/evaluation.json`.
""")
    return {"format": "hf-kernels", "dest": str(dest), "kernel": kname, "variant": str(variant),
            "op": f"torch.ops.{namespace}.{meta['op_name']}", "envelope": env}
