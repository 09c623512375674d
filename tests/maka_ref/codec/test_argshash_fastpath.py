"""The args-hash fast path writes exactly the general path's bytes (spec 10 §2.6 steps 2–4).

``maka_ref._codec.argshash`` hashes "plain" arguments by letting the C ``json`` encoder write
them (``_plain_body``) instead of validating, transforming and writing them in Python
(``_general_body``). The oracle here is the general path, which is the unchanged
implementation checked against every spec vector in ``test_codec_argshash.py``: for any
value, the fast path either declines (``None``) or produces the very same text, and
``args_hash_body`` behaves exactly like the general path (same text, same error).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec import argshash as argshash_module
from maka_ref._codec.argshash import _general_body, _plain_body, args_hash_body, canonical_args_hash
from maka_ref._codec.frozen import FrozenDict, FrozenList, freeze
from maka_ref._errors import ArgsHashError
from maka_ref.testing.strategies import json_values, tool_calls

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(fn: Any, name: Any, args: Any) -> tuple[Any, ...]:
    try:
        return ("ok", fn(name, args))
    except ArgsHashError as exc:
        return ("error", exc.code, str(exc), exc.detail)


def _assert_same_as_general(name: str, args: Any) -> None:
    fast = _plain_body(name, args)
    if fast is not None:
        assert fast == _general_body(name, args)
    assert _outcome(args_hash_body, name, args) == _outcome(_general_body, name, args)


# Values the fast path is meant for, plus the near misses it must decline: keys that are
# array indexes or start with a digit, the three special names, characters around U+D800 and
# astral ones, big integers, floats, nesting.
_KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["required", "enum", "__proto__", "0", "1", "10", "01", "4294967294", "1a", "", "a\ue000", "\U0001f600"]),
)
_STRINGS = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(max_codepoint=0xD7FF), max_size=8),
    st.sampled_from(["\ud800", "\udfff", "\ue000", "\uffff", "\U00010000", "a\ud83d\ude00"]),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53) - 2, 2**53 + 2),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _STRINGS,
)
_PLAINISH = st.recursive(
    _SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=4)),
    max_leaves=20,
)
_NAMES = st.one_of(st.sampled_from(["Write", "Bash", "x"]), st.text(min_size=1, max_size=6))


@SETTINGS
@given(_NAMES, _PLAINISH)
def test_fast_path_equals_general_path(name: str, args: Any) -> None:
    _assert_same_as_general(name, args)


@SETTINGS
@given(_NAMES, _PLAINISH)
def test_fast_path_equals_general_path_on_frozen_values(name: str, args: Any) -> None:
    """Decoded events carry ``FrozenDict``/``FrozenList`` arguments (spec 10 §2.1)."""
    _assert_same_as_general(name, freeze(args))


@SETTINGS
@given(_NAMES, json_values())
def test_fast_path_equals_general_path_on_any_json(name: str, args: Any) -> None:
    _assert_same_as_general(name, args)


@SETTINGS
@given(tool_calls())
def test_fast_path_equals_general_path_on_realistic_tool_calls(call: tuple[str, Any]) -> None:
    name, args = call
    _assert_same_as_general(name, args)
    _assert_same_as_general(name, freeze(args))


@pytest.mark.parametrize(
    "args",
    [
        {"path": "notes.txt", "content": "after"},
        {"command": "do-it", "timeout": 30, "dry": False, "env": None},
        {"nested": {"list": [1, "two", [True]], "é": "ü"}, "z": "ノート"},
        [1, 2, 3],
        "just a string",
        7,
        {},
    ],
)
def test_fast_path_is_taken_for_plain_arguments(args: Any) -> None:
    """Not vacuous: real arguments do take the fast path, plain or frozen."""
    for value in (args, freeze(args)):
        body = _plain_body("Write", value)
        assert body is not None
        assert body == _general_body("Write", value)


def test_spec_vector_through_the_fast_path() -> None:
    """Spec 10 §2.6 first vector (copied from the spec), frozen or not."""
    for args in ({"content": "after", "path": "notes.txt"}, freeze({"path": "notes.txt", "content": "after"})):
        assert _plain_body("Write", args) is not None
        assert canonical_args_hash("Write", args) == (
            "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
        )


class _StrSub(str):
    pass


class _DictSub(dict):  # type: ignore[type-arg]
    pass


class _ListSub(list):  # type: ignore[type-arg]
    pass


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def _cycle() -> Any:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    "args",
    [
        {"required": ["b", "a"]},  # collation-sorted array
        {"enum": "not even an array"},
        {"__proto__": {"x": 1}},  # dropped key
        {"0": "a", "b": "c"},  # array-index key: numeric first
        {"10": 1, "9": 2},
        {"1a": 1},  # starts with a digit (declined conservatively)
        {"x": 1.5},
        {"x": 1.0},
        {"x": -0.0},
        {"x": 2**53 + 1},
        {"x": math.nan},
        {"x": "\U0001f600"},  # astral: UTF-16 order and surrogate pairs
        {"\ue000": 1, "\U00010000": 2},
        {"x": "\ud800"},  # lone surrogate: escaped by the general writer
        {"x": (1, 2)},  # tuple: not JSON
        {"x": _StrSub("s")},
        _DictSub(a=1),
        _ListSub([1]),
        {1: "non-str key"},
        _deep(100),
        _cycle(),
    ],
)
def test_fast_path_declines_what_it_cannot_prove(args: Any) -> None:
    assert _plain_body("X", args) is None
    assert _outcome(args_hash_body, "X", args) == _outcome(_general_body, "X", args)


def test_tool_name_outside_the_fast_path() -> None:
    assert _plain_body(_StrSub("Write"), {"a": 1}) is None
    assert _plain_body("W\U0001f600", {"a": 1}) is None
    assert args_hash_body(_StrSub("Write"), {"a": 1}) == _general_body("Write", {"a": 1})


def test_invalid_arguments_still_raise_the_spec_error() -> None:
    with pytest.raises(ArgsHashError) as info:
        args_hash_body("X", {"x": math.inf})
    assert str(info.value).startswith("Tool arguments must be strict JSON values")
    with pytest.raises(ArgsHashError):
        args_hash_body("", {"x": 1})


def test_frozen_types_are_the_ones_accepted() -> None:
    assert _plain_body("X", FrozenDict({"a": FrozenList([1, "b"])})) == '{"args":{"a":[1,"b"]},"toolName":"X"}'


# ---------------------------------------------------------------------------------------
# The one-entry memo of ``canonical_args_hash``: frozen arguments are hashed twice per tool
# call (T1's pre-checks, then the scanner binding the dispatch to the call); the memo never
# changes a digest. Expected digests are SHA-256 of literal canonical bodies (hashlib).
# ---------------------------------------------------------------------------------------


def _digest(body: str) -> str:
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def test_same_frozen_object_other_tool_name_is_not_a_hit() -> None:
    args = FrozenDict({"path": "a.txt", "n": 1})
    assert canonical_args_hash("Write", args) == _digest('{"args":{"n":1,"path":"a.txt"},"toolName":"Write"}')
    assert argshash_module._last is not None and argshash_module._last[1] is args  # remembered
    assert canonical_args_hash("Read", args) == _digest('{"args":{"n":1,"path":"a.txt"},"toolName":"Read"}')
    assert canonical_args_hash("Write", args) == _digest('{"args":{"n":1,"path":"a.txt"},"toolName":"Write"}')


def test_mutable_arguments_are_never_remembered() -> None:
    args = {"path": "a.txt"}
    canonical_args_hash("Write", FrozenDict({"x": 1}))
    first = canonical_args_hash("Write", args)
    assert first == _digest('{"args":{"path":"a.txt"},"toolName":"Write"}')
    assert argshash_module._last is None or argshash_module._last[1] is not args
    args["path"] = "b.txt"  # the same dict object, now different: hashed afresh
    assert canonical_args_hash("Write", args) == _digest('{"args":{"path":"b.txt"},"toolName":"Write"}')


def test_equal_but_distinct_objects_hash_alike() -> None:
    a = FrozenDict({"k": [1, "x", None, True]})
    b = FrozenDict({"k": [1, "x", None, True]})
    assert canonical_args_hash("T", a) == canonical_args_hash("T", b) == _digest('{"args":{"k":[1,"x",null,true]},"toolName":"T"}')
