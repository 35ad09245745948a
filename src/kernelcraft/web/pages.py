"""Server-rendered pages. Every form posts with its CSRF token; a refused action renders a page that
says why and that nothing changed, with the HTTP status to match."""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelcraft.errors import InputError
from kernelcraft.ledger.store import Candidate, Run, TaskRow
from kernelcraft.web import auth, leaderboard, service, taskview
from kernelcraft.web.app import check_csrf, current_account, db, render
from kernelcraft.web.limits import too_large
from kernelcraft.web.models import STATES, Account, EvalReportRow, WishRequest
from kernelcraft.web.plot import best_so_far_svg, dag_tree
from kernelcraft.web.upload import FILE_FIELDS, FORM_FILES, check_folder, extract_zip, folder_from_form

router = APIRouter(include_in_schema=False)


def _back(request: Request, default: str) -> str:
    # Only same-site paths: never redirect to a URL another site put in the Referer.
    ref = request.headers.get("referer", "")
    base = str(request.base_url)
    return "/" + ref[len(base):] if ref.startswith(base) else default


@router.get("/healthz")
def healthz() -> Response:
    return Response("ok", media_type="text/plain")


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/wishlist", status_code=303)


# --- accounts -------------------------------------------------------------------------------------

def _next(request: Request) -> str:
    """Where to go after signing in: a path on this site only (never //host or a full URL)."""
    target = request.query_params.get("next", "")
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/wishlist"


@router.get("/signup")
def signup_page(request: Request, me: Account | None = Depends(current_account)):
    return render(request, "account.html", me, mode="signup", errors={}, username="", next=_next(request))


@router.get("/signin")
def signin_page(request: Request, me: Account | None = Depends(current_account)):
    return render(request, "account.html", me, mode="signin", errors={}, username="", next=_next(request))


def _signed_in(request: Request, s: Session, acct: Account, status: int = 303) -> RedirectResponse:
    auth.end_session(s, request.cookies.get(auth.SESSION_COOKIE))  # a client holds one session
    token = auth.start_session(s, acct)
    s.commit()
    resp = RedirectResponse(_next(request), status_code=status)
    resp.set_cookie(auth.SESSION_COOKIE, token, max_age=auth.SESSION_DAYS * 86400, httponly=True, samesite="lax",
                    secure=request.app.state.settings.secure_cookies)
    return resp


@router.post("/signup", dependencies=[Depends(check_csrf)])
def signup(request: Request, username: str = Form(""), password: str = Form(""), s: Session = Depends(db)):
    try:
        acct = auth.create_account(s, username.strip(), password)
    except auth.AuthError as e:
        return render(request, "account.html", None, status=400, mode="signup", errors={e.field: str(e)},
                      username=username, next=_next(request))
    return _signed_in(request, s, acct)


@router.post("/signin", dependencies=[Depends(check_csrf)])
def signin(request: Request, username: str = Form(""), password: str = Form(""), s: Session = Depends(db)):
    try:
        acct = auth.authenticate(s, username.strip(), password)
    except auth.AuthError as e:
        return render(request, "account.html", None, status=401, mode="signin", errors={e.field: str(e)},
                      username=username, next=_next(request))
    return _signed_in(request, s, acct)


@router.post("/signout", dependencies=[Depends(check_csrf)])
def signout(request: Request, s: Session = Depends(db)):
    auth.end_session(s, request.cookies.get(auth.SESSION_COOKIE))
    s.commit()
    resp = RedirectResponse("/wishlist", status_code=303)
    resp.delete_cookie(auth.SESSION_COOKIE)
    return resp


# --- wishlist -------------------------------------------------------------------------------------

@router.get("/wishlist")
def wishlist(request: Request, state: str | None = None, me: Account | None = Depends(current_account),
             s: Session = Depends(db)):
    state = state if state in STATES else None
    return render(request, "wishlist.html", me, items=service.listing(s, me, state), state=state, states=STATES)


@router.get("/wishlist/new")
def new_request(request: Request, me: Account | None = Depends(current_account)):
    return render(request, "submit.html", me, errors={}, zip_errors=[], values={})


def _field_errors(e: InputError) -> dict[str, list[str]]:
    """Problems grouped by the form field whose file they name ("other" for the rest)."""
    out: dict[str, list[str]] = {}
    for p in e.problems:
        file = str(p.path).split(" line ")[0]
        where = f"{p.path}" + (f", field '{p.field}'" if p.field else "")
        text = f"{where}: {p.problem}" + (f" (fix: {p.fix})" if p.fix else "")
        out.setdefault(FILE_FIELDS.get(file, "other"), []).append(text)
    return out


def _store(request: Request, s: Session, me: Account | None, folder: Path, values: dict, from_zip: bool):
    try:
        checked = check_folder(folder)
    except InputError as e:
        errors = _field_errors(e)
        zip_errors = [m for ms in errors.values() for m in ms] if from_zip else []
        return render(request, "submit.html", me, status=400, errors={} if from_zip else errors,
                      zip_errors=zip_errors, values=values)
    r = service.submit(s, me, checked)
    s.commit()
    return RedirectResponse(f"/wishlist/{r.id}", status_code=303)


@router.post("/wishlist/upload", dependencies=[Depends(check_csrf)])
async def upload(request: Request, file: UploadFile = File(...), me: Account | None = Depends(current_account),
                 s: Session = Depends(db)):
    service.need_account(me, "submit a request")
    limit = request.app.state.settings.max_upload_bytes
    data = await file.read(limit + 1)
    if len(data) > limit:
        return render(request, "submit.html", me, status=413, errors={}, values={}, zip_errors=[too_large(limit)])
    with tempfile.TemporaryDirectory(prefix="kc_upload_") as tmp:
        try:
            folder = extract_zip(data, Path(tmp))
        except InputError as e:
            return render(request, "submit.html", me, status=400, errors={}, values={},
                          zip_errors=[str(p) for p in e.problems])
        return _store(request, s, me, folder, {}, from_zip=True)


@router.post("/wishlist/form", dependencies=[Depends(check_csrf)])
async def submit_form(request: Request, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    service.need_account(me, "submit a request")
    form = await request.form()
    values = {k: str(form.get(k) or "") for k in FORM_FILES}
    with tempfile.TemporaryDirectory(prefix="kc_form_") as tmp:
        return _store(request, s, me, folder_from_form(values, Path(tmp)), values, from_zip=False)


@router.get("/wishlist/{request_id}")
def request_page(request: Request, request_id: int, me: Account | None = Depends(current_account),
                 s: Session = Depends(db)):
    item = service.get(s, request_id, me)
    r = item.request
    view = taskview.build(r.definition, r.workloads, r.contract, r.readme, f"wishlist request {r.id}")
    has_task = s.scalar(select(TaskRow.id).where(TaskRow.name == r.name)) is not None or s.scalar(
        select(EvalReportRow.id).where(EvalReportRow.task == r.name)) is not None
    return render(request, "request.html", me, item=item, view=view, states=STATES, has_task=has_task,
                  task_url=f"/tasks/{quote(r.name, safe='')}")


@router.get("/wishlist/{request_id}/task.zip")
def request_zip(request_id: int, s: Session = Depends(db)) -> Response:
    r = service.get(s, request_id).request
    return Response(r.archive, media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{quote(r.name)}.zip"'})


@router.post("/wishlist/{request_id}/vote", dependencies=[Depends(check_csrf)])
def vote(request: Request, request_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    service.vote(s, me, request_id)
    s.commit()
    return RedirectResponse(_back(request, f"/wishlist/{request_id}"), status_code=303)


@router.post("/wishlist/{request_id}/unvote", dependencies=[Depends(check_csrf)])
def unvote(request: Request, request_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    service.unvote(s, me, request_id)
    s.commit()
    return RedirectResponse(_back(request, f"/wishlist/{request_id}"), status_code=303)


@router.post("/wishlist/{request_id}/state", dependencies=[Depends(check_csrf)])
def change_state(request: Request, request_id: int, state: str = Form(""), me: Account | None = Depends(current_account),
                 s: Session = Depends(db)):
    service.set_state(s, me, request_id, state)
    s.commit()
    return RedirectResponse(f"/wishlist/{request_id}", status_code=303)


# --- tasks, runs, records -------------------------------------------------------------------------

def task_names(s: Session) -> list[str]:
    names = set(s.scalars(select(TaskRow.name))) | set(s.scalars(select(EvalReportRow.task)))
    return sorted(names)


@router.get("/tasks")
def tasks(request: Request, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    rows = []
    for name in task_names(s):
        bs = leaderboard.boards(s, name)
        rows.append((name, [(b, leaderboard.best(b)) for b in bs]))
    return render(request, "tasks.html", me, rows=rows)


def task_view(s: Session, name: str) -> taskview.TaskView | None:
    row = s.scalars(select(TaskRow).where(TaskRow.name == name)).first()
    if row is not None and Path(row.root).is_dir():
        view = taskview.from_folder(Path(row.root))
        if view is not None and view.name == name:
            return view
    req = s.scalars(select(WishRequest).where(WishRequest.name == name)).first()
    if req is not None:
        return taskview.build(req.definition, req.workloads, req.contract, req.readme, f"wishlist request {req.id}")
    if row is not None:
        return taskview.build(row.definition, None, None, "", "the ledger (the task folder is not on this server)")
    return None


def report_path(request: Request, name: str) -> Path | None:
    d = request.app.state.settings.reports_dir
    p = (d / f"{name}.html") if d else None
    return p if p is not None and p.is_file() and p.resolve().parent == d.resolve() else None


@router.get("/tasks/{name}")
def task_page(request: Request, name: str, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    view = task_view(s, name)
    boards = leaderboard.boards(s, name)
    if view is None and not boards:
        raise service.ServiceError(404, f"No task {name!r} in this ledger.")
    runs = list(s.scalars(select(Run).join(TaskRow).where(TaskRow.name == name).order_by(Run.id.desc())))
    req = s.scalars(select(WishRequest).where(WishRequest.name == name)).first()
    return render(request, "task.html", me, name=name, view=view, boards=boards, runs=runs, wish=req,
                  report=report_path(request, name) is not None)


@router.get("/tasks/{name}/report")
def task_report(request: Request, name: str) -> FileResponse:
    p = report_path(request, name)
    if p is None:
        raise service.ServiceError(404, f"No report for {name!r} (kernelcraft serve --reports DIR).")
    # The report is a generated file; sandboxed, it cannot act on this site's cookies or forms.
    return FileResponse(p, media_type="text/html", headers={"Content-Security-Policy": "sandbox"})


@router.get("/runs")
def runs(request: Request, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    rows = list(s.scalars(select(Run).order_by(Run.id.desc()).limit(500)))
    return render(request, "runs.html", me, runs=rows)


@router.get("/runs/{run_id}")
def run_page(request: Request, run_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    run = s.get(Run, run_id)
    if run is None:
        raise service.ServiceError(404, f"No run {run_id} in this ledger.")
    cands = list(s.scalars(select(Candidate).where(Candidate.run_id == run_id).order_by(Candidate.id)))
    return render(request, "run.html", me, run=run, cands=cands, tree=dag_tree(cands, run.promoted_id),
                  plot=best_so_far_svg(cands))


@router.get("/records/{kind}/{record_id}")
def record_page(request: Request, kind: str, record_id: int, me: Account | None = Depends(current_account),
                s: Session = Depends(db)):
    import json

    if kind == "report":
        row = s.get(EvalReportRow, record_id)
        record, origin = (row.record, row.source) if row else (None, "")
    elif kind == "candidate":
        row = s.get(Candidate, record_id)
        record, origin = ((row.evaluation, f"run {row.run_id}, candidate {row.id}") if row and row.evaluation
                          else (None, ""))
    else:
        record = None
    if record is None:
        raise service.ServiceError(404, f"No {kind} record {record_id}.")
    return render(request, "record.html", me, kind=kind, record_id=record_id, record=record, origin=origin,
                  pretty=json.dumps(record, indent=2, sort_keys=False))
