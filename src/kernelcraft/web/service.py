"""Wishlist operations shared by the pages and the JSON API. Each runs in the caller's
transaction and raises :class:`ServiceError` (HTTP status + message) before changing anything."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelcraft.web.models import STATE_LABELS, STATES, Account, StateChange, Vote, WishRequest, _now
from kernelcraft.web.upload import Checked


class ServiceError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Listed:
    request: WishRequest
    votes: int
    voted: bool  # by the account asking
    author: str


def need_account(account: Account | None, what: str) -> Account:
    if account is None:
        raise ServiceError(401, f"Sign in to {what}: one vote per account, so every action needs one. Nothing was changed.")
    return account


def listing(s: Session, account: Account | None, state: str | None = None) -> list[Listed]:
    votes = select(Vote.request_id, func.count(Vote.id).label("n")).group_by(Vote.request_id).subquery()
    q = (select(WishRequest, func.coalesce(votes.c.n, 0), Account.username)
         .outerjoin(votes, votes.c.request_id == WishRequest.id).join(Account, Account.id == WishRequest.author_id))
    if state:
        q = q.where(WishRequest.state == state)
    q = q.order_by(func.coalesce(votes.c.n, 0).desc(), WishRequest.created_at, WishRequest.id)
    mine = set()
    if account is not None:
        mine = set(s.scalars(select(Vote.request_id).where(Vote.account_id == account.id)))
    return [Listed(r, n, r.id in mine, author) for r, n, author in s.execute(q)]


def get(s: Session, request_id: int, account: Account | None = None) -> Listed:
    r = s.get(WishRequest, request_id)
    if r is None:
        raise ServiceError(404, f"No wishlist request {request_id}.")
    n = s.scalar(select(func.count(Vote.id)).where(Vote.request_id == r.id)) or 0
    voted = account is not None and s.scalar(
        select(Vote.id).where(Vote.request_id == r.id, Vote.account_id == account.id)) is not None
    return Listed(r, n, voted, s.get(Account, r.author_id).username)


def submit(s: Session, account: Account | None, checked: Checked) -> WishRequest:
    account = need_account(account, "submit a request")
    if s.scalar(select(WishRequest.id).where(WishRequest.name == checked.name)) is not None:
        raise ServiceError(409, f"A request for {checked.name!r} exists already: vote for it instead, or rename "
                                "the definition. Nothing was stored.")
    r = WishRequest(name=checked.name, op_type=checked.op_type, description=checked.description, state="new",
                    author_id=account.id, definition=checked.definition, workloads=checked.workloads,
                    contract=checked.contract, readme=checked.readme, baseline=checked.baseline, archive=checked.archive)
    s.add(r)
    try:
        s.flush()
    except IntegrityError:  # the same name submitted concurrently
        raise ServiceError(409, f"A request for {checked.name!r} exists already. Nothing was stored.") from None
    s.add(Vote(request_id=r.id, account_id=account.id))  # as on KDA, the author's thumbs-up comes first
    return r


def vote(s: Session, account: Account | None, request_id: int) -> int:
    account = need_account(account, "vote")
    item = get(s, request_id, account)
    if item.voted:
        raise ServiceError(409, "You have voted for this request already (one vote per account). Nothing was changed.")
    s.add(Vote(request_id=request_id, account_id=account.id))
    try:
        s.flush()
    except IntegrityError:
        raise ServiceError(409, "You have voted for this request already (one vote per account).") from None
    return item.votes + 1


def unvote(s: Session, account: Account | None, request_id: int) -> int:
    account = need_account(account, "withdraw a vote")
    item = get(s, request_id, account)
    v = s.scalars(select(Vote).where(Vote.request_id == request_id, Vote.account_id == account.id)).first()
    if v is None:
        raise ServiceError(409, "You have not voted for this request. Nothing was changed.")
    s.delete(v)
    return item.votes - 1


def set_state(s: Session, account: Account | None, request_id: int, state: str) -> WishRequest:
    account = need_account(account, "change a request's state")
    if account.role != "maintainer":
        raise ServiceError(403, "Only maintainers change a request's state. Nothing was changed.")
    if state not in STATES:
        raise ServiceError(400, f"Unknown state {state!r}: use one of {', '.join(STATES)}. Nothing was changed.")
    r = get(s, request_id).request
    if r.state != state:
        s.add(StateChange(request_id=r.id, account_id=account.id, old=r.state, new=state))
        r.state, r.updated_at = state, _now()
    return r


def state_label(state: str) -> str:
    return STATE_LABELS.get(state, state)
