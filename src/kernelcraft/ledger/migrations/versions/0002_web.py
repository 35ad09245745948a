"""The web app's tables: accounts, sessions, wishlist requests, votes, state changes, imported
evaluation reports (``kernelcraft serve``; models in ``kernelcraft/web/models.py``).

Revision ID: 0002_web
Revises: 0001_ledger
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from kernelcraft.ledger.migrations import create_index, create_table

revision = "0002_web"
down_revision = "0001_ledger"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "accounts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("username", sa.String(40), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("username", name="uq_accounts_username"),
    )
    create_table(
        "web_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("account_id", sa.Integer(), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("expires_at", sa.String(40), nullable=False),
    )
    create_index("ix_web_sessions_account_id", "web_sessions", ["account_id"])
    create_table(
        "wishlist_requests",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("op_type", sa.String(100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("author_id", sa.Integer(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("workloads", sa.JSON(), nullable=False),
        sa.Column("contract", sa.Text(), nullable=True),
        sa.Column("readme", sa.Text(), nullable=False),
        sa.Column("baseline", sa.Text(), nullable=False),
        sa.Column("archive", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("name", name="uq_wishlist_requests_name"),
    )
    create_index("ix_wishlist_requests_state", "wishlist_requests", ["state"])
    create_table(
        "votes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("request_id", sa.Integer(), sa.ForeignKey("wishlist_requests.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("account_id", sa.Integer(), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("request_id", "account_id", name="uq_votes_request_account"),
    )
    create_index("ix_votes_request_id", "votes", ["request_id"])
    create_table(
        "state_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("request_id", sa.Integer(), sa.ForeignKey("wishlist_requests.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("account_id", sa.Integer(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("old", sa.String(20), nullable=False),
        sa.Column("new", sa.String(20), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    create_index("ix_state_changes_request_id", "state_changes", ["request_id"])
    create_table(
        "eval_reports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("task_dir", sa.Text(), nullable=False),
        sa.Column("hardware", sa.String(200), nullable=False),
        sa.Column("device", sa.String(40), nullable=False),
        sa.Column("timestamp", sa.String(40), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("imported_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("sha256", name="uq_eval_reports_sha256"),
    )
    create_index("ix_eval_reports_task", "eval_reports", ["task"])


def downgrade() -> None:
    for table in ("eval_reports", "state_changes", "votes", "wishlist_requests", "web_sessions", "accounts"):
        op.drop_table(table)
