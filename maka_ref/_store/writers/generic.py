"""Generic append paths: single append/import, batch import, terminal barrier (spec 30 §2.2).

Why the pre-transaction rules (G1–G8): the generic path is open to every producer, so it must
refuse every fact that only an atomic authority writer may persist (workspace facts, the
workspace authority stream, continuation starts, workspace boundary facts (spec-phase4 §1.3), dispatches, operation-bound outcomes,
recovery facts) and every lane-smuggling event, *before* a write lock is taken and before
any row exists. Unbound calls and unbound responses are allowed, subject to the transition
check.

In-transaction order for one event (MUST, §2.2): identity → partial path → (new ids only)
continuation authority and run seal — the seal is checked *before* tool semantics so a late
tool-bearing straggler surfaces as ``RunSealedError`` — → tool-bearing transition check (even
for exact retries, so a corrupt ledger fails them closed) → insert with exact duplicates
allowed and ``committed_at = ts``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Iterable

from maka_ref._events.encode import (
    EncodedRuntimeEvent,
    encode_runtime_event,
    json_strict_equal,
)
from maka_ref._events.predicates import is_terminal_event
from maka_ref._ledger.lanes import (
    RESERVED_RECOVERY_FACT,
    RESERVED_TOOL_BOUNDARY_FACT,
    validate_generic_append,
)
from maka_ref._store.engine.rows import (
    EVENT_COLUMNS,
    decode_event_row,
    is_tool_bearing,
    read_event_row,
)
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.health import HealthGate, assert_tool_ledger_transition
from maka_ref._store.insert.primitive import (
    check_identity,
    check_run_sealed,
    continuation_guard,
    insert_event,
)
from maka_ref._store.partials import append_partial, partial_stream
from maka_ref._store.records import AppendResult

__all__ = [
    "WORKSPACE_AUTHORITY_SESSION_ID",
    "append_encoded",
    "canonicalize",
    "check_reserved_authority",
    "ensure_terminal_durable",
    "import_batch",
    "pre_validate_generic",
]

WORKSPACE_AUTHORITY_SESSION_ID = "maka_workspace_authority"


def canonicalize(raw: Any) -> EncodedRuntimeEvent:
    """G8: decode + lossless canonical JSON (raises the core's schema / serialisation errors)."""
    return encode_runtime_event(raw)


def check_reserved_authority(event: Mapping[str, Any]) -> None:
    """G1 and G2, shared with T1, T2 and the recovery bundle."""
    actions = event.get("actions")
    if isinstance(actions, Mapping) and "workspaceFact" in actions:
        raise StoreError(
            "Workspace facts require the atomic workspace version authority writer", code="reserved_workspace_fact"
        )
    if event.get("sessionId") == WORKSPACE_AUTHORITY_SESSION_ID:
        raise StoreError(
            "RuntimeEvent targets the reserved workspace authority stream", code="reserved_workspace_stream"
        )


def check_no_recovery_fact(event: Mapping[str, Any]) -> None:
    """G5 as used by T1/T2/bundle outcomes: a ``toolRecovery`` action anywhere is reserved."""
    actions = event.get("actions")
    if isinstance(actions, Mapping) and "toolRecovery" in actions:
        raise StoreError("Tool recovery facts require the atomic recovery bundle writer", code="reserved_recovery_fact")


def pre_validate_generic(raw: Any, session_id: str | None = None, run_id: str | None = None) -> EncodedRuntimeEvent:
    """G1–G8 for one event (G7 only when the caller names the target session and run)."""
    encoded = canonicalize(raw)
    event = encoded.event
    check_reserved_authority(event)
    actions = event.get("actions")
    if isinstance(actions, Mapping) and "continuationStart" in actions:
        raise StoreError(
            "Continuation start facts require the continuation authority writer", code="reserved_continuation_start"
        )
    if isinstance(actions, Mapping) and "workspaceBoundary" in actions:
        raise StoreError(
            "Workspace boundary facts require the workspace boundary writer", code="reserved_workspace_boundary"
        )
    code = validate_generic_append(event)
    if code == RESERVED_RECOVERY_FACT:
        raise StoreError("Tool recovery facts require the atomic recovery bundle writer", code="reserved_recovery_fact")
    if code == RESERVED_TOOL_BOUNDARY_FACT:
        raise StoreError("Durable tool facts require the atomic tool boundary writer", code="reserved_tool_boundary_fact")
    if code is not None:
        raise StoreError(f"RuntimeEvent {event['id']} violates its semantic lane", code=code)
    if session_id is not None or run_id is not None:
        if event.get("sessionId") != session_id or event.get("runId") != run_id:
            raise StoreError(
                f"RuntimeEvent store identity does not match event {event['id']}", code="store_identity_mismatch"
            )
    return encoded


def append_encoded(conn: sqlite3.Connection, gate: HealthGate, encoded: EncodedRuntimeEvent) -> AppendResult:
    """The single-event in-transaction path (caller holds the write transaction)."""
    event = encoded.event
    check_identity(conn, event)
    stream = partial_stream(event)
    if stream is not None:
        return AppendResult(append_partial(conn, event, stream), None)
    if read_event_row(conn, event["id"]) is None:
        continuation_guard(conn, event, False)
        check_run_sealed(conn, event["sessionId"], event["runId"])
    if is_tool_bearing(event):
        assert_tool_ledger_transition(conn, gate, [event], "generic_append")
    event_seq, created = insert_event(conn, encoded, event["ts"], allow_exact_duplicate=True, rows=gate.rows)
    return AppendResult(created, event_seq)


def import_batch(
    conn: sqlite3.Connection, gate: HealthGate, session_id: str, run_id: str, events: Iterable[Any]
) -> tuple[bool, ...]:
    """All-or-nothing import of events of one (session, run); caller holds the transaction.

    Every event is pre-validated first; a batch with any tool-bearing event is validated as
    one ``generic_append`` transition (so ``[response, call]`` is ``orphan_response``).
    """
    encoded = [pre_validate_generic(raw, session_id, run_id) for raw in events]
    candidates = [item.event for item in encoded]
    if any(is_tool_bearing(event) for event in candidates):
        assert_tool_ledger_transition(conn, gate, candidates, "generic_append")
    return tuple(append_encoded(conn, gate, item).created for item in encoded)


def _run_rows(conn: sqlite3.Connection, session_id: str, run_id: str) -> list[Any]:
    return conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ? "
        "ORDER BY event_seq ASC, event_id ASC",
        (session_id, run_id),
    ).fetchall()


def _scan_run(
    conn: sqlite3.Connection, gate: HealthGate, session_id: str, run_id: str, event_id: str
) -> tuple[list[str], list[Any], list[str]]:
    """The run's rows in (event_seq, event_id) order, as the barrier needs them: every id
    (the tail), the decoded rows whose id is ``event_id``, and the ids of the *other*
    terminal events, in order.

    Every row is decoded (row/payload identity re-checked, in order, so the first bad row
    raises as before) except the rows this connection inserted itself in this very state
    (``run_rows``): their id column is the payload's id and their terminal predicate was
    computed on the inserted event.
    """
    known = gate.rows.known(conn, session_id, run_id)
    ids: list[str] = []
    matching: list[Any] = []
    others: list[str] = []
    for row in _run_rows(conn, session_id, run_id):
        row_id = row[0]
        terminal = known.get(row_id) if row_id != event_id else None
        if terminal is None:
            item = decode_event_row(row)
            row_id = item.event_id
            if row_id == event_id:
                matching.append(item)
            elif is_terminal_event(item.event):
                others.append(row_id)
        elif terminal:
            others.append(row_id)
        ids.append(row_id)
    return ids, matching, others


def ensure_terminal_durable(conn: sqlite3.Connection, gate: HealthGate, encoded: EncodedRuntimeEvent) -> AppendResult:
    """Terminal durability barrier (caller holds the transaction; pre-validation done).

    With SQLite every commit is already synchronous (``synchronous=FULL``), so the barrier is
    a check plus an append: the terminal must be the run's only terminal and its ledger tail.
    """
    event = encoded.event
    if event.get("partial") is True or not is_terminal_event(event):
        raise StoreError(
            "Only a final terminal RuntimeEvent can cross the terminal durability barrier", code="not_final_terminal"
        )
    run_id = event["runId"]
    ids, matching, others = _scan_run(conn, gate, event["sessionId"], run_id, event["id"])
    if matching:
        if not json_strict_equal(matching[0].event, event):
            raise StoreError(
                f"RuntimeEvent {event['id']} does not match the durable ledger record", code="terminal_mismatch"
            )
        if others:
            raise StoreError(
                f"Run {run_id} already has terminal RuntimeEvent {others[0]}", code="terminal_exists"
            )
        if ids[-1] != event["id"]:
            raise StoreError("Terminal RuntimeEvent must be the immutable ledger tail", code="terminal_not_tail")
        return AppendResult(False, matching[0].event_seq)
    if others:
        raise StoreError(f"Run {run_id} already has terminal RuntimeEvent {others[0]}", code="terminal_exists")
    return append_encoded(conn, gate, encoded)
