"""The claim writer's boundary re-check (spec 30 §2.6 step 2) against the stored ledger.

Why a module of its own: rebuilding each boundary segment from ``runtime_events`` (ancestors up
to their high-water, the source over its whole ledger, exactly one terminal at its end) is the
only part of the claim writer that reads events and the prefix builder rather than claim rows.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from maka_ref._errors import MakaRefError
from maka_ref._events.predicates import is_terminal_event
from maka_ref._plan.prefix.immutable import RuntimePrefixSegment, build_immutable_prefix
from maka_ref._store.claims.codec import ContinuationClaim
from maka_ref._store.claims.rows import _error
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row

__all__: list[str] = []  # private helpers of the claim writer (continuation_claims) only


def _run_rows(conn: sqlite3.Connection, session_id: str, run_id: str, up_to: int | None) -> list[Any]:
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ? "
        "AND (? IS NULL OR event_seq <= ?) ORDER BY event_seq ASC, event_id ASC",
        (session_id, run_id, up_to, up_to),
    ).fetchall()
    return [decode_event_row(row) for row in rows]


def _recompute(segment: RuntimePrefixSegment, rows: list[Any], high_water: int | None) -> tuple[Any, ...] | None:
    """The prefix's events if it rebuilds to exactly ``segment``, else None."""
    try:
        prefix = build_immutable_prefix(
            [(row.event_seq, row.event) for row in rows], identity=segment.identity, high_water=high_water
        )
    except MakaRefError:
        return None
    rebuilt = RuntimePrefixSegment(prefix.identity, prefix.position, prefix.prefix_digest)
    return prefix.events if rebuilt == segment else None


def _check_boundary(conn: sqlite3.Connection, claim: ContinuationClaim) -> None:
    """§2.6 step 2: ancestors up to their high-water, the source over its whole ledger."""
    *ancestors, source = claim.boundary.segments
    for segment in ancestors:
        ident, high_water = segment.identity, segment.position.last_event_seq
        rows = _run_rows(conn, ident.session_id, ident.run_id, high_water)
        if not rows or rows[-1].event_seq < high_water:
            raise _error(
                f"Continuation ancestor boundary is missing for {ident.run_id}", "continuation_ancestor_missing"
            )
        if _recompute(segment, rows, high_water) is None:
            raise _error(
                f"Continuation ancestor boundary changed for {ident.run_id}", "continuation_ancestor_changed"
            )
    ident = source.identity
    rows = _run_rows(conn, ident.session_id, ident.run_id, None)
    if not rows:
        raise _error("Continuation source boundary is missing", "continuation_source_missing")
    events = _recompute(source, rows, None)
    if events is None:
        raise _error("Continuation source boundary changed", "continuation_source_changed")
    terminals = [event for event in events if is_terminal_event(event)]
    if len(terminals) != 1 or not is_terminal_event(events[-1]):
        raise _error(
            "Continuation source boundary must end with exactly one terminal RuntimeEvent",
            "continuation_source_not_terminal",
        )
