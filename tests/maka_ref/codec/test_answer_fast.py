"""The answer writer's msgspec path (issue 18) writes exactly what the exact writer writes.

``iter_answer_json`` hands each leaf piece to msgspec when ``_msgspec_safe`` says its text
is the same (no floats, ints within ±2^53, plain containers, str keys); these tests join the
pieces with the fast path on and off and compare the text, over hand-made hostile values
(every control character, astral characters, lone and split surrogates, -0.0, 1e16, big
ints, tuples, subclasses, deep nesting, infinity) and generated JSON values.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from maka_ref._codec import jsontext
from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._codec.jsontext import iter_answer_json
from maka_ref.testing.strategies import json_values


def _text(value: Any, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(jsontext, "FAST_ANSWERS", fast)
        try:
            return "".join(iter_answer_json(value))
        except Exception as error:  # noqa: BLE001 - the error is the observable result
            return ("error", type(error).__name__, str(error))


class Key(str):
    pass


class Number(int):
    pass


HOSTILE: list[Any] = [
    {"s": "".join(chr(i) for i in range(0x30)) + "\u2028\u2029\x7f\u00e9\U0001f600\"\\/"},
    {"lone": "\ud800", "low": "x\udfff"},
    {"split": "\ud83d\ude00"},
    {"k\ud800": 1},
    {"n": [0, -1, 2**53, -(2**53), 2**53 + 1, -(2**53) - 1, 10**30]},
    {"f": [1.5, 1e16, 1e21, 1e-7, -0.0, 0.0, 5e-324]},
    {"inf": math.inf, "ninf": -math.inf},
    {"tuple": (1, 2)},
    {Key("sub"): 1, "x": Number(3)},
    {"b": True, "n": None, "e": {}, "l": [], "fl": FrozenList([FrozenDict({"z": 1, "a": 2})])},
    {"deep": [[[[[[[[[["x"]]]]]]]]]]},
    {1: "non-str key"},
    {"nest": [[]] * 3, "d": {"10": 1, "2": 2, "a": 3}},
]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE += [{"a": _nested(jsontext.MAX_DEPTH - 2)}, {"a": _nested(jsontext.MAX_DEPTH + 5)}]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_values_write_the_same(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _text(value, True, monkeypatch) == _text(value, False, monkeypatch)


def test_the_fast_path_is_really_taken_and_refuses_floats() -> None:
    assert jsontext._msgspec_safe({"a": [1, "x", None, True, FrozenDict({"b": 2})]}, 0)
    assert not jsontext._msgspec_safe({"a": 1.0}, 0)
    assert not jsontext._msgspec_safe({"a": 2**53 + 1}, 0)
    assert not jsontext._msgspec_safe((1,), 0)
    assert not jsontext._msgspec_safe({Key("k"): 1}, 0)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=json_values(max_leaves=24))
def test_generated_values_write_the_same(value: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        assert _text({"v": value, "w": [value]}, True, patch) == _text({"v": value, "w": [value]}, False, patch)
