"""``fast_decode_event`` (msgspec, issue 18 item 1) equals the exact path or steps aside.

The property pinned: for any text, ``fast_decode_event(text)`` is either ``None`` or exactly
``decode_runtime_event(parse_json(text))`` — same values, same Python types (``int`` vs
``float``, ``-0.0``), same key order at every level — and never raises. And end to end, the
CLI's ledger loader with the fast path gives the same events or the same error (code, line,
message) as without it. Inputs: every event in the golden vectors, generated events written
in shuffled key orders, and hostile text (lone surrogates, ``__proto__``, numbers beyond
2^53, ``-0``, duplicate keys, ``1e400``, nulls for optional keys, deep nesting, raw bytes).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._cli.ledger_input import InputError, load_ledger, load_ledger_with
from maka_ref._codec.jsontext import compact_json, parse_json
from maka_ref._events.fast import fast_decode_event
from maka_ref._events.schema import decode_runtime_event
from maka_ref.testing.strategies import json_values, runtime_events

VECTOR_DIR = Path(__file__).resolve().parents[3] / "conformance" / "vectors"


def _shape(value: Any) -> Any:
    """Value with type and key order made explicit (``==`` alone ignores both)."""
    if isinstance(value, dict):
        return (type(value).__name__, [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return (type(value).__name__, [_shape(item) for item in value])
    return (type(value).__name__, repr(value))


def _exact(text: str) -> Any:
    try:
        return ("ok", _shape(decode_runtime_event(parse_json(text))))
    except Exception as error:  # noqa: BLE001 - the error is the observable result
        return ("error", type(error).__name__, str(error), getattr(error, "detail", None))


def _agrees(text: str) -> bool:
    """Assert the property for ``text``; true when the fast path answered."""
    fast = fast_decode_event(text)
    if fast is None:
        return False
    assert ("ok", _shape(fast)) == _exact(text), text
    return True


def _events(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if {"id", "sessionId", "invocationId"} <= node.keys():
            yield node
        for item in node.values():
            yield from _events(item)
    elif isinstance(node, list):
        for item in node:
            yield from _events(item)


VECTOR_EVENTS = [
    event for path in sorted(VECTOR_DIR.glob("*.json")) for event in _events(json.loads(path.read_text(encoding="utf-8")))
]


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_every_vector_event_agrees_and_the_fast_path_is_taken() -> None:
    taken = sum(_agrees(_text(event)) for event in VECTOR_EVENTS)
    assert len(VECTOR_EVENTS) > 50
    assert taken > 20  # the fast path really answers for ordinary events


def base(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": "e-1", "invocationId": "inv-1", "runId": "run-1", "sessionId": "s-1", "turnId": "t-1",
        "ts": 100, "partial": False, "role": "model", "author": "agent",
    }
    event.update(fields)
    return event


CALL = {"kind": "function_call", "id": "c1", "name": "Write", "args": {"path": "a", "n": 1}}
DISPATCH = {
    "protocol": "t1_after_preflight_v1", "operationId": "op-1", "providerToolCallId": "c1", "toolName": "Write",
    "canonicalArgsHash": "sha256:" + "a" * 64, "recoveryMode": "reconcile",
}
PLAIN = _text(base(content=CALL, refs={"operationId": "op-1", "toolCallId": "c1"}))

#: Hand-written hostile lines: each must agree (fast = exact, or fast steps aside).
HOSTILE = [
    PLAIN,
    PLAIN.replace('"ts":100', '"ts":-0'),
    PLAIN.replace('"ts":100', '"ts":-0.0'),
    PLAIN.replace('"ts":100', '"ts":1e400'),
    PLAIN.replace('"ts":100', '"ts":9007199254740993'),
    PLAIN.replace('"ts":100', '"ts":100.0'),
    PLAIN.replace('"ts":100', '"ts":true'),
    PLAIN.replace('"n":1', '"n":-0'),
    PLAIN.replace('"n":1', '"n":[1, -0 ]'),
    PLAIN.replace('"n":1', '"n":12345678901234567890'),
    PLAIN.replace('"n":1', '"n":9007199254740992'),
    PLAIN.replace('"n":1', '"n":-9007199254740993'),
    PLAIN.replace('"n":1', '"n":1e400'),
    PLAIN.replace('"n":1', '"n":"\\ud800"'),
    PLAIN.replace('"n":1', '"n":"\\ud83d\\ude00"'),
    PLAIN.replace('"n":1', '"__proto__":{"x":1}'),
    PLAIN.replace('"id":"e-1"', '"__proto__":1,"id":"e-1"'),
    PLAIN.replace('"id":"e-1"', '"id":"e-1","id":""'),
    PLAIN.replace('"id":"e-1"', '"id":"","id":"e-1"'),
    PLAIN.replace('"role":"model"', '"role":"model","role":"robot"'),
    PLAIN.replace('"kind":"function_call"', '"kind":"function_call","kind":"text","text":"x"'),
    PLAIN.replace('"kind":"function_call"', '"kind":"text","text":"x","kind":"function_call"'),
    PLAIN.replace('"partial":false', '"partial":false,"branch":null'),
    PLAIN.replace('"partial":false', '"partial":false,"status":"completed"'),
    PLAIN.replace('"partial":false', '"partial":false,"status":"done"'),
    PLAIN.replace('"partial":false', '"partial":false,"extra":1'),
    PLAIN.replace('"n":1', '"n":' + "[" * 300 + "]" * 300),
    PLAIN.replace('"n":1', '"n":' + "[" * 600 + "]" * 600),
    PLAIN + " ",
    PLAIN + "x",
    " " + PLAIN,
    PLAIN[:-1],
    "",
    "null",
    "[]",
    _text(base(content={"kind": "text", "text": "hi", "displayText": "hi", "steering": True})),
    _text(base(content={"kind": "text", "text": "hi", "displayText": "other"})),
    _text(base(content={"kind": "thinking", "text": "t", "signature": "s"})),
    _text(base(content={"kind": "error", "message": "m", "code": "c", "reason": "r"})),
    _text(base(content={"kind": "function_response", "id": "c1", "name": "W", "result": None, "isError": True})),
    _text(base(content={"kind": "function_call", "id": "c1", "name": "W", "args": None})),
    _text(base(content={"kind": "function_call", "id": "c1", "name": "W", "args": {"b": {"z": [1, {"y": 2}]}, "a": 0}})),
    _text(base(role="system", author="system", actions={"toolDispatch": DISPATCH}, refs={"operationId": "op-1"})),
    _text(base(role="system", author="system", actions={"toolDispatch": {**DISPATCH, "canonicalArgsHash": ""}})),
    _text(base(role="system", author="system", actions={"toolDispatch": {**DISPATCH, "recoveryMode": "x"}})),
    _text(base(actions={"runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}})),
    _text(base(actions={"runtimeProtocol": {"toolBoundary": "t0"}})),
    _text(base(actions={})),
    _text(base(refs={"sourceMessageDigest": "sha256:" + "0" * 64, "sourceRuntimeEventHighWater": 3})),
    _text(base(refs={"sourceMessageDigest": "sha256:" + "A" * 64})),
    _text(base(refs={"sourceRuntimeEventHighWater": 3.0})),
    _text(base(refs={"sourceRuntimeEventHighWater": -1})),
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_line_agrees(text: str) -> None:
    _agrees(text)


def test_hostile_lines_mostly_step_aside_but_ordinary_ones_do_not() -> None:
    assert fast_decode_event(PLAIN) is not None
    for risky in ('"ts":-0', '"n":12345678901234567890', '"n":"\\ud800"', '"n":1e400'):
        line = next(text for text in HOSTILE if risky in text)
        assert fast_decode_event(line) is None, risky


def test_bytes_and_non_text_never_raise() -> None:
    assert fast_decode_event(PLAIN.encode("utf-16")) is None  # type: ignore[arg-type]
    assert fast_decode_event(PLAIN.replace("Write", "\ud800")) is None


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(event=runtime_events(), seed=st.integers(0, 2**32), payload=json_values())
def test_generated_events_agree(event: dict[str, Any], seed: int, payload: Any) -> None:
    rng = random.Random(seed)
    _agrees(compact_json(event, negative_zero="zero"))
    _agrees(_text(_shuffled(event, rng)))
    content = event.get("content")
    if isinstance(content, dict) and content.get("kind") == "function_call":
        hostile = {**event, "content": {**content, "args": payload}}
        try:
            text = compact_json(hostile, negative_zero="zero")
        except Exception:  # noqa: BLE001 - a payload the writer refuses (NaN…): use Python's
            text = json.dumps(hostile)
        _agrees(text)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(event=runtime_events(), cut=st.integers(0, 2000), insert=st.sampled_from(
    ["", "-0", "null", ",", '"', "\\ud800", "1e400", "99999999999999999999", '"__proto__":1,', "{", "]", "\u00e9"]
))
def test_mutated_text_agrees(event: dict[str, Any], cut: int, insert: str) -> None:
    text = compact_json(event, negative_zero="zero")
    cut %= len(text) + 1
    _agrees(text[:cut] + insert + text[cut:])


def _load(path: Path, fast: bool) -> Any:
    try:
        if fast:
            events = load_ledger(str(path))
        else:
            events = load_ledger_with(str(path), decode_runtime_event)
    except InputError as error:
        return ("error", error.code, error.line, error.message)
    return ("ok", [_shape(event) for event in events])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(events=st.lists(runtime_events(), min_size=1, max_size=6), bad=st.sampled_from(
    [None, "not json", '{"id":1}', "\udcff", '{"ts":-0}', "[" * 700]
), where=st.integers(0, 10))
def test_cli_loader_agrees_including_errors(tmp_path_factory: Any, events: list[Any], bad: str | None, where: int) -> None:
    lines = [compact_json(event, negative_zero="zero").encode("utf-8") for event in events]
    if bad is not None:
        lines.insert(where % (len(lines) + 1), bad.encode("utf-8", "surrogateescape"))
    path = tmp_path_factory.mktemp("ledger") / "ledger.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert _load(path, True) == _load(path, False)
