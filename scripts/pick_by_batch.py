"""From an eval record of configuration variants (scripts/config_variants.py), write a solution whose
CONFIG["BY_BATCH"] gives each workload's batch the fastest PASSED variant's (BV, num_warps).

    python3 scripts/pick_by_batch.py SWEEP.json tasks/gdn_decode/candidates/triton_decode_bybatch.py OUT.py

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
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    record, base, out = (Path(a) for a in sys.argv[1:])
    rec = json.loads(record.read_text())
    best: dict[int, tuple[float, str, dict]] = {}
    for s in rec["solutions"]:
        if s.get("status") != "PASSED" or s.get("role") not in (None, "candidate") or not s.get("path"):
            continue
        path = Path(s["path"])
        if not path.exists():
            continue
        cfg = config_of(path.read_text()) or {}
        if "BV" not in cfg or "num_warps" not in cfg:
            continue
        for w in s["workloads"]:
            batch, ms = w["axes"].get("batch_size"), w.get("latency_ms")
            if batch is None or ms is None:
                continue
            if batch not in best or ms < best[batch][0]:
                best[batch] = (ms, s["name"], cfg)
    if not best:
        sys.exit(f"{record}: no PASSED variant with a latency per batch_size (and its file still present)")
    rows = [[b, best[b][2]["BV"], best[b][2]["num_warps"]] for b in sorted(best)]
    for b in sorted(best):
        ms, name, cfg = best[b]
        print(f"batch {b}: {name} BV {cfg['BV']} num_warps {cfg['num_warps']} {ms:.4f} ms")
    text = base.read_text()
    cfg = config_of(text)
    if cfg is None:
        sys.exit(f"{base}: no module-level CONFIG dict literal to write BY_BATCH into")
    big = best[max(best)][2]  # past the largest batch measured: the largest batch's choice
    out.write_text(with_config(text, {**cfg, "BV": big["BV"], "num_warps": big["num_warps"], "BY_BATCH": rows}))
    print(f"wrote {out}: BY_BATCH {rows}")


if __name__ == "__main__":
    main()
