"""Recovery bundles: validation and interpretation of a scanned operation (spec 10 §5.2–§5.4).

What: a recovery bundle settles one dispatched ``reconcile``-mode operation with a reconcile
observation, an optional recovered outcome and a recovery decision.
``validate_recovery_bundle`` runs the ordered checks of §5.3 (the first failing check's code
wins); ``interpret_operation`` applies §5.4 to one operation produced by the scanner and is
shared by the resolver and projection rebuild, so both read a bundle the same way.

Why: the write side (the bundle writer) and the read side (resolver, rebuild) must accept
and refuse exactly the same bundles.

Robustness: both functions accept arbitrary values in place of events and never raise
(a value that is not an event simply fails the check it is read in).
``interpret_operation`` never raises for any ``op``.

Layout: the result codes live in ``bundle_codes``, the dataclasses in ``bundle_types``,
the per-event predicates in ``bundle_checks`` and the tolerant JSON reads in
``bundle_values``; this module keeps the ordered checks and the interpretation and
re-exports the dataclasses.

Depends on: ``_ledger.lanes``, ``_ledger.bundle_*``, ``_codec.argshash.canonical_args_hash``,
``_events.constants``.
"""

from __future__ import annotations

from typing import Any, Mapping

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._events.constants import (
    COMPLETED_REASON_CODE,
    DECISION_FOR_OBSERVATION,
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
)
from maka_ref._ledger.bundle_checks import _decode_fact, _has_execution_identity, _refs_match
from maka_ref._ledger.bundle_codes import (
    CALL_IDENTITY_CONFLICT,
    CANONICAL_ARGS_HASH_CONFLICT,
    DECISION_FACT_INVALID,
    DISPATCH_IDENTITY_CONFLICT,
    EVENT_ORDER_CONFLICT,
    EVIDENCE_ORDER_CONFLICT,
    MATCHES_EXPECTED_STATE,
    OPERATION_IDENTITY_CONFLICT,
    OUTCOME_FOR_PARKED,
    OUTCOME_IDENTITY_CONFLICT,
    OUTCOME_NOT_SUCCESSFUL,
    OUTCOME_REFERENCE_CONFLICT,
    OUTCOME_REQUIRED,
    RECONCILE_DECISION_CONFLICT,
    RECONCILE_FACT_INVALID,
    RECOVERY_FACT_IDENTITY_CONFLICT,
    RECOVERY_FACT_SHAPE_CONFLICT,
    RECOVERY_MODE_UNSUPPORTED,
)
from maka_ref._ledger.bundle_types import ABSENT, BundleValidation, Interpretation, OperationIdentity
from maka_ref._ledger.bundle_values import _EMPTY, _MISSING, _get, _obj, _truthy
from maka_ref._ledger.lanes import (
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    RECONCILE_RESULT,
    RECOVERY_DECISION,
    TOOL_DISPATCH,
    classify_lane,
)


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


__all__ = [
    "BundleValidation",
    "Interpretation",
    "OperationIdentity",
    "identity_from_scanned_operation",
    "interpret_operation",
    "validate_recovery_bundle",
]
