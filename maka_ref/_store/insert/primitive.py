"""The insert primitive shared by every writer (spec 30 §2.1 "Insert primitive").

Always called inside an open ``BEGIN IMMEDIATE`` transaction (the write lock is what makes
``max(event_seq)+1`` per invocation and ``max(ordinal)+1`` per session race-free, §10 item 1).

Steps, in the spec's order: identity against the DB (events *and* partial snapshots) →
steering message identity → exact-id retry handling (never a new row or ordinal) → for a new
event: continuation authority, run seal, event_seq, row, session ordinal, and deletion of the
partial snapshot the event completes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Callable

from maka_ref._events.encode import EncodedRuntimeEvent, json_strict_equal
from maka_ref._events.predicates import is_terminal_event
from maka_ref._store.claims.guard import check_continuation_authority
from maka_ref._store.engine.rows import (
    EVENT_COLUMNS,
    decode_event_row,
    event_kind,
    read_event_row,
)
from maka_ref._store.errors import RunSealedError, StoreError
from maka_ref._store.insert.facts import InsertFacts
from maka_ref._store.insert.run_rows import RunRows
from maka_ref._store.partials import completed_stream_key, is_safe_id

__all__ = [
    "ContinuationGuard",
    "check_identity",
    "check_identity_fields",
    "check_run_sealed",
    "check_steering",
    "continuation_guard",
    "delete_completed_partial",
    "insert_event",
    "set_continuation_guard",
    "steering_message_id",
]

#: ``guard(conn, event, exact_retry)``: the continuation-authority check of §2.6 ("effects
#: of an acquired claim on generic appends"): ``continuation_claims.check_continuation_authority``.
ContinuationGuard = Callable[[sqlite3.Connection, Mapping[str, Any], bool], None]


def _claims_guard(conn: sqlite3.Connection, event: Mapping[str, Any], exact_retry: bool) -> bool:
    """The built-in guard: the durable claims of *this* connection's database decide (no
    per-process state; imported lazily because the claim module builds on this one).
    Returns True when the event's session has no claim row at all (nothing was checked)."""
    return check_continuation_authority(conn, event, exact_retry)


_continuation_guard: ContinuationGuard = _claims_guard


def set_continuation_guard(guard: ContinuationGuard | None) -> None:
    """Override the continuation-authority check (tests only; None restores the built-in)."""
    global _continuation_guard
    _continuation_guard = guard or _claims_guard


def continuation_guard(conn: sqlite3.Connection, event: Mapping[str, Any], exact_retry: bool) -> None:
    _continuation_guard(conn, event, exact_retry)


def check_identity_fields(event: Mapping[str, Any]) -> None:
    """The identity fields are non-empty strings (the part of §0.1 that needs no query)."""
    for field in ("id", "sessionId", "invocationId", "runId", "turnId"):
        value = event.get(field)
        if not isinstance(value, str) or not value:
            raise StoreError(f"Invalid RuntimeEvent {field}", code="invalid_event_identity")


def check_identity(conn: sqlite3.Connection, event: Mapping[str, Any]) -> None:
    """§0.1 identity rule against stored events and partial snapshots: one invocation maps to
    one (session, run, turn); one (session, run) maps to one (invocation, turn)."""
    check_identity_fields(event)
    session_id, invocation_id = event["sessionId"], event["invocationId"]
    run_id, turn_id = event["runId"], event["turnId"]
    for table in ("runtime_events", "runtime_partial_snapshots"):
        rows = conn.execute(
            f"SELECT DISTINCT session_id, run_id, turn_id FROM {table} WHERE invocation_id = ?", (invocation_id,)
        ).fetchall()
        if any(row != (session_id, run_id, turn_id) for row in rows):
            raise StoreError(
                f"RuntimeEvent invocation identity conflict for {invocation_id}", code="invocation_identity_conflict"
            )
    for table in ("runtime_events", "runtime_partial_snapshots"):
        rows = conn.execute(
            f"SELECT DISTINCT invocation_id, turn_id FROM {table} WHERE session_id = ? AND run_id = ?",
            (session_id, run_id),
        ).fetchall()
        if any(row != (invocation_id, turn_id) for row in rows):
            raise StoreError(f"RuntimeEvent run identity conflict for {run_id}", code="run_identity_conflict")


def steering_message_id(event: Mapping[str, Any]) -> str | None:
    """A durable steering message: non-partial text with ``steering: true`` and a safe
    ``refs.providerEventId`` (the message id)."""
    if event.get("partial") is not False:
        return None
    content = event.get("content")
    if not isinstance(content, Mapping) or content.get("kind") != "text" or content.get("steering") is not True:
        return None
    refs = event.get("refs")
    message_id = refs.get("providerEventId") if isinstance(refs, Mapping) else None
    return message_id if is_safe_id(message_id) else None


def steering_events(conn: sqlite3.Connection, session_id: str, message_id: str) -> list[Any]:
    """Stored steering events of ``session_id`` carrying ``message_id`` (identity re-checked)."""
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? "
        "AND json_extract(payload_json, '$.refs.providerEventId') = ? "
        "AND json_extract(payload_json, '$.content.steering') = 1 ORDER BY event_seq, event_id",
        (session_id, message_id),
    ).fetchall()
    events = [decode_event_row(row).event for row in rows]
    return [event for event in events if steering_message_id(event) == message_id]


def check_steering(conn: sqlite3.Connection, event: Mapping[str, Any]) -> None:
    """§2.1 step 2: a steering message id names exactly one immutable event per session."""
    message_id = steering_message_id(event)
    if message_id is None:
        return
    for stored in steering_events(conn, event["sessionId"], message_id):
        if not json_strict_equal(stored, event):
            raise StoreError(
                f"Immutable steering message identity conflict: {message_id}", code="steering_identity_conflict"
            )


def _guard_cached(conn: sqlite3.Connection, facts: InsertFacts, event: Mapping[str, Any], exact_retry: bool) -> None:
    """The continuation guard, skipped for a session known to hold no claim row (built-in
    guard only: an overriding test guard always runs)."""
    if _continuation_guard is not _claims_guard:
        _continuation_guard(conn, event, exact_retry)
        return
    session_id = event["sessionId"]
    if session_id in facts.unclaimed:
        return
    learning = facts.learning(conn)
    if _claims_guard(conn, event, exact_retry) is True and learning:
        facts.add_unclaimed(session_id)


def may_seal(event: Mapping[str, Any]) -> bool:
    """Could this event's row make :func:`check_run_sealed` find a terminal? (Over-approximates
    the query's ``$.status`` / ``$.actions.endInvocation`` probes: any status, any endInvocation.)"""
    if "status" in event:
        return True
    actions = event.get("actions")
    return isinstance(actions, Mapping) and "endInvocation" in actions


def check_run_sealed(conn: sqlite3.Connection, session_id: str, run_id: str) -> None:
    """A run that already holds a terminal fact accepts no new event (§2.1 step 4)."""
    row = conn.execute(
        "SELECT 1 FROM runtime_events WHERE session_id = ? AND run_id = ? AND ("
        "json_extract(payload_json, '$.status') IN ('completed', 'failed', 'aborted', 'cancelled') "
        "OR json_extract(payload_json, '$.actions.endInvocation') = 1) LIMIT 1",
        (session_id, run_id),
    ).fetchone()
    if row is not None:
        raise RunSealedError(run_id)


def delete_completed_partial(conn: sqlite3.Connection, event: Mapping[str, Any]) -> None:
    """An immutable final deletes the snapshot it completes (segments go by cascade)."""
    key = completed_stream_key(event)
    if key is not None:
        conn.execute("DELETE FROM runtime_partial_snapshots WHERE stream_key = ?", (key,))


_INSERT_EVENT_SQL = (
    "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, "
    "event_kind, payload_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_ORDINAL_SQL = (
    "INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) "
    "SELECT ?, COALESCE(MAX(ordinal), 0) + 1, ? FROM runtime_session_event_ordinals WHERE session_id = ?"
)

#: Tests switch this off to compare with the existence query run first.
INSERT_FIRST = True


def _delete_partial(conn: sqlite3.Connection, event: Mapping[str, Any], facts: InsertFacts | None) -> None:
    """:func:`delete_completed_partial`, skipped when the insert cache knows that no partial
    snapshot row exists (there is nothing it could delete)."""
    if facts is not None and facts.no_partials is True:
        return
    delete_completed_partial(conn, event)


def insert_event(
    conn: sqlite3.Connection,
    encoded: EncodedRuntimeEvent,
    committed_at: int | float,
    *,
    allow_exact_duplicate: bool,
    identity_checked: bool = False,
    facts: InsertFacts | None = None,
    rows: RunRows | None = None,
    event_seq: int | None = None,
) -> tuple[int, bool]:
    """Insert one canonical event; returns ``(event_seq, created)``.

    ``identity_checked``: the caller already ran :func:`check_identity` in this transaction for
    an event with the same (session, invocation, run, turn) and wrote nothing since but rows of
    that same identity. The stored identity sets can then only have gained that identity, so
    the four queries would give the same verdict; only the field check runs (T1's dispatch).

    An existing id must hold an identical canonical event (``RuntimeEvent identity conflict
    for <id>``); it then returns the stored ``event_seq`` without a new row or ordinal, unless
    exact duplicates are not allowed (``RuntimeEvent <id> already exists outside this tool
    transaction``).

    ``facts`` (T1/T2 only, after ``facts.begin``): skip the identity, claim and seal queries
    whose passing verdict is already known for this connection (``insert.facts``); the
    verdicts, and the order in which checks can fail, are unchanged.

    ``rows`` (the gate's ``run_rows`` memory): remember the inserted row for the terminal
    barrier (it records only inside an owned, validated store write).

    ``event_seq``: the number a new row gets, when the caller knows the invocation's exact
    ``max(event_seq) + 1`` in this transaction (T1/T2, from ``TransitionCache.max_seq``);
    otherwise it is queried.
    """
    event = encoded.event
    if identity_checked:
        check_identity_fields(event)
    elif facts is None:
        check_identity(conn, event)
    else:
        check_identity_fields(event)
        key = (event["sessionId"], event["invocationId"], event["runId"], event["turnId"])
        if key not in facts.identity:
            learning = facts.learning(conn)
            check_identity(conn, event)
            if learning:
                facts.add_identity(key)
    check_steering(conn, event)
    if facts is not None:
        facts.learn_partials(conn)
    event_id = event["id"]
    run_key = (event["sessionId"], event["runId"])
    if (
        facts is not None and event_seq is not None and INSERT_FIRST and _continuation_guard is _claims_guard
        and event["sessionId"] in facts.unclaimed and run_key in facts.unsealed
    ):
        # The continuation guard and the seal check would pass without a query whether the id
        # is new or stored (an unclaimed session, an unsealed run), so the order in which
        # they run against the existence check cannot change a verdict: try the row first.
        # A failed INSERT changes nothing (SQLite undoes the statement). If the id is then
        # found stored, the plain path would have found it first and answers from that row;
        # if not, the plain path runs this very INSERT next and fails the same way.
        try:
            _insert_row(conn, encoded, committed_at, event_seq)
        except sqlite3.IntegrityError:
            stored = read_event_row(conn, event_id)
            if stored is None:
                raise  # another constraint: the same statement fails the same way on the plain path
        else:
            return _after_insert(conn, event, event_id, event_seq, facts, rows), True
    else:
        stored = read_event_row(conn, event_id)
    if stored is not None:
        if not json_strict_equal(stored.event, event):
            raise StoreError(f"RuntimeEvent identity conflict for {event_id}", code="event_identity_conflict")
        if facts is None:
            continuation_guard(conn, event, True)
        else:
            _guard_cached(conn, facts, event, True)
        _delete_partial(conn, event, facts)
        if not allow_exact_duplicate:
            raise StoreError(
                f"RuntimeEvent {event_id} already exists outside this tool transaction",
                code="event_exists_outside_transaction",
            )
        return stored.event_seq, False
    if facts is None:
        continuation_guard(conn, event, False)
        check_run_sealed(conn, event["sessionId"], event["runId"])
    else:
        _guard_cached(conn, facts, event, False)
        if run_key not in facts.unsealed:
            learning = facts.learning(conn)
            check_run_sealed(conn, *run_key)
            if learning:
                facts.add_unsealed(run_key)
    if event_seq is None:
        event_seq = conn.execute(
            "SELECT COALESCE(MAX(event_seq), 0) + 1 FROM runtime_events WHERE invocation_id = ?",
            (event["invocationId"],),
        ).fetchone()[0]
    _insert_row(conn, encoded, committed_at, event_seq)
    return _after_insert(conn, event, event_id, event_seq, facts, rows), True


def _insert_row(conn: sqlite3.Connection, encoded: EncodedRuntimeEvent, committed_at: int | float, event_seq: int) -> None:
    """The ``runtime_events`` row of a new event."""
    event = encoded.event
    conn.execute(
        _INSERT_EVENT_SQL,
        (
            event["id"],
            event["sessionId"],
            event["invocationId"],
            event["runId"],
            event["turnId"],
            event_seq,
            event_kind(event),
            encoded.canonical_json,
            committed_at,
        ),
    )


def _after_insert(
    conn: sqlite3.Connection, event: Mapping[str, Any], event_id: str, event_seq: int,
    facts: InsertFacts | None, rows: RunRows | None,
) -> int:
    """What follows a new row: the run-row memory, the session ordinal, the seal memory and
    the partial snapshot the event completes. Returns ``event_seq``."""
    session_id = event["sessionId"]
    if rows is not None:
        rows.record(conn, session_id, event["runId"], event_id, is_terminal_event(event))
    conn.execute(_INSERT_ORDINAL_SQL, (session_id, event_id, session_id))
    if facts is not None and may_seal(event):
        facts.unsealed.discard((session_id, event["runId"]))
    _delete_partial(conn, event, facts)
    return event_seq
