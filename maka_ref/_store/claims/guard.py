"""The insert guard: effects of acquired continuation claims on every insert (spec 30 §2.6, §2.8).

Why a module of its own: the insert primitive calls :func:`check_continuation_authority` for
every event, while the claim and start writers run only on resume; the guard needs only the
claim-row reader and the ``ContextVar`` the start writer sets, not the writers themselves.
"""

from __future__ import annotations

import contextvars
import sqlite3
from collections.abc import Mapping
from typing import Any

from maka_ref._store.claims.rows import _error, _select

__all__ = ["check_continuation_authority"]

#: The start event id the start writer is inserting right now (lets the guard tell the one
#: authorised start apart from a generic append that wants the target's seq 1).
_authorised_start: contextvars.ContextVar[str | None] = contextvars.ContextVar("_authorised_start", default=None)


# ------------------------------------------------------------------ the insert guard


def check_continuation_authority(conn: sqlite3.Connection, event: Mapping[str, Any], exact_retry: bool) -> bool:
    """Effects of claims on every insert (spec 30 §2.6), called by the insert primitive.

    Claims of the event's session are decoded and cross-checked first (a tampered row fails
    every write near it closed). An exact retry stops there (dedup semantics are kept even
    after a claim, §2.8). A new event then must not touch a sealed source run, must not
    collide with a target on some identity axes but not all, and must not take a target's
    ``event_seq`` 1 unless it is the start being written by the start writer.

    Returns True when the session has no claim row at all (the insert cache, ``insert.facts``,
    may then skip this check for the session), False otherwise.
    """
    session_id = event.get("sessionId")
    records = _select(conn, "source_session_id = ? OR target_session_id = ?", (session_id, session_id))
    if exact_retry or not records:
        return not records
    run_id, invocation_id, turn_id = event.get("runId"), event.get("invocationId"), event.get("turnId")
    for record in records:
        claim = record.claim
        for segment in claim.boundary.segments:
            if segment.identity.session_id == session_id and segment.identity.run_id == run_id:
                raise _error(
                    f"RuntimeEvent source boundary is sealed by continuation claim {claim.claim_id}",
                    "continuation_source_sealed",
                )
        target = claim.target
        same_session = session_id == target.session_id
        axes = (
            invocation_id == target.invocation_id,
            same_session and run_id == target.run_id,
            same_session and turn_id == target.turn_id,
        )
        if any(axes) and not all(axes):
            raise _error(
                f"RuntimeEvent continuation target identity conflict for {claim.claim_id}",
                "continuation_target_identity_conflict",
            )
        if all(axes) and record.start_event_id is None and _authorised_start.get() != event.get("id"):
            raise _error(
                f"RuntimeEvent target sequence one is reserved for continuation-start by claim {claim.claim_id}",
                "continuation_target_reserved",
            )
    return False
