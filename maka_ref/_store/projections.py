"""Tool projections: reads, the unsettled list and rebuild from events (spec 30 §3).

Why rebuild exists and why it must agree with the online writers field by field (§3.3): the
projections are *derived*; ``runtime_events`` is the authority. Rebuild re-derives every
dispatched operation from the scanner (``scan_tool_ledger``) and the shared bundle
interpretation (``interpret_operation``), so it cannot disagree with recovery. Equality holds
because the writers store ``committed_at`` consistently, derive journal ids, and serialise
``metadata_json`` from the canonical event.

Rows *without* a dispatch (pre-authority "schema 4" projections) are left untouched: readable
but quarantined from recovery. Rebuild never deletes ``runtime_events`` rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from maka_ref._codec.frozen import freeze
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._ledger.bundle import interpret_operation
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._store.engine.gc_pause import cyclic_gc_paused
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row
from maka_ref._store.errors import StoreError
from maka_ref._store.records import (
    RebuildReport,
    ToolJournalRecord,
    ToolOperationRecord,
)

__all__ = [
    "OPERATION_COLUMNS",
    "insert_journal",
    "list_unsettled",
    "metadata_json_of",
    "read_tool_journal",
    "read_tool_operation",
    "rebuild",
]

OPERATION_COLUMNS = (
    "operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, tool_name, canonical_args_hash, "
    "recovery_mode, current_state, call_event_id, dispatch_event_id, result_event_id, version"
)
_JOURNAL_COLUMNS = (
    "journal_event_id, operation_id, invocation_id, run_id, turn_id, state, runtime_event_id, "
    "canonical_args_hash, recovery_mode, external_handle, metadata_json, committed_at"
)


def read_tool_operation(conn: sqlite3.Connection, operation_id: str) -> ToolOperationRecord | None:
    row = conn.execute(
        f"SELECT {OPERATION_COLUMNS} FROM tool_operations WHERE operation_id = ?", (operation_id,)
    ).fetchone()
    return ToolOperationRecord(*row) if row is not None else None


def read_tool_journal(conn: sqlite3.Connection, operation_id: str) -> list[ToolJournalRecord]:
    rows = conn.execute(
        f"SELECT {_JOURNAL_COLUMNS} FROM tool_journal_events WHERE operation_id = ? ORDER BY journal_seq ASC",
        (operation_id,),
    ).fetchall()
    out = []
    for row in rows:
        metadata = freeze(parse_json(row[10])) if row[10] is not None else None
        out.append(ToolJournalRecord(*row[:10], metadata, row[11]))
    return out


def list_unsettled(conn: sqlite3.Connection, session_id: str | None = None) -> list[str]:
    """Dispatched operations still ``prepared`` without a result, by (invocation, operation)."""
    sql = (
        "SELECT operation_id FROM tool_operations WHERE current_state = 'prepared' "
        "AND result_event_id IS NULL AND dispatch_event_id IS NOT NULL"
    )
    params: tuple[Any, ...] = ()
    if session_id is not None:
        sql += " AND call_event_id IN (SELECT event_id FROM runtime_events WHERE session_id = ?)"
        params = (session_id,)
    rows = conn.execute(sql + " ORDER BY invocation_id ASC, operation_id ASC", params).fetchall()
    return [row[0] for row in rows]


def metadata_json_of(event: Mapping[str, Any]) -> str | None:
    """JSON of the canonical event's ``toolRecovery`` envelope (sorted keys), else None."""
    actions = event.get("actions")
    envelope = actions.get("toolRecovery") if isinstance(actions, Mapping) else None
    return stable_json(envelope) if envelope is not None else None


def insert_journal(
    conn: sqlite3.Connection,
    *,
    journal_event_id: str,
    operation_id: str,
    identity: tuple[str, str, str],
    state: str,
    runtime_event_id: str,
    canonical_args_hash: str | None,
    recovery_mode: str | None,
    metadata_json: str | None,
    committed_at: Any,
) -> None:
    """One journal row; ``identity`` is (invocation_id, run_id, turn_id)."""
    conn.execute(
        "INSERT INTO tool_journal_events (journal_event_id, operation_id, invocation_id, run_id, turn_id, state, "
        "runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, committed_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (journal_event_id, operation_id, *identity, state, runtime_event_id, canonical_args_hash, recovery_mode,
         metadata_json, committed_at),
    )


def _tail_state(kind: str, disposition: str | None) -> str:
    if kind == "decision":
        return "recovery_completed" if disposition == "completed" else "recovery_parked"
    return "reconcile_observed" if kind == "reconcile" else "outcome_committed"


def rebuild(conn: sqlite3.Connection, session_id: str | None = None) -> RebuildReport:
    """§3.2 inside the caller's write transaction (whole DB, or one session)."""
    sql = f"SELECT {EVENT_COLUMNS} FROM runtime_events"
    params: tuple[Any, ...] = ()
    if session_id is not None:
        sql += " WHERE session_id = ?"
        params = (session_id,)
    rows = conn.execute(sql + " ORDER BY invocation_id ASC, event_seq ASC, event_id ASC", params).fetchall()
    with cyclic_gc_paused(len(rows)):
        return _rebuild_from(conn, rows, session_id)


def _rebuild_from(conn: sqlite3.Connection, rows: list[Any], session_id: str | None) -> RebuildReport:
    """The rebuild proper: decode and scan ``rows``, then rewrite the scoped projections."""
    stored = [decode_event_row(row) for row in rows]
    events = [item.event for item in stored]
    order = {item.event_id: index for index, item in enumerate(stored)}
    committed = {item.event_id: item.committed_at for item in stored}
    scan = scan_tool_ledger(events)
    if scan.issues:
        first = scan.issues[0]
        raise StoreError(
            f"Corrupt tool RuntimeEvent ledger: {first.code} at {first.event_id}", code="corrupt_tool_ledger"
        )
    dispatched = [op for op in scan.operations if op.dispatch_event is not None]
    scope = "dispatch_event_id IS NOT NULL"
    scope_params: tuple[Any, ...] = ()
    if session_id is not None:
        scope += " AND call_event_id IN (SELECT event_id FROM runtime_events WHERE session_id = ?)"
        scope_params = (session_id,)
    conn.execute(
        f"DELETE FROM tool_journal_events WHERE operation_id IN (SELECT operation_id FROM tool_operations WHERE {scope})",
        scope_params,
    )
    conn.execute(f"DELETE FROM tool_operations WHERE {scope}", scope_params)
    journal_events = 0
    for op in dispatched:
        dispatch = op.dispatch_event
        call = op.call_event
        fact = dispatch["actions"]["toolDispatch"]
        operation_id = fact["operationId"]
        interpretation = interpret_operation(op, order)
        if interpretation.kind == "corruption":
            raise StoreError(
                f"Corrupt tool recovery bundle for {operation_id}: {interpretation.code}",
                code="corrupt_recovery_bundle",
            )
        identity = (dispatch["invocationId"], dispatch["runId"], dispatch["turnId"])
        hash_, mode = fact["canonicalArgsHash"], fact["recoveryMode"]
        insert_journal(
            conn, journal_event_id=f"{operation_id}_prepared", operation_id=operation_id, identity=identity,
            state="prepared", runtime_event_id=dispatch["id"], canonical_args_hash=hash_, recovery_mode=mode,
            metadata_json=None, committed_at=committed[dispatch["id"]],
        )
        journal_events += 1
        response = op.response_event
        disposition = interpretation.disposition
        tail: list[tuple[str, Any]] = []
        if interpretation.kind == "valid":
            tail.append(("reconcile", interpretation.reconcile_event))
            tail.append(("decision", interpretation.decision_event))
        if response is not None:
            tail.append(("outcome", response))
        tail.sort(key=lambda item: order[item[1]["id"]])
        if interpretation.kind == "valid":
            state = _tail_state("decision", disposition)
        else:
            state = "outcome_committed" if response is not None else "prepared"
        conn.execute(
            f"INSERT INTO tool_operations ({OPERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (operation_id, *identity, fact["providerToolCallId"], fact["toolName"], hash_, mode, state,
             call["id"], dispatch["id"], response["id"] if response is not None else None, 1 + len(tail)),
        )
        for kind, event in tail:
            journal_id = f"{operation_id}_outcome" if kind == "outcome" else f"{event['id']}_journal"
            insert_journal(
                conn, journal_event_id=journal_id, operation_id=operation_id,
                identity=(event["invocationId"], event["runId"], event["turnId"]),
                state=_tail_state(kind, disposition), runtime_event_id=event["id"], canonical_args_hash=hash_,
                recovery_mode=mode, metadata_json=metadata_json_of(event), committed_at=committed[event["id"]],
            )
            journal_events += 1
    return RebuildReport(len(dispatched), journal_events)
