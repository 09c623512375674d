"""``encode_runtime_event``'s plain-event fast path gives exactly the full round trip's result
(docs/performance.md, "Durable writes", item 5).

Compared, for each input: the canonical bytes, the returned event (values, Python types and
the key order of every object, since callers may iterate or serialise it in order), or the
error type and message. Inputs: every event-shaped object in the golden vectors, hand-made
events covering each fallback reason, and generated events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._events import encode
from maka_ref._events.encode import encode_runtime_event, json_strict_equal
from maka_ref._events.schema import decode_runtime_event

VECTOR_DIR = Path(__file__).resolve().parents[3] / "conformance" / "vectors"


def _shape(value: Any) -> Any:
    """Value with type and key order made explicit (``==`` alone ignores both)."""
    t = type(value)
    if isinstance(value, dict):
        return (t.__name__, [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return (t.__name__, [_shape(item) for item in value])
    return (t.__name__, repr(value))


def _result(value: Any, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(encode, "FAST_PATH_ENABLED", fast)
        try:
            encoded = encode_runtime_event(value)
        except Exception as error:  # noqa: BLE001 - the error is the observable result
            return ("error", type(error).__name__, str(error), getattr(error, "detail", None))
    return ("ok", encoded.canonical_json, _shape(encoded.event))


def _same(value: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    fast, slow = _result(value, True, monkeypatch), _result(value, False, monkeypatch)
    assert fast == slow
    return fast


def _event_shaped(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if {"id", "sessionId", "invocationId"} <= node.keys():
            yield node
        for item in node.values():
            yield from _event_shaped(item)
    elif isinstance(node, list):
        for item in node:
            yield from _event_shaped(item)


def _vector_events() -> list[Any]:
    events = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        events.extend(_event_shaped(json.loads(path.read_text(encoding="utf-8"))))
    return events


VECTOR_EVENTS = _vector_events()


def test_vectors_hold_events() -> None:
    assert len(VECTOR_EVENTS) > 50


def test_every_vector_event_encodes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    fast_taken = 0
    for event in VECTOR_EVENTS:
        outcome = _same(event, monkeypatch)
        if outcome[0] == "ok":
            decoded = decode_runtime_event(event)
            fast_taken += encode._fast_encode(decoded) is not None
    assert fast_taken > 20  # the fast path is really exercised


def base(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": "evt-1", "invocationId": "inv-1", "runId": "run-1", "sessionId": "sess-1", "turnId": "turn-1",
        "ts": 100, "partial": False, "role": "model", "author": "agent",
    }
    event.update(fields)
    return event


CASES = {
    "plain call": base(content={"kind": "function_call", "id": "c1", "name": "Write", "args": {"b": 1, "a": [True, None]}}),
    "text normalised": base(role="user", author="user", content={
        "steering": True, "origin": {"z": 1, "kind": "automation"}, "text": "hi", "displayText": "hi", "kind": "text",
        "attachments": [{"name": "f", "bytes": -0.0}], "quotes": [], "providerOptions": {"x": 1},
        "inlineReferences": [],
    }),
    "text with quotes": base(role="user", author="user", content={
        "quotes": [{"text": "q", "label": "l", "sourceTurnId": "t"}], "kind": "text", "text": "x",
        "attachments": [{"z": "1", "bytes": 3, "a": "2"}],
    }),
    "float ts": base(ts=100.5),
    "integral float ts": base(ts=100.0),
    "integral float in args": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": 2.0}}),
    "big int": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": 2**60}}),
    "max safe int": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": 2**53, "y": -(2**53)}}),
    "unsafe int": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": 2**53 + 1}}),
    "huge int": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": 10**400}}),
    "negative zero": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": -0.0}}),
    "nan": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"x": float("nan")}}),
    "digit keys": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"10": 1, "2": 2, "b": 3, "01": 4}}),
    "astral": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"\U0001f600": "\U0001f601"}}),
    "split pair": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"k": "\ud83d\ude00"}}),
    "split pair key": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"\ud83d\ude00": 1}}),
    "lone surrogate": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"k": "a\ud800b"}}),
    "private use": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"k": "\ue000", "\uffff": 1}}),
    "escapes": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"k": "\"\\\n\t\x00\x1f\u2028é"}}),
    "empty key and containers": base(content={"kind": "function_call", "id": "c", "name": "n", "args": {"": {}, "l": []}}),
    "deep": base(content={"kind": "function_call", "id": "c", "name": "n", "args": json.loads("[" * 200 + "]" * 200)}),
    "frozen input": FrozenDict(base(content={"kind": "error", "message": "m", "details": {"b": 1, "a": 2}})),
    "recovery": base(role="system", author="system", actions={"toolRecovery": {
        "version": 1, "kind": "maka.tool.recovery_decision", "payload": {
            "reasonCode": "reconcile_matches_expected_state", "operationId": "op", "protocol": "tool_recovery_v1",
            "disposition": "completed", "outcomeEventId": "o", "evidenceEventIds": ["b", "a"]}}}),
    "artifact delta": base(actions={"artifactDelta": {"z": "a", "b": True, "a": 1}, "endInvocation": True}),
    "schema error": base(role="nobody"),
    "not a dict": ["x"],
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_encodes_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _same(CASES[name], monkeypatch)


def test_fast_path_is_taken_for_plain_events() -> None:
    assert encode._fast_encode(decode_runtime_event(CASES["plain call"])) is not None
    assert encode._fast_encode(decode_runtime_event(CASES["text normalised"])) is not None
    for name in ("float ts", "integral float ts", "unsafe int", "digit keys", "astral", "split pair", "private use"):
        assert encode._fast_encode(decode_runtime_event(CASES[name])) is None, name


def test_reencoding_an_encoded_event(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in CASES.values():
        outcome = _result(value, False, monkeypatch)
        if outcome[0] == "ok":
            _same(encode_runtime_event(value).event, monkeypatch)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["\ud800", "\ud83d\ude00", "\U0001f600", "\ue000", "é", "0", "10"]),
)
_keys = st.one_of(st.text(max_size=4), st.sampled_from(["0", "1", "10", "01", "a", "\U0001f600", "\ud83d\ude00"]))
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)), max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=_json, result=_json, ts=st.one_of(st.integers(min_value=0, max_value=2**55), st.floats()))
def test_generated_events_encode_the_same(args: Any, result: Any, ts: Any) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same(base(ts=ts, content={"kind": "function_call", "id": "c", "name": "n", "args": args}), monkeypatch)
        _same(base(role="tool", author="tool", content={
            "kind": "function_response", "id": "c", "name": "n", "result": result}, actions={"stateDelta": {"r": args}}),
            monkeypatch)


# ---------------------------------------------------------------------------------------
# ``encode_runtime_event(value, ordered=False)`` (the store's T1/T2 pre-checks) differs from the
# ordered encoding only in the key order of the returned event.
#
# Compared with the ordered result (itself checked against the full round trip by the tests
# above), for every event in the golden vectors, the hand-made cases of each
# fast-path fallback and generated events: the same canonical text, or the same error type,
# message and detail; an event equal value by value with the same Python types (order
# ignored); and, for a plain event, the decoder's own event (nothing re-built).
# ---------------------------------------------------------------------------------------


def _typed(value: Any) -> Any:
    """Value with types explicit and object key order ignored."""
    if isinstance(value, dict):
        return (type(value).__name__, sorted((key, _typed(item)) for key, item in value.items()))
    if isinstance(value, list):
        return (type(value).__name__, [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


def _outcome_unordered(value: Any, ordered: bool) -> Any:
    try:
        encoded = encode_runtime_event(value, ordered=ordered)
    except Exception as error:  # noqa: BLE001 - the error is the observable result
        return ("error", type(error).__name__, str(error), getattr(error, "detail", None)), None
    return ("ok", encoded.canonical_json, _typed(encoded.event)), encoded.event


def _same_unordered(value: Any) -> Any:
    unordered, unordered_event = _outcome_unordered(value, False)
    ordered, ordered_event = _outcome_unordered(value, True)
    assert unordered == ordered
    if unordered_event is not None:
        assert json_strict_equal(unordered_event, ordered_event)
    return unordered


def test_every_vector_event_encodes_the_same_unordered() -> None:
    assert len(VECTOR_EVENTS) > 50
    outcomes = [_same_unordered(event) for event in VECTOR_EVENTS]
    assert any(outcome[0] == "ok" for outcome in outcomes)


@pytest.mark.parametrize("name", list(CASES))
def test_case_encodes_the_same_unordered(name: str) -> None:
    _same_unordered(CASES[name])


def test_plain_event_is_the_decoded_event_and_others_fall_back() -> None:
    decoded = decode_runtime_event(CASES["plain call"])
    fast = encode._fast_encode_unordered(decoded)
    assert fast is not None and fast.event is decoded
    for name in ("float ts", "integral float ts", "unsafe int", "digit keys", "astral", "split pair", "private use"):
        assert encode._fast_encode_unordered(decode_runtime_event(CASES[name])) is None, name


def test_unordered_without_the_fast_path_is_the_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encode, "FAST_PATH_ENABLED", False)
    for value in CASES.values():
        _same_unordered(value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=_json, result=_json)
def test_generated_events_encode_the_same_unordered(args: Any, result: Any) -> None:
    _same_unordered(base(content={"kind": "function_call", "id": "c", "name": "n", "args": args}))
    _same_unordered(base(role="tool", author="tool", content={
        "kind": "function_response", "id": "c", "name": "n", "result": result}, actions={"stateDelta": {"r": args}}))
