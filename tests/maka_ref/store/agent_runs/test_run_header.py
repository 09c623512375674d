"""AgentRun header / operational-event codec (spec 20 §5.1, §5.2, §5.4; §8 items 64–69).

Expected values are copied from the spec (message text, status values, folds, the v2 rules),
never computed by the code under test.
"""

from __future__ import annotations

import copy
import math

import pytest

from maka_ref._codec.frozen import FrozenDict
from maka_ref._errors import MakaRefError
from maka_ref._store.errors import StoreError
from maka_ref._store.agent_runs.header import (
    MUTABLE_FIELDS,
    RunEventSchemaError,
    RunHeaderSchemaError,
    decode_run_event,
    decode_run_header,
    is_session_inline,
    is_terminal_status,
)

MESSAGE = "Invalid AgentRun header schema"
DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def header(**overrides: object) -> dict:
    base: dict = {
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "status": "created",
        "backendKind": "fake",
        "llmConnectionSlug": "fake",
        "modelId": "fake-model",
        "cwd": "/workspace",
        "permissionMode": "ask",
        "createdAt": 1,
        "updatedAt": 1,
    }
    base.update(overrides)
    return base


def v2_source(**overrides: object) -> dict:
    base: dict = {
        "protocol": "continuation_source_v2",
        "claimId": "claim-1",
        "boundaryDigest": DIGEST_A,
        "sourceInvocationId": "invocation-1",
        "sourceRunId": "run-0",
        "sourceTurnId": "turn-0",
        "sourceRuntimeEventHighWater": 3,
        "sourcePrefixDigest": DIGEST_B,
        "replayManifestDigest": DIGEST_A,
    }
    base.update(overrides)
    return base


def v1_source(**overrides: object) -> dict:
    base: dict = {
        "sourceInvocationId": "invocation-1",
        "sourceRunId": "run-0",
        "sourceTurnId": "turn-0",
        "sourceRuntimeEventHighWater": 2,
    }
    base.update(overrides)
    return base


def rejected(value: object) -> RunHeaderSchemaError:
    with pytest.raises(RunHeaderSchemaError) as info:
        decode_run_header(value)
    assert info.value.message == MESSAGE
    assert str(info.value).startswith(MESSAGE)
    assert info.value.detail  # a path for humans
    return info.value


# ------------------------------------------------------------------ §8 items 64–69


def test_item_64_v2_empty_claim_id_rejected() -> None:
    """§8 item 64: v2 ``claimId: ""`` → "Invalid AgentRun header schema"."""
    error = rejected(header(continuationSource=v2_source(claimId="")))
    assert "claimId" in (error.detail or "")


def test_item_65_v2_zero_high_water_rejected() -> None:
    """§8 item 65: v2 high-water 0 → rejected (v2 requires > 0)."""
    rejected(header(continuationSource=v2_source(sourceRuntimeEventHighWater=0)))


@pytest.mark.parametrize("field", ["sourceInvocationId", "sourceRunId", "sourceTurnId"])
def test_items_66_68_v2_empty_source_ids_rejected(field: str) -> None:
    """§8 items 66–68: v2 empty ``sourceInvocationId`` / ``sourceRunId`` / ``sourceTurnId``."""
    rejected(header(continuationSource=v2_source(**{field: ""})))


def test_item_69_v2_manifest_digest_must_equal_boundary_digest() -> None:
    """§8 item 69: v2 ``replayManifestDigest`` ≠ ``boundaryDigest`` → rejected."""
    rejected(header(continuationSource=v2_source(replayManifestDigest=DIGEST_B)))


# ------------------------------------------------------------------ continuationSource (§5.1)


def test_v2_continuation_source_round_trips() -> None:
    """§5.1 / §3.11: a valid v2 source decodes unchanged (deep-equal, frozen)."""
    value = header(continuationSource=v2_source(), parentRunId="run-0", parentTurnId="turn-0")
    decoded = decode_run_header(value)
    assert decoded == value
    assert isinstance(decoded["continuationSource"], FrozenDict)


def test_v1_continuation_source_round_trips_and_tolerates_legacy_empties() -> None:
    """§5.1 v1: strings, high-water safe int ≥ 0; legacy empty strings / 0 tolerated."""
    assert decode_run_header(header(continuationSource=v1_source())) == header(continuationSource=v1_source())
    legacy = v1_source(sourceInvocationId="", sourceRunId="", sourceTurnId="", sourceRuntimeEventHighWater=0)
    assert decode_run_header(header(continuationSource=legacy))["continuationSource"] == legacy


@pytest.mark.parametrize("high_water", [-1, 1.5, True, "3", None, 2**53, math.inf])
def test_v1_high_water_must_be_a_safe_integer_at_least_zero(high_water: object) -> None:
    """§5.1 v1: high-water a safe integer ≥ 0 (numbers exclude bool)."""
    rejected(header(continuationSource=v1_source(sourceRuntimeEventHighWater=high_water)))


@pytest.mark.parametrize(
    "source",
    [
        v2_source(protocol="continuation_source_v3"),
        v2_source(protocol="continuation_source_v1"),
        {**v2_source(), "extra": 1},
        {k: v for k, v in v2_source().items() if k != "sourcePrefixDigest"},
        {**v1_source(), "protocol": "continuation_source_v2"},
        {**v1_source(), "claimId": "claim-1"},
        v2_source(boundaryDigest="sha256:" + "A" * 64, replayManifestDigest="sha256:" + "A" * 64),
        v2_source(sourcePrefixDigest="sha256:" + "a" * 63),
        v2_source(sourcePrefixDigest="a" * 64),
        v2_source(claimId=7),
        v2_source(sourceRuntimeEventHighWater=-1),
        "not-an-object",
        None,
    ],
)
def test_continuation_source_must_be_exactly_v1_or_v2(source: object) -> None:
    """§5.1: exactly the v1 key set, or exactly the v2 key set with protocol v2; digests lowercase."""
    rejected(header(continuationSource=source))


def test_v2_high_water_accepts_integral_float() -> None:
    """§5.1: "safe integer" is JavaScript's Number.isSafeInteger, so ``3.0`` is 3."""
    assert decode_run_header(header(continuationSource=v2_source(sourceRuntimeEventHighWater=3.0)))


# ------------------------------------------------------------------ exact shape (§5.1)


def test_minimal_header_decodes_frozen_and_input_untouched() -> None:
    value = header()
    snapshot = copy.deepcopy(value)
    decoded = decode_run_header(value)
    assert decoded == snapshot and value == snapshot
    assert isinstance(decoded, FrozenDict)
    with pytest.raises(TypeError):
        decoded["status"] = "running"  # type: ignore[index]


def test_error_class_is_a_store_error() -> None:
    """Brief / storage.md: every store error derives from StoreError (a MakaRefError)."""
    error = rejected(header(extra=True))
    assert isinstance(error, StoreError) and isinstance(error, MakaRefError)
    assert error.code == "invalid_agent_run_header"


def test_unknown_key_rejected() -> None:
    """§5.1: decoding is exact-shape; unknown keys are rejected."""
    assert "surprise" in (rejected(header(surprise="x")).detail or "")


@pytest.mark.parametrize(
    "key",
    ["runId", "sessionId", "turnId", "status", "backendKind", "llmConnectionSlug", "modelId", "cwd",
     "permissionMode", "createdAt", "updatedAt"],
)
def test_every_required_key_is_required(key: str) -> None:
    """§5.1 required keys."""
    value = header()
    del value[key]
    rejected(value)


def test_all_optional_keys_accepted() -> None:
    """§5.1 optional keys (one hosted root authority only)."""
    value = header(
        invocationId="invocation-1",
        completedAt=5,
        workspaceIdentity="workspace:v1:123e4567-e89b-42d3-a456-426614174000",
        collaborationMode="agent",
        orchestrationMode="graph",
        orchestrationSource="turn_override",
        agentSwarmAuthorization="none",
        toolMode="code_mode",
        runComposition={"prompt": {"digest": DIGEST_A}, "tools": ["Bash"]},
        parentRunId="run-0",
        resumedFromRunId="run-x",
        retriedFromRunId="run-y",
        agentId="agent-1",
        agentName="Explorer",
        parentTurnId="turn-0",
        retriedFromTurnId="turn-r",
        regeneratedFromTurnId="turn-g",
        branchOfTurnId="turn-b",
        parentSessionId="session-0",
        continuationSource=v1_source(),
        agentGraphWakeId="graph-1:wake-1",
        agentGraphWakeAttemptId="attempt-1",
        rootExecutionKind="context_compact",
        failureClass="app_restarted",
        failureMessage="boom",
        abortSource="user_stop",
        traceWriteError="disk full",
    )
    assert decode_run_header(value) == value


@pytest.mark.parametrize("key", ["invocationId", "completedAt", "parentRunId", "failureClass", "toolMode"])
def test_null_is_not_an_optional_value(key: str) -> None:
    """§5.1 exact shape: absent ≠ null (JSON ``null`` is not a string/number/enum)."""
    rejected(header(**{key: None}))


@pytest.mark.parametrize("status", ["created", "running", "waiting_for_user", "completed", "failed", "cancelled"])
def test_status_values(status: str) -> None:
    """§5.1 status values."""
    assert decode_run_header(header(status=status))["status"] == status


@pytest.mark.parametrize("status", ["aborted", "Running", "", 1, None])
def test_other_status_values_rejected(status: object) -> None:
    rejected(header(status=status))


@pytest.mark.parametrize("kind", ["ai-sdk", "fake"])
def test_backend_kind_enum(kind: str) -> None:
    """§5.1 ``backendKind`` (``ai-sdk`` | ``fake``)."""
    assert decode_run_header(header(backendKind=kind))["backendKind"] == kind


@pytest.mark.parametrize("kind", ["openai", "", "AI-SDK", None])
def test_backend_kind_other_values_rejected(kind: object) -> None:
    rejected(header(backendKind=kind))


@pytest.mark.parametrize("key", ["createdAt", "updatedAt", "completedAt"])
@pytest.mark.parametrize("bad", [True, False, "1", math.nan, math.inf, -math.inf, [1]])
def test_timestamps_are_finite_numbers_never_bool(key: str, bad: object) -> None:
    """§5.1: ``createdAt``/``updatedAt`` are numbers (bool excluded; finite)."""
    rejected(header(**{key: bad}))


def test_timestamps_accept_floats() -> None:
    assert decode_run_header(header(createdAt=1.5, updatedAt=2.25))["createdAt"] == 1.5


def test_root_execution_kind_only_context_compact() -> None:
    """§5.1: ``rootExecutionKind`` (only ``context_compact``)."""
    rejected(header(rootExecutionKind="regenerate"))


@pytest.mark.parametrize("value", ["snapshot", [1], 3, None])
def test_run_composition_must_be_an_object(value: object) -> None:
    rejected(header(runComposition=value))


# ------------------------------------------------------------------ compatibility folds (§5.1)


def test_fold_waiting_permission_to_waiting_for_user() -> None:
    """§5.1: status ``waiting_permission`` → ``waiting_for_user``."""
    assert decode_run_header(header(status="waiting_permission"))["status"] == "waiting_for_user"


def test_fold_legacy_automation_id() -> None:
    """§5.1: a legacy ``automationId`` key → ``legacyAutomationId`` (the old key is gone)."""
    decoded = decode_run_header(header(automationId="automation-1"))
    assert decoded["legacyAutomationId"] == "automation-1"
    assert "automationId" not in decoded


def test_automation_id_and_legacy_automation_id_together_rejected() -> None:
    rejected(header(automationId="a", legacyAutomationId="b"))


def test_fold_retired_permission_mode() -> None:
    """§5.1: retired permission modes map to live ones (``execute`` → ``ask``, documented choice)."""
    assert decode_run_header(header(permissionMode="execute"))["permissionMode"] == "ask"


@pytest.mark.parametrize("mode", ["explore", "ask", "bypass"])
def test_live_permission_modes(mode: str) -> None:
    assert decode_run_header(header(permissionMode=mode))["permissionMode"] == mode


@pytest.mark.parametrize("mode", ["auto", "", "ASK", None])
def test_unknown_permission_modes_rejected(mode: object) -> None:
    rejected(header(permissionMode=mode))


AUTHORITIES = ["scheduledTaskId", "legacyAutomationId", "goalId", "agentGraphWakeId"]


@pytest.mark.parametrize("first", AUTHORITIES)
@pytest.mark.parametrize("second", AUTHORITIES)
def test_at_most_one_hosted_root_authority(first: str, second: str) -> None:
    """§5.1: at most one of ``scheduledTaskId``, ``legacyAutomationId``, ``goalId``, ``agentGraphWakeId``."""
    if first == second:
        assert decode_run_header(header(**{first: "x"}))[first] == "x"
    else:
        rejected(header(**{first: "x", second: "y"}))


def test_folded_automation_id_counts_as_an_authority() -> None:
    rejected(header(automationId="automation-1", goalId="goal-1"))


# ------------------------------------------------------------------ helpers (§5.1, §5.3, §5.4)


def test_terminal_statuses() -> None:
    """§5.1: terminal = ``completed``, ``failed``, ``cancelled``."""
    assert [s for s in ["created", "running", "waiting_for_user", "completed", "failed", "cancelled"]
            if is_terminal_status(s)] == ["completed", "failed", "cancelled"]
    assert not is_terminal_status("aborted") and not is_terminal_status(None)


def test_mutable_fields_are_exactly_the_spec_list() -> None:
    """§5.3: the mutable fields of ``updateRun``."""
    assert MUTABLE_FIELDS == {
        "status", "updatedAt", "completedAt", "runComposition",
        "failureClass", "failureMessage", "abortSource", "traceWriteError",
    }


def test_session_inline_rule() -> None:
    """§5.4: inline iff no ``parentRunId``, or ``continuationSource`` and no ``agentId``."""
    assert is_session_inline(header())
    assert is_session_inline(header(parentRunId="run-0", continuationSource=v2_source()))
    assert not is_session_inline(header(parentRunId="run-0"))
    assert not is_session_inline(header(parentRunId="run-0", continuationSource=v1_source(), agentId="a"))
    assert is_session_inline(header(agentId="agent-1"))  # no parentRunId at all


# ------------------------------------------------------------------ operational events (§5.2)


def event(**overrides: object) -> dict:
    base: dict = {"type": "run_created", "id": "e-1", "runId": "run-1", "sessionId": "session-1",
                  "turnId": "turn-1", "ts": 1}
    base.update(overrides)
    return base


def test_event_decodes_with_optional_message_and_data() -> None:
    """§5.2: ``{type, id, runId, sessionId, turnId, ts, message?, data?}``."""
    value = event(message="hi", data={"textLength": 3, "attachmentCount": 0, "toolMode": "direct"})
    assert decode_run_event(value) == value


def test_event_unknown_type_accepted() -> None:
    """§5.2: readers accept unknown types (forward compatibility)."""
    assert decode_run_event(event(type="from_the_future"))["type"] == "from_the_future"


@pytest.mark.parametrize(
    "value",
    [event(extra=1), event(ts=True), event(ts="1"), event(data=[1]), event(message=None), event(type=""),
     event(type="  "), event(id=1), {k: v for k, v in event().items() if k != "turnId"}, "nope"],
)
def test_event_envelope_is_exact(value: object) -> None:
    with pytest.raises(RunEventSchemaError) as info:
        decode_run_event(value)
    assert info.value.message == "Invalid AgentRun event schema"
