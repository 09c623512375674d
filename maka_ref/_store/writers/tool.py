"""T1 ``commitToolPrepared`` and T2 ``commitToolOutcome`` (spec 30 §2.3, §2.4).

The outcome step T2 shares with the recovery bundle writer (§2.5, :mod:`.bundle`) lives in
:mod:`.outcome`, below both, so neither writer imports the other.

Why T1 and T2 are separate atomic transactions: T1 durably records "every pre-execution guard
passed; from now on it is unsafe to assume the tool did not run" *before* the implementation
runs; T2 records its outcome. A crash between them leaves an *unsettled* operation that
recovery must reconcile, never re-run blindly.

Every validation step runs in the spec's order with the spec's message; nothing is written
when any step fails (pre-transaction checks run before the write lock; in-transaction
failures roll back). Journal ids are derived, never caller-chosen, and T1 recomputes the args
hash from the call it persists (§10 items 19–21).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._events.encode import EncodedRuntimeEvent, encode_runtime_event
from maka_ref._ledger.lanes import (
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    TOOL_DISPATCH,
    classify_lane,
)
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.errors import StoreError
from maka_ref._store.evidence import PreparedEvidence, insert_evidence, prepare_evidence, stored_evidence_text
from maka_ref._store.insert.health import HealthGate, assert_tool_ledger_transition
from maka_ref._store.insert.primitive import insert_event
from maka_ref._store.projections import (
    OPERATION_COLUMNS,
    insert_journal,
    read_tool_operation,
)
from maka_ref._store.records import CommitResult
from maka_ref._store.writers.generic import (
    check_no_recovery_fact,
    check_reserved_authority,
)
from maka_ref._store.writers.outcome import outcome_steps, stored_equals

__all__ = [
    "T1Input",
    "T2Input",
    "commit_t1",
    "commit_t2",
    "prepare_t1",
    "prepare_t2",
]


@dataclass(frozen=True, slots=True)
class T1Input:
    """``commitToolPrepared`` input; ``runtime_event`` is the function_call."""

    operation_id: str
    journal_event_id: str
    runtime_event: Any
    dispatch_runtime_event: Any
    provider_tool_call_id: str
    tool_name: str
    canonical_args_hash: str
    recovery_mode: str
    committed_at: int
    #: Phase 3 file evidence (a ``FileEvidence`` or its JSON object), committed in T1's
    #: transaction when present (spec-phase3 §3.3); None: T1 exactly as before Phase 3.
    evidence: Any = None


@dataclass(frozen=True, slots=True)
class T2Input:
    """``commitToolOutcome`` input; ``runtime_event`` is the function_response."""

    operation_id: str
    journal_event_id: str
    runtime_event: Any
    committed_at: int


@dataclass(frozen=True, slots=True)
class PreparedT1:
    data: T1Input
    call: EncodedRuntimeEvent
    dispatch: EncodedRuntimeEvent
    evidence: PreparedEvidence | None = None


@dataclass(frozen=True, slots=True)
class PreparedT2:
    data: T2Input
    response: EncodedRuntimeEvent


def _fail(message: str, code: str) -> StoreError:
    return StoreError(message, code=code)


def _canonicalize(raw: Any) -> EncodedRuntimeEvent:
    """G8 (``generic.canonicalize``) for T1/T2: decode + lossless canonical JSON, same text and
    same errors, but a plain event is kept in the decoder's key order instead of being re-built
    in the text's (``encode_runtime_event(ordered=False)``). Why that is safe: T1 and T2 only
    read fields of their events, compare them key by key (``json_strict_equal``, the canonical
    text) and store the canonical text; nothing they do or return depends on key order."""
    return encode_runtime_event(raw, ordered=False)


def prepare_t1(data: T1Input) -> PreparedT1:
    """§2.3 pre-transaction validation, steps 1–8 in order."""
    call_encoded = _canonicalize(data.runtime_event)
    dispatch_encoded = _canonicalize(data.dispatch_runtime_event)
    call, dispatch = call_encoded.event, dispatch_encoded.event
    check_reserved_authority(call)
    check_reserved_authority(dispatch)
    if data.journal_event_id != f"{data.operation_id}_prepared":
        raise _fail("T1 journal identity must be derived from the tool operation", "t1_journal_identity")
    check_no_recovery_fact(call)
    check_no_recovery_fact(dispatch)
    content = call.get("content")
    if not isinstance(content, Mapping) or content.get("kind") != "function_call":
        raise _fail("T1 requires a function_call RuntimeEvent", "t1_function_call_required")
    if content.get("id") != data.provider_tool_call_id or content.get("name") != data.tool_name:
        raise _fail("T1 RuntimeEvent identity does not match the tool operation", "t1_identity_mismatch")
    try:
        derived = canonical_args_hash(content.get("name"), content.get("args"))
    except Exception:  # noqa: BLE001 - non-strict-JSON args are a hash mismatch (§0.3)
        derived = None
    if derived is None or derived != data.canonical_args_hash or classify_lane(call) != FUNCTION_CALL:
        raise _fail("T1 argument hash does not match its canonical function call", "t1_args_hash_mismatch")
    actions = dispatch.get("actions")
    fact = actions.get("toolDispatch") if isinstance(actions, Mapping) else None
    if (
        not isinstance(fact, Mapping)
        or "content" in dispatch
        or dispatch.get("partial") is not False
        or fact.get("operationId") != data.operation_id
        or fact.get("providerToolCallId") != data.provider_tool_call_id
        or fact.get("toolName") != data.tool_name
        or fact.get("canonicalArgsHash") != data.canonical_args_hash
        or fact.get("recoveryMode") != data.recovery_mode
        or classify_lane(dispatch) != TOOL_DISPATCH
    ):
        raise _fail("T1 requires a matching tool-dispatch RuntimeEvent", "t1_dispatch_mismatch")
    if any(call.get(key) != dispatch.get(key) for key in ("sessionId", "invocationId", "runId", "turnId")):
        raise _fail("T1 RuntimeEvents do not share one execution identity", "t1_execution_identity_mismatch")
    # spec-phase3 §3.3 step 9: the evidence decodes and binds to these very events, or T1 is refused.
    evidence = None if data.evidence is None else prepare_evidence(data.evidence, call, dispatch)
    return PreparedT1(data, call_encoded, dispatch_encoded, evidence)


def commit_t1(conn: sqlite3.Connection, gate: HealthGate, prepared: PreparedT1) -> CommitResult:
    """§2.3 in-transaction steps 1–8 (the caller commits)."""
    data, call, dispatch = prepared.data, prepared.call.event, prepared.dispatch.event
    assert_tool_ledger_transition(conn, gate, [call, dispatch], "t1_prepare")
    facts = gate.facts
    facts.begin(conn, gate.data_version, gate.fresh_changes)
    existing = read_tool_operation(conn, data.operation_id)
    if existing is not None:
        if (
            existing.invocation_id != call["invocationId"]
            or existing.run_id != call["runId"]
            or existing.turn_id != call["turnId"]
            or existing.provider_tool_call_id != data.provider_tool_call_id
            or existing.tool_name != data.tool_name
            or existing.canonical_args_hash != data.canonical_args_hash
            or existing.recovery_mode != data.recovery_mode
            or existing.call_event_id != call["id"]
            or existing.dispatch_event_id != dispatch["id"]
        ):
            raise _fail(f"Tool operation identity conflict for {data.operation_id}", "tool_operation_identity_conflict")
        candidate = None if prepared.evidence is None else prepared.evidence.text
        if stored_evidence_text(conn, data.operation_id) != candidate:  # spec-phase3 §3.3 exact retry
            raise _fail(f"Tool operation {data.operation_id} exists with other file evidence", "evidence_conflict")
        stored_equals(conn, call)
        seq = stored_equals(conn, dispatch)
        if seq is None:
            raise _fail(f"Missing RuntimeEvent {dispatch['id']}", "missing_event")
        gate.transitions.settle(conn)
        facts.settle(conn)
        return CommitResult(False, seq)
    max_seq = gate.transitions.max_seq(conn, gate.data_version, call["invocationId"])
    _, call_created = insert_event(
        conn, prepared.call, data.committed_at, allow_exact_duplicate=True, facts=facts, rows=gate.rows,
        event_seq=None if max_seq is None else max_seq + 1,
    )
    # prepare_t1 proved the dispatch shares the call's execution identity, and the call's
    # insert (same transaction) checked that identity and added at most a row of it.
    seq, _ = insert_event(
        conn, prepared.dispatch, data.committed_at, allow_exact_duplicate=False, identity_checked=True, facts=facts,
        rows=gate.rows, event_seq=None if max_seq is None else max_seq + 1 + call_created,
    )
    if prepared.evidence is not None:  # spec-phase3 §3.3: same transaction, before the failpoints
        insert_evidence(conn, prepared.evidence, data.committed_at)
    failpoint("after_runtime_event_insert")
    identity = (call["invocationId"], call["runId"], call["turnId"])
    insert_journal(
        conn, journal_event_id=data.journal_event_id, operation_id=data.operation_id, identity=identity,
        state="prepared", runtime_event_id=dispatch["id"], canonical_args_hash=data.canonical_args_hash,
        recovery_mode=data.recovery_mode, metadata_json=None, committed_at=data.committed_at,
    )
    failpoint("after_journal_event_insert")
    conn.execute(
        f"INSERT INTO tool_operations ({OPERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'prepared', ?, ?, NULL, 1)",
        (data.operation_id, *identity, data.provider_tool_call_id, data.tool_name, data.canonical_args_hash,
         data.recovery_mode, call["id"], dispatch["id"]),
    )
    gate.transitions.settle(conn)
    facts.settle(conn)
    return CommitResult(True, seq)


def prepare_t2(data: T2Input) -> PreparedT2:
    """§2.4 pre-transaction validation."""
    encoded = _canonicalize(data.runtime_event)
    event = encoded.event
    check_reserved_authority(event)
    if data.journal_event_id != f"{data.operation_id}_outcome":
        raise _fail("T2 journal identity must be derived from the tool operation", "t2_journal_identity")
    check_no_recovery_fact(event)
    content = event.get("content")
    if not isinstance(content, Mapping) or content.get("kind") != "function_response":
        raise _fail("T2 requires a function_response RuntimeEvent", "t2_function_response_required")
    refs = event.get("refs")
    refs = refs if isinstance(refs, Mapping) else {}
    if refs.get("operationId") != data.operation_id or refs.get("toolCallId") != content.get("id"):
        raise _fail("T2 requires operation and tool-call refs on the function_response RuntimeEvent", "t2_refs_required")
    if classify_lane(event) != FUNCTION_RESPONSE:
        raise _fail("T2 requires one canonical function-response semantic lane", "t2_lane_invalid")
    return PreparedT2(data, encoded)


def commit_t2(conn: sqlite3.Connection, gate: HealthGate, prepared: PreparedT2) -> CommitResult:
    """§2.4 in-transaction steps (the caller commits); then the transition state is settled."""
    facts = gate.facts
    result = outcome_steps(
        conn, gate, prepared.data.operation_id, prepared.response, prepared.data.committed_at, facts
    )
    gate.transitions.settle(conn)
    facts.settle(conn)
    return result
