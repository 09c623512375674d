"""Semantic lanes and generic-append reservations (spec 10 §4.1, §4.2).

What: every RuntimeEvent sits on exactly one *semantic lane*. ``ordinary`` events carry no
tool fact; the five tool lanes (``function_call``, ``tool_dispatch``, ``function_response``,
``reconcile_result``, ``recovery_decision``) each admit one exact envelope. An event that
claims two tool lanes, or whose envelope does not match its lane ("lane smuggling"), is a
``conflict`` — the scanner reports it as ``semantic_lane_conflict`` and drops it.

Why a module of its own: the scanner, the transition validator, the bundle validator and the
Code Mode helper all ask the same question, and must get the same answer.

Domain (``docs/choices/ledger.md``, "Well-typed events"): on *well-typed* events — every field
the spec names is absent or has its JSON type — these functions answer exactly as upstream's
``validateToolLedgerEventLane`` does, an absent key reading as JavaScript ``undefined``
(an absent ``partial`` is not partial, an absent ``content.name`` is no name, an absent id
is no id). Outside that domain the answer is ours (the spec leaves it free) and fails
closed: an entry that is not a JSON object (``dict``), or that gives ``id``, ``invocationId``,
``sessionId``, ``runId``, ``turnId``, ``partial``, ``content.id``/``content.name`` on a
call/response, a dispatch's ``operationId``/``providerToolCallId``/``toolName``/
``canonicalArgsHash`` or a recovery fact's ``payload.operationId`` a value of the wrong JSON
type (``null`` included), is a ``conflict``; so is a recovery fact without a ``payload``
object (upstream's scanner would throw there). These functions accept any value and never
raise.

Depends on: ``_events.constants`` (fact kinds) only.
"""

from __future__ import annotations

import math
from typing import Any

from maka_ref._events.constants import RECONCILE_RESULT_KIND, RECOVERY_DECISION_KIND

ORDINARY = "ordinary"
FUNCTION_CALL = "function_call"
TOOL_DISPATCH = "tool_dispatch"
FUNCTION_RESPONSE = "function_response"
RECONCILE_RESULT = "reconcile_result"
RECOVERY_DECISION = "recovery_decision"
CONFLICT = "conflict"

RECONCILE_KIND = RECONCILE_RESULT_KIND
DECISION_KIND = RECOVERY_DECISION_KIND

SEMANTIC_LANE_CONFLICT = "semantic_lane_conflict"
RESERVED_RECOVERY_FACT = "reserved_recovery_fact"
RESERVED_TOOL_BOUNDARY_FACT = "reserved_tool_boundary_fact"

_CALL_STATE_KEYS = frozenset(("activityKind", "displayName", "intent"))
_IDENTITY_FIELDS = ("id", "invocationId", "sessionId", "runId", "turnId")
_DISPATCH_FIELDS = ("operationId", "providerToolCallId", "toolName", "canonicalArgsHash")


def candidate_lanes(event: Any) -> tuple[str, ...]:
    """The tool lanes an event claims (§4.1), in the spec's order; ``()`` means ordinary.

    A non-object has no candidate lane (``classify_lane`` still calls it a conflict).
    """
    if not isinstance(event, dict):
        return ()
    out: list[str] = []
    content = event.get("content")
    kind = content.get("kind") if isinstance(content, dict) else None
    actions = event.get("actions")
    if not isinstance(actions, dict):
        actions = None
    if kind == "function_call":
        out.append(FUNCTION_CALL)
    if actions is not None and "toolDispatch" in actions:
        out.append(TOOL_DISPATCH)
    if kind == "function_response":
        out.append(FUNCTION_RESPONSE)
    if actions is not None:
        recovery = actions.get("toolRecovery")
        if isinstance(recovery, dict):
            rkind = recovery.get("kind")
            if rkind == RECONCILE_KIND:
                out.append(RECONCILE_RESULT)
            elif rkind == DECISION_KIND:
                out.append(RECOVERY_DECISION)
    return tuple(out)


def ill_typed(value: Any, container: dict, key: str) -> bool:
    """``container[key]`` is present and not a string (``null`` included): outside the domain."""
    return type(value) is not str and (value is not None or key in container)


def classify_lane(event: Any) -> str:
    """The event's lane, or ``"conflict"`` (§4.1). Never raises."""
    if not isinstance(event, dict):
        return CONFLICT
    get = event.get
    for key in _IDENTITY_FIELDS:
        value = get(key)
        if type(value) is not str and (value is not None or key in event):  # ill_typed, inlined (hot)
            return CONFLICT
    return lane_of_parts(event, get("content"), get("actions"))


def validate_generic_append(event: Any) -> str | None:
    """§4.2: ``None`` when a generic append/import may carry ``event``, else the refusal code."""
    lane = classify_lane(event)
    if lane == CONFLICT:
        return SEMANTIC_LANE_CONFLICT
    if lane == RECONCILE_RESULT or lane == RECOVERY_DECISION:
        return RESERVED_RECOVERY_FACT
    if lane == TOOL_DISPATCH:
        return RESERVED_TOOL_BOUNDARY_FACT
    if lane == FUNCTION_RESPONSE:
        refs = event.get("refs")
        if isinstance(refs, dict) and "operationId" in refs:
            return RESERVED_TOOL_BOUNDARY_FACT
    return None


# ---------------------------------------------------------------------------------------
# Internal: the lane of an event that is a dict whose identity fields were already checked.
# The scanner calls this directly (it reads the identity fields itself).
# ---------------------------------------------------------------------------------------


def lane_of_event(event: dict) -> str:
    """Lane of a ``dict`` event, *not* checking the envelope identity fields (internal)."""
    return lane_of_parts(event, event.get("content"), event.get("actions"))


def lane_of_parts(event: dict, content: Any, actions: Any) -> str:
    """``lane_of_event`` given the event's ``content`` and ``actions`` (``event.get`` of each).

    Written as one function (no helper calls on the common paths) because the scanner calls
    it once per event, passing the two fields it has already read.
    """
    get = event.get
    lane = ORDINARY
    if content is not None and isinstance(content, dict):
        kind = content.get("kind")
        if kind == "function_call":
            lane = FUNCTION_CALL
        elif kind == "function_response":
            lane = FUNCTION_RESPONSE
    recovery = None
    if actions is not None:
        if isinstance(actions, dict):
            if "toolDispatch" in actions:
                if lane is not ORDINARY:
                    return CONFLICT
                lane = TOOL_DISPATCH
            recovery = actions.get("toolRecovery")
            if recovery is not None and isinstance(recovery, dict):
                rkind = recovery.get("kind")
                if rkind == RECONCILE_KIND:
                    if lane is not ORDINARY:
                        return CONFLICT
                    lane = RECONCILE_RESULT
                elif rkind == DECISION_KIND:
                    if lane is not ORDINARY:
                        return CONFLICT
                    lane = RECOVERY_DECISION
        elif lane is not ORDINARY:
            return CONFLICT  # a call/response's actions must be absent or an object
    if lane is ORDINARY:
        return ORDINARY

    # Common to all tool lanes: not partial (absent or false), no status, no branch.
    partial = get("partial")
    if (partial is not False and (partial is not None or "partial" in event)) or "status" in event or "branch" in event:
        return CONFLICT
    role = get("role")
    author = get("author")

    if lane is FUNCTION_CALL or lane is FUNCTION_RESPONSE:
        if lane is FUNCTION_CALL:
            if role != "model" or author != "agent":
                return CONFLICT
        elif role != "tool" or author != "tool":
            return CONFLICT
        if ill_typed(content.get("id"), content, "id") or ill_typed(content.get("name"), content, "name"):
            return CONFLICT
        if actions is None:
            return lane if "actions" not in event else CONFLICT  # `actions: null` is not absent
        if len(actions) != 1:
            return CONFLICT
        state = actions.get("stateDelta")
        if not isinstance(state, dict):
            return CONFLICT
        if lane is FUNCTION_CALL:
            if not state:
                return CONFLICT
            for key, value in state.items():
                if key not in _CALL_STATE_KEYS or not isinstance(value, str):
                    return CONFLICT
            return lane
        if len(state) != 1:
            return CONFLICT
        duration = state.get("durationMs")
        if duration is None or isinstance(duration, bool) or not isinstance(duration, (int, float)):
            return CONFLICT
        if isinstance(duration, float) and not math.isfinite(duration):
            return CONFLICT
        return lane

    # tool_dispatch, reconcile_result, recovery_decision: system facts with exactly one action.
    if "content" in event or role != "system" or author != "system" or len(actions) != 1:
        return CONFLICT
    refs = get("refs")
    if refs is None or not isinstance(refs, dict) or "operationId" not in refs or "toolCallId" not in refs:
        return CONFLICT
    size = len(refs)
    if lane is TOOL_DISPATCH:
        if size != 2 and not (size == 4 and "parentToolCallId" in refs and "parentOperationId" in refs):
            return CONFLICT
        dispatch = actions["toolDispatch"]
        if not isinstance(dispatch, dict):
            return CONFLICT
        for key in _DISPATCH_FIELDS:
            if ill_typed(dispatch.get(key), dispatch, key):
                return CONFLICT
        return lane
    if size != 2:
        return CONFLICT
    payload = recovery.get("payload")
    if isinstance(payload, dict) and not ill_typed(payload.get("operationId"), payload, "operationId"):
        return lane
    return CONFLICT


__all__ = [
    "CONFLICT",
    "FUNCTION_CALL",
    "FUNCTION_RESPONSE",
    "ORDINARY",
    "RECONCILE_RESULT",
    "RECOVERY_DECISION",
    "TOOL_DISPATCH",
    "candidate_lanes",
    "classify_lane",
    "validate_generic_append",
]
