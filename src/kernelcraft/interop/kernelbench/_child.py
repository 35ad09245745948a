"""The child process of one problem's conversion: ``python -m kernelcraft.interop.kernelbench._child
FILE OUT_DIR SEED DEVICE RESULT_JSON``. It touches RESULT_JSON.ready once torch and the converter are
imported (the parent's ``--timeout`` counts from there), then writes its outcome to RESULT_JSON; the
parent (:mod:`._isolate`) reads it, or turns the child's death into the reason."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    path, out_dir, seed, device, result = Path(argv[0]), Path(argv[1]), int(argv[2]), argv[3], Path(argv[4])
    out: dict = {"folder": None, "reason": "", "warnings": []}
    try:
        import torch

        torch.set_num_threads(1)
        from ._convert import _convert_problem
        from ._errors import ConversionError, _describe_error

        Path(str(result) + ".ready").touch()  # the problem's own time (--timeout) starts now
        try:
            folder, warnings = _convert_problem(path, out_dir, seed, device)
            out.update(folder=str(folder), warnings=warnings)
        except MemoryError:
            out["reason"] = "ran out of memory under the import's limit (--max-memory-mb raises it)"
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the problem's failure is its reason, nothing more
            out["reason"] = str(e) if isinstance(e, ConversionError) else _describe_error(e)
            if "can't allocate memory" in out["reason"] or "Cannot allocate memory" in out["reason"]:
                out["reason"] += (f" [out of memory on {device} under the import's limit: --max-memory-mb raises it, "
                                  "or check it on a GPU with --device cuda]")
    except BaseException as e:  # noqa: BLE001 - torch itself failed to import under the limit, or similar
        out["reason"] = f"the conversion could not start: {type(e).__name__}: {str(e)[:300]}"
    finally:
        out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        result.write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
