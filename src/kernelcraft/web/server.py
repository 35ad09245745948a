"""Run the app under uvicorn, after importing evaluation records if asked to."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelcraft.ledger.store import Ledger
from kernelcraft.web.app import Settings, create_app
from kernelcraft.web.results import import_paths


def serve(settings: Settings, host: str, port: int, import_results: list[Path]) -> None:
    import uvicorn

    ledger = Ledger(settings.db_url)
    if import_results:
        for got in import_paths(ledger, import_results):
            what = f"error: {got.error}" if got.error else ("imported" if got.new else "already imported")
            print(f"{got.source}: {what}", file=sys.stderr)
    app = create_app(settings, ledger)
    for name in app.state.missing_maintainers:
        print(f"--maintainer {name}: no such account yet; sign up as {name!r}, then restart with --maintainer",
              file=sys.stderr)
    print(f"kernelcraft serve: http://{host}:{port}/ on {ledger.url}", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False)
