"""Tests for ``maka_ref._events.encode`` (spec 10 §2.2, §2.4, §2.5, §7.2 items 8, 9, 18, 21).

Golden byte strings are copied from spec 10 §2.2. For the goldens the spec abbreviates with
``...``, the event is built to match the spec's description and the exact prefix shown is
asserted; the remaining bytes are the base envelope's fields, written by hand after the
pattern of the first golden line.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import RuntimeEventNotSerializableError, RuntimeEventSchemaError
from maka_ref._events.encode import (
    EncodedRuntimeEvent,
    canonical_event_json,
    encode_runtime_event,
    json_strict_equal,
)
from maka_ref._events.schema import decode_runtime_event

NOT_SERIALIZABLE = "RuntimeEvent is not losslessly serializable"
# The base envelope's fields after "content" (for role/author user or model/agent events).
TAIL_USER = '"id":"evt-1","invocationId":"inv-1","partial":false,"role":"user","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'
TAIL_MODEL = '"id":"evt-1","invocationId":"inv-1","partial":false,"role":"model","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'


def base(**overrides: Any) -> dict[str, Any]:
    """The envelope of the first §2.2 golden encoding, with overrides."""
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


def user_text(content: dict[str, Any]) -> dict[str, Any]:
    return base(role="user", author="user", content=content)


def model_call(args: Any) -> dict[str, Any]:
    return base(role="model", author="agent", content={"kind": "function_call", "id": "c1", "name": "X", "args": args})


def not_serializable(value: Any) -> None:
    with pytest.raises(RuntimeEventNotSerializableError) as info:
        encode_runtime_event(value)
    assert info.value.message == NOT_SERIALIZABLE
    assert info.value.code == "runtime_event_not_serializable"


# --------------------------------------------------------------------------- §2.2 goldens


def test_golden_minimal_event() -> None:
    """§2.2 golden 1 (sorted keys, no whitespace)."""
    assert canonical_event_json(base()) == (
        '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
        '"runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'
    )


def test_golden_dispatch_event() -> None:
    """§2.2 golden 2 (family W dispatch ``D``)."""
    event = base(
        id="dispatch-event-1",
        actions={"toolDispatch": {
            "protocol": "t1_after_preflight_v1",
            "operationId": "operation-1",
            "providerToolCallId": "provider-call-1",
            "toolName": "Write",
            "canonicalArgsHash": "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",
            "recoveryMode": "reconcile",
        }},
        refs={"operationId": "operation-1", "toolCallId": "provider-call-1"},
    )
    assert canonical_event_json(event) == (
        '{"actions":{"toolDispatch":{"canonicalArgsHash":"sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",'
        '"operationId":"operation-1","protocol":"t1_after_preflight_v1","providerToolCallId":"provider-call-1",'
        '"recoveryMode":"reconcile","toolName":"Write"}},"author":"system","id":"dispatch-event-1",'
        '"invocationId":"inv-1","partial":false,"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},'
        '"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'
    )


def test_golden_reconcile_event() -> None:
    """§2.2 golden 3 (family W reconcile ``RC(diverged)``, ts 2)."""
    event = base(
        id="reconcile-event-1",
        ts=2,
        actions={"toolRecovery": {
            "kind": "maka.tool.reconcile_result",
            "version": 1,
            "payload": {
                "protocol": "tool_reconcile_v1",
                "operationId": "operation-1",
                "observation": "diverged",
                "observationSchema": "state_identity_v1",
                "observationDigest": "sha256:" + "a" * 64,
            },
        }},
        refs={"operationId": "operation-1", "toolCallId": "provider-call-1"},
    )
    assert canonical_event_json(event) == (
        '{"actions":{"toolRecovery":{"kind":"maka.tool.reconcile_result","payload":{"observation":"diverged",'
        '"observationDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",'
        '"observationSchema":"state_identity_v1","operationId":"operation-1","protocol":"tool_reconcile_v1"},'
        '"version":1}},"author":"system","id":"reconcile-event-1","invocationId":"inv-1","partial":false,'
        '"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},"role":"system","runId":"run-1",'
        '"sessionId":"sess-1","ts":2,"turnId":"turn-1"}'
    )


def test_golden_text_normalised_before_encoding() -> None:
    """§2.2 golden 4: input had ``displayText:"hi"``, ``attachments:[]``, ``quotes:[]``."""
    text = canonical_event_json(user_text({"kind": "text", "text": "hi", "displayText": "hi",
                                           "attachments": [], "quotes": []}))
    prefix = '{"author":"user","content":{"kind":"text","text":"hi"},'
    assert text.startswith(prefix)
    assert text == prefix + TAIL_USER


def test_golden_empty_inline_references_kept() -> None:
    """§2.2 golden 5: empty ``inlineReferences`` is kept."""
    text = canonical_event_json(user_text({"kind": "text", "text": "hi", "inlineReferences": []}))
    prefix = '{"author":"user","content":{"inlineReferences":[],"kind":"text","text":"hi"},'
    assert text.startswith(prefix)
    assert text == prefix + TAIL_USER


def test_golden_proto_key_is_ordinary_data() -> None:
    """§2.2 golden 6: ``"__proto__"`` is ordinary data in event JSON (unlike the args hash)."""
    text = canonical_event_json(model_call(parse_json('{"b":1,"__proto__":{"admin":true}}')))
    prefix = '{"author":"agent","content":{"args":{"__proto__":{"admin":true},"b":1},"id":"c1","kind":"function_call","name":"X"},'
    assert text.startswith(prefix)
    assert text == prefix + TAIL_MODEL


def test_golden_utf16_key_order() -> None:
    """§2.2 golden 7 / §2.3: keys sorted by UTF-16 code units (😀 before ！)."""
    text = canonical_event_json(model_call({"！": 1, "😀": 2, "a": 3}))
    assert text.startswith('{"author":"agent","content":{"args":{"a":3,"😀":2,"！":1},')


def test_golden_ecmascript_numbers() -> None:
    """§2.2 golden 8 / §2.3: ``1.0`` → ``1``, ``1e21`` → ``1e+21``, ``1e-7`` → ``1e-7``."""
    text = canonical_event_json(model_call({"n": 1e21, "s": 1e-7, "f": 1.0}))
    assert text.startswith('{"author":"agent","content":{"args":{"f":1,"n":1e+21,"s":1e-7},')


def test_golden_string_escapes() -> None:
    """§2.2 golden 9: ``\\u0000``, ``\\u001f`` escaped; raw U+007F and non-ASCII; ``/`` not escaped."""
    text = canonical_event_json(user_text({"kind": "text", "text": 'a\x00b\x1f\x7fé😀"\\/'}))
    prefix = '{"author":"user","content":{"kind":"text","text":"a\\u0000b\\u001f\x7fé😀\\"\\\\/"},'
    assert text.startswith(prefix)
    assert text == prefix + TAIL_USER


def test_golden_lone_surrogate() -> None:
    """§2.2 golden 10: a lone surrogate is escaped with lowercase hex."""
    text = canonical_event_json(user_text({"kind": "text", "text": "a\ud800b"}))
    prefix = '{"author":"user","content":{"kind":"text","text":"a\\ud800b"},'
    assert text.startswith(prefix)
    assert text == prefix + TAIL_USER


# --------------------------------------------------------------------------- §7.2 items 21, 9, 8


@pytest.mark.parametrize(
    "event",
    [
        base(ts=-0.0),
        model_call({"v": -0.0}),
        model_call([0, [-0.0]]),
        decode_runtime_event(parse_json('{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,'
                                        '"role":"system","runId":"run-1","sessionId":"sess-1","ts":-0,"turnId":"turn-1"}')),
    ],
)
def test_item21_negative_zero_is_not_encodable(event: dict[str, Any]) -> None:
    """§7.2 item 21 / §2.4: ``ts: -0`` or ``-0`` in args → not encodable (but it decodes)."""
    decode_runtime_event(event)
    not_serializable(event)


def test_item21_fractional_ts_and_null_args_encode() -> None:
    """§7.2 item 21: ``ts: 1.5`` accepted; ``args: null`` accepted."""
    assert canonical_event_json(base(ts=1.5)).endswith('"ts":1.5,"turnId":"turn-1"}')
    assert '"args":null' in canonical_event_json(model_call(None))


def test_item21_schema_errors_pass_through_encode() -> None:
    """§2.2 step 1: a value that does not decode fails with the schema error, not the lossless one."""
    for bad in (base(status=None), base(unknown=1), base(id="")):
        with pytest.raises(RuntimeEventSchemaError):
            encode_runtime_event(bad)


@pytest.mark.parametrize(
    "result",
    [{"v": float("nan")}, [float("inf")], float("-inf"), {"nested": {"deep": [1, float("nan")]}}],
)
def test_item9_unencodable_result_is_not_serializable(result: Any) -> None:
    """§7.2 item 9 (Python analogue of ``undefined`` inside ``result``): decodes, but no lossless JSON."""
    event = base(role="tool", author="tool",
                 content={"kind": "function_response", "id": "c1", "name": "X", "result": result})
    decode_runtime_event(event)
    not_serializable(event)


def test_integer_a_double_cannot_hold_is_not_serializable() -> None:
    """§2.4: numbers are doubles. Parsed text ``12345678901234567890`` is the double that prints
    ``12345678901234567000``; a Python ``int`` a double cannot hold (2^53+1, or that same
    20-digit int) would change in the round trip, so it is refused."""
    parsed = model_call(parse_json('{"big":12345678901234567890}')["big"])
    assert canonical_event_json(parsed).startswith('{"author":"agent","content":{"args":12345678901234567000,')
    not_serializable(model_call({"big": 2**53 + 1}))
    not_serializable(model_call(12345678901234567890))


def test_item8_absent_optional_token_usage_fields_are_omitted() -> None:
    """§7.2 item 8 / §2.2 step 2: optional keys of tokenUsage levels are simply absent in Python."""
    event = base(actions={"tokenUsage": {
        "input": 1,
        "output": 2,
        "promptSegments": [{"kind": "system_prompt", "chars": 10, "estimatedTokens": 3}],
        "contextBudget": {"enabled": True, "compactionDecisions": [{"stage": "priorReplay"}]},
    }})
    assert canonical_event_json(event).startswith(
        '{"actions":{"tokenUsage":{"contextBudget":{"compactionDecisions":[{"stage":"priorReplay"}],"enabled":true},'
        '"input":1,"output":2,"promptSegments":[{"chars":10,"estimatedTokens":3,"kind":"system_prompt"}]}},'
    )
    # ``None`` is not Python's "undefined": it is a JSON null and optional fields reject it.
    for token_usage in (
        {"input": 1, "output": 2, "promptSegments": [{"kind": "x", "messageCount": None}]},
        {"input": 1, "output": 2, "contextBudget": {"enabled": True, "policyName": None}},
        {"input": 1, "output": 2, "contextBudget": {"compactionDecisions": [{"reason": None}]}},
        {"input": 1, "output": 2, "reasoning": None},
    ):
        with pytest.raises(RuntimeEventSchemaError):
            encode_runtime_event(base(actions={"tokenUsage": token_usage}))


# --------------------------------------------------------------------------- §2.5 equality


def test_item18_raw_retry_encodes_like_the_normalised_event() -> None:
    """§7.2 item 18 (pure part) / §2.5: a raw retry differing only by removable presentation is the same event."""
    raw = user_text({"kind": "text", "text": "run it", "displayText": "run it", "attachments": [], "quotes": []})
    normalised = user_text({"kind": "text", "text": "run it"})
    assert canonical_event_json(raw) == canonical_event_json(normalised)
    assert encode_runtime_event(raw).event == normalised


def test_key_order_does_not_change_bytes() -> None:
    """§2.5: same value ⇒ same canonical bytes, whatever the input key order."""
    first = model_call({"path": "notes.txt", "content": "after"})
    second = dict(reversed(list(model_call({"content": "after", "path": "notes.txt"}).items())))
    assert canonical_event_json(first) == canonical_event_json(second)


def test_encode_result_shape() -> None:
    """§2.2: ``encode -> (canonical_event, canonical_json)``; the event is the decoded bytes."""
    encoded = encode_runtime_event(model_call({"a": [1, 2.5, "x", None, True]}))
    assert isinstance(encoded, EncodedRuntimeEvent)
    assert isinstance(encoded.event, FrozenDict)
    assert encoded.event == model_call({"a": [1, 2.5, "x", None, True]})
    assert decode_runtime_event(parse_json(encoded.canonical_json)) == encoded.event
    with pytest.raises(dataclasses.FrozenInstanceError):
        encoded.canonical_json = ""  # type: ignore[misc]
    assert canonical_event_json(encoded.event) == encoded.canonical_json


# --------------------------------------------------------------------------- strict equality


@pytest.mark.parametrize(
    "left,right,equal",
    [
        (True, 1, False),
        (False, 0, False),
        ({"a": True}, {"a": 1}, False),
        ([1], [True], False),
        (1, 1.0, True),
        (None, False, False),
        ([], {}, False),
        ("", None, False),
        ({"a": [1, {"b": "c"}]}, {"a": [1, {"b": "c"}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("\ud83d\ude00", "😀", True),
        ("a", "b", False),
        (float("nan"), float("nan"), False),
        (b"x", b"x", False),
    ],
)
def test_json_strict_equal(left: Any, right: Any, equal: bool) -> None:
    """§2.2 step 4: deep *strict* equality (JavaScript ``===`` per JSON kind; one number type)."""
    assert json_strict_equal(left, right) is equal
    assert json_strict_equal(right, left) is equal


# --------------------------------------------------------------------------- property


_finite = st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not (x == 0 and math.copysign(1, x) < 0))
_text = st.text(max_size=8) | st.sampled_from(["a\ud800b", "\udfff", "😀", "\u2028", "/", "__proto__", "10", "01"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _finite | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(args=_json, result=_json, ts=_finite)
def test_encode_round_trips_valid_events(args: Any, result: Any, ts: float) -> None:
    """§2.2 step 4 / §2.5: any valid event encodes; its bytes decode back to it; re-encoding is stable."""
    for event in (
        base(ts=ts, role="model", author="agent", content={"kind": "function_call", "id": "c", "name": "X", "args": args}),
        base(role="tool", author="tool", content={"kind": "function_response", "id": "c", "name": "X", "result": result}),
    ):
        encoded = encode_runtime_event(event)
        assert json_strict_equal(decode_runtime_event(parse_json(encoded.canonical_json)), encoded.event)
        assert canonical_event_json(encoded.event) == encoded.canonical_json
