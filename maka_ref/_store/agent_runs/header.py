"""AgentRun header and operational-event codec (spec 20 §5.1, §5.2, §5.4) — pure.

Why a module of its own: the header is read by the store (:mod:`maka_ref._store.agent_runs.store`),
by startup repair (terminal status, ``failureClass``/``abortSource`` fallbacks, §4.3), by
candidate discovery (session-inline, §5.4) and by the continuation planner
(``continuationSource``, ``workspaceIdentity``). They must agree on one exact-shape decoder,
and that decoder must not depend on SQLite.

Rules (§5.1):

* exact shape: the required keys are present, every other key is one of the optional keys,
  anything else is rejected; ``null`` is never an optional value (absent ≠ null);
* compatibility folds, applied *before* the checks: status ``waiting_permission`` →
  ``waiting_for_user``; a legacy ``automationId`` key → ``legacyAutomationId`` (both present
  is rejected); the retired permission mode ``execute`` → ``ask``
  (:data:`RETIRED_PERMISSION_MODES`);
* at most one hosted root authority among ``scheduledTaskId``, ``legacyAutomationId``,
  ``goalId``, ``agentGraphWakeId``;
* numbers are JSON numbers, never ``bool``; timestamps are finite;
* ``continuationSource`` is exactly v1 or exactly v2 (v2: non-empty strings, high-water a safe
  integer > 0, three sha256 digests, ``replayManifestDigest == boundaryDigest``).

Every violation raises :class:`RunHeaderSchemaError` with the spec's message
"Invalid AgentRun header schema" and a ``detail`` naming the offending path. The decoder
returns a deep-frozen :class:`~maka_ref._codec.frozen.FrozenDict` (the folded form) and
never mutates its input. Enumerations the spec names without listing are taken from the
upstream anchor and listed in ``docs/choices/agent-runs-workspace.md``.

Depends on: ``_codec`` (frozen values, strict JSON), ``_events.recovery_facts``
(``is_sha256_digest``), ``_store.errors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NoReturn

from maka_ref._codec.frozen import FrozenDict, freeze
from maka_ref._codec.jsontext import check_strict_json
from maka_ref._errors import NotStrictJSONError
from maka_ref._events._values import is_finite_number, is_safe_integer
from maka_ref._events.recovery_facts import is_sha256_digest
from maka_ref._store.errors import StoreError

__all__ = [
    "AGENT_SWARM_AUTHORIZATIONS",
    "BACKEND_KINDS",
    "COLLABORATION_MODES",
    "CONTINUATION_SOURCE_V1_KEYS",
    "CONTINUATION_SOURCE_V2_KEYS",
    "CONTINUATION_SOURCE_V2_PROTOCOL",
    "HOSTED_ROOT_AUTHORITY_KEYS",
    "MUTABLE_FIELDS",
    "OPTIONAL_KEYS",
    "ORCHESTRATION_MODES",
    "ORCHESTRATION_SOURCES",
    "PERMISSION_MODES",
    "REQUIRED_KEYS",
    "RETIRED_PERMISSION_MODES",
    "RETIRED_RUN_STATUSES",
    "RUN_EVENT_KEYS",
    "RUN_STATUSES",
    "ROOT_EXECUTION_KINDS",
    "TERMINAL_RUN_STATUSES",
    "TOOL_MODES",
    "RunEventSchemaError",
    "RunHeaderSchemaError",
    "decode_run_event",
    "decode_run_header",
    "is_session_inline",
    "is_terminal_status",
]

RUN_STATUSES: Final = ("created", "running", "waiting_for_user", "completed", "failed", "cancelled")
TERMINAL_RUN_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
RETIRED_RUN_STATUSES: Final = {"waiting_permission": "waiting_for_user"}
BACKEND_KINDS: Final = ("ai-sdk", "fake")
#: Live permission modes of the anchor; ``execute`` is retired and folds to ``ask``.
PERMISSION_MODES: Final = ("explore", "ask", "bypass")
RETIRED_PERMISSION_MODES: Final = {"execute": "ask"}
COLLABORATION_MODES: Final = ("agent", "plan")
ORCHESTRATION_MODES: Final = ("default", "swarm", "graph")
ORCHESTRATION_SOURCES: Final = ("session", "turn_override")
AGENT_SWARM_AUTHORIZATIONS: Final = ("none", "session_mode", "turn_override")
TOOL_MODES: Final = ("direct", "code_mode")
ROOT_EXECUTION_KINDS: Final = ("context_compact",)

REQUIRED_KEYS: Final = (
    "runId",
    "sessionId",
    "turnId",
    "status",
    "backendKind",
    "llmConnectionSlug",
    "modelId",
    "cwd",
    "permissionMode",
    "createdAt",
    "updatedAt",
)

#: Optional keys whose value is a plain string (any string, empty included).
_OPTIONAL_STRING_KEYS: Final = (
    "invocationId",
    "workspaceIdentity",
    "parentRunId",
    "resumedFromRunId",
    "retriedFromRunId",
    "agentId",
    "agentName",
    "parentTurnId",
    "retriedFromTurnId",
    "regeneratedFromTurnId",
    "branchOfTurnId",
    "parentSessionId",
    "scheduledTaskId",
    "legacyAutomationId",
    "goalId",
    "agentGraphWakeId",
    "agentGraphWakeAttemptId",
    "failureClass",
    "failureMessage",
    "abortSource",
    "traceWriteError",
)

_OPTIONAL_ENUM_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "collaborationMode": COLLABORATION_MODES,
    "orchestrationMode": ORCHESTRATION_MODES,
    "orchestrationSource": ORCHESTRATION_SOURCES,
    "agentSwarmAuthorization": AGENT_SWARM_AUTHORIZATIONS,
    "toolMode": TOOL_MODES,
    "rootExecutionKind": ROOT_EXECUTION_KINDS,
}

OPTIONAL_KEYS: Final = frozenset(
    {*_OPTIONAL_STRING_KEYS, *_OPTIONAL_ENUM_KEYS, "completedAt", "runComposition", "continuationSource"}
)
_ALL_KEYS: Final = frozenset(REQUIRED_KEYS) | OPTIONAL_KEYS
_REQUIRED_STRING_KEYS: Final = ("runId", "sessionId", "turnId", "llmConnectionSlug", "modelId", "cwd")

HOSTED_ROOT_AUTHORITY_KEYS: Final = ("scheduledTaskId", "legacyAutomationId", "goalId", "agentGraphWakeId")

#: §5.3: the only keys ``updateRun`` may patch (``runComposition`` only once).
MUTABLE_FIELDS: Final = frozenset(
    {
        "status",
        "updatedAt",
        "completedAt",
        "runComposition",
        "failureClass",
        "failureMessage",
        "abortSource",
        "traceWriteError",
    }
)

CONTINUATION_SOURCE_V2_PROTOCOL: Final = "continuation_source_v2"
CONTINUATION_SOURCE_V1_KEYS: Final = frozenset(
    {"sourceInvocationId", "sourceRunId", "sourceTurnId", "sourceRuntimeEventHighWater"}
)
CONTINUATION_SOURCE_V2_KEYS: Final = CONTINUATION_SOURCE_V1_KEYS | {
    "protocol",
    "claimId",
    "boundaryDigest",
    "sourcePrefixDigest",
    "replayManifestDigest",
}

RUN_EVENT_KEYS: Final = frozenset({"type", "id", "runId", "sessionId", "turnId", "ts", "message", "data"})
_RUN_EVENT_REQUIRED: Final = ("type", "id", "runId", "sessionId", "turnId", "ts")



class RunHeaderSchemaError(StoreError, ValueError):
    """§5.1: the value does not decode as an AgentRun header."""

    code = "invalid_agent_run_header"

    def __init__(self, detail: str | None = None) -> None:
        super().__init__("Invalid AgentRun header schema", detail=detail)


class RunEventSchemaError(StoreError, ValueError):
    """§5.2: the value does not decode as an AgentRun operational event."""

    code = "invalid_agent_run_event"

    def __init__(self, detail: str | None = None) -> None:
        super().__init__("Invalid AgentRun event schema", detail=detail)


def _fail(path: str, what: str) -> NoReturn:
    raise RunHeaderSchemaError(detail=f"{path}: {what}")


# --------------------------------------------------------------------------- value rules


def _check_json_object(value: Any, path: str) -> FrozenDict:
    if not issubclass(type(value), dict):
        _fail(path, "must be a JSON object")
    try:
        check_strict_json(value, negative_zero="zero")
    except NotStrictJSONError as exc:
        _fail(f"{path}{exc.detail or ''}", "must be strict JSON")
    frozen = freeze(value)
    assert isinstance(frozen, FrozenDict)
    return frozen


def _check_continuation_source(value: Any) -> FrozenDict:
    path = "continuationSource"
    if not issubclass(type(value), dict):
        _fail(path, "must be a JSON object")
    keys = set(dict.keys(value))
    get = dict.get
    for key in ("sourceInvocationId", "sourceRunId", "sourceTurnId"):
        if type(get(value, key)) is not str:
            _fail(f"{path}.{key}", "must be a string")
    high_water = get(value, "sourceRuntimeEventHighWater")
    if not is_safe_integer(high_water) or high_water < 0:
        _fail(f"{path}.sourceRuntimeEventHighWater", "must be a safe integer >= 0")
    if keys == CONTINUATION_SOURCE_V1_KEYS:
        return FrozenDict(dict(value))  # v1: legacy empty strings / 0 tolerated
    if keys != CONTINUATION_SOURCE_V2_KEYS:
        _fail(path, "must have exactly the v1 or the v2 key set")
    if type(get(value, "protocol")) is not str or get(value, "protocol") != CONTINUATION_SOURCE_V2_PROTOCOL:
        _fail(f"{path}.protocol", f"must be {CONTINUATION_SOURCE_V2_PROTOCOL!r}")
    for key in ("claimId", "sourceInvocationId", "sourceRunId", "sourceTurnId"):
        item = get(value, key)
        if type(item) is not str or not item:
            _fail(f"{path}.{key}", "must be a non-empty string")
    if high_water <= 0:
        _fail(f"{path}.sourceRuntimeEventHighWater", "must be a safe integer > 0 in v2")
    for key in ("boundaryDigest", "sourcePrefixDigest", "replayManifestDigest"):
        if not is_sha256_digest(get(value, key)):
            _fail(f"{path}.{key}", "must match ^sha256:[0-9a-f]{64}$")
    if get(value, "replayManifestDigest") != get(value, "boundaryDigest"):
        _fail(f"{path}.replayManifestDigest", "must equal boundaryDigest")
    return FrozenDict(dict(value))


# --------------------------------------------------------------------------- header


def _fold(value: dict[str, Any]) -> dict[str, Any]:
    """§5.1 compatibility folds on a shallow copy (the caller's value is never touched)."""
    out = dict(dict.items(value))
    if "automationId" in out:
        if "legacyAutomationId" in out:
            _fail("automationId", "legacy automationId and legacyAutomationId are both present")
        out = {("legacyAutomationId" if k == "automationId" else k): v for k, v in out.items()}
    status = out.get("status")
    if type(status) is str and status in RETIRED_RUN_STATUSES:
        out["status"] = RETIRED_RUN_STATUSES[status]
    mode = out.get("permissionMode")
    if type(mode) is str and mode in RETIRED_PERMISSION_MODES:
        out["permissionMode"] = RETIRED_PERMISSION_MODES[mode]
    return out


def decode_run_header(value: Any) -> FrozenDict:
    """Decode one AgentRun header exactly (§5.1); return the folded, deep-frozen header.

    Raises :class:`RunHeaderSchemaError` ("Invalid AgentRun header schema") on any violation.
    """
    if not issubclass(type(value), dict):
        _fail("(root)", "must be a JSON object")
    for key in dict.keys(value):
        if type(key) is not str:
            _fail("(root)", f"non-string key {key!r}")
    header = _fold(value)
    for key in header:
        if key not in _ALL_KEYS:
            _fail(key, "unknown key")
    for key in REQUIRED_KEYS:
        if key not in header:
            _fail(key, "required key is missing")
    for key in _REQUIRED_STRING_KEYS:
        if type(header[key]) is not str:
            _fail(key, "must be a string")
    if type(header["status"]) is not str or header["status"] not in RUN_STATUSES:
        _fail("status", f"must be one of {', '.join(RUN_STATUSES)}")
    if type(header["backendKind"]) is not str or header["backendKind"] not in BACKEND_KINDS:
        _fail("backendKind", f"must be one of {', '.join(BACKEND_KINDS)}")
    if type(header["permissionMode"]) is not str or header["permissionMode"] not in PERMISSION_MODES:
        _fail("permissionMode", f"must be one of {', '.join(PERMISSION_MODES)}")
    for key in ("createdAt", "updatedAt", "completedAt"):
        if key in header and not is_finite_number(header[key]):
            _fail(key, "must be a finite number")
    for key in _OPTIONAL_STRING_KEYS:
        if key in header and type(header[key]) is not str:
            _fail(key, "must be a string")
    for key, allowed in _OPTIONAL_ENUM_KEYS.items():
        if key in header and (type(header[key]) is not str or header[key] not in allowed):
            _fail(key, f"must be one of {', '.join(allowed)}")
    authorities = [key for key in HOSTED_ROOT_AUTHORITY_KEYS if key in header]
    if len(authorities) > 1:
        _fail(authorities[1], f"at most one of {', '.join(HOSTED_ROOT_AUTHORITY_KEYS)}")
    if "runComposition" in header:
        header["runComposition"] = _check_json_object(header["runComposition"], "runComposition")
    if "continuationSource" in header:
        header["continuationSource"] = _check_continuation_source(header["continuationSource"])
    return FrozenDict(header)


def is_terminal_status(status: Any) -> bool:
    """§5.1: ``completed``, ``failed`` and ``cancelled`` are terminal run statuses."""
    return type(status) is str and status in TERMINAL_RUN_STATUSES


def is_session_inline(header: Mapping[str, Any]) -> bool:
    """§5.4: no ``parentRunId``, or a ``continuationSource`` and no ``agentId``."""
    return "parentRunId" not in header or ("continuationSource" in header and "agentId" not in header)


# --------------------------------------------------------------------------- operational events


def decode_run_event(value: Any) -> FrozenDict:
    """Decode one operational event ``{type, id, runId, sessionId, turnId, ts, message?, data?}``.

    Unknown ``type`` values are accepted (forward compatibility, §5.2); the envelope is exact.
    Raises :class:`RunEventSchemaError` ("Invalid AgentRun event schema").
    """

    def bad(path: str, what: str) -> NoReturn:
        raise RunEventSchemaError(detail=f"{path}: {what}")

    if not issubclass(type(value), dict):
        bad("(root)", "must be a JSON object")
    for key in dict.keys(value):
        if type(key) is not str or key not in RUN_EVENT_KEYS:
            bad(str(key), "unknown key")
    for key in _RUN_EVENT_REQUIRED:
        if key not in value:
            bad(key, "required key is missing")
    get = dict.get
    event_type = get(value, "type")
    if type(event_type) is not str or not event_type.strip():
        bad("type", "must be a non-blank string")
    for key in ("id", "runId", "sessionId", "turnId"):
        if type(get(value, key)) is not str:
            bad(key, "must be a string")
    if not is_finite_number(get(value, "ts")):
        bad("ts", "must be a finite number")
    if "message" in value and type(get(value, "message")) is not str:
        bad("message", "must be a string")
    if "data" in value:
        data = get(value, "data")
        if not issubclass(type(data), dict):
            bad("data", "must be a JSON object")
        try:
            check_strict_json(data, negative_zero="zero")
        except NotStrictJSONError as exc:
            bad(f"data{exc.detail or ''}", "must be strict JSON")
    return FrozenDict(dict(dict.items(value)))
