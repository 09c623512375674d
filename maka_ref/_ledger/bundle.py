"""Recovery bundles: validation and interpretation of a scanned operation (spec 10 §5.2–§5.4).

What: a recovery bundle settles one dispatched ``reconcile``-mode operation with a reconcile
observation, an optional recovered outcome and a recovery decision.
``validate_recovery_bundle`` runs the ordered checks of §5.3 (the first failing check's code
wins); ``interpret_operation`` applies §5.4 to one operation produced by the scanner and is
shared by the resolver and projection rebuild, so both read a bundle the same way.

Why one module: the write side (the bundle writer) and the read side (resolver, rebuild) must
accept and refuse exactly the same bundles, so the whole rule — its result codes, its value
types, the per-event predicates and the ordered checks — reads top to bottom in one place:

1. tolerant reads of JSON values (``_obj``, ``_get``, ``_truthy``: never raise);
2. the result codes of §5.3/§5.4;
3. the value types (``OperationIdentity``, ``BundleValidation``, ``Interpretation``);
4. the per-event predicates (execution identity, ``refs``, the decoded ``toolRecovery`` fact);
5. the ordered checks of §5.3 and the interpretation of §5.4.

Robustness: both entry points accept arbitrary values in place of events and never raise
(a value that is not an event simply fails the check it is read in).

Depends on: ``_ledger.lanes``, ``_codec.argshash.canonical_args_hash``, ``_events.constants``,
``_events.recovery_facts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._events.constants import (
    COMPLETED_REASON_CODE,
    DECISION_FOR_OBSERVATION,
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
)
from maka_ref._events.recovery_facts import decode_tool_recovery
from maka_ref._ledger.lanes import (
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    RECONCILE_RESULT,
    RECOVERY_DECISION,
    TOOL_DISPATCH,
    classify_lane,
)

__all__ = [
    "ABSENT",
    "BundleValidation",
    "CALL_IDENTITY_CONFLICT",
    "CANONICAL_ARGS_HASH_CONFLICT",
    "DECISION_FACT_INVALID",
    "DISPATCH_IDENTITY_CONFLICT",
    "EVENT_ORDER_CONFLICT",
    "EVIDENCE_ORDER_CONFLICT",
    "Interpretation",
    "MATCHES_EXPECTED_STATE",
    "OPERATION_IDENTITY_CONFLICT",
    "OUTCOME_FOR_PARKED",
    "OUTCOME_IDENTITY_CONFLICT",
    "OUTCOME_NOT_SUCCESSFUL",
    "OUTCOME_REFERENCE_CONFLICT",
    "OUTCOME_REQUIRED",
    "OperationIdentity",
    "RECONCILE_DECISION_CONFLICT",
    "RECONCILE_FACT_INVALID",
    "RECOVERY_FACT_IDENTITY_CONFLICT",
    "RECOVERY_FACT_SHAPE_CONFLICT",
    "RECOVERY_MODE_UNSUPPORTED",
    "identity_from_scanned_operation",
    "interpret_operation",
    "validate_recovery_bundle",
]


_MISSING = object()
_EMPTY: Mapping[str, Any] = {}


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (never raises)."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (int, float)):
        return value == value and value != 0  # NaN and 0 are falsy
    return True


CALL_IDENTITY_CONFLICT = "call_identity_conflict"
CANONICAL_ARGS_HASH_CONFLICT = "canonical_args_hash_conflict"
DISPATCH_IDENTITY_CONFLICT = "dispatch_identity_conflict"
RECOVERY_MODE_UNSUPPORTED = "recovery_mode_unsupported"
RECONCILE_FACT_INVALID = "reconcile_fact_invalid"
DECISION_FACT_INVALID = "decision_fact_invalid"
RECOVERY_FACT_IDENTITY_CONFLICT = "recovery_fact_identity_conflict"
OPERATION_IDENTITY_CONFLICT = "operation_identity_conflict"
OUTCOME_REQUIRED = "outcome_required"
OUTCOME_IDENTITY_CONFLICT = "outcome_identity_conflict"
OUTCOME_NOT_SUCCESSFUL = "outcome_not_successful"
OUTCOME_REFERENCE_CONFLICT = "outcome_reference_conflict"
OUTCOME_FOR_PARKED = "outcome_for_parked"
RECONCILE_DECISION_CONFLICT = "reconcile_decision_conflict"
EVIDENCE_ORDER_CONFLICT = "evidence_order_conflict"
RECOVERY_FACT_SHAPE_CONFLICT = "recovery_fact_shape_conflict"
EVENT_ORDER_CONFLICT = "event_order_conflict"

MATCHES_EXPECTED_STATE = "matches_expected_state"


@dataclass(frozen=True, slots=True)
class OperationIdentity:
    """The §5.3 operation identity tuple."""

    operation_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    provider_tool_call_id: str
    tool_name: str
    canonical_args_hash: str
    recovery_mode: str
    call_event_id: str
    dispatch_event_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "operationId": self.operation_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "providerToolCallId": self.provider_tool_call_id,
            "toolName": self.tool_name,
            "canonicalArgsHash": self.canonical_args_hash,
            "recoveryMode": self.recovery_mode,
            "callEventId": self.call_event_id,
            "dispatchEventId": self.dispatch_event_id,
        }


@dataclass(frozen=True, slots=True)
class BundleValidation:
    """§5.3 result: ``ok`` with the decoded reconcile/decision payloads, or the failing ``code``."""

    ok: bool
    code: str | None = None
    reconcile: Mapping[str, Any] | None = None
    decision: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "reconcile": self.reconcile, "decision": self.decision}
        return {"ok": False, "code": self.code}


@dataclass(frozen=True, slots=True)
class Interpretation:
    """§5.4 result. ``kind`` is ``absent``, ``corruption`` (with ``code``) or ``valid``.

    For ``valid``: ``disposition`` (``completed``/``parked``), the decoded payloads and the
    events themselves (``outcome_event`` only when the operation has a response).
    """

    kind: Literal["absent", "corruption", "valid"]
    code: str | None = None
    disposition: str | None = None
    reconcile: Mapping[str, Any] | None = None
    decision: Mapping[str, Any] | None = None
    reconcile_event: Mapping[str, Any] | None = None
    decision_event: Mapping[str, Any] | None = None
    outcome_event: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "absent":
            return {"kind": "absent"}
        if self.kind == "corruption":
            return {"kind": "corruption", "code": self.code}
        out: dict[str, Any] = {
            "kind": "valid",
            "disposition": self.disposition,
            "reconcile": self.reconcile,
            "decision": self.decision,
            "reconcileEventId": _get(self.reconcile_event, "id"),
            "decisionEventId": _get(self.decision_event, "id"),
        }
        if self.outcome_event is not None:
            out["outcomeEventId"] = _get(self.outcome_event, "id")
        return out


ABSENT = Interpretation("absent")


def _has_execution_identity(event: Mapping[str, Any], identity: OperationIdentity) -> bool:
    return (
        not _truthy(event.get("partial"))
        and event.get("invocationId", _MISSING) == identity.invocation_id
        and event.get("runId", _MISSING) == identity.run_id
        and event.get("turnId", _MISSING) == identity.turn_id
    )


def _refs_match(event: Mapping[str, Any], identity: OperationIdentity) -> bool:
    refs = _obj(event.get("refs"))
    return (
        refs.get("operationId", _MISSING) == identity.operation_id
        and refs.get("toolCallId", _MISSING) == identity.provider_tool_call_id
    )


def _decode_fact(event: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The decoded payload of ``event``'s ``actions.toolRecovery`` when valid and of ``kind``."""
    envelope = _obj(event.get("actions")).get("toolRecovery", _MISSING)
    if envelope is _MISSING:
        return None
    try:
        decoded = decode_tool_recovery(envelope)
    except Exception:  # §5.3 checks 5/6: an invalid envelope is a code, never a crash
        return None
    if not isinstance(decoded, dict) or decoded.get("kind") != kind:
        return None
    payload = decoded.get("payload")
    return payload if isinstance(payload, dict) else None


def _fail(code: str) -> BundleValidation:
    return BundleValidation(False, code)


def validate_recovery_bundle(
    identity: OperationIdentity,
    call_event: Any,
    dispatch_event: Any,
    reconcile_event: Any,
    outcome_event: Any,
    decision_event: Any,
) -> BundleValidation:
    """§5.3 ordered checks; the first failing check's code wins. ``outcome_event`` may be None."""
    call = _obj(call_event)
    content = _obj(call.get("content"))
    # 1. call identity
    if (
        call.get("id", _MISSING) != identity.call_event_id
        or content.get("kind") != "function_call"
        or content.get("id", _MISSING) != identity.provider_tool_call_id
        or content.get("name", _MISSING) != identity.tool_name
        or classify_lane(call_event) != FUNCTION_CALL
        or not _has_execution_identity(call, identity)
    ):
        return _fail(CALL_IDENTITY_CONFLICT)
    # 2. the hash is recomputed from the call, never taken from the dispatch's own claim
    args = content.get("args", _MISSING)
    actual_hash: str | None = None
    if args is not _MISSING:
        try:
            actual_hash = canonical_args_hash(content.get("name"), args)
        except Exception:
            actual_hash = None
    if actual_hash is None or actual_hash != identity.canonical_args_hash:
        return _fail(CANONICAL_ARGS_HASH_CONFLICT)
    # 3. dispatch identity
    dispatch = _obj(dispatch_event)
    fact = _obj(dispatch.get("actions")).get("toolDispatch")
    call_session = call.get("sessionId", _MISSING)
    if (
        dispatch.get("id", _MISSING) != identity.dispatch_event_id
        or not isinstance(fact, dict)
        or fact.get("operationId", _MISSING) != identity.operation_id
        or fact.get("providerToolCallId", _MISSING) != identity.provider_tool_call_id
        or fact.get("toolName", _MISSING) != identity.tool_name
        or fact.get("canonicalArgsHash", _MISSING) != identity.canonical_args_hash
        or fact.get("recoveryMode", _MISSING) != identity.recovery_mode
        or classify_lane(dispatch_event) != TOOL_DISPATCH
        or not _has_execution_identity(dispatch, identity)
        or dispatch.get("sessionId", _MISSING) != call_session
        or not _refs_match(dispatch, identity)
    ):
        return _fail(DISPATCH_IDENTITY_CONFLICT)
    # 4. only reconcile-mode operations can be settled by a bundle
    if identity.recovery_mode != "reconcile":
        return _fail(RECOVERY_MODE_UNSUPPORTED)
    # 5./6. fact envelopes (decoded here: the scanner only looked at `kind`, §8.22)
    reconcile_ev = _obj(reconcile_event)
    reconcile = _decode_fact(reconcile_ev, RECONCILE_RESULT_KIND)
    if reconcile is None:
        return _fail(RECONCILE_FACT_INVALID)
    decision_ev = _obj(decision_event)
    decision = _decode_fact(decision_ev, RECOVERY_DECISION_KIND)
    if decision is None:
        return _fail(DECISION_FACT_INVALID)
    # 7. recovery fact identity (lanes, execution identity, session, refs)
    if (
        classify_lane(reconcile_event) != RECONCILE_RESULT
        or classify_lane(decision_event) != RECOVERY_DECISION
        or not _has_execution_identity(reconcile_ev, identity)
        or not _has_execution_identity(decision_ev, identity)
        or reconcile_ev.get("sessionId", _MISSING) != call_session
        or decision_ev.get("sessionId", _MISSING) != call_session
        or not _refs_match(reconcile_ev, identity)
        or not _refs_match(decision_ev, identity)
    ):
        return _fail(RECOVERY_FACT_IDENTITY_CONFLICT)
    # 8. payload operation ids
    if (
        reconcile.get("operationId", _MISSING) != identity.operation_id
        or decision.get("operationId", _MISSING) != identity.operation_id
    ):
        return _fail(OPERATION_IDENTITY_CONFLICT)
    # 9. disposition-specific checks
    observation = reconcile.get("observation")
    expected = [identity.call_event_id, identity.dispatch_event_id, reconcile_ev.get("id")]
    if decision.get("disposition") == "completed":
        if outcome_event is None:
            return _fail(OUTCOME_REQUIRED)
        outcome = _obj(outcome_event)
        out_content = _obj(outcome.get("content"))
        if (
            outcome.get("sessionId", _MISSING) != call_session
            or classify_lane(outcome_event) != FUNCTION_RESPONSE
            or not _has_execution_identity(outcome, identity)
            or out_content.get("kind") != "function_response"
            or out_content.get("id", _MISSING) != identity.provider_tool_call_id
            or out_content.get("name", _MISSING) != identity.tool_name
            or not _refs_match(outcome, identity)
        ):
            return _fail(OUTCOME_IDENTITY_CONFLICT)
        if _truthy(out_content.get("isError")):
            return _fail(OUTCOME_NOT_SUCCESSFUL)
        if decision.get("outcomeEventId", _MISSING) != outcome.get("id"):
            return _fail(OUTCOME_REFERENCE_CONFLICT)
        if observation != MATCHES_EXPECTED_STATE:
            return _fail(RECONCILE_DECISION_CONFLICT)
        expected.append(outcome.get("id"))
    else:
        if outcome_event is not None:
            return _fail(OUTCOME_FOR_PARKED)
        mapped = DECISION_FOR_OBSERVATION.get(observation) if isinstance(observation, str) else None
        if (
            observation == MATCHES_EXPECTED_STATE
            or mapped is None
            or mapped[1] == COMPLETED_REASON_CODE
            or decision.get("reasonCode") != mapped[1]
        ):
            return _fail(RECONCILE_DECISION_CONFLICT)
    # 10. evidence: exactly the causal chain, in order
    evidence = decision.get("evidenceEventIds")
    if not isinstance(evidence, (list, tuple)) or list(evidence) != expected:
        return _fail(EVIDENCE_ORDER_CONFLICT)
    return BundleValidation(True, None, reconcile, decision)


def identity_from_scanned_operation(op: Any) -> OperationIdentity | None:
    """The §5.3 identity of a scanned operation (ids from the dispatch event, ``toolName``
    from the op, hash/mode from the dispatch), or None when the op has no call, no dispatch,
    no (non-empty) operationId or no ``toolDispatch`` object."""
    call = getattr(op, "call_event", None)
    dispatch = getattr(op, "dispatch_event", None)
    operation_id = getattr(op, "operation_id", None)
    if not isinstance(call, dict) or not isinstance(dispatch, dict):
        return None
    if not isinstance(operation_id, str) or not operation_id:
        return None
    fact = _obj(dispatch.get("actions")).get("toolDispatch")
    if not isinstance(fact, dict):
        return None
    tool_name = getattr(op, "tool_name", None)
    return OperationIdentity(
        operation_id=operation_id,
        invocation_id=dispatch.get("invocationId"),
        run_id=dispatch.get("runId"),
        turn_id=dispatch.get("turnId"),
        provider_tool_call_id=getattr(op, "tool_call_id", None),
        tool_name=tool_name if tool_name is not None else fact.get("toolName"),
        canonical_args_hash=fact.get("canonicalArgsHash"),
        recovery_mode=fact.get("recoveryMode"),
        call_event_id=call.get("id"),
        dispatch_event_id=dispatch.get("id"),
    )


def _corruption(code: str) -> Interpretation:
    return Interpretation("corruption", code)


def interpret_operation(op: Any, event_order: Mapping[str, int]) -> Interpretation:
    """§5.4: interpret the recovery tail of one scanned operation. Never raises.

    ``event_order`` maps event id → index in the input list (the resolver's last-index-wins
    map, §6.2 step 3).
    """
    reconciles = getattr(op, "reconcile_events", None)
    decisions = getattr(op, "decision_events", None)
    if not isinstance(reconciles, list) or not isinstance(decisions, list):
        return _corruption(RECOVERY_FACT_SHAPE_CONFLICT)
    if not reconciles and not decisions:
        return ABSENT
    if len(reconciles) != 1 or len(decisions) != 1:
        return _corruption(RECOVERY_FACT_SHAPE_CONFLICT)
    identity = identity_from_scanned_operation(op)
    if identity is None:
        return _corruption(RECOVERY_FACT_SHAPE_CONFLICT)
    call = op.call_event
    dispatch = op.dispatch_event
    reconcile_event = reconciles[0]
    decision_event = decisions[0]
    response = getattr(op, "response_event", None)
    result = validate_recovery_bundle(identity, call, dispatch, reconcile_event, response, decision_event)
    if not result.ok:
        return _corruption(result.code or RECOVERY_FACT_SHAPE_CONFLICT)
    chain = (call, dispatch, reconcile_event, response, decision_event) if response is not None else (
        call,
        dispatch,
        reconcile_event,
        decision_event,
    )
    previous = -1
    lookup = event_order.get if isinstance(event_order, Mapping) else _EMPTY.get
    for event in chain:
        event_id = _get(event, "id")
        # an absent id is looked up as None (upstream's Map keys every id-less event by undefined)
        position = lookup(event_id) if event_id is None or isinstance(event_id, str) else None
        if not isinstance(position, int) or position <= previous:
            return _corruption(EVENT_ORDER_CONFLICT)
        previous = position
    decision = result.decision or _EMPTY
    return Interpretation(
        kind="valid",
        disposition=decision.get("disposition"),
        reconcile=result.reconcile,
        decision=result.decision,
        reconcile_event=reconcile_event,
        decision_event=decision_event,
        outcome_event=response,
    )
