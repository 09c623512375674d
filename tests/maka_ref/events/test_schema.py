"""Tests for ``maka_ref._events.schema.decode_runtime_event`` (spec 10 §1.1–§1.4, §2.1, §7.2).

Expected values are copied from the spec (or are the spec's own inputs, for "decodes
unchanged"); none is computed by the code under test.
"""

from __future__ import annotations

import copy
import enum
from collections import ChainMap
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events.schema import decode_runtime_event

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
DIGEST_C = "sha256:" + "c" * 64
MESSAGE = "Invalid RuntimeEvent schema"


def base(**overrides: Any) -> dict[str, Any]:
    """The spec's minimal envelope (§2.2 first golden encoding) with overrides."""
    event: dict[str, Any] = {
        "id": "evt-1",
        "invocationId": "inv-1",
        "runId": "run-1",
        "sessionId": "sess-1",
        "turnId": "turn-1",
        "ts": 100,
        "partial": False,
        "role": "system",
        "author": "system",
    }
    event.update(overrides)
    return event


def rejects(value: Any) -> RuntimeEventSchemaError:
    with pytest.raises(RuntimeEventSchemaError) as info:
        decode_runtime_event(value)
    assert info.value.message == MESSAGE
    assert info.value.code == "invalid_runtime_event"
    assert info.value.detail
    return info.value


def with_actions(actions: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return base(actions=actions, **overrides)


DISPATCH = {
    "protocol": "t1_after_preflight_v1",
    "operationId": "operation-1",
    "providerToolCallId": "provider-call-1",
    "toolName": "Write",
    "canonicalArgsHash": "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",
    "recoveryMode": "reconcile",
}
RECONCILE = {
    "kind": "maka.tool.reconcile_result",
    "version": 1,
    "payload": {
        "protocol": "tool_reconcile_v1",
        "operationId": "operation-1",
        "observation": "diverged",
        "observationSchema": "state_identity_v1",
        "observationDigest": DIGEST_A,
    },
}
COMPLETED = {
    "kind": "maka.tool.recovery_decision",
    "version": 1,
    "payload": {
        "protocol": "tool_recovery_v1",
        "operationId": "operation-1",
        "disposition": "completed",
        "reasonCode": "reconcile_matches_expected_state",
        "outcomeEventId": "outcome-event-1",
        "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1"],
    },
}
PARKED = {
    "kind": "maka.tool.recovery_decision",
    "version": 1,
    "payload": {
        "protocol": "tool_recovery_v1",
        "operationId": "operation-1",
        "disposition": "parked",
        "reasonCode": "reconcile_diverged",
        "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1"],
    },
}
CONTINUATION = {
    "protocol": "continuation_start_v2",
    "provenance": "runtime_admission",
    "claimId": "claim-1",
    "boundaryDigest": DIGEST_A,
    "immediateSource": {
        "sessionId": "sess-1",
        "invocationId": "inv-source",
        "runId": "run-source",
        "turnId": "turn-source",
        "highWater": 1,
        "prefixDigest": DIGEST_B,
    },
    "replayManifestDigest": DIGEST_A,
    "providerProjectionVersion": 1,
    "providerReplayDigest": DIGEST_C,
}
PERMISSION_REQUEST = {
    "kind": "tool_permission",
    "requestId": "hosted-pr-1",
    "toolUseId": "tool-use-1",
    "toolName": "Bash",
    "category": "shell_unsafe",
    "reason": "shell_dangerous",
    "args": {"command": "rm foo"},
    "rememberForTurnAllowed": True,
}


# --------------------------------------------------------------------------- envelope §1.1


def test_minimal_event_decodes_unchanged_and_frozen() -> None:
    """§1.1, §2.1: a valid envelope decodes to an equal, deep-frozen value."""
    decoded = decode_runtime_event(base())
    assert decoded == base()
    assert isinstance(decoded, FrozenDict)
    with pytest.raises(TypeError):
        decoded["id"] = "other"  # type: ignore[index]


@pytest.mark.parametrize(
    "key", ["id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author"]
)
def test_required_envelope_keys_must_be_present(key: str) -> None:
    """§1.1: required keys must be present (even if falsy, e.g. ``partial: false``)."""
    event = base()
    del event[key]
    assert rejects(event).detail == f"$.{key}: required key is missing"


@pytest.mark.parametrize("key", ["branch", "origin", "modelVisibility", "status", "content", "actions", "refs"])
def test_optional_envelope_keys_set_to_null_are_rejected(key: str) -> None:
    """Conventions + §8 item 5: absent ≠ null; an optional field set to null is invalid."""
    rejects(base(**{key: None}))


@pytest.mark.parametrize("key", ["id", "invocationId", "runId", "sessionId", "turnId"])
def test_identity_strings_must_be_non_empty(key: str) -> None:
    """§1.1 (and §7.2 item 21 "empty id → schema error")."""
    rejects(base(**{key: ""}))
    rejects(base(**{key: 1}))


@pytest.mark.parametrize(
    "ts", [float("nan"), float("inf"), float("-inf"), "100", True, None, 10**400, [100]]
)
def test_ts_must_be_a_finite_number(ts: Any) -> None:
    """§1.1: ``ts`` is a finite number; bool is not a number (§2.4)."""
    rejects(base(ts=ts))


@pytest.mark.parametrize("ts", [1.5, 0, 2**60, -5])
def test_ts_accepts_any_finite_number(ts: Any) -> None:
    """§1.1 "fractions allowed" / §7.2 item 21 "ts: 1.5 accepted"."""
    assert decode_runtime_event(base(ts=ts))["ts"] == ts


@pytest.mark.parametrize(
    "field,value",
    [
        ("partial", 0),
        ("partial", "false"),
        ("role", "assistant"),
        ("author", "model"),
        ("origin", "automation"),
        ("modelVisibility", "secret"),
        ("status", "idle"),
        ("branch", 7),
    ],
)
def test_closed_envelope_enums_and_types(field: str, value: Any) -> None:
    """§1.1: closed enums; ``modelVisibility: secret`` is §7.2 item 21."""
    rejects(base(**{field: value}))


@pytest.mark.parametrize(
    "field,values",
    [
        ("role", ["user", "model", "tool", "system"]),
        ("author", ["user", "host", "agent", "tool", "system"]),
        ("origin", ["provider", "code_mode"]),
        ("modelVisibility", ["visible", "hidden"]),
        ("status", ["streaming", "completed", "failed", "aborted", "cancelled"]),
        ("branch", ["", "main"]),
    ],
)
def test_every_enum_member_decodes(field: str, values: list[str]) -> None:
    """§1.1: each listed member is accepted."""
    for value in values:
        assert decode_runtime_event(base(**{field: value}))[field] == value


def test_unknown_top_level_key_is_rejected() -> None:
    """§1.1 / §7.2 item 21: unknown top-level key → schema error."""
    assert rejects(base(extra=True)).detail == '$: unknown key "extra"'


# --------------------------------------------------------------------------- content §1.2


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "text", "text": "hi", "signature": "s"},
        {"kind": "thinking", "text": "r", "displayText": "r"},
        {"kind": "function_call", "id": "c", "name": "X", "args": {}, "isError": False},
        {"kind": "function_response", "id": "c", "name": "X", "result": 1, "args": {}},
        {"kind": "error", "message": "m", "text": "t"},
        {"kind": "image", "text": "x"},
        {"text": "no kind"},
    ],
)
def test_content_variants_are_closed(content: dict[str, Any]) -> None:
    """§1.2: exact shapes per kind; unknown keys and unknown kinds are rejected."""
    rejects(base(content=content))


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "thinking", "text": "r", "signature": "sig", "providerOptions": {"a": {"b": 1}}},
        {"kind": "function_call", "id": "c1", "name": "Read", "args": {"path": "/x"},
         "providerOptions": {"google": {"thoughtSignature": "sig"}}, "providerExecuted": True},
        {"kind": "function_response", "id": "c1", "name": "Read", "result": "ok", "isError": False,
         "providerExecuted": False, "providerOutput": [1, "two"]},
        {"kind": "error", "message": "upstream failed", "code": "c", "reason": "provider_5xx",
         "details": ["a", "b"]},
        {"kind": "error", "message": "m", "details": {"nested": {"x": None}}},
    ],
)
def test_non_text_content_decodes_unchanged(content: dict[str, Any]) -> None:
    """§1.2 optional keys; §2.1 step 2 "everything else is returned unchanged"."""
    assert decode_runtime_event(base(content=content))["content"] == content


def test_function_call_args_must_be_present_but_may_be_null() -> None:
    """§1.2 + §7.2 item 21: ``args: null`` accepted; a missing ``args`` key is an error."""
    assert decode_runtime_event(base(content={"kind": "function_call", "id": "c", "name": "X", "args": None}))[
        "content"
    ]["args"] is None
    rejects(base(content={"kind": "function_call", "id": "c", "name": "X"}))


def test_function_response_result_must_be_present() -> None:
    """§1.2 + §7.2 item 21: function_response without ``result`` → schema error; null is fine."""
    rejects(base(content={"kind": "function_response", "id": "c", "name": "X"}))
    ok = base(content={"kind": "function_response", "id": "c", "name": "X", "result": None})
    assert decode_runtime_event(ok)["content"]["result"] is None


def test_call_and_response_ids_are_only_type_checked() -> None:
    """§1.2: empty ``id``/``name`` decode (identity is the scanner's job); non-strings do not."""
    decode_runtime_event(base(content={"kind": "function_call", "id": "", "name": "", "args": 1}))
    decode_runtime_event(base(content={"kind": "function_response", "id": "", "name": "", "result": 1}))
    rejects(base(content={"kind": "function_call", "id": 1, "name": "X", "args": 1}))


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "text", "text": "x", "steering": False},
        {"kind": "text", "text": 5},
        {"kind": "text", "text": "x", "providerOptions": []},
        {"kind": "text", "text": "x", "quotes": [{"text": "q", "extra": True}]},
        {"kind": "text", "text": "x", "quotes": [{"text": 1}]},
        {"kind": "text", "text": "x", "quotes": [{"text": "q", "sourceTurnId": 1}]},
        {"kind": "text", "text": "x", "attachments": [{"bytes": 1.5}]},
        {"kind": "text", "text": "x", "attachments": [{"bytes": -1}]},
        {"kind": "text", "text": "x", "attachments": ["not an object"]},
        {"kind": "text", "text": "x", "origin": {"automationId": "a"}},
        {"kind": "function_response", "id": "c", "name": "X", "result": 1, "isError": "yes"},
        {"kind": "error", "message": "m", "details": [1]},
        {"kind": "error", "message": "m", "details": "text"},
    ],
)
def test_content_field_types(content: dict[str, Any]) -> None:
    """§1.2 field types (``steering`` literally true; details strings or object) and §2.1 quotes."""
    rejects(base(content=content))


# --------------------------------------------------------------------------- normalisation §2.1


def test_item17_text_normalisation() -> None:
    """§7.2 item 17: ``{text:model, displayText:model, attachments:[], quotes:[q…]}`` → ``{kind, text, quotes}``."""
    quotes = [
        {"text": "first", "label": "Assistant", "sourceTurnId": "turn-1"},
        {"text": "second", "sourceTurnId": "turn-2"},
    ]
    raw = base(role="user", author="user", content={
        "kind": "text", "text": "model", "displayText": "model", "attachments": [], "quotes": quotes,
    })
    assert decode_runtime_event(raw)["content"] == {"kind": "text", "text": "model", "quotes": quotes}


def test_item17_legacy_automation_origin_is_rewritten() -> None:
    """§7.2 item 17 / §2.1: legacy ``{kind:"automation",…}`` → ``{kind:"legacy_automation",…}``."""
    raw = base(role="user", author="host", content={
        "kind": "text", "text": "run", "origin": {"kind": "automation", "automationId": "auto-1"},
    })
    assert decode_runtime_event(raw)["content"]["origin"] == {"kind": "legacy_automation", "automationId": "auto-1"}


def test_normalisation_keeps_meaningful_fields() -> None:
    """§2.1 step 2: differing displayText, empty inlineReferences, steering true are kept."""
    content = {
        "kind": "text",
        "text": "hi",
        "displayText": "/skill:writer hi",
        "inlineReferences": [],
        "steering": True,
        "origin": {"kind": "agent_graph", "graphId": "g", "wakeId": "w", "attemptId": "a"},
    }
    assert decode_runtime_event(base(content=content))["content"] == content


def test_attachment_negative_zero_bytes_become_zero() -> None:
    """§2.1 step 2: attachment ``bytes`` of -0 becomes 0; non-empty attachments are kept."""
    attachment = {
        "kind": "code",
        "name": "a.ts",
        "mimeType": "text/typescript",
        "bytes": -0.0,
        "ref": {"kind": "workspace_file", "relativePath": "a.ts"},
    }
    decoded = decode_runtime_event(base(content={"kind": "text", "text": "x", "attachments": [attachment]}))
    got = decoded["content"]["attachments"][0]["bytes"]
    assert got == 0 and str(got) == "0"
    assert decoded["content"]["attachments"][0]["ref"] == {"kind": "workspace_file", "relativePath": "a.ts"}


def test_decode_does_not_mutate_its_input() -> None:
    """§2.1 returns a normalised *copy*; the caller's raw value is untouched."""
    raw = base(content={"kind": "text", "text": "a", "displayText": "a", "attachments": [], "quotes": []})
    snapshot = copy.deepcopy(raw)
    decode_runtime_event(raw)
    assert raw == snapshot


# --------------------------------------------------------------------------- refs §1.4


def test_item16_source_message_digest_format() -> None:
    """§7.2 item 16: ``refs.sourceMessageDigest`` must be sha256 + 64 lowercase hex."""
    assert decode_runtime_event(base(refs={"sourceMessageDigest": DIGEST_A}))["refs"] == {
        "sourceMessageDigest": DIGEST_A
    }
    rejects(base(refs={"sourceMessageDigest": "sha256:not-a-digest"}))
    rejects(base(refs={"sourceMessageDigest": "sha256:" + "A" * 64}))


def test_item16_provider_request_trace_id_must_be_a_string() -> None:
    """§7.2 item 16: ``refs.providerRequestTraceId`` is a string."""
    ok = base(refs={"providerRequestTraceId": "provider-trace-1"})
    assert decode_runtime_event(ok)["refs"]["providerRequestTraceId"] == "provider-trace-1"
    rejects(base(refs={"providerRequestTraceId": 123}))


@pytest.mark.parametrize(
    "key",
    [
        "toolCallId", "operationId", "parentToolCallId", "parentOperationId", "stepId", "storedMessageId",
        "traceEventId", "providerEventId", "providerRequestTraceId", "artifactId", "sourceInvocationId",
        "sourceRunId", "sourceTurnId",
    ],
)
def test_string_refs(key: str) -> None:
    """§1.4: each listed ref is a string (may be empty), never null or another type."""
    assert decode_runtime_event(base(refs={key: ""}))["refs"] == {key: ""}
    rejects(base(refs={key: 1}))
    rejects(base(refs={key: None}))


@pytest.mark.parametrize("value,ok", [(0, True), (2**53 - 1, True), (3.0, True), (-1, False),
                                      (2**53, False), (1.5, False), (True, False), ("1", False)])
def test_source_runtime_event_high_water(value: Any, ok: bool) -> None:
    """§1.4: safe integer ≥ 0 (§7.2 item 21: -1 → schema error)."""
    event = base(refs={"sourceRuntimeEventHighWater": value})
    if ok:
        assert decode_runtime_event(event)["refs"]["sourceRuntimeEventHighWater"] == value
    else:
        rejects(event)


def test_refs_are_closed() -> None:
    """§1.4: unknown ref keys are rejected (incl. ``abortSource``, see docs/choices/events.md)."""
    rejects(base(refs={"abortSource": "user_stop"}))
    rejects(base(refs=[]))


# --------------------------------------------------------------------------- actions §1.3


def test_empty_actions_object_decodes() -> None:
    """§1.3: every action key is optional (``actions: {}`` is a lane question, not a schema one)."""
    assert decode_runtime_event(base(actions={}))["actions"] == {}


@pytest.mark.parametrize(
    "actions",
    [
        {"unknownAction": 1},
        {"stateDelta": []},
        {"artifactDelta": {"out.md": None}},
        {"artifactDelta": {"out.md": float("nan")}},
        {"artifactDelta": {"out.md": {"bytes": 1}}},
        {"transferToAgent": 1},
        {"endInvocation": "true"},
        {"tokenUsage": {"input": 1}},
        {"tokenUsage": {"input": "1", "output": 1}},
        {"tokenUsage": {"input": 1, "output": True}},
        {"tokenUsage": {"input": 1, "output": 1, "costUsd": None}},
        {"tokenUsage": {"input": 1, "output": 1, "promptSegments": [{"kind": "system_prompt", "chars": None}]}},
        {"tokenUsage": {"input": 1, "output": 1, "contextBudget": {"enabled": None}}},
        {"tokenUsage": {"input": 1, "output": 1, "contextBudget": {"compactionDecisions": [{"reason": None}]}}},
        {"permissionRequest": {"toolUseId": "t"}},
        {"userQuestionRequest": {"requestId": 1}},
        {"workspaceFact": "fact"},
    ],
)
def test_action_field_types(actions: dict[str, Any]) -> None:
    """§1.3: closed action key set, field types; §2.2's optional-field levels reject null."""
    rejects(with_actions(actions))


def test_action_values_decode_unchanged() -> None:
    """§1.3: well-formed actions of every kind decode unchanged."""
    actions = {
        "stateDelta": {"retries": 1, "nested": {"x": [None]}},
        "artifactDelta": {"out.md": 2048, "flag": True, "name": "v2"},
        "transferToAgent": "agent-2",
        "endInvocation": False,
        "tokenUsage": {
            "input": 10,
            "output": 5,
            "costUsd": 0.001,
            "promptSegments": [{"kind": "system_prompt", "chars": 10, "estimatedTokens": 3}],
            "contextBudget": {"enabled": True, "compactionDecisions": [{"stage": "priorReplay"}]},
        },
        "userQuestionRequest": {"requestId": "q-1", "toolUseId": "t-1", "questions": []},
        "workspaceFact": {"kind": "anything", "version": 1},
    }
    assert decode_runtime_event(with_actions(actions))["actions"] == actions


def test_tool_dispatch_exact_shape() -> None:
    """§1.3.1: all six keys required; nothing else; protocol exact."""
    assert decode_runtime_event(with_actions({"toolDispatch": DISPATCH}))["actions"]["toolDispatch"] == DISPATCH
    for key in DISPATCH:
        missing = {k: v for k, v in DISPATCH.items() if k != key}
        rejects(with_actions({"toolDispatch": missing}))
    rejects(with_actions({"toolDispatch": {**DISPATCH, "extra": 1}}))
    rejects(with_actions({"toolDispatch": {**DISPATCH, "protocol": "t1_after_preflight_v2"}}))


@pytest.mark.parametrize(
    "mode", ["replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry"]
)
def test_tool_dispatch_recovery_modes(mode: str) -> None:
    """§1.3.1: the six recovery modes."""
    decode_runtime_event(with_actions({"toolDispatch": {**DISPATCH, "recoveryMode": mode}}))


def test_runtime_protocol_marker_exact_value() -> None:
    """§3: exactly ``{"toolBoundary": "t1_after_preflight_v1"}``."""
    marker = {"toolBoundary": "t1_after_preflight_v1"}
    assert decode_runtime_event(with_actions({"runtimeProtocol": marker}))["actions"]["runtimeProtocol"] == marker
    rejects(with_actions({"runtimeProtocol": {"toolBoundary": "legacy"}}))
    rejects(with_actions({"runtimeProtocol": {**marker, "extra": True}}))
    rejects(with_actions({"runtimeProtocol": "t1_after_preflight_v1"}))


# --------------------------------------------------------------------------- §7.2 items 10–13


def test_item10_reconcile_event_round_trips_and_version_999_fails() -> None:
    """§7.2 item 10: decode unchanged; ``toolRecovery.version = 999`` → schema error."""
    event = base(id="reconcile-event-1", ts=2, actions={"toolRecovery": RECONCILE},
                 refs={"operationId": "operation-1", "toolCallId": "provider-call-1"})
    assert decode_runtime_event(event) == event
    bad = copy.deepcopy(event)
    bad["actions"]["toolRecovery"]["version"] = 999
    assert rejects(bad).detail.startswith("$.actions.toolRecovery.version")


def test_recovery_decisions_decode_unchanged() -> None:
    """§5.1 validated at decode time: both decision forms decode unchanged."""
    for fact in (COMPLETED, PARKED):
        assert decode_runtime_event(with_actions({"toolRecovery": fact}))["actions"]["toolRecovery"] == fact


def continuation_event(start: dict[str, Any] = CONTINUATION, **overrides: Any) -> dict[str, Any]:
    return base(**{"actions": {"continuationStart": start}, **overrides})


def test_item11_continuation_start_v1_projection() -> None:
    """§7.2 item 11: ``providerProjectionVersion: 1`` decodes unchanged; ``2`` → schema error."""
    assert decode_runtime_event(continuation_event()) == continuation_event()
    rejects(continuation_event({**CONTINUATION, "providerProjectionVersion": 2}))
    rejects(continuation_event({**CONTINUATION, "providerProjectionVersion": True}))


@pytest.mark.parametrize(
    "start",
    [
        {**CONTINUATION, "protocol": "continuation_start_v1"},
        {**CONTINUATION, "provenance": "manual"},
        {**CONTINUATION, "claimId": ""},
        {**CONTINUATION, "boundaryDigest": "sha256:" + "A" * 64},
        {**CONTINUATION, "replayManifestDigest": "sha256:abc"},
        {**CONTINUATION, "providerReplayDigest": None},
        {**CONTINUATION, "extra": 1},
        {k: v for k, v in CONTINUATION.items() if k != "claimId"},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "highWater": 0}},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "highWater": 1.5}},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "highWater": 2**53}},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "runId": ""}},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "extra": 1}},
        {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "prefixDigest": "x"}},
    ],
)
def test_continuation_start_exact_shape(start: dict[str, Any]) -> None:
    """§1.3.2: exact keys, non-empty ids, highWater safe integer > 0, digests lowercase."""
    rejects(continuation_event(start))


@pytest.mark.parametrize(
    "overrides",
    [
        {"role": "model"},
        {"author": "agent"},
        {"partial": True},
        {"status": "completed"},
        {"content": {"kind": "text", "text": "x"}},
        {"actions": {"continuationStart": CONTINUATION, "endInvocation": False}},
        {"actions": {"continuationStart": {**CONTINUATION, "provenance": "claim_repair"},
                     "runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}}},
    ],
)
def test_continuation_start_carrier_is_not_the_decoders_business(overrides: dict[str, Any]) -> None:
    """§1.3.2's carrier rules (system/system, no content/status, not partial, actions ⊆ {start,
    marker}, marker only for runtime_admission) are enforced by the store's start writer, as
    upstream does (its decoder accepts every one of these; ``assertContinuationStartEvent``,
    storage/src/sqlite-runtime-store.ts:3245, refuses them): they decode here and are refused
    in tests/maka_ref/store/claims/test_claims.py and by the STORE-CONT clauses."""
    event = continuation_event(**overrides)
    assert decode_runtime_event(event) == event


def test_continuation_start_with_marker_and_float_high_water() -> None:
    """§1.3.2: a runtime_admission start may carry the marker; 1.0 is the safe integer 1 (§2.4)."""
    start = {**CONTINUATION, "immediateSource": {**CONTINUATION["immediateSource"], "highWater": 7.0}}
    event = base(actions={"continuationStart": start, "runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}})
    assert decode_runtime_event(event) == event
    repair = {**CONTINUATION, "provenance": "claim_repair"}
    assert decode_runtime_event(continuation_event(repair)) == continuation_event(repair)


def test_item12_permission_closure_accepted() -> None:
    """§7.2 item 12: only ``{requestId, reason:"timed_out"}``, and only as the sole action key."""
    closure = {"requestId": "hosted-pr-1", "reason": "timed_out"}
    event = base(role="model", author="agent", actions={"permissionClosureAccepted": closure})
    assert decode_runtime_event(event)["actions"]["permissionClosureAccepted"] == closure
    for bad in (
        {"requestId": "pr-1", "reason": "timed_out", "extra": True},
        {"requestId": "x" * 257, "reason": "timed_out"},
        {"requestId": "pr-1", "reason": "cancelled"},
    ):
        rejects(with_actions({"permissionClosureAccepted": bad}))
    for other in (
        {"permissionAnswerAccepted": {"requestId": "hosted-pr-1"}},
        {"permissionRequest": PERMISSION_REQUEST},
        {"endInvocation": True},
    ):
        rejects(with_actions({"permissionClosureAccepted": closure, **other}))


@pytest.mark.parametrize("key", ["permissionAnswerAccepted", "userQuestionAnswerAccepted"])
def test_item13_answer_accepted_exact_request_id(key: str) -> None:
    """§7.2 item 13: exact ``{requestId}``; extra key, inherited property, 257-byte id → error."""
    assert decode_runtime_event(with_actions({key: {"requestId": "question-1"}}))["actions"][key] == {
        "requestId": "question-1"
    }
    rejects(with_actions({key: {"requestId": "pr-1", "extra": True}}))
    rejects(with_actions({key: ChainMap({}, {"requestId": "inherited-pr-1"})}))  # Python's "inherited"
    rejects(with_actions({key: {"requestId": "x" * 257}}))
    rejects(with_actions({key: {"requestId": ""}}))
    decode_runtime_event(with_actions({key: {"requestId": "x" * 256}}))


def test_item13_request_id_bound_counts_utf8_bytes() -> None:
    """§7.2 item 13: the bound is in bytes (257-byte id rejected ⇒ 256 UTF-8 bytes allowed)."""
    decode_runtime_event(with_actions({"permissionAnswerAccepted": {"requestId": "é" * 128}}))  # 256 bytes
    rejects(with_actions({"permissionAnswerAccepted": {"requestId": "é" * 128 + "x"}}))  # 257 bytes
    rejects(with_actions({"permissionAnswerAccepted": {"requestId": "😀" * 64 + "x"}}))  # 257 bytes


def test_item13_permission_decision() -> None:
    """§7.2 item 13: ``toolName`` non-empty, bounded, no extra keys."""
    decision = {"requestId": "pr-1", "decision": "allow", "rememberForTurn": True, "toolName": "Bash"}
    assert decode_runtime_event(with_actions({"permissionDecision": decision}))["actions"][
        "permissionDecision"
    ] == decision
    for bad in (
        {"requestId": "pr-1", "decision": "allow", "toolName": ""},
        {"requestId": "pr-1", "decision": "allow", "toolName": "x" * 257},
        {"requestId": "pr-1", "decision": "allow", "toolName": "Bash", "extra": True},
        {"requestId": "pr-1", "decision": "maybe"},
        {"decision": "deny"},
        {"requestId": "pr-1", "decision": "deny", "rememberForTurn": None},
    ):
        rejects(with_actions({"permissionDecision": bad}))


def test_permission_request_payload_is_open_but_needs_request_id() -> None:
    """§1.3 / spec 20 §0.1: PermissionRequestPayload "has requestId"; other keys any JSON."""
    assert decode_runtime_event(with_actions({"permissionRequest": PERMISSION_REQUEST}))["actions"][
        "permissionRequest"
    ] == PERMISSION_REQUEST
    rejects(with_actions({"permissionRequest": {**PERMISSION_REQUEST, "requestId": 5}}))


# --------------------------------------------------------------------------- §7.2 items 15, 21


def test_item15_code_mode_nested_call_decodes() -> None:
    """§7.2 item 15: origin code_mode, modelVisibility hidden, parent refs → decodes unchanged."""
    event = base(role="model", author="agent", origin="code_mode", modelVisibility="hidden",
                 content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "a.ts"}},
                 refs={"toolCallId": "nested-1", "operationId": "nested-op-1",
                       "parentToolCallId": "exec-1", "parentOperationId": "exec-op-1"})
    assert decode_runtime_event(event) == event


ITEM21_REJECTED = [
    ("status: null", base(status=None)),
    ("unknown top-level key", base(unknownKey=1)),
    ("empty id", base(id="")),
    ("function_response without result", base(content={"kind": "function_response", "id": "c", "name": "X"})),
    ("observationDigest uppercase hex", with_actions({"toolRecovery": {
        **RECONCILE, "payload": {**RECONCILE["payload"], "observationDigest": "sha256:" + "A" * 64}}})),
    ("duplicate evidence ids", with_actions({"toolRecovery": {**PARKED, "payload": {
        **PARKED["payload"], "evidenceEventIds": ["call-event-1", "call-event-1"]}}})),
    ("parked decision with outcomeEventId", with_actions({"toolRecovery": {**PARKED, "payload": {
        **PARKED["payload"], "outcomeEventId": "outcome-event-1"}}})),
    ("completed decision with a park reason", with_actions({"toolRecovery": {**COMPLETED, "payload": {
        **COMPLETED["payload"], "reasonCode": "reconcile_diverged"}}})),
    ("marker with another value", with_actions({"runtimeProtocol": {"toolBoundary": "t0"}})),
    ("marker with an extra key", with_actions({"runtimeProtocol": {
        "toolBoundary": "t1_after_preflight_v1", "extra": 1}})),
    ("dispatch recoveryMode retry", with_actions({"toolDispatch": {**DISPATCH, "recoveryMode": "retry"}})),
    ("sourceRuntimeEventHighWater -1", base(refs={"sourceRuntimeEventHighWater": -1})),
    ("modelVisibility secret", base(modelVisibility="secret")),
]


@pytest.mark.parametrize("name,event", ITEM21_REJECTED, ids=[name for name, _ in ITEM21_REJECTED])
def test_item21_schema_errors(name: str, event: dict[str, Any]) -> None:
    """§7.2 item 21: each of these is "Invalid RuntimeEvent schema" (encode-side items in test_events_encode)."""
    rejects(event)


ITEM21_ACCEPTED = [
    ("ts 1.5", base(ts=1.5)),
    ("args null", base(content={"kind": "function_call", "id": "c", "name": "X", "args": None})),
    ("dispatch with empty strings and a non-digest hash", with_actions({"toolDispatch": {
        "protocol": "t1_after_preflight_v1", "operationId": "", "providerToolCallId": "", "toolName": "",
        "canonicalArgsHash": "not-a-digest", "recoveryMode": "never_auto_retry"}})),
]


@pytest.mark.parametrize("name,event", ITEM21_ACCEPTED, ids=[name for name, _ in ITEM21_ACCEPTED])
def test_item21_decodes(name: str, event: dict[str, Any]) -> None:
    """§7.2 item 21: these decode, unchanged (the dispatch is authenticated later by the scanner)."""
    assert decode_runtime_event(event) == event


# --------------------------------------------------------------------------- hostile inputs


class _Color(enum.IntEnum):
    RED = 1


class _LoudStr(str):
    def __str__(self) -> str:
        return "rewritten"


class _HookDict(dict):  # type: ignore[type-arg]
    """A dict whose Python-level accessors lie; the decoder must read the real storage."""

    def items(self):  # type: ignore[override]
        return [("rewritten", True)]

    def __getitem__(self, key: Any) -> Any:
        return "rewritten"

    def get(self, key: Any, default: Any = None) -> Any:
        return "rewritten"


class _SpoofedDict:
    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return dict


def _cyclic() -> dict[str, Any]:
    args: dict[str, Any] = {}
    args["self"] = args
    return args


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        None, 1, "event", b"{}", [base()], (1, 2), {1: "x"},
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": _cyclic()}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": _nested(100_000)}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": b"bytes"}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": (1, 2)}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": {1, 2}}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": {1: "x"}}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": {"k": _Color.RED}}),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": object()}),
        base(id=_LoudStr("evt-1")),
        _SpoofedDict(),
        base(actions=_SpoofedDict()),
        base(content={"kind": "function_call", "id": "c", "name": "X", "args": {"k": _SpoofedDict()}}),
        base(ts=_Color.RED),
        {**base(), 7: "x"},
    ],
)
def test_hostile_inputs_raise_only_schema_errors(value: Any) -> None:
    """§2.1: any input either decodes or fails with "Invalid RuntimeEvent schema" — nothing else."""
    rejects(value)


def test_free_form_nesting_below_the_cap_decodes() -> None:
    """docs/choices/events.md: free-form JSON may nest up to 256 levels."""
    event = base(content={"kind": "function_call", "id": "c", "name": "X", "args": _nested(200)})
    assert decode_runtime_event(event) == event


def test_dict_subclass_accessors_cannot_rewrite_values() -> None:
    """§2.2 "accessors / custom serialization hooks": the decoder reads the stored entries."""
    args = _HookDict(path="notes.txt")
    decoded = decode_runtime_event(base(content={"kind": "function_call", "id": "c", "name": "X", "args": args}))
    assert dict(decoded["content"]["args"]) == {"path": "notes.txt"}
    assert type(decoded["content"]["args"]) is FrozenDict


def test_decoded_free_form_values_are_deep_frozen() -> None:
    """Architecture: a decoded event is immutable all the way down."""
    event = base(content={"kind": "function_call", "id": "c", "name": "X", "args": {"a": [{"b": [1]}]}})
    args = decode_runtime_event(event)["content"]["args"]
    assert type(args) is FrozenDict and type(args["a"]) is FrozenList and type(args["a"][0]) is FrozenDict
    with pytest.raises(TypeError):
        args["a"].append(2)


# --------------------------------------------------------------------------- property tests

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.binary(max_size=4)
    | st.sampled_from(["evt-1", "text", "function_call", "system", "t1_after_preflight_v1", ""])
)
_json_like = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner)
    | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    | st.dictionaries(st.sampled_from(["kind", "text", "id", "name", "args", "result", "requestId",
                                       "toolBoundary", "payload", "version", "protocol"]), inner, max_size=5),
    max_leaves=20,
)
_ENVELOPE_KEYS = ["id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author",
                  "branch", "origin", "modelVisibility", "status", "content", "actions", "refs"]
_VALID = [
    base(),
    base(content={"kind": "text", "text": "hi", "quotes": [{"text": "q"}]}),
    base(content={"kind": "function_call", "id": "c", "name": "X", "args": {"a": 1}}),
    with_actions({"toolDispatch": DISPATCH}, refs={"operationId": "operation-1"}),
    with_actions({"toolRecovery": PARKED}),
    continuation_event(),
    with_actions({"permissionClosureAccepted": {"requestId": "r", "reason": "timed_out"}}),
]


def _check_total(value: Any) -> None:
    try:
        decoded = decode_runtime_event(value)
    except RuntimeEventSchemaError as exc:
        assert exc.message == MESSAGE and exc.detail
    else:
        assert isinstance(decoded, FrozenDict)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_json_like)
def test_decode_is_total_on_arbitrary_values(value: Any) -> None:
    """§2.1: decode never raises anything but RuntimeEventSchemaError (arbitrary JSON-like input)."""
    _check_total(value)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_ENVELOPE_KEYS), _json_like, max_size=16))
def test_decode_is_total_on_envelope_shaped_values(value: dict[str, Any]) -> None:
    """§2.1: same, for objects built from the envelope's own key names."""
    _check_total(value)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_decode_is_total_on_mutated_valid_events(data: st.DataObject) -> None:
    """§2.1: same, for valid events with one field (at depth 1 or 2) replaced by an arbitrary value."""
    event = copy.deepcopy(data.draw(st.sampled_from(_VALID)))
    key = data.draw(st.sampled_from(sorted(event)))
    target = event
    if isinstance(event[key], dict) and event[key] and data.draw(st.booleans()):
        target = event[key]
        key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(_json_like)
    _check_total(event)
