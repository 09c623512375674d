"""The outcome step shared by T2 and the recovery bundle (spec 30 §2.4 steps, §2.5).

Why a module of its own: ``commitToolOutcome`` (T2, :mod:`.tool`) and
``commitToolRecoveryBundle`` (:mod:`.bundle`) both commit a tool's ``function_response``
against a prepared operation — the same identity checks, exact-retry rule, insert, journal row
and compare-and-set. Both writers import it from here; before, each imported the other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from maka_ref._events.encode import EncodedRuntimeEvent, json_strict_equal
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.engine.rows import read_event_row
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.facts import InsertFacts
from maka_ref._store.insert.health import HealthGate, assert_tool_ledger_transition
from maka_ref._store.insert.primitive import insert_event
from maka_ref._store.projections import insert_journal, read_tool_operation
from maka_ref._store.records import CommitResult, ToolOperationRecord

__all__ = ["outcome_steps", "require_operation", "stored_equals"]


def _fail(message: str, code: str) -> StoreError:
    return StoreError(message, code=code)


def stored_equals(conn: sqlite3.Connection, event: Mapping[str, Any]) -> int | None:
    """The stored event_seq of ``event`` when stored identically; None when absent; raises
    ``RuntimeEvent identity conflict for <id>`` when stored differently."""
    stored = read_event_row(conn, event["id"])
    if stored is None:
        return None
    if not json_strict_equal(stored.event, event):
        raise _fail(f"RuntimeEvent identity conflict for {event['id']}", "event_identity_conflict")
    return stored.event_seq


def require_operation(conn: sqlite3.Connection, operation_id: str) -> ToolOperationRecord:
    operation = read_tool_operation(conn, operation_id)
    if operation is None:
        raise _fail(f"Unknown tool operation {operation_id}", "unknown_tool_operation")
    return operation


def outcome_steps(
    conn: sqlite3.Connection,
    gate: HealthGate,
    operation_id: str,
    encoded: EncodedRuntimeEvent,
    committed_at: Any,
    facts: InsertFacts | None = None,
    *,
    identity_checked: bool = False,
) -> CommitResult:
    """T2 in-transaction steps 1–7, shared with the recovery bundle's outcome step.

    ``facts``: T2's insert cache (``commit_t2`` begins and settles it; the bundle passes none).
    ``identity_checked``: passed to :func:`insert_event` (the bundle's reconcile fact of the
    same identity was just inserted)."""
    event = encoded.event
    operation = require_operation(conn, operation_id)
    content = event.get("content")
    content = content if isinstance(content, Mapping) else {}
    if (
        content.get("kind") != "function_response"
        or event["invocationId"] != operation.invocation_id
        or event["runId"] != operation.run_id
        or event["turnId"] != operation.turn_id
        or content.get("id") != operation.provider_tool_call_id
        or content.get("name") != operation.tool_name
    ):
        raise _fail(f"Tool operation outcome identity conflict for {operation_id}", "outcome_identity_conflict")
    assert_tool_ledger_transition(conn, gate, [event], "t2_outcome")
    if facts is not None:
        facts.begin(conn, gate.data_version, gate.fresh_changes)
    if operation.result_event_id is not None:
        if operation.result_event_id != event["id"]:
            raise _fail(f"Tool operation outcome conflict for {operation_id}", "outcome_conflict")
        seq = stored_equals(conn, event)
        if seq is None:
            raise _fail(f"Missing RuntimeEvent {event['id']}", "missing_event")
        return CommitResult(False, seq)
    # T2 only (the bundle passes no facts): its transition check just established the max.
    max_seq = None if facts is None else gate.transitions.max_seq(conn, gate.data_version, event["invocationId"])
    seq, _ = insert_event(
        conn, encoded, committed_at, allow_exact_duplicate=False, identity_checked=identity_checked, facts=facts,
        rows=gate.rows, event_seq=None if max_seq is None else max_seq + 1,
    )
    failpoint("after_runtime_event_insert")
    insert_journal(
        conn, journal_event_id=f"{operation_id}_outcome", operation_id=operation_id,
        identity=(operation.invocation_id, operation.run_id, operation.turn_id), state="outcome_committed",
        runtime_event_id=event["id"], canonical_args_hash=operation.canonical_args_hash,
        recovery_mode=operation.recovery_mode, metadata_json=None, committed_at=committed_at,
    )
    failpoint("after_journal_event_insert")
    changed = conn.execute(
        "UPDATE tool_operations SET current_state = 'outcome_committed', result_event_id = ?, version = version + 1 "
        "WHERE operation_id = ? AND current_state = 'prepared' AND result_event_id IS NULL",
        (event["id"], operation_id),
    ).rowcount
    if changed != 1:
        raise _fail(f"Tool operation compare-and-set failed for {operation_id}", "compare_and_set_failed")
    return CommitResult(True, seq)
