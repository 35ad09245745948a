"""A hard cap on request bodies, enforced before anything parses them.

A ``Content-Length`` over the cap is refused at once with 413; a body without one (chunked) is
read here first, counted, refused when it passes the cap, and replayed to the app otherwise. Either way the handler never runs, so an oversized
upload changes nothing. HTML clients get a page that says what happened, API clients JSON.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def too_large(limit_bytes: int) -> str:
    return (f"The upload is larger than this server accepts ({limit_bytes / (1 << 20):.2g} MiB). Nothing was "
            "stored. Leave large files (e.g. safetensors inputs) out of the task folder, or ask the operator "
            "to start `kernelcraft serve` with a larger --max-upload-mb.")


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return too_large(self.max_bytes)

    async def _reject(self, scope: Scope, send: Send) -> None:
        wants_json = scope["path"].startswith("/api/")
        msg = self._message()
        if wants_json:
            body = json.dumps({"detail": msg}).encode()
            ctype = b"application/json"
        else:
            body = (f"<!doctype html><title>Upload too large</title><link rel=stylesheet href=/static/style.css>"
                    f"<main class=narrow><h1>Upload too large</h1><p class=error>{msg}</p>"
                    f"<p><a href=\"javascript:history.back()\">Back</a></p></main>").encode()
            ctype = b"text/html; charset=utf-8"
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = True
                if too_big:
                    await self._reject(scope, send)
                else:  # the HTTP server delivers no more than Content-Length
                    await self.app(scope, receive, send)
                return
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        # No usable Content-Length (chunked): read the body here, counting, then replay it.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                await self._reject(scope, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
