"""Accounts, sessions and CSRF tokens.

- Passwords: argon2id through ``argon2-cffi`` (its default parameters; the hash string carries
  them, so they can be raised later and old hashes re-hashed at sign-in).
- Sessions: a random token in an HttpOnly, SameSite=Lax cookie; the database keeps only its
  sha256 and an expiry, so signing out (or deleting the row) ends the session everywhere.
- CSRF: every POST/DELETE, form or JSON, carries a token (form field ``csrf_token`` or header
  ``X-CSRF-Token``) equal to HMAC(secret, the ``kc_csrf`` cookie): a signed double-submit cookie.
  Another site can neither read the cookie nor compute the HMAC. ``GET /api/csrf`` hands the token
  to API clients.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelcraft.web.models import Account, WebSession

SESSION_COOKIE = "kc_session"
CSRF_COOKIE = "kc_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SESSION_DAYS = 14
USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,39}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 256  # argon2 takes any length; a cap keeps one sign-in from costing a megabyte of hashing

_hasher = PasswordHasher()
# Verified against when the username does not exist, so a sign-in takes as long either way.
_DUMMY_HASH = _hasher.hash(secrets.token_hex(16))


class AuthError(ValueError):
    """A sign-up or sign-in that cannot proceed; ``field`` names the form field at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def check_new_account(username: str, password: str) -> None:
    if not USERNAME_RE.match(username or ""):
        raise AuthError("username", "2 to 40 characters: letters, digits, '_', '.', '-', starting with a letter or digit")
    if not (MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD):
        raise AuthError("password", f"use {MIN_PASSWORD} to {MAX_PASSWORD} characters")


def create_account(s: Session, username: str, password: str, role: str = "member") -> Account:
    check_new_account(username, password)
    if s.scalars(select(Account).where(Account.username == username)).first() is not None:
        raise AuthError("username", f"{username!r} is taken; sign in, or choose another name")
    acct = Account(username=username, password_hash=_hasher.hash(password), role=role)
    s.add(acct)
    try:
        s.flush()
    except IntegrityError:  # the same name signed up concurrently
        s.rollback()
        raise AuthError("username", f"{username!r} is taken; sign in, or choose another name") from None
    return acct


def authenticate(s: Session, username: str, password: str) -> Account:
    acct = s.scalars(select(Account).where(Account.username == username)).first()
    if len(password or "") > MAX_PASSWORD:
        raise AuthError("password", "wrong username or password")
    try:
        _hasher.verify(acct.password_hash if acct else _DUMMY_HASH, password or "")
    except (VerificationError, InvalidHashError):
        acct = None
    if acct is None:
        raise AuthError("password", "wrong username or password")
    if _hasher.check_needs_rehash(acct.password_hash):
        acct.password_hash = _hasher.hash(password)
    return acct


def _token_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _utc(days: float = 0) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(days=days)).isoformat(timespec="seconds")


def start_session(s: Session, account: Account) -> str:
    """A new session for this account; returns the cookie's token (shown to nobody else)."""
    token = secrets.token_urlsafe(32)
    s.add(WebSession(id=_token_id(token), account_id=account.id, expires_at=_utc(SESSION_DAYS)))
    s.execute(delete(WebSession).where(WebSession.expires_at < _utc()))  # sweep expired ones
    return token


def end_session(s: Session, token: str | None) -> None:
    if token:
        s.execute(delete(WebSession).where(WebSession.id == _token_id(token)))


def session_account(s: Session, token: str | None) -> Account | None:
    if not token or len(token) > 100:
        return None
    row = s.get(WebSession, _token_id(token))
    if row is None or row.expires_at < _utc():
        return None
    return s.get(Account, row.account_id)


def new_csrf_seed() -> str:
    return secrets.token_urlsafe(24)


def csrf_token(secret: bytes, seed: str) -> str:
    return hmac.new(secret, b"csrf:" + seed.encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: bytes, seed: str | None, token: str | None) -> bool:
    if not seed or not token:
        return False
    return hmac.compare_digest(csrf_token(secret, seed), token)
