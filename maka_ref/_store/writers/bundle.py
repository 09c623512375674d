"""Recovery bundle writer ``commitToolRecoveryBundle`` (spec 30 §2.5).

Why one transaction: a dispatched ``reconcile``-mode operation whose outcome is unknown is
settled by (reconcile observation, optional recovered outcome, decision). Either all three
facts and their projection rows become durable, or none does — a crash at any named failpoint
leaves the operation ``prepared`` and recoverable again.

Bundle validation is the core's ``validate_recovery_bundle`` against the *stored* call and
dispatch (never the caller's copies), so the writer accepts exactly what recovery and rebuild
interpret as valid. ``parked`` is final: after a parked bundle only its exact retry succeeds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maka_ref._events.encode import EncodedRuntimeEvent
from maka_ref._ledger.bundle import OperationIdentity, validate_recovery_bundle
from maka_ref._store.engine.failpoints import failpoint, reconciling
from maka_ref._store.engine.rows import read_event_row
from maka_ref._store.errors import StoreError, ToolRecoveryBundleValidationError
from maka_ref._store.insert.health import HealthGate, assert_tool_ledger_transition
from maka_ref._store.insert.primitive import insert_event
from maka_ref._store.projections import insert_journal, metadata_json_of
from maka_ref._store.records import ToolOperationRecord
from maka_ref._store.writers.generic import (
    canonicalize,
    check_no_recovery_fact,
    check_reserved_authority,
)
from maka_ref._store.writers.outcome import (
    outcome_steps,
    require_operation,
    stored_equals,
)

__all__ = ["PreparedBundle", "commit_bundle", "prepare_bundle"]


@dataclass(frozen=True, slots=True)
class PreparedBundle:
    operation_id: str
    reconcile: EncodedRuntimeEvent
    decision: EncodedRuntimeEvent
    outcome: EncodedRuntimeEvent | None


def prepare_bundle(operation_id: str, reconcile: Any, decision: Any, outcome: Any = None) -> PreparedBundle:
    """Pre-transaction: canonicalise all; G1/G2 on all; the outcome carries no recovery fact."""
    reconcile_encoded = canonicalize(reconcile)
    outcome_encoded = canonicalize(outcome) if outcome is not None else None
    decision_encoded = canonicalize(decision)
    for encoded in (reconcile_encoded, outcome_encoded, decision_encoded):
        if encoded is not None:
            check_reserved_authority(encoded.event)
    if outcome_encoded is not None:
        check_no_recovery_fact(outcome_encoded.event)
    return PreparedBundle(operation_id, reconcile_encoded, decision_encoded, outcome_encoded)


def _fail(message: str, code: str) -> StoreError:
    return StoreError(message, code=code)


def _required(conn: sqlite3.Connection, event_id: str) -> Any:
    stored = read_event_row(conn, event_id)
    if stored is None:
        raise _fail(f"Missing RuntimeEvent {event_id}", "missing_event")
    return stored


def _disposition(event: Mapping[str, Any]) -> str | None:
    actions = event.get("actions")
    envelope = actions.get("toolRecovery") if isinstance(actions, Mapping) else None
    payload = envelope.get("payload") if isinstance(envelope, Mapping) else None
    return payload.get("disposition") if isinstance(payload, Mapping) else None


def _exact_retry(conn: sqlite3.Connection, bundle: PreparedBundle, operation: ToolOperationRecord) -> None:
    """§2.5 step 5: a settled operation accepts only the exact bundle that settled it."""

    completed = _disposition(bundle.decision.event) == "completed"
    outcome = bundle.outcome.event if bundle.outcome is not None else None
    if completed:
        settled_by_it = (
            outcome is not None
            and operation.current_state == "recovery_completed"
            and operation.result_event_id == outcome["id"]
        )
    else:
        settled_by_it = (
            outcome is None and operation.current_state == "recovery_parked" and operation.result_event_id is None
        )
    if not settled_by_it:
        raise _fail(f"Tool operation {operation.operation_id} is already settled", "already_settled")
    for encoded in (bundle.reconcile, bundle.outcome, bundle.decision):
        if encoded is not None and stored_equals(conn, encoded.event) is None:
            raise _fail(f"Tool recovery bundle is incomplete for {operation.operation_id}", "bundle_incomplete")


def _identity(event: Mapping[str, Any]) -> tuple[Any, ...]:
    return (event.get("sessionId"), event.get("invocationId"), event.get("runId"), event.get("turnId"))


def _recovery_fact(
    conn: sqlite3.Connection, operation: ToolOperationRecord, encoded: EncodedRuntimeEvent, state: str,
    identity_checked: bool = False,
) -> None:
    """Insert one recovery fact and its journal row (committed_at = the event's ``ts``).
    ``identity_checked``: as for :func:`insert_event` (an earlier fact of this bundle had the
    same identity and was inserted in this transaction)."""
    event = encoded.event
    insert_event(conn, encoded, event["ts"], allow_exact_duplicate=False, identity_checked=identity_checked)
    failpoint("after_runtime_event_insert")
    insert_journal(
        conn, journal_event_id=f"{event['id']}_journal", operation_id=operation.operation_id,
        identity=(operation.invocation_id, operation.run_id, operation.turn_id), state=state,
        runtime_event_id=event["id"], canonical_args_hash=operation.canonical_args_hash,
        recovery_mode=operation.recovery_mode, metadata_json=metadata_json_of(event), committed_at=event["ts"],
    )
    failpoint("after_journal_event_insert")


def _compare_and_set(conn: sqlite3.Connection, operation_id: str, sql: str, params: tuple[Any, ...]) -> None:
    if conn.execute(sql, params).rowcount != 1:
        raise _fail(f"Tool operation compare-and-set failed for {operation_id}", "compare_and_set_failed")


def commit_bundle(conn: sqlite3.Connection, gate: HealthGate, bundle: PreparedBundle) -> None:
    """§2.5 in-transaction steps 1–8 (the caller commits)."""

    operation_id = bundle.operation_id
    operation = require_operation(conn, operation_id)
    if operation.dispatch_event_id is None:
        raise _fail("Recovery bundle requires a durable dispatch RuntimeEvent", "recovery_dispatch_required")
    call = _required(conn, operation.call_event_id)
    dispatch = _required(conn, operation.dispatch_event_id)
    identity = OperationIdentity(
        operation.operation_id, operation.invocation_id, operation.run_id, operation.turn_id,
        operation.provider_tool_call_id, operation.tool_name, operation.canonical_args_hash,
        operation.recovery_mode, operation.call_event_id, operation.dispatch_event_id,
    )
    outcome = bundle.outcome.event if bundle.outcome is not None else None
    validation = validate_recovery_bundle(
        identity, call.event, dispatch.event, bundle.reconcile.event, outcome, bundle.decision.event
    )
    if not validation.ok:
        raise ToolRecoveryBundleValidationError(validation.code or "recovery_fact_shape_conflict")
    if not call.event_seq < dispatch.event_seq:
        raise _fail("Recovery facts violate canonical RuntimeEvent causal order", "causal_order_violation")
    candidates = [bundle.reconcile.event, *([outcome] if outcome is not None else []), bundle.decision.event]
    assert_tool_ledger_transition(conn, gate, candidates, "recovery_bundle")
    if operation.current_state != "prepared" or operation.result_event_id is not None:
        _exact_retry(conn, bundle, operation)
        return

    # The reconcile's insert runs the full §0.1 identity check; a later fact of this bundle with
    # the very same (session, invocation, run, turn) skips the four queries (same verdict: only
    # rows of that identity were written since, see insert_event's ``identity_checked``).
    _recovery_fact(conn, operation, bundle.reconcile, "reconcile_observed")
    checked: tuple[Any, ...] | None = _identity(bundle.reconcile.event)
    _compare_and_set(
        conn, operation_id, "UPDATE tool_operations SET version = version + 1 WHERE operation_id = ?", (operation_id,)
    )
    failpoint("after_recovery_reconcile")
    if reconciling():  # the Phase 3 reconciler's own point inside the bundle (spec-phase3 §5.6)
        failpoint("reconcile_inside_bundle")
    if bundle.outcome is not None and _identity(bundle.outcome.event) != checked:
        checked = None  # the outcome's own check ran; the decision runs its own too
    if bundle.outcome is not None:
        outcome_steps(
            conn, gate, operation_id, bundle.outcome, bundle.outcome.event["ts"],
            identity_checked=checked is not None,
        )
        failpoint("after_recovery_outcome")

    decision_event = bundle.decision.event
    actions = decision_event.get("actions")
    envelope = actions.get("toolRecovery") if isinstance(actions, Mapping) else None
    if not isinstance(envelope, Mapping) or envelope.get("kind") != "maka.tool.recovery_decision":
        raise _fail("Recovery bundle requires a recovery decision", "recovery_decision_required")
    payload = envelope.get("payload")
    payload = payload if isinstance(payload, Mapping) else {}
    current = require_operation(conn, operation_id)
    completed = payload.get("disposition") == "completed"
    state = "recovery_completed" if completed else "recovery_parked"
    _recovery_fact(conn, current, bundle.decision, state, identity_checked=_identity(decision_event) == checked)
    if completed and (
        current.current_state != "outcome_committed" or current.result_event_id != payload.get("outcomeEventId")
    ):
        raise _fail("Completed recovery decision does not match the persisted outcome", "completed_decision_mismatch")
    if not completed and (
        payload.get("disposition") != "parked"
        or current.current_state != "prepared"
        or current.result_event_id is not None
    ):
        raise _fail("Parked recovery decision does not match the prepared operation", "parked_decision_mismatch")
    _compare_and_set(
        conn, operation_id,
        "UPDATE tool_operations SET current_state = ?, version = version + 1 WHERE operation_id = ? AND current_state = ?",
        (state, operation_id, "outcome_committed" if completed else "prepared"),
    )
    failpoint("after_recovery_decision")
