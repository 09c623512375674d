"""Recovery bundle validation / interpretation — spec 10 §5.3, §5.4, scenarios §7.6 (44–47)."""

from __future__ import annotations

import copy

import pytest

from maka_ref._ledger.bundle import (
    OperationIdentity,
    identity_from_scanned_operation,
    interpret_operation,
    validate_recovery_bundle,
)
from maka_ref._ledger.results import ScannedOperation
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref.testing.families import (
    WRITE_NOTES_HASH,
    w_call,
    w_decision_completed,
    w_decision_parked,
    w_dispatch,
    w_outcome,
    w_reconcile,
    with_fields,
)

W_IDENTITY = OperationIdentity(
    operation_id="operation-1",
    invocation_id="invocation-1",
    run_id="run-1",
    turn_id="turn-1",
    provider_tool_call_id="provider-call-1",
    tool_name="Write",
    canonical_args_hash=WRITE_NOTES_HASH,
    recovery_mode="reconcile",
    call_event_id="call-event-1",
    dispatch_event_id="dispatch-event-1",
)


def interpret(events):
    """interpret(scan(events)) for the single operation, with the §6.2 event-order map."""
    before = copy.deepcopy(events)
    scan = scan_tool_ledger(events)
    (op,) = scan.operations
    order = {}
    for index, e in enumerate(events):
        order[e["id"]] = index
    result = interpret_operation(op, order)
    assert events == before
    return result


def code_of(events):
    result = interpret(events)
    assert result.kind == "corruption", result
    return result.code


def test_44_self_authenticating_hash_is_caught():
    """§7.6 #44 [T:auth]: dispatch *and* identity claim sha256:wrong → canonical_args_hash_conflict."""
    dispatch = w_dispatch()
    dispatch["actions"]["toolDispatch"]["canonicalArgsHash"] = "sha256:wrong"
    identity = OperationIdentity(**{**_fields(W_IDENTITY), "canonical_args_hash": "sha256:wrong"})
    result = validate_recovery_bundle(
        identity, w_call(), dispatch, w_reconcile(), w_outcome(), w_decision_completed()
    )
    assert result.to_json() == {"ok": False, "code": "canonical_args_hash_conflict"}


def test_45_valid_completed_bundle():
    """§7.6 #45 [T:auth]: {ok: true, reconcile: RC.payload, decision: DC.payload}."""
    rc, dc = w_reconcile(), w_decision_completed()
    result = validate_recovery_bundle(W_IDENTITY, w_call(), w_dispatch(), rc, w_outcome(), dc)
    assert result.to_json() == {
        "ok": True,
        "reconcile": rc["actions"]["toolRecovery"]["payload"],
        "decision": dc["actions"]["toolRecovery"]["payload"],
    }


def test_46_interpretation_valid_and_causal_order():
    """§7.6 #46 [T:auth]: [C,D,RC,O,DC] → valid; [C,D,O,RC,DC] → corruption/event_order_conflict."""
    valid = interpret([w_call(), w_dispatch(), w_reconcile(), w_outcome(), w_decision_completed()])
    assert valid.kind == "valid"
    assert valid.disposition == "completed"
    assert valid.to_json() == {
        "kind": "valid",
        "disposition": "completed",
        "reconcile": w_reconcile()["actions"]["toolRecovery"]["payload"],
        "decision": w_decision_completed()["actions"]["toolRecovery"]["payload"],
        "reconcileEventId": "reconcile-event-1",
        "decisionEventId": "decision-event-1",
        "outcomeEventId": "outcome-event-1",
    }
    wrong = interpret([w_call(), w_dispatch(), w_outcome(), w_reconcile(), w_decision_completed()])
    assert wrong.to_json() == {"kind": "corruption", "code": "event_order_conflict"}


def test_interpret_absent_without_recovery_facts():
    """§5.4: no reconcile and no decision events → absent."""
    assert interpret([w_call(), w_dispatch()]).to_json() == {"kind": "absent"}
    assert interpret([w_call(), w_dispatch(), w_outcome()]).kind == "absent"


def test_interpret_valid_parked_bundle():
    """§5.4: a parked bundle without outcome is valid, disposition parked."""
    result = interpret([w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()])
    assert (result.kind, result.disposition, result.outcome_event) == ("valid", "parked", None)


# --- §7.6 #47 interpretation codes ---------------------------------------------------------------


def _dp_with_evidence(evidence):
    dp = w_decision_parked()
    dp["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = evidence
    return dp


def _dc_with(**payload):
    dc = w_decision_completed()
    dc["actions"]["toolRecovery"]["payload"].update(payload)
    return dc


def _with_refs(e, **refs):
    out = copy.deepcopy(e)
    out["refs"].update(refs)
    return out


C, D = w_call, w_dispatch

SCENARIO_47 = [
    ("outcome for parked", [C(), D(), w_reconcile("diverged"), w_outcome(), w_decision_parked()], "outcome_for_parked"),
    ("reconcile only", [C(), D(), w_reconcile()], "recovery_fact_shape_conflict"),
    (
        "two reconciles",
        [C(), D(), w_reconcile("diverged"), w_reconcile("diverged", id="reconcile-event-2"), w_decision_parked()],
        "recovery_fact_shape_conflict",
    ),
    ("decision only", [C(), D(), w_decision_parked()], "recovery_fact_shape_conflict"),
    ("outcome before reconcile", [C(), D(), w_outcome(), w_reconcile(), w_decision_completed()], "event_order_conflict"),
    (
        "never_auto_retry mode",
        [C(), w_dispatch(recovery_mode="never_auto_retry"), w_reconcile("diverged"), w_decision_parked()],
        "recovery_mode_unsupported",
    ),
    (
        "evidence order",
        [C(), D(), w_reconcile("diverged"), _dp_with_evidence(["dispatch-event-1", "call-event-1", "reconcile-event-1"])],
        "evidence_order_conflict",
    ),
    ("error outcome", [C(), D(), w_reconcile(), w_outcome(err=True), w_decision_completed()], "outcome_not_successful"),
    (
        "diverged + unreadable park",
        [C(), D(), w_reconcile("diverged"), w_decision_parked("reconcile_unreadable")],
        "reconcile_decision_conflict",
    ),
    ("expected state + park", [C(), D(), w_reconcile(), w_decision_parked()], "reconcile_decision_conflict"),
    (
        "diverged + completed",
        [C(), D(), w_reconcile("diverged"), w_outcome(), w_decision_completed()],
        "reconcile_decision_conflict",
    ),
    ("no outcome", [C(), D(), w_reconcile(), w_decision_completed()], "outcome_required"),
    (
        "other outcome reference",
        [C(), D(), w_reconcile(), w_outcome(), _dc_with(outcomeEventId="other")],
        "outcome_reference_conflict",
    ),
    (
        "reconcile refs toolCallId",
        [C(), D(), _with_refs(w_reconcile(), toolCallId="zzz"), w_outcome(), w_decision_completed()],
        "recovery_fact_identity_conflict",
    ),
    (
        "reconcile refs operationId",
        [C(), D(), _with_refs(w_reconcile(), operationId="operation-X"), w_outcome(), w_decision_completed()],
        "recovery_fact_identity_conflict",
    ),
    (
        "decision refs toolCallId",
        [C(), D(), w_reconcile(), w_outcome(), _with_refs(w_decision_completed(), toolCallId="other")],
        "recovery_fact_identity_conflict",
    ),
    ("decision before reconcile", [C(), D(), w_decision_parked(), w_reconcile("diverged")], "event_order_conflict"),
    ("outcome after decision", [C(), D(), w_reconcile(), w_decision_completed(), w_outcome()], "event_order_conflict"),
    (
        "un-decoded repeated evidence",
        [
            C(),
            D(),
            w_reconcile(),
            w_outcome(),
            _dc_with(evidenceEventIds=["call-event-1", "call-event-1", "reconcile-event-1", "outcome-event-1"]),
        ],
        "decision_fact_invalid",
    ),
]


@pytest.mark.parametrize("events,code", [(e, c) for _, e, c in SCENARIO_47], ids=[n for n, _, _ in SCENARIO_47])
def test_47_interpretation_codes(events, code):
    """§7.6 #47 [X]: each variant interprets as corruption with the listed code."""
    assert code_of(events) == code


# --- §5.3 ordered checks, one by one (first failing check wins) ----------------------------------


def _validate(**overrides):
    parts = {
        "identity": W_IDENTITY,
        "call_event": w_call(),
        "dispatch_event": w_dispatch(),
        "reconcile_event": w_reconcile(),
        "outcome_event": w_outcome(),
        "decision_event": w_decision_completed(),
    }
    parts.update(overrides)
    return validate_recovery_bundle(**parts).to_json()


def _fields(identity):
    return {name: getattr(identity, name) for name in OperationIdentity.__dataclass_fields__}


@pytest.mark.parametrize(
    "overrides,code",
    [
        ({"call_event": with_fields(w_call(), id="other-call")}, "call_identity_conflict"),
        ({"call_event": with_fields(w_call(), runId="run-2")}, "call_identity_conflict"),
        ({"call_event": with_fields(w_call(), branch="b")}, "call_identity_conflict"),
        ({"dispatch_event": with_fields(w_dispatch(), sessionId="session-2")}, "dispatch_identity_conflict"),
        ({"dispatch_event": with_fields(w_dispatch(), refs={"operationId": "operation-1", "toolCallId": "x"})}, "dispatch_identity_conflict"),
        ({"reconcile_event": w_decision_parked()}, "reconcile_fact_invalid"),
        ({"decision_event": w_reconcile()}, "decision_fact_invalid"),
        ({"reconcile_event": with_fields(w_reconcile(), sessionId="session-2")}, "recovery_fact_identity_conflict"),
        ({"decision_event": with_fields(w_decision_completed(), turnId="turn-2")}, "recovery_fact_identity_conflict"),
        ({"outcome_event": None}, "outcome_required"),
        ({"outcome_event": with_fields(w_outcome(), sessionId="session-2")}, "outcome_identity_conflict"),
        ({"outcome_event": with_fields(w_outcome(), refs={"toolCallId": "provider-call-1"})}, "outcome_identity_conflict"),
    ],
)
def test_ordered_checks(overrides, code):
    """§5.3 checks 1–9."""
    assert _validate(**overrides) == {"ok": False, "code": code}


def test_payload_operation_id_mismatch_is_operation_identity_conflict():
    """§5.3 check 8: refs match but payload.operationId differs."""
    rc = w_reconcile()
    rc["actions"]["toolRecovery"]["payload"]["operationId"] = "operation-2"
    assert _validate(reconcile_event=rc) == {"ok": False, "code": "operation_identity_conflict"}


def test_recovery_mode_check_comes_before_fact_checks():
    """§5.3 check 4 precedes 5: never_auto_retry with an invalid reconcile → recovery_mode_unsupported."""
    identity = OperationIdentity(**{**_fields(W_IDENTITY), "recovery_mode": "never_auto_retry"})
    result = validate_recovery_bundle(
        identity, w_call(), w_dispatch(recovery_mode="never_auto_retry"), {"junk": 1}, None, None
    )
    assert result.to_json() == {"ok": False, "code": "recovery_mode_unsupported"}


def test_identity_from_scanned_operation():
    """§5.3: identity from a scan — ids from the dispatch, toolName from the op, hash/mode from the dispatch."""
    scan = scan_tool_ledger([w_call(), w_dispatch()])
    assert identity_from_scanned_operation(scan.operations[0]) == W_IDENTITY
    assert identity_from_scanned_operation(scan_tool_ledger([w_call()]).operations[0]) is None


# --- robustness -------------------------------------------------------------------------------


@pytest.mark.parametrize("junk", [None, 1, "x", [], {}, {"id": []}])
def test_validate_never_raises_on_junk_events(junk):
    for slot in ("call_event", "dispatch_event", "reconcile_event", "outcome_event", "decision_event"):
        assert _validate(**{slot: junk})["ok"] is False


@pytest.mark.parametrize("op", [None, 3, object(), ScannedOperation("x")])
def test_interpret_never_raises(op):
    result = interpret_operation(op, {})
    assert result.kind in ("absent", "corruption")


def test_interpret_with_garbage_event_order_is_order_conflict():
    scan = scan_tool_ledger([w_call(), w_dispatch(), w_reconcile(), w_outcome(), w_decision_completed()])
    assert interpret_operation(scan.operations[0], {}).to_json() == {"kind": "corruption", "code": "event_order_conflict"}
    assert interpret_operation(scan.operations[0], None).code == "event_order_conflict"  # type: ignore[arg-type]
