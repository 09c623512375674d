"""Decoded events share their schema strings (spec 10 §2.1; docs/performance.md).

``decode_runtime_event`` returns each closed-schema key as the one interned string object
(and each enum or literal value as the schema's own object) instead of the parser's fresh
copy. Equality is unchanged — these are equal strings — but a decoded ledger no longer holds
a copy of ``"invocationId"`` per event, and every field read finds its key by identity.
Free-form contents (``args``, ``result``, ``stateDelta``) keep their own keys.
"""

from __future__ import annotations

import json
import sys

from maka_ref._events.schema import decode_runtime_event
from maka_ref.testing import families as f


def _fresh(value: object) -> object:
    """A copy whose strings are all new objects, as ``json.loads`` of separate texts makes."""
    return json.loads(json.dumps(value))


def test_schema_keys_and_values_are_shared() -> None:
    first = decode_runtime_event(_fresh(f.w_call()))
    second = decode_runtime_event(_fresh(f.w_call()))
    assert first == second == decode_runtime_event(f.w_call())
    for key_a, key_b in zip(first, second):
        assert key_a is key_b is sys.intern(key_a)
    for key_a, key_b in zip(first["content"], second["content"]):
        assert key_a is key_b
    assert first["role"] is second["role"]
    assert first["content"]["kind"] is second["content"]["kind"]


def test_free_form_keys_are_left_alone() -> None:
    args = {"some key": "v"}
    event = _fresh(f.with_fields(f.w_call(), content={"kind": "function_call", "id": "c", "name": "X", "args": args}))
    decoded = decode_runtime_event(event)
    assert decoded["content"]["args"] == args
    (original_key,) = event["content"]["args"]
    (decoded_key,) = decoded["content"]["args"]
    assert decoded_key is original_key
