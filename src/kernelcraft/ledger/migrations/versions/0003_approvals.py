"""Approvals: a person's approval of the exact source that was judged (``kernelcraft approve``;
the ``Approval`` model in ``ledger/store.py``, commit 9e8a819).

A ledger made by that commit's ``create_all`` has this table already; adopting it skips the create.

Revision ID: 0003_approvals
Revises: 0002_web
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from kernelcraft.ledger.migrations import create_index, create_table

revision = "0003_approvals"
down_revision = "0002_web"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "approvals",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("candidate_id", sa.Integer(), sa.ForeignKey("candidates.id"), nullable=True),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("task_name", sa.String(200), nullable=False),
        sa.Column("solution_name", sa.String(200), nullable=False),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    create_index("ix_approvals_candidate_id", "approvals", ["candidate_id"])
    create_index("ix_approvals_source_hash", "approvals", ["source_hash"])
    create_index("ix_approvals_task_name", "approvals", ["task_name"])


def downgrade() -> None:
    op.drop_table("approvals")
