"""``actions`` of a RuntimeEvent (spec 10 §1.3, §1.3.1, §1.3.2, §3, §5.1).

Why separate: actions hold every identity-bearing fact the recovery layers trust (T1
dispatch, recovery facts, protocol marker, continuation start), so their exact shapes and
the cross-key rules (``permissionClosureAccepted`` must stand alone) live together here.

Payloads the spec leaves open (permission request, user question, token-usage diagnostics,
workspace fact) follow the rule in docs/choices/events.md: object type, the required keys
the spec names, no ``null`` for optional keys where the spec lists the object among the
"undefined is dropped" levels (§2.2), otherwise any JSON value.

``workspaceBoundary`` (spec-phase4 §1.3) is closed: its envelope and boundary rules live in
``_events.boundary`` and it must stand alone, like ``permissionClosureAccepted``.

Depends on: ``_events.checkers``, ``_events.recovery_facts``, ``_events.constants``,
``_events.boundary``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._codec.frozen import FrozenDict
from maka_ref._events.boundary import check_workspace_boundary_action
from maka_ref._events.checkers import (
    Checker,
    bounded_id,
    check_bool,
    check_digest,
    check_finite_number,
    check_json,
    check_json_not_null,
    check_json_object,
    check_nonempty_str,
    check_positive_safe_integer,
    check_str,
    fail,
    frozen_dict,
    is_finite_number,
    list_of,
    literal,
    number_literal,
    object_of,
    one_of,
    show_key,
)
from maka_ref._events.constants import (
    CONTINUATION_PROVENANCES,
    CONTINUATION_START_PROTOCOL,
    INTERACTION_ID_MAX_BYTES,
    INTERACTION_TOOL_NAME_MAX_BYTES,
    PERMISSION_CLOSURE_REASON,
    PERMISSION_DECISIONS,
    PERMISSION_REVIEWERS,
    PERMISSION_RISK_LEVELS,
    PROVIDER_PROJECTION_VERSION,
    RECOVERY_MODES,
    T1_PROTOCOL,
)
from maka_ref._events.recovery_facts import decode_tool_recovery

_NONE: dict[str, Checker] = {}
_ACTIONS_PATH = "$.actions"


def _closed(required: dict[str, Checker], optional: dict[str, Checker] = _NONE) -> Checker:
    def check(value: Any, path: str) -> Any:
        return object_of(value, path, required, optional)

    return check


def _open(required: dict[str, Checker], optional: dict[str, Checker], extra: Checker) -> Checker:
    def check(value: Any, path: str) -> Any:
        return object_of(value, path, required, optional, extra)

    return check


def _artifact_delta(value: Any, path: str) -> FrozenDict:
    """An object whose values are strings, booleans or finite numbers (§1.3)."""
    if not issubclass(type(value), dict):
        fail(path, "must be a JSON object")
    out: dict[str, Any] = {}
    for key, item in dict.items(value):
        if type(key) is not str:
            fail(path, f"object key of type {type(key).__name__} (keys must be strings)")
        if type(item) is not str and type(item) is not bool and not is_finite_number(item):
            fail(f"{path}[{show_key(key)}]", "must be a string, a boolean or a finite number")
        out[key] = item
    return frozen_dict(out)


_interaction_id = bounded_id(INTERACTION_ID_MAX_BYTES)

#: §1.3.1: all six keys required, nothing else; the hash is only type-checked here (§2.6).
_tool_dispatch = _closed(
    {
        "protocol": literal(T1_PROTOCOL),
        "operationId": check_str,
        "providerToolCallId": check_str,
        "toolName": check_str,
        "canonicalArgsHash": check_str,
        "recoveryMode": one_of(RECOVERY_MODES),
    }
)

#: §3: exactly ``{"toolBoundary": "t1_after_preflight_v1"}``.
_runtime_protocol = _closed({"toolBoundary": literal(T1_PROTOCOL)})

_immediate_source = _closed(
    {
        "sessionId": check_nonempty_str,
        "invocationId": check_nonempty_str,
        "runId": check_nonempty_str,
        "turnId": check_nonempty_str,
        "highWater": check_positive_safe_integer,
        "prefixDigest": check_digest,
    }
)

#: §1.3.2: exact shape; ``providerProjectionVersion`` is exactly 1 (2 is rejected).
_continuation_start = _closed(
    {
        "protocol": literal(CONTINUATION_START_PROTOCOL),
        "provenance": one_of(CONTINUATION_PROVENANCES),
        "claimId": check_nonempty_str,
        "boundaryDigest": check_digest,
        "immediateSource": _immediate_source,
        "replayManifestDigest": check_digest,
        "providerProjectionVersion": number_literal(PROVIDER_PROJECTION_VERSION),
        "providerReplayDigest": check_digest,
    }
)

#: §1.3: exact key set; enums and the tool-name bound follow the anchor (choices doc).
_permission_decision = _closed(
    {"requestId": check_str, "decision": one_of(PERMISSION_DECISIONS)},
    {
        "rememberForTurn": check_bool,
        "reviewer": one_of(PERMISSION_REVIEWERS),
        "rationale": check_str,
        "riskLevel": one_of(PERMISSION_RISK_LEVELS),
        "toolName": bounded_id(INTERACTION_TOOL_NAME_MAX_BYTES),
    },
)

#: §1.3 / §7.2 items 12–13: ``{requestId}`` exactly, non-empty, at most 256 UTF-8 bytes.
_answer_accepted = _closed({"requestId": _interaction_id})
_permission_closure = _closed({"requestId": _interaction_id, "reason": literal(PERMISSION_CLOSURE_REASON)})

#: Open interaction payloads: only ``requestId`` is named by the spec (spec 20 §0.1).
_permission_request = _open({"requestId": check_str}, _NONE, check_json)
_user_question_request = _open({"requestId": check_str}, _NONE, check_json)

#: §2.2 names these as levels whose absent keys are dropped: records of optional fields.
_open_record = _open(_NONE, _NONE, check_json_not_null)
_context_budget = _open(_NONE, {"compactionDecisions": list_of(_open_record)}, check_json_not_null)
_token_usage = _open(
    {"input": check_finite_number, "output": check_finite_number},
    {"promptSegments": list_of(_open_record), "contextBudget": _context_budget},
    check_json_not_null,
)


def _tool_recovery(value: Any, path: str) -> FrozenDict:
    return decode_tool_recovery(value, path)


_ACTION_CHECKERS: dict[str, Checker] = {
    "stateDelta": check_json_object,
    "artifactDelta": _artifact_delta,
    "permissionRequest": _permission_request,
    "permissionDecision": _permission_decision,
    "permissionAnswerAccepted": _answer_accepted,
    "permissionClosureAccepted": _permission_closure,
    "userQuestionRequest": _user_question_request,
    "userQuestionAnswerAccepted": _answer_accepted,
    "transferToAgent": check_str,
    "endInvocation": check_bool,
    "tokenUsage": _token_usage,
    "toolDispatch": _tool_dispatch,
    "toolRecovery": _tool_recovery,
    "runtimeProtocol": _runtime_protocol,
    "continuationStart": _continuation_start,
    # Reserved writer, out of scope (§1.3): any JSON object.
    "workspaceFact": check_json_object,
    # spec-phase4 §1.3: the Phase 4 boundary facts, closed (a key of their own, §1.4).
    "workspaceBoundary": check_workspace_boundary_action,
}


def decode_actions(value: Any, path: str = _ACTIONS_PATH) -> FrozenDict:
    """Validate ``actions`` (every key optional, unknown keys rejected) and its cross-key rules."""
    actions = object_of(value, path, _NONE, _ACTION_CHECKERS)
    if "permissionClosureAccepted" in actions and len(actions) != 1:
        others = sorted(key for key in actions if key != "permissionClosureAccepted")
        fail(f"{path}.permissionClosureAccepted", f"must be the only action key (also has {', '.join(others)})")
    if "workspaceBoundary" in actions and len(actions) != 1:
        others = sorted(key for key in actions if key != "workspaceBoundary")
        fail(f"{path}.workspaceBoundary", f"must be the only action key (also has {', '.join(others)})")
    return actions
