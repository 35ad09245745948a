"""The web app's tables, in the ledger's database beside tasks, runs and candidates.

They are created by the ledger's migrations (``ledger/migrations/versions/0002_web.py``), never by
``create_all``; ``tests/test_web_migrations.py`` checks the two agree. Timestamps are ISO 8601
strings in UTC, as in ``ledger/store.py``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

STATES = ("new", "accepted", "in_progress", "done")  # KDA wishlist labels, in workflow order
STATE_LABELS = {"new": "new", "accepted": "accepted", "in_progress": "in progress", "done": "done"}
ROLES = ("member", "maintainer")  # only maintainers change a request's state or import results


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class WebBase(DeclarativeBase):
    pass


class Account(WebBase):
    __tablename__ = "accounts"
    __table_args__ = (UniqueConstraint("username", name="uq_accounts_username"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(40))
    password_hash: Mapped[str] = mapped_column(String(200))  # argon2id, with its parameters and salt
    role: Mapped[str] = mapped_column(String(20), default="member")
    created_at: Mapped[str] = mapped_column(String(40), default=_now)


class WebSession(WebBase):
    __tablename__ = "web_sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the cookie's token
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[str] = mapped_column(String(40), default=_now)
    expires_at: Mapped[str] = mapped_column(String(40))


class WishRequest(WebBase):
    """A kernel request: a validated task folder, as KDA's wishlist keeps one per pull request."""

    __tablename__ = "wishlist_requests"
    __table_args__ = (UniqueConstraint("name", name="uq_wishlist_requests_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))  # the definition's name
    op_type: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(20), default="new", index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    definition: Mapped[dict] = mapped_column(JSON)  # definition.json as loaded
    workloads: Mapped[list] = mapped_column(JSON)  # the workloads, as loaded
    contract: Mapped[str | None] = mapped_column(Text, nullable=True)  # contract.toml text, if any
    readme: Mapped[str] = mapped_column(Text, default="")
    baseline: Mapped[str] = mapped_column(Text, default="")  # baseline.py, shown, never run here
    archive: Mapped[bytes] = mapped_column(LargeBinary)  # the validated folder, re-zipped
    created_at: Mapped[str] = mapped_column(String(40), default=_now)
    updated_at: Mapped[str] = mapped_column(String(40), default=_now)


class Vote(WebBase):
    __tablename__ = "votes"
    __table_args__ = (UniqueConstraint("request_id", "account_id", name="uq_votes_request_account"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("wishlist_requests.id", ondelete="CASCADE"), index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    created_at: Mapped[str] = mapped_column(String(40), default=_now)


class StateChange(WebBase):
    """Who moved a request to which state, and when."""

    __tablename__ = "state_changes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("wishlist_requests.id", ondelete="CASCADE"), index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    old: Mapped[str] = mapped_column(String(20))
    new: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[str] = mapped_column(String(40), default=_now)


class EvalReportRow(WebBase):
    """An imported ``kernelcraft eval --json`` record (EvalReport), kept whole; the leaderboard
    flattens its solutions. Its sha256 makes importing the same file twice a no-op."""

    __tablename__ = "eval_reports"
    __table_args__ = (UniqueConstraint("sha256", name="uq_eval_reports_sha256"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64))  # of the record's canonical JSON
    task: Mapped[str] = mapped_column(String(200), index=True)  # the definition's name
    task_dir: Mapped[str] = mapped_column(Text, default="")  # as the record names it
    hardware: Mapped[str] = mapped_column(String(200))  # environment.hardware, e.g. "NVIDIA H200"
    device: Mapped[str] = mapped_column(String(40))
    timestamp: Mapped[str] = mapped_column(String(40))  # when it was measured
    source: Mapped[str] = mapped_column(Text, default="")  # the file it was imported from
    record: Mapped[dict] = mapped_column(JSON)
    imported_at: Mapped[str] = mapped_column(String(40), default=_now)
