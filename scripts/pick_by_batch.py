"""From an eval record of configuration variants (scripts/config_variants.py), write a solution whose
CONFIG["BY_BATCH"] gives each workload's batch the fastest PASSED variant's (BV, num_warps).

    python3 scripts/pick_by_batch.py SWEEP.json tasks/gdn_decode/candidates/triton_decode_bybatch.py OUT.py
    python3 scripts/pick_by_batch.py SWEEP.json tasks/gdn_decode/candidates/triton_decode_knobs.py OUT.py \
        --keys BV,num_warps,STATE_FIRST,EVICT_LOAD,EVICT_STORE,GRID_1D

Without --keys a row is [largest batch, BV, num_warps]; with it, [largest batch, {key: value}] for the
keys named (the base file's _pick must read that form, as triton_decode_knobs.py does).

The variants' CONFIGs are read from the files the record names (`path`), so run it where the sweep ran.
The choice is made on the sweep's medians; judge the written file in a separate evaluation (another seed,
its own timing), so that the pick's luck among near-equal variants is not what gets reported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelcraft.agent.tuner import config_of, with_config  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    keys: list[str] | None = None
    if "--keys" in args:
        i = args.index("--keys")
        if i + 1 >= len(args):
            sys.exit("--keys needs a comma-separated list of CONFIG keys")
        keys = [k for k in args[i + 1].split(",") if k]
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    record, base, out = (Path(a) for a in args)
    need = keys or ["BV", "num_warps"]
    rec = json.loads(record.read_text())
    best: dict[int, tuple[float, str, dict]] = {}
    for s in rec["solutions"]:
        if s.get("status") != "PASSED" or s.get("role") not in (None, "candidate") or not s.get("path"):
            continue
        path = Path(s["path"])
        if not path.exists():
            continue
        cfg = config_of(path.read_text()) or {}
        if any(k not in cfg for k in need):
            continue
        for w in s["workloads"]:
            batch, ms = w["axes"].get("batch_size"), w.get("latency_ms")
            if batch is None or ms is None:
                continue
            if batch not in best or ms < best[batch][0]:
                best[batch] = (ms, s["name"], cfg)
    if not best:
        sys.exit(f"{record}: no PASSED variant with a latency per batch_size (and its file still present)")
    if keys:
        rows = [[b, {k: best[b][2][k] for k in keys}] for b in sorted(best)]
    else:
        rows = [[b, best[b][2]["BV"], best[b][2]["num_warps"]] for b in sorted(best)]
    for b in sorted(best):
        ms, name, cfg = best[b]
        print(f"batch {b}: {name} " + " ".join(f"{k} {cfg[k]}" for k in need) + f" {ms:.4f} ms")
    text = base.read_text()
    cfg = config_of(text)
    if cfg is None:
        sys.exit(f"{base}: no module-level CONFIG dict literal to write BY_BATCH into")
    big = best[max(best)][2]  # past the largest batch measured: the largest batch's choice
    out.write_text(with_config(text, {**cfg, **{k: big[k] for k in need}, "BY_BATCH": rows}))
    print(f"wrote {out}: BY_BATCH {rows}")


if __name__ == "__main__":
    main()
