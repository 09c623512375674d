"""Tests for ``maka_ref._events.recovery_facts`` (spec 10 §5.1, §1.3.2 digest format, §8 item 22).

Fixtures are the spec's family W recovery facts (§7 "RC", "DC", "DP"); expected values are
copied from the spec.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._codec.frozen import FrozenDict
from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events.recovery_facts import decode_tool_recovery, is_sha256_digest

DIGEST_A = "sha256:" + "a" * 64


def reconcile(observation: str = "matches_expected_state") -> dict[str, Any]:
    """§7 family W ``RC(obs)`` payload."""
    return {
        "kind": "maka.tool.reconcile_result",
        "version": 1,
        "payload": {
            "protocol": "tool_reconcile_v1",
            "operationId": "operation-1",
            "observation": observation,
            "observationSchema": "state_identity_v1",
            "observationDigest": DIGEST_A,
        },
    }


def completed() -> dict[str, Any]:
    """§7 family W ``DC``."""
    return {
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


def parked(reason: str = "reconcile_diverged") -> dict[str, Any]:
    """§7 family W ``DP(reason)``."""
    return {
        "kind": "maka.tool.recovery_decision",
        "version": 1,
        "payload": {
            "protocol": "tool_recovery_v1",
            "operationId": "operation-1",
            "disposition": "parked",
            "reasonCode": reason,
            "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1"],
        },
    }


def rejects(value: Any) -> RuntimeEventSchemaError:
    with pytest.raises(RuntimeEventSchemaError) as info:
        decode_tool_recovery(value)
    assert info.value.message == "Invalid RuntimeEvent schema"
    return info.value


def with_payload(fact: dict[str, Any], **changes: Any) -> dict[str, Any]:
    result = copy.deepcopy(fact)
    result["payload"].update(changes)
    return result


def without_payload_key(fact: dict[str, Any], key: str) -> dict[str, Any]:
    result = copy.deepcopy(fact)
    del result["payload"][key]
    return result


# --------------------------------------------------------------------------- digests


@pytest.mark.parametrize(
    "value,expected",
    [
        ("sha256:" + "a" * 64, True),
        ("sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9", True),
        ("sha256:" + "A" * 64, False),
        ("sha256:" + "a" * 63, False),
        ("sha256:" + "a" * 65, False),
        ("sha256:" + "g" * 64, False),
        ("sha256:" + "٠" * 64, False),  # non-ASCII digits are not hex
        ("SHA256:" + "a" * 64, False),
        ("sha512:" + "a" * 64, False),
        ("a" * 64, False),
        ("sha256:not-a-digest", False),
        ("", False),
        (None, False),
        (1, False),
        (b"sha256:" + b"a" * 64, False),
        (["sha256:" + "a" * 64], False),
    ],
)
def test_is_sha256_digest(value: Any, expected: bool) -> None:
    """§1.3.2: ``sha256:`` + exactly 64 lowercase hex; any other value (of any type) is not."""
    assert is_sha256_digest(value) is expected


# --------------------------------------------------------------------------- reconcile result


@pytest.mark.parametrize("observation", ["matches_expected_state", "matches_prior_state", "diverged", "unreadable"])
def test_reconcile_result_decodes_unchanged(observation: str) -> None:
    """§5.1 / §7.2 item 10: a well-formed reconcile fact round-trips unchanged."""
    decoded = decode_tool_recovery(reconcile(observation))
    assert decoded == reconcile(observation)
    assert isinstance(decoded, FrozenDict) and isinstance(decoded["payload"], FrozenDict)


@pytest.mark.parametrize(
    "fact",
    [
        with_payload(reconcile(), protocol="tool_reconcile_v2"),
        with_payload(reconcile(), operationId=""),
        with_payload(reconcile(), operationId=None),
        with_payload(reconcile(), observation="matches"),
        with_payload(reconcile(), observationSchema="state_identity_v2"),
        with_payload(reconcile(), observationDigest="sha256:" + "A" * 64),
        with_payload(reconcile(), observationDigest="sha256:abc"),
        with_payload(reconcile(), extra=True),
        without_payload_key(reconcile(), "observationDigest"),
        without_payload_key(reconcile(), "protocol"),
    ],
)
def test_reconcile_result_exact_payload(fact: dict[str, Any]) -> None:
    """§5.1: the reconcile payload is exact; uppercase digest / extra key → schema error."""
    rejects(fact)


# --------------------------------------------------------------------------- recovery decision


def test_completed_decision_decodes_unchanged() -> None:
    """§5.1: the completed form (family W ``DC``)."""
    assert decode_tool_recovery(completed()) == completed()


@pytest.mark.parametrize("reason", ["reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable"])
def test_parked_decision_decodes_unchanged(reason: str) -> None:
    """§5.1: the parked form with each park reason (family W ``DP``)."""
    assert decode_tool_recovery(parked(reason)) == parked(reason)


@pytest.mark.parametrize(
    "fact",
    [
        with_payload(parked(), outcomeEventId="outcome-event-1"),
        with_payload(completed(), reasonCode="reconcile_diverged"),
        with_payload(parked(), reasonCode="reconcile_matches_expected_state"),
        without_payload_key(completed(), "outcomeEventId"),
        with_payload(completed(), outcomeEventId=""),
        with_payload(completed(), evidenceEventIds=[]),
        with_payload(completed(), evidenceEventIds=["call-event-1", "call-event-1"]),
        with_payload(parked(), evidenceEventIds=["call-event-1", ""]),
        with_payload(parked(), evidenceEventIds=["call-event-1", 2]),
        with_payload(parked(), evidenceEventIds="call-event-1"),
        with_payload(parked(), disposition="abandoned"),
        without_payload_key(parked(), "disposition"),
        with_payload(parked(), protocol="tool_reconcile_v1"),
        with_payload(parked(), operationId=""),
        with_payload(parked(), extra=1),
    ],
)
def test_decision_exact_payload(fact: dict[str, Any]) -> None:
    """§5.1 / §7.2 item 21: duplicate evidence, parked+outcomeEventId, completed+park reason … → error."""
    rejects(fact)


def test_duplicate_evidence_detail_points_at_the_duplicate() -> None:
    """§5.1: the failure names where (``detail``), the message stays fixed."""
    error = rejects(with_payload(parked(), evidenceEventIds=["a", "b", "a"]))
    assert error.detail is not None
    assert error.detail.startswith("$.actions.toolRecovery.payload.evidenceEventIds[2]")


# --------------------------------------------------------------------------- envelope


@pytest.mark.parametrize(
    "fact",
    [
        {**reconcile(), "version": 999},
        {**reconcile(), "version": 2},
        {**reconcile(), "version": True},
        {**reconcile(), "version": "1"},
        {**reconcile(), "kind": "maka.tool.other"},
        {**reconcile(), "extra": 1},
        {"kind": "maka.tool.reconcile_result", "version": 1},
        {**reconcile(), "payload": None},
        {**completed(), "payload": ["not", "an", "object"]},
        None,
        "maka.tool.reconcile_result",
        [reconcile()],
        {1: "x"},
    ],
)
def test_envelope_exact(fact: Any) -> None:
    """§5.1: exactly ``{kind, version, payload}``, ``version`` exactly 1 (§7.2 item 10: 999 fails)."""
    rejects(fact)


def test_version_one_as_a_double_is_one() -> None:
    """§2.4: JSON numbers are doubles, so ``1.0`` is the number 1."""
    assert decode_tool_recovery({**reconcile(), "version": 1.0})["version"] == 1


def test_custom_path_is_used_in_detail() -> None:
    """The bundle validator may name the event it read the fact from."""
    with pytest.raises(RuntimeEventSchemaError) as info:
        decode_tool_recovery({**reconcile(), "version": 999}, "events[3].actions.toolRecovery")
    assert info.value.detail == "events[3].actions.toolRecovery.version: must be exactly the number 1"


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | st.binary(max_size=3),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["kind", "version", "payload", "protocol", "operationId", "disposition",
                                       "reasonCode", "evidenceEventIds", "outcomeEventId", "observation"])
                      | st.text(max_size=4) | st.integers(), inner, max_size=6),
    max_leaves=16,
)


@settings(max_examples=300)
@given(_json_like)
def test_decode_tool_recovery_is_total(value: Any) -> None:
    """§8 item 22: the bundle validator feeds un-decoded values; only RuntimeEventSchemaError escapes."""
    try:
        decode_tool_recovery(value)
    except RuntimeEventSchemaError as exc:
        assert exc.message == "Invalid RuntimeEvent schema"


@settings(max_examples=200)
@given(st.data())
def test_decode_tool_recovery_is_total_on_mutated_facts(data: st.DataObject) -> None:
    """§8 item 22: same, for valid facts with one payload field replaced."""
    fact = data.draw(st.sampled_from([reconcile(), completed(), parked()]))
    key = data.draw(st.sampled_from(sorted(fact["payload"])))
    fact["payload"][key] = data.draw(_json_like)
    try:
        decode_tool_recovery(fact)
    except RuntimeEventSchemaError:
        pass
