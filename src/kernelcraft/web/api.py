"""The JSON API (``/api``), documented by its OpenAPI schema at ``/api/openapi.json``.

Reads are open. Writes need a signed-in session (``POST /api/session`` or ``/api/accounts`` set the
cookie) and the header ``X-CSRF-Token`` (``GET /api/csrf``). Errors are ``{"detail": "..."}``;
a rejected task folder adds ``problems``, one per file and field, as ``kernelcraft task check``
prints them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import APIRouter, Depends, File, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelcraft.errors import InputError
from kernelcraft.ledger.store import Candidate, Run
from kernelcraft.web import auth, leaderboard, service
from kernelcraft.web.app import check_csrf, current_account, db
from kernelcraft.web.limits import too_large
from kernelcraft.web.models import STATES, Account
from kernelcraft.web.upload import check_folder, extract_zip

router = APIRouter(prefix="/api", tags=["api"])


class Credentials(BaseModel):
    username: str = Field(examples=["alice"])
    password: str = Field(examples=["correct horse battery"])


class AccountOut(BaseModel):
    username: str
    role: str  # member or maintainer
    csrf_token: str  # send as X-CSRF-Token with every POST, PUT and DELETE


class ProblemOut(BaseModel):
    file: str  # relative to the task folder, e.g. "workloads.jsonl line 3"
    field: str  # dotted field path inside it; "" for the file as a whole
    problem: str
    fix: str


class ErrorOut(BaseModel):
    detail: str
    problems: list[ProblemOut] = []


class RequestOut(BaseModel):
    id: int
    name: str  # the definition's name
    op_type: str
    description: str
    state: str  # new, accepted, in_progress, done
    votes: int
    voted: bool  # by the signed-in account
    author: str
    created_at: str
    url: str


class RequestDetail(RequestOut):
    definition: dict
    workloads: list[dict]
    contract: str | None  # contract.toml, when the request has one
    readme: str
    baseline: str


class StateIn(BaseModel):
    state: str = Field(description="one of " + ", ".join(STATES))


class VotesOut(BaseModel):
    votes: int


class RowOut(BaseModel):
    solution: str
    label: str  # trusted rows with their implementation ("peer:liger (liger-kernel 0.8.5)")
    role: str  # candidate, or a trusted row's: baseline, torch.compile, peer
    status: str
    gate: str | None
    # the headline: x the fastest trusted row of the run (weighted geometric mean); None when the record
    # measured no peer (only the baseline, or the old harness's dynamic torch.compile): ``headline`` says so
    speedup_vs_best_peer: float | None
    headline: str
    best_peers: list[str]  # the trusted rows that were fastest at some workload
    by_workload: list[dict]  # axes, peer (None: no peer measured there), peer_ms, latency_ms, speedup
    why: str  # a trusted row that gave no figure: why (SKIPPED: the missing library and its install command)
    speedup_vs_baseline: float | None
    speedup_vs_reference: float | None
    sol: float | None  # best fraction of the device's speed of light over the workloads (calibrated records)
    promotable: bool
    date: str
    source_hash: str
    provenance: str  # the full record
    origin: str


class BoardOut(BaseModel):
    hardware: str
    device: str  # cuda or cpu (cpu-wall timings, never mixed with a GPU's)
    rows: list[RowOut]  # the candidates, ranked: x best peer where measured, then x baseline
    trusted: list[RowOut]  # what they were compared with (baseline, torch.compile, peers): never ranked
    peers_unavailable: list[str]  # "peer:NAME: why"


class TaskOut(BaseModel):
    name: str
    boards: list[BoardOut]


class ImportOut(BaseModel):
    report_id: int
    new: bool  # False: this exact record was imported before


def _out(item: service.Listed) -> RequestOut:
    r = item.request
    return RequestOut(id=r.id, name=r.name, op_type=r.op_type, description=r.description, state=r.state,
                      votes=item.votes, voted=item.voted, author=item.author, created_at=r.created_at,
                      url=f"/wishlist/{r.id}")


def _session_response(s: Session, request: Request, acct: Account, status: int) -> JSONResponse:
    auth.end_session(s, request.cookies.get(auth.SESSION_COOKIE))  # a client holds one session
    token = auth.start_session(s, acct)
    s.commit()
    body = AccountOut(username=acct.username, role=acct.role,
                      csrf_token=auth.csrf_token(request.app.state.secret, request.state.csrf_seed))
    resp = JSONResponse(body.model_dump(), status_code=status)
    resp.set_cookie(auth.SESSION_COOKIE, token, max_age=auth.SESSION_DAYS * 86400, httponly=True, samesite="lax",
                    secure=request.app.state.settings.secure_cookies)
    return resp


@router.get("/csrf", summary="The CSRF token for this client (sets the kc_csrf cookie it is bound to)")
def csrf(request: Request) -> dict:
    return {"csrf_token": auth.csrf_token(request.app.state.secret, request.state.csrf_seed)}


@router.post("/accounts", status_code=201, response_model=AccountOut, dependencies=[Depends(check_csrf)],
             responses={400: {"model": ErrorOut}}, summary="Sign up (and sign in)")
def sign_up(body: Credentials, request: Request, s: Session = Depends(db)):
    try:
        acct = auth.create_account(s, body.username.strip(), body.password)
    except auth.AuthError as e:
        return JSONResponse({"detail": f"{e.field}: {e}"}, status_code=400)
    return _session_response(s, request, acct, 201)


@router.post("/session", response_model=AccountOut, dependencies=[Depends(check_csrf)],
             responses={401: {"model": ErrorOut}}, summary="Sign in")
def sign_in(body: Credentials, request: Request, s: Session = Depends(db)):
    try:
        acct = auth.authenticate(s, body.username.strip(), body.password)
    except auth.AuthError as e:
        return JSONResponse({"detail": str(e)}, status_code=401)
    return _session_response(s, request, acct, 200)


@router.delete("/session", status_code=204, dependencies=[Depends(check_csrf)], summary="Sign out")
def sign_out(request: Request, s: Session = Depends(db)) -> Response:
    auth.end_session(s, request.cookies.get(auth.SESSION_COOKIE))
    s.commit()
    resp = Response(status_code=204)
    resp.delete_cookie(auth.SESSION_COOKIE)
    return resp


@router.get("/wishlist", response_model=list[RequestOut], summary="Requests, most votes first")
def wishlist(state: str | None = None, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    return [_out(i) for i in service.listing(s, me, state if state in STATES else None)]


@router.post("/wishlist", status_code=201, response_model=RequestOut, dependencies=[Depends(check_csrf)],
             responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 409: {"model": ErrorOut},
                        413: {"model": ErrorOut}},
             summary="Submit a request: a zip of a task folder, checked as `kernelcraft task check` does")
async def submit(request: Request, file: UploadFile = File(...), me: Account | None = Depends(current_account),
                 s: Session = Depends(db)):
    service.need_account(me, "submit a request")
    limit = request.app.state.settings.max_upload_bytes
    data = await file.read(limit + 1)
    if len(data) > limit:
        return JSONResponse({"detail": too_large(limit)}, 413)
    with tempfile.TemporaryDirectory(prefix="kc_upload_") as tmp:
        try:
            checked = check_folder(extract_zip(data, Path(tmp)))
        except InputError as e:
            problems = [ProblemOut(file=str(p.path), field=p.field, problem=p.problem, fix=p.fix) for p in e.problems]
            return JSONResponse(ErrorOut(detail="the task folder was not accepted; nothing was stored",
                                         problems=problems).model_dump(), status_code=400)
    r = service.submit(s, me, checked)
    s.commit()
    return _out(service.get(s, r.id, me))


@router.get("/wishlist/{request_id}", response_model=RequestDetail, responses={404: {"model": ErrorOut}})
def request_detail(request_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    item = service.get(s, request_id, me)
    r = item.request
    return RequestDetail(**_out(item).model_dump(), definition=r.definition, workloads=r.workloads,
                         contract=r.contract, readme=r.readme, baseline=r.baseline)


@router.get("/wishlist/{request_id}/task.zip", summary="The request's task folder, as a zip",
            response_class=Response, responses={200: {"content": {"application/zip": {}}}})
def request_zip(request_id: int, s: Session = Depends(db)) -> Response:
    r = service.get(s, request_id).request
    return Response(r.archive, media_type="application/zip")


@router.post("/wishlist/{request_id}/vote", response_model=VotesOut, dependencies=[Depends(check_csrf)],
             responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}},
             summary="Vote (once per account)")
def vote(request_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    n = service.vote(s, me, request_id)
    s.commit()
    return VotesOut(votes=n)


@router.delete("/wishlist/{request_id}/vote", response_model=VotesOut, dependencies=[Depends(check_csrf)],
               responses={401: {"model": ErrorOut}, 409: {"model": ErrorOut}}, summary="Withdraw a vote")
def unvote(request_id: int, me: Account | None = Depends(current_account), s: Session = Depends(db)):
    n = service.unvote(s, me, request_id)
    s.commit()
    return VotesOut(votes=n)


@router.put("/wishlist/{request_id}/state", response_model=RequestOut, dependencies=[Depends(check_csrf)],
            responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 403: {"model": ErrorOut}},
            summary="Change a request's state (maintainers)")
def change_state(request_id: int, body: StateIn, me: Account | None = Depends(current_account),
                 s: Session = Depends(db)):
    service.set_state(s, me, request_id, body.state)
    s.commit()
    return _out(service.get(s, request_id, me))


@router.get("/tasks", response_model=list[TaskOut], summary="Tasks with their leaderboards, one per device")
def tasks(s: Session = Depends(db)):
    from kernelcraft.web.pages import task_names

    return [_task(s, n) for n in task_names(s)]


def _task(s: Session, name: str) -> TaskOut:
    def out(r) -> RowOut:
        return RowOut(**{k: getattr(r, k) for k in RowOut.model_fields})

    return TaskOut(name=name, boards=[
        BoardOut(hardware=b.hardware, device=b.device, rows=[out(r) for r in b.rows], trusted=[out(r) for r in b.trusted],
                 peers_unavailable=b.peers_unavailable)
        for b in leaderboard.boards(s, name)])


@router.get("/tasks/{name}", response_model=TaskOut, responses={404: {"model": ErrorOut}})
def task(name: str, s: Session = Depends(db)):
    out = _task(s, name)
    if not out.boards:
        from kernelcraft.web.pages import task_view

        if task_view(s, name) is None:
            raise service.ServiceError(404, f"No task {name!r} in this ledger.")
    return out


@router.get("/runs/{run_id}", summary="A run and its candidate DAG (parent links)", responses={404: {"model": ErrorOut}})
def run(run_id: int, s: Session = Depends(db)) -> dict:
    r = s.get(Run, run_id)
    if r is None:
        raise service.ServiceError(404, f"No run {run_id} in this ledger.")
    cands = s.scalars(select(Candidate).where(Candidate.run_id == run_id).order_by(Candidate.id))
    return {"run_id": r.id, "task": r.task.name, "agent": r.agent, "device": r.device, "status": r.status,
            "promoted": r.promoted_id,
            "candidates": [{"id": c.id, "parent": c.parent_id, "agent": c.agent, "strategy": c.strategy,
                            "status": c.status, "gate": c.gate, "speedup_vs_baseline": c.speedup_vs_baseline,
                            "record": f"/records/candidate/{c.id}" if c.evaluation else None} for c in cands]}


@router.post("/results", response_model=ImportOut, dependencies=[Depends(check_csrf)],
             responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 403: {"model": ErrorOut}},
             summary="Import a `kernelcraft eval --json` record (maintainers)")
def import_result(record: dict, request: Request, me: Account | None = Depends(current_account)):
    from kernelcraft.web.results import import_record

    me = service.need_account(me, "import results")
    if me.role != "maintainer":
        raise service.ServiceError(403, "Only maintainers import evaluation records. Nothing was stored.")
    try:
        got = import_record(request.app.state.ledger, record, source=f"POST /api/results by {me.username}")
    except InputError as e:
        problems = [ProblemOut(file=str(p.path), field=p.field, problem=p.problem, fix=p.fix) for p in e.problems]
        return JSONResponse(ErrorOut(detail="not an evaluation record; nothing was stored",
                                     problems=problems).model_dump(), status_code=400)
    return ImportOut(report_id=got.report_id, new=got.new)
