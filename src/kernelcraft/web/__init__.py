"""``kernelcraft serve``: the kernel wishlist (request kernels as task folders, vote) and the
leaderboards of verified results, on the ledger's database. See :mod:`kernelcraft.web.app`."""

from kernelcraft.web.app import Settings, create_app

__all__ = ["Settings", "create_app", "serve"]


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, import_results=()) -> None:
    from kernelcraft.web.server import serve as _serve

    _serve(settings, host, port, list(import_results))
