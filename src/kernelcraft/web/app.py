"""The FastAPI application behind ``kernelcraft serve``: pages (Jinja2, no JavaScript needed) and a
JSON API under ``/api`` (OpenAPI at ``/api/openapi.json``, browsable at ``/api/docs``: a page
rendered here from the schema, :mod:`kernelcraft.web.apidocs`, not Swagger UI from a CDN)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelcraft import __version__
from kernelcraft.ledger.store import Ledger
from kernelcraft.web import auth
from kernelcraft.web.limits import BodyLimit
from kernelcraft.web.models import Account
from kernelcraft.web.service import ServiceError, state_label

HERE = Path(__file__).resolve().parent
FORM_OVERHEAD = 64 << 10  # multipart boundaries and the other form fields, beside the zip itself


@dataclass
class Settings:
    db_url: str | None = None  # SQLAlchemy URL; None: KERNELCRAFT_DB, else .kernelcraft/ledger.db
    max_upload_mb: float = 2.0  # a task-folder zip larger than this is refused (413) before it is read
    maintainers: list[str] = field(default_factory=list)  # existing accounts given the maintainer role
    reports_dir: Path | None = None  # <name>.html here is shown as the report of task <name>
    secret: bytes | None = None  # signs CSRF tokens; None: KERNELCRAFT_SECRET, else random per process
    secure_cookies: bool = False  # set behind HTTPS

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * (1 << 20))


class CsrfError(Exception):
    pass


def db(request: Request) -> Iterator[Session]:
    """One session per request; handlers commit on success, anything else is rolled back."""
    with request.app.state.ledger.session() as s:
        yield s


def current_account(request: Request, s: Session = Depends(db)) -> Account | None:
    return auth.session_account(s, request.cookies.get(auth.SESSION_COOKIE))


async def check_csrf(request: Request) -> None:
    """Every state-changing request carries the CSRF token (form field or header)."""
    token = request.headers.get(auth.CSRF_HEADER)
    if token is None and request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")):
        token = (await request.form()).get(auth.CSRF_FIELD)
    if not auth.csrf_ok(request.app.state.secret, request.cookies.get(auth.CSRF_COOKIE), token):
        raise CsrfError


def render(request: Request, template: str, me: Account | None, status: int = 200, **ctx) -> HTMLResponse:
    ctx.update(me=me, csrf=auth.csrf_token(request.app.state.secret, request.state.csrf_seed))
    return request.app.state.templates.TemplateResponse(request, template, ctx, status_code=status)


def apply_maintainers(ledger: Ledger, names: list[str]) -> list[str]:
    """Give these existing accounts the maintainer role; return the names that do not exist."""
    missing = []
    with ledger.session() as s:
        for name in names:
            acct = s.scalars(select(Account).where(Account.username == name)).first()
            if acct is None:
                missing.append(name)
            else:
                acct.role = "maintainer"
        s.commit()
    return missing


def _fmt(x: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "–" if x is None else format(x, spec) + suffix


def create_app(settings: Settings | None = None, ledger: Ledger | None = None) -> FastAPI:
    import os

    settings = settings or Settings()
    ledger = ledger or Ledger(settings.db_url)  # opening the ledger migrates it (see ledger/migrations)
    app = FastAPI(
        title="kernelcraft", version=__version__, docs_url=None, redoc_url=None,
        openapi_url="/api/openapi.json",
        description="Kernel wishlist and leaderboard: request kernels as task folders, vote, and read "
                    "verified results. State-changing calls need the session cookie (POST /api/session) "
                    "and the header X-CSRF-Token (GET /api/csrf).",
    )
    app.state.ledger = ledger
    app.state.settings = settings
    env_secret = os.environ.get("KERNELCRAFT_SECRET")
    app.state.secret = settings.secret or (env_secret.encode() if env_secret else secrets.token_bytes(32))
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(state_label=state_label, fmt=_fmt, version=__version__)
    app.state.templates = templates
    app.state.missing_maintainers = apply_maintainers(ledger, settings.maintainers)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def _csrf_cookie_and_headers(request: Request, call_next):
        seed = request.cookies.get(auth.CSRF_COOKIE)
        fresh = not seed or len(seed) > 64
        request.state.csrf_seed = auth.new_csrf_seed() if fresh else seed
        response = await call_next(request)
        if fresh:
            response.set_cookie(auth.CSRF_COOKIE, request.state.csrf_seed, httponly=True, samesite="lax",
                                secure=settings.secure_cookies)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "frame-ancestors 'none'; form-action 'self'")
        return response

    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes + FORM_OVERHEAD)

    def _error(request: Request, status: int, title: str, message: str):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=status)
        with ledger.session() as s:
            me = auth.session_account(s, request.cookies.get(auth.SESSION_COOKIE))
            return render(request, "error.html", me, status=status, title=title, message=message)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError):
        titles = {401: "Sign in first", 403: "Not allowed", 404: "Not found", 409: "Already done"}
        return _error(request, exc.status, titles.get(exc.status, "Cannot do that"), exc.message)

    @app.exception_handler(CsrfError)
    async def _csrf_error(request: Request, exc: CsrfError):
        if request.url.path.startswith("/api/"):  # a program, not a person with a page to reload
            return _error(request, 403, "", (
                "missing or wrong X-CSRF-Token header; nothing was changed. GET /api/csrf returns csrf_token and "
                "sets the kc_csrf cookie it is bound to: send that token as the X-CSRF-Token header, with the "
                "cookies of the same client, on every POST, PUT and DELETE"))
        return _error(request, 403, "Form not accepted",
                      "This form did not come from this site, or it has expired (missing or wrong CSRF token). "
                      "Nothing was changed. Reload the page and try again.")

    @app.get("/api/docs", include_in_schema=False, response_class=HTMLResponse)
    def _api_docs(request: Request, s: Session = Depends(db)) -> HTMLResponse:
        from kernelcraft.web import apidocs

        spec = app.openapi()
        return render(request, "api_docs.html", auth.session_account(s, request.cookies.get(auth.SESSION_COOKIE)),
                      nav="api", ops=apidocs.operations(spec), schemas=apidocs.schemas(spec), openapi_url=app.openapi_url,
                      openapi_version=spec.get("openapi", ""), description=spec["info"].get("description", ""))

    from kernelcraft.web import api, pages

    app.include_router(pages.router)
    app.include_router(api.router)
    return app
