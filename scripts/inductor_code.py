"""The Triton code static torch.compile generates for a task's reference at some of its workloads: what the best
peer runs where it is torch.compile (fused_add_rmsnorm at >= 167 MB and gelu_tanh_mul at 1-16 tokens on the H200,
session 23), for a kernel designer to read. Needs a GPU (Inductor's Triton backend); writes nothing under tasks/.

    python3 scripts/inductor_code.py tasks/fused_add_rmsnorm --axes num_tokens=16384,hidden_size=4096 \
        --out $OUT/inductor/fused_add_rmsnorm

Compiles the reference as the torch.compile row does (dynamic=False, outputs cast to the declared dtypes), runs it
once per named workload, and copies every generated module that holds a ``@triton.jit`` kernel into ``--out``
(Inductor's cache is pointed at a fresh folder first), with ``index.txt`` naming each file's kernels, and the
autotuner's ``*.best_config`` picks (which of a reduction's configs won on this GPU).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("--axes", action="append", required=True, help="k=v,k=v of one workload (repeatable)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="kc_inductor_"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)  # before torch._inductor reads it
    import torch

    from kernelcraft.task.dtypes import torch_dtype
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task
    from kernelcraft.worker.child import _import_file, compiled_reference

    task = load_task(args.task)
    ref_file = cache / "kc_reference.py"
    ref_file.write_text(task.definition.reference)
    reference = _import_file(ref_file, "kc_reference").run
    dtypes = [torch_dtype(s.dtype) for s in task.definition.outputs.values()]
    fn, info = compiled_reference(reference, dtypes, {})
    for spec in args.axes:
        want = {k: int(v) for k, v in (p.split("=") for p in spec.split(","))}
        hits = [w for w in task.workloads if all(w.axes.get(k) == v for k, v in want.items())]
        if not hits:
            print(f"no workload of {args.task} has {want}", file=sys.stderr)
            return 2
        inputs = make_inputs(task, hits[0], 1, args.device)
        fn(*inputs)
        torch.cuda.synchronize() if args.device.startswith("cuda") else None
        print(f"compiled {want}")
    args.out.mkdir(parents=True, exist_ok=True)
    index = []
    for f in sorted(cache.rglob("*.py")):
        text = f.read_text(errors="replace")
        if "@triton.jit" not in text:
            continue
        kernels = re.findall(r"^def (triton_\w+)\(", text, flags=re.M)
        shutil.copy(f, args.out / f.name)
        index.append(f"{f.name}: {', '.join(kernels)}")
    for f in sorted(cache.rglob("*.best_config")):  # the autotuner's pick among the module's configs
        shutil.copy(f, args.out / f.name)
        index.append(f"{f.name}: {f.read_text(errors='replace').strip()[:300]}")
    (args.out / "index.txt").write_text("\n".join(index) + "\n" + f"torch {info['version']}\n")
    print("\n".join(index))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
