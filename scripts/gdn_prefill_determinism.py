"""Are gdn_prefill solutions deterministic on a GPU? Each file's `run` three times on one workload's inputs (the task's
own, seed 5): how many output elements differ from the first call, and each file's largest difference from the last
file's output (session 25: chunk3's whole-tile `_kkt` made chunk4 / chunk5 differ in 10^4-10^5 elements between calls
on an H100; chunk2 and chunk5's KKT_MODE "blocks" did not).

    PYTHONPATH=src python3 scripts/gdn_prefill_determinism.py FILE...   (the last file is the one compared against)

Session 25 ran this same code inline (`cat > /tmp/det.py <<EOF ... EOF` in the device command, results/h100/README.md).
"""
import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from kernelcraft.task.inputs import make_inputs  # noqa: E402
from kernelcraft.task.loader import load_task  # noqa: E402

task = load_task(ROOT / "tasks" / "gdn_prefill")


def load(p, n):
    s = importlib.util.spec_from_file_location(n, p)
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
    return m


for wl_id in ("32bd0dca", "d790aa8b"):
    wl = next(x for x in task.workloads if x.uuid.startswith(wl_id))
    inp = make_inputs(task, wl, 5, "cuda")
    outs = {}
    for p in sys.argv[1:]:
        m = load(p, "m" + str(abs(hash(p))))
        o = [m.run(*inp)[0].clone() for _ in range(3)]
        torch.cuda.synchronize()
        d = [int((o[0] != o[i]).sum()) for i in (1, 2)]
        outs[p] = o[0]
        print(wl_id, p.split("/")[-1], "differs from call 1 in", d, "elements", flush=True)
    ref = outs[sys.argv[-1]]
    for p, o in outs.items():
        print(wl_id, p.split("/")[-1], "vs", sys.argv[-1].split("/")[-1], "max|diff|",
              float((o.float() - ref.float()).abs().max()), flush=True)
