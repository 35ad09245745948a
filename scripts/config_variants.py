"""Write configuration variants of a tunable solution (its module-level CONFIG dict replaced, as the
tuner agent does: kernelcraft.agent.tuner.with_config), one file each, for one `kernelcraft eval` of them
all: every variant is then checked on the same seed's inputs, so a slow reference runs once per input
(gauntlet/refcache.py), not once per variant.

    python3 scripts/config_variants.py tasks/gdn_prefill/solutions/triton_chunk.py /tmp/variants \\
        '{"SCAN_STAGES": 1}' '{"SCAN_STAGES": 1, "BV": 32}' '{"PREP_WARPS": 4}'

Each argument after the folder is a JSON object merged into the solution's CONFIG; the files are named
<stem>_v<i>.py, and a line per file says what it holds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelcraft.agent.tuner import config_of, with_config  # noqa: E402


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    text = src.read_text()
    config = config_of(text)
    if config is None:
        sys.exit(f"{src}: no module-level CONFIG dict literal")
    dest.mkdir(parents=True, exist_ok=True)
    for i, raw in enumerate(sys.argv[3:]):
        change = json.loads(raw)
        unknown = set(change) - set(config)
        if unknown:
            sys.exit(f"{src}: CONFIG has no {sorted(unknown)} (it has {sorted(config)})")
        f = dest / f"{src.stem}_v{i}.py"
        f.write_text(with_config(text, {**config, **change}))
        print(f"{f}: CONFIG {dict(config, **change)}")


if __name__ == "__main__":
    main()
