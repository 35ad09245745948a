"""Regenerate tests/fixtures/e2e/: three small task folders whose shapes fit the tiny Llama of the CPU
e2e tests (hidden 64, intermediate 128; 1, 2 and 16 tokens: decode 2 x 1, prefill 2 x 8), each with
its Triton solution evaluated on the CPU (Triton interpreter, correctness only) into a record that
`kernelcraft export` accepts. Run it when a solution, a definition or the record format changes:

    PYTHONPATH=src python scripts/make_e2e_fixtures.py      # ~30 s on the 2-core CI machine

The tests load the records from here instead of evaluating three tasks per session (CI time).

The two gated-delta-rule tasks (gdn_prefill's triton_chunk, gdn_decode's triton_decode: the shapes of
tests/test_e2e_gdn.py's tiny Qwen3-Next, prefill 2 x 8 tokens and decode 2 x 1) are made by
`make_gdn`, apart (their workloads carry cu_seqlens; ~2 min on the 2-core machine):

    PYTHONPATH=src python scripts/make_e2e_fixtures.py gdn_prefill gdn_decode"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "tests" / "fixtures" / "e2e"
TOKENS = (1, 2, 16)
# task -> (solution file, const axes to set, var axes per workload)
TASKS = {
    "rmsnorm": ("triton_rowwise.py", {"hidden_size": 64}, lambda n: {"batch_size": n}),
    "fused_add_rmsnorm": ("triton_rowwise.py", {}, lambda n: {"num_tokens": n, "hidden_size": 64}),
    "silu_mul": ("triton_tiled.py", {"two_i": 256, "intermediate_size": 128}, lambda n: {"num_tokens": n}),
}


def make(name: str) -> tuple[Path, Path]:
    sol, consts, axes = TASKS[name]
    out = DEST / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    src = ROOT / "tasks" / name
    for f in ("definition.json", "contract.toml", "baseline.py", "README.md"):
        shutil.copyfile(src / f, out / f)
    (out / "solutions").mkdir()
    shutil.copyfile(src / "solutions" / sol, out / "solutions" / sol)
    d = json.loads((out / "definition.json").read_text())
    for k, v in consts.items():
        d["axes"][k]["value"] = v
    d["constraints"] = [c.replace("4096", "64") if name == "rmsnorm" else c for c in d["constraints"]]
    (out / "definition.json").write_text(json.dumps(d, indent=2) + "\n")
    template = json.loads((src / "workloads.jsonl").read_text().splitlines()[0])
    lines = []
    for n in TOKENS:
        rec = json.loads(json.dumps(template))
        rec["workload"]["uuid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kernelcraft-e2e-fixture/{name}/{n}"))
        rec["workload"]["axes"] = axes(n)
        lines.append(json.dumps(rec))
    (out / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    contract = out / "contract.toml"
    text = re.sub(r"(?ms)^\[(promotion|generalization)\]\n.*?(?=^\[|\Z)", "", contract.read_text())
    contract.write_text(text + "\n[generalization]\n# the fixture's envelope is exactly the three workloads\nholdouts = 0\n")
    record = DEST / f"{name}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "eval", str(out), str(out / "solutions" / sol),
                           "--device", "cpu", "--no-timing", "--no-calibrate", "--no-peers", "--json", str(record)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0 or '"PASSED"' not in record.read_text():
        raise SystemExit(f"{name}: eval failed\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return out, record


# task -> (solution file, workloads: (axes, cu_seqlens or None))
GDN = {
    "gdn_prefill": ("triton_chunk.py", [({"total_seq_len": 16, "num_seqs": 2, "len_cu_seqlens": 3}, [0, 8, 16])]),
    "gdn_decode": ("triton_decode.py", [({"batch_size": 2}, None)]),
}


def make_gdn(name: str) -> tuple[Path, Path]:
    """A gdn task folder with only the tiny Qwen3-Next's shapes as workloads, its Triton solution
    evaluated on the CPU into a record (the definition, its constant axes included, is the task's)."""
    import torch
    from safetensors.torch import save_file

    sol, workloads = GDN[name]
    out = DEST / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    src = ROOT / "tasks" / name
    for f in ("definition.json", "contract.toml", "baseline.py", "README.md", "inputs.py"):
        if (src / f).exists():
            shutil.copyfile(src / f, out / f)
    (out / "solutions").mkdir()
    shutil.copyfile(src / "solutions" / sol, out / "solutions" / sol)
    template = json.loads((src / "workloads.jsonl").read_text().splitlines()[0])
    lines, tensors = [], {}
    for i, (axes, cu) in enumerate(workloads):
        rec = json.loads(json.dumps(template))
        rec["workload"]["uuid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kernelcraft-e2e-fixture/{name}/{i}"))
        rec["workload"]["axes"] = axes
        if cu is not None:
            key = f"e2e_{i}"
            tensors[key] = torch.tensor(cu, dtype=torch.int64)
            rec["workload"]["inputs"]["cu_seqlens"] = {"type": "safetensors", "path": "data/cu_seqlens.safetensors",
                                                       "tensor_key": key}
        lines.append(json.dumps(rec))
    if tensors:
        (out / "data").mkdir()
        save_file(tensors, str(out / "data" / "cu_seqlens.safetensors"))
    (out / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    contract = out / "contract.toml"
    text = re.sub(r"(?ms)^\[(promotion|generalization)\]\n.*?(?=^\[|\Z)", "", contract.read_text())
    contract.write_text(text + "\n[generalization]\n# the fixture's envelope is exactly its workloads\nholdouts = 0\n"
                        "stress = 0\n")
    record = DEST / f"{name}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-m", "kernelcraft", "eval", str(out), str(out / "solutions" / sol),
                           "--device", "cpu", "--no-timing", "--no-calibrate", "--no-peers", "--json", str(record)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0 or '"PASSED"' not in record.read_text():
        raise SystemExit(f"{name}: eval failed\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return out, record


if __name__ == "__main__":
    for n in sys.argv[1:] or TASKS:
        print(n, *(make_gdn(n) if n in GDN else make(n)))
