"""The ``WorkspaceBoundary`` codec and the ``actions.workspaceBoundary`` envelope (spec-phase4
§1.1–§1.3, scenario catalogue §12 items 3–5).

The expected bytes are the §1.2 worked example copied from the contract, never produced by the
code under test.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events import encode_runtime_event
from maka_ref._events.boundary import (
    BOUNDARY_CAPTURED_KIND,
    REBASELINED_KIND,
    RESTORED_KIND,
    WorkspaceBoundaryError,
    decode_boundary_fact,
    decode_workspace_boundary,
    encode_workspace_boundary,
    validate_workspace_boundary,
)

#: spec-phase4 §1.2, verbatim.
EXAMPLE = (
    '{"checkpointPolicyHash":"sha256:1111111111111111111111111111111111111111111111111111111111111111",'
    '"checkpointRef":"refs/maka/checkpoints/123e4567-e89b-42d3-a456-426614174000/1767225600000-'
    '0123456789abcdef0123456789abcdef","immutableRuntimeDigest":"sha256:2222222222222222222222222222222222222222'
    '222222222222222222222222","immutableRuntimeHighWater":7,"workspaceEpoch":1,"workspaceIdentity":'
    '"workspace:v1:123e4567-e89b-42d3-a456-426614174000"}'
)

UUID = "123e4567-e89b-42d3-a456-426614174000"


def boundary(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workspaceIdentity": f"workspace:v1:{UUID}",
        "workspaceEpoch": 1,
        "immutableRuntimeHighWater": 7,
        "immutableRuntimeDigest": "sha256:" + "2" * 64,
        "checkpointRef": f"refs/maka/checkpoints/{UUID}/1767225600000-0123456789abcdef0123456789abcdef",
        "checkpointPolicyHash": "sha256:" + "1" * 64,
    }
    out.update(changes)
    return out


def test_example_round_trips_byte_for_byte() -> None:
    decoded = decode_workspace_boundary(EXAMPLE)
    assert dict(decoded) == boundary()
    assert encode_workspace_boundary(decoded) == EXAMPLE
    assert encode_workspace_boundary(boundary()) == EXAMPLE
    assert decode_workspace_boundary(EXAMPLE.encode("utf-8")) == decoded


def test_key_order_does_not_change_the_encoding() -> None:
    shuffled = dict(reversed(list(boundary().items())))
    assert encode_workspace_boundary(shuffled) == EXAMPLE


@pytest.mark.parametrize(
    ("changes", "pointer"),
    [
        ({"extra": 1}, "/extra"),
        ({"workspaceEpoch": 0}, "/workspaceEpoch"),
        ({"workspaceEpoch": True}, "/workspaceEpoch"),
        ({"workspaceEpoch": 1.5}, "/workspaceEpoch"),
        ({"workspaceEpoch": "1"}, "/workspaceEpoch"),
        ({"workspaceEpoch": 2**53}, "/workspaceEpoch"),
        ({"immutableRuntimeHighWater": -0.0}, "/immutableRuntimeHighWater"),
        ({"immutableRuntimeHighWater": None}, "/immutableRuntimeHighWater"),
        ({"checkpointRef": "refs/heads/main"}, "/checkpointRef"),
        ({"checkpointRef": f"refs/maka/checkpoints/{UUID}/176722560000-0123456789abcdef0123456789abcdef"},
         "/checkpointRef"),
        ({"checkpointRef": f"refs/maka/checkpoints/{UUID}/1767225600000-0123456789ABCDEF0123456789abcdef"},
         "/checkpointRef"),
        ({"checkpointPolicyHash": "sha256:" + "A" * 64}, "/checkpointPolicyHash"),
        ({"immutableRuntimeDigest": "sha256:" + "2" * 63}, "/immutableRuntimeDigest"),
        ({"workspaceIdentity": "workspace:v1:not-a-uuid"}, "/workspaceIdentity"),
        ({"workspaceIdentity": "workspace:v2:" + UUID}, "/workspaceIdentity"),
    ],
)
def test_invalid_values_name_the_offending_key(changes: dict[str, Any], pointer: str) -> None:
    with pytest.raises(WorkspaceBoundaryError) as caught:
        encode_workspace_boundary(boundary(**changes))
    assert caught.value.code == "invalid_workspace_boundary"
    assert caught.value.detail == pointer


def test_missing_key_is_named() -> None:
    value = boundary()
    del value["workspaceEpoch"]
    with pytest.raises(WorkspaceBoundaryError) as caught:
        validate_workspace_boundary(value)
    assert caught.value.detail == "/workspaceEpoch"


def test_first_offending_key_in_ascending_order() -> None:
    with pytest.raises(WorkspaceBoundaryError) as caught:
        validate_workspace_boundary(boundary(workspaceEpoch=0, checkpointRef="x"))
    assert caught.value.detail == "/checkpointRef"


@pytest.mark.parametrize("text", ["[]", "1", "null", "{", "", b"\xff", '{"a":1} {}'])
def test_non_objects_and_bad_text_point_at_the_document(text: Any) -> None:
    with pytest.raises(WorkspaceBoundaryError) as caught:
        decode_workspace_boundary(text)
    assert caught.value.detail == ""


def test_integral_floats_are_integers_and_encode_canonically() -> None:
    value = boundary(workspaceEpoch=1.0, immutableRuntimeHighWater=7.0)
    assert encode_workspace_boundary(value) == EXAMPLE


# ---------------------------------------------------------------------------------------
# The fact envelope and the RuntimeEvent schema
# ---------------------------------------------------------------------------------------


def captured(**changes: Any) -> dict[str, Any]:
    return {"kind": BOUNDARY_CAPTURED_KIND, "version": 1,
            "payload": {"protocol": "workspace_boundary_captured_v1", "boundary": boundary(**changes)}}


def rebaselined(**payload: Any) -> dict[str, Any]:
    body = {"protocol": "workspace_rebaselined_v1", "previous": boundary(), "boundary": boundary(workspaceEpoch=2),
            "affectedPaths": ["a.txt", "b/c.txt"], "affectedPathCount": 2, "affectedPathsComplete": True}
    body.update(payload)
    return {"kind": REBASELINED_KIND, "version": 1, "payload": {k: v for k, v in body.items() if v is not None}}


def restored() -> dict[str, Any]:
    return {"kind": RESTORED_KIND, "version": 1, "payload": {
        "protocol": "workspace_restored_v1", "from": boundary(),
        "boundary": boundary(workspaceEpoch=2, workspaceIdentity="workspace:v1:99999999-e89b-42d3-a456-426614174000")}}


def system_event(fact: Any, **fields: Any) -> dict[str, Any]:
    out = {"id": "boundary-1", "sessionId": "s", "invocationId": "i", "runId": "r", "turnId": "t", "ts": 5,
           "partial": False, "role": "system", "author": "system", "actions": {"workspaceBoundary": fact}}
    out.update(fields)
    return out


@pytest.mark.parametrize("fact", [captured(), rebaselined(), rebaselined(previous=None), restored()])
def test_valid_facts_decode_and_pass_the_event_schema(fact: dict[str, Any]) -> None:
    assert decode_boundary_fact(fact) == fact
    encoded = encode_runtime_event(system_event(fact))
    assert encoded.event["actions"]["workspaceBoundary"] == fact


@pytest.mark.parametrize(
    ("fact", "pointer"),
    [
        ({**captured(), "kind": "maka.workspace.epoch_opened"}, "/kind"),
        ({**captured(), "version": 2}, "/version"),
        ({**captured(), "extra": 1}, "/extra"),
        ({k: v for k, v in captured().items() if k != "kind"}, "/kind"),
        (captured(workspaceEpoch=0), "/payload/boundary/workspaceEpoch"),
        ({**captured(), "payload": {"protocol": "workspace_rebaselined_v1", "boundary": boundary()}},
         "/payload/protocol"),
        (rebaselined(affectedPaths=["b", "a"], affectedPathCount=2), "/payload/affectedPaths/1"),
        (rebaselined(affectedPaths=["a", "a"], affectedPathCount=2), "/payload/affectedPaths/1"),
        (rebaselined(affectedPathCount=1), "/payload/affectedPathCount"),
        (rebaselined(affectedPathCount=3), "/payload/affectedPathsComplete"),
        (rebaselined(affectedPaths=[f"p{i:04d}" for i in range(1001)], affectedPathCount=1001,
                     affectedPathsComplete=False), "/payload/affectedPaths"),
        (rebaselined(affectedPathsComplete=1), "/payload/affectedPathsComplete"),
        ({**restored(), "payload": {**restored()["payload"], "previous": boundary()}}, "/payload/previous"),
    ],
)
def test_invalid_facts_are_rejected_by_codec_and_schema(fact: dict[str, Any], pointer: str) -> None:
    with pytest.raises(WorkspaceBoundaryError) as caught:
        decode_boundary_fact(fact)
    assert caught.value.detail == pointer
    with pytest.raises(RuntimeEventSchemaError):
        encode_runtime_event(system_event(fact))


def test_incomplete_list_may_be_shorter_than_the_count() -> None:
    fact = rebaselined(affectedPathCount=5000, affectedPathsComplete=False)
    assert decode_boundary_fact(fact) == fact


def test_workspace_boundary_must_stand_alone_in_actions() -> None:
    event = system_event(captured())
    event["actions"] = {"workspaceBoundary": captured(), "stateDelta": {}}
    with pytest.raises(RuntimeEventSchemaError) as caught:
        encode_runtime_event(event)
    assert "workspaceBoundary" in str(caught.value)


def test_workspace_fact_is_still_open_and_untouched() -> None:
    """The spec 30 §2.7 key keeps its old rule (any object): existing encodings are unchanged."""
    event = system_event(None)
    event["actions"] = {"workspaceFact": {"kind": "anything", "version": 1}}
    encoded = encode_runtime_event(event)
    assert encoded.canonical_json == (
        '{"actions":{"workspaceFact":{"kind":"anything","version":1}},"author":"system","id":"boundary-1",'
        '"invocationId":"i","partial":false,"role":"system","runId":"r","sessionId":"s","ts":5,"turnId":"t"}'
    )


def test_decoding_does_not_alias_the_input() -> None:
    fact = captured()
    original = copy.deepcopy(fact)
    decode_boundary_fact(fact)
    assert fact == original
