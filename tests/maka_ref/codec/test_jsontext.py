"""Tests for ``maka_ref._codec.jsontext`` (spec 10 §2.2–§2.4, §8 items 3–4; spec 20 §9 item 26).

Expected texts are copied from the spec (golden encodings, §2.3 examples) or are what
JavaScript's ``JSON.stringify`` prints (checked with node v20 where noted).
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_ref._codec.frozen import freeze
from maka_ref._codec.jsontext import (
    MAX_DEPTH,
    check_strict_json,
    compact_json,
    is_array_index_key,
    ordered_keys,
    parse_json,
    stable_json,
)
from maka_ref._codec.numbers import format_number
from maka_ref._errors import InvalidJSONTextError, NotStrictJSONError

# --------------------------------------------------------------------------- key order §2.3

SPEC_KEYS = ["b", "10", "2", "a", "01", "-1", "4294967294", "4294967295", "1.5"]
SPEC_ORDER = ["2", "10", "4294967294", "-1", "01", "1.5", "4294967295", "a", "b"]


def test_spec_two_tier_key_order() -> None:
    """Spec 10 §2.3 verified example: index keys numerically, then UTF-16 order."""
    assert ordered_keys(dict.fromkeys(SPEC_KEYS, 0)) == SPEC_ORDER
    assert ordered_keys(dict.fromkeys(reversed(SPEC_KEYS), 0)) == SPEC_ORDER


def test_spec_two_tier_key_order_in_text() -> None:
    """Spec 10 §2.3 / §8 item 3: the order applies at every depth of stable_json."""
    inner = {k: i for i, k in enumerate(SPEC_KEYS)}
    text = stable_json({"z": inner, "a": [inner]})
    expected_inner = "{" + ",".join(f'"{k}":{SPEC_KEYS.index(k)}' for k in SPEC_ORDER) + "}"
    assert text == '{"a":[' + expected_inner + '],"z":' + expected_inner + "}"


def test_utf16_order_astral_before_high_bmp() -> None:
    """Spec 10 §2.3: '😀' (U+1F600, UTF-16 D83D…) sorts before '！' (U+FF01)."""
    assert ordered_keys({"！": 1, "😀": 2, "a": 3}) == ["a", "😀", "！"]
    # Code-point order would agree for astral vs. low BMP characters:
    assert ordered_keys({"😀": 1, "é": 2, "\u3042": 3}) == ["é", "\u3042", "😀"]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("0", True),
        ("2", True),
        ("10", True),
        ("4294967294", True),  # 2^32 - 2
        ("4294967295", False),  # 2^32 - 1 is not an array index
        ("99999999999", False),
        ("01", False),
        ("00", False),
        ("-1", False),
        ("1.5", False),
        ("+1", False),
        (" 1", False),
        ("1e3", False),
        ("", False),
        ("\u0661", False),  # ARABIC-INDIC DIGIT ONE: a Unicode digit, not ASCII
        ("\u00b2", False),  # SUPERSCRIPT TWO
        ("a", False),
    ],
)
def test_is_array_index_key(key: str, expected: bool) -> None:
    """Spec 10 §2.3: canonical array index = 0|[1-9][0-9]* with value <= 2^32-2."""
    assert is_array_index_key(key) is expected


# --------------------------------------------------------------------------- golden text §2.2

GOLDEN_EVENTS = [
    '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}',
    '{"actions":{"toolDispatch":{"canonicalArgsHash":"sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9","operationId":"operation-1","protocol":"t1_after_preflight_v1","providerToolCallId":"provider-call-1","recoveryMode":"reconcile","toolName":"Write"}},"author":"system","id":"dispatch-event-1","invocationId":"inv-1","partial":false,"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}',
    '{"actions":{"toolRecovery":{"kind":"maka.tool.reconcile_result","payload":{"observation":"diverged","observationDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","observationSchema":"state_identity_v1","operationId":"operation-1","protocol":"tool_reconcile_v1"},"version":1}},"author":"system","id":"reconcile-event-1","invocationId":"inv-1","partial":false,"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},"role":"system","runId":"run-1","sessionId":"sess-1","ts":2,"turnId":"turn-1"}',
]


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


@pytest.mark.parametrize("golden", GOLDEN_EVENTS)
def test_golden_event_encodings(golden: str) -> None:
    """Spec 10 §2.2 golden encodings: stable_json of the (decoded) event, any input key order."""
    value = parse_json(golden)
    assert stable_json(_reverse_keys(value)) == golden
    assert stable_json(freeze(value)) == golden


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # §2.2: UTF-16 key order
        ({"！": 1, "😀": 2, "a": 3}, '{"a":3,"😀":2,"！":1}'),
        # §2.2: ECMAScript number text
        ({"s": 1e-7, "n": 1e21, "f": 1.0}, '{"f":1,"n":1e+21,"s":1e-7}'),
        # §2.2: escapes; raw U+007F, raw non-ASCII, "/" not escaped
        ('a\x00b\x1f\x7fé😀"\\/', '"a\\u0000b\\u001f\x7fé😀\\"\\\\/"'),
        # §2.2: lone surrogate escaped, lowercase hex
        ("a\ud800b", '"a\\ud800b"'),
        # §2.2: "__proto__" is ordinary data in event JSON
        ({"b": 1, "__proto__": {"admin": True}}, '{"__proto__":{"admin":true},"b":1}'),
    ],
)
def test_golden_fragments(value: Any, expected: str) -> None:
    """Spec 10 §2.2 golden encoding fragments."""
    assert stable_json(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # JSON.stringify output, checked with node v20.
        ("\b\f\n\r\t\x0b\x01\x1f", '"\\b\\f\\n\\r\\t\\u000b\\u0001\\u001f"'),
        ("\x7f\x80\u2028\u2029/<>&\u00ad\ufeff", '"\x7f\x80\u2028\u2029/<>&\u00ad\ufeff"'),
        ("\udc00\ud800", '"\\udc00\\ud800"'),  # reversed pair = two lone surrogates
        ("\ud83d", '"\\ud83d"'),
        ("x\ude00", '"x\\ude00"'),
        ("\ud83d\ude00", '"😀"'),  # a pair held as two code points is one astral char (§2.3)
        ({"\ud800": 1, "b": 2}, '{"b":2,"\\ud800":1}'),  # keys escaped alike (and sorted)
        ("", '""'),
    ],
)
def test_string_escaping_matches_json_stringify(value: Any, expected: str) -> None:
    """Spec 10 §2.3 strings: JSON escaping exactly as ECMAScript JSON.stringify."""
    assert stable_json(value) == expected


def test_output_is_utf8_encodable() -> None:
    """Spec 10 §2.3: output is encoded as UTF-8 (no raw surrogate survives)."""
    text = stable_json(["\ud800", "\ud83d\ude00"])
    assert text.encode("utf-8") == b'["\\ud800","\xf0\x9f\x98\x80"]'


def test_scalars_and_containers() -> None:
    """Spec 10 §2.3 / §2.4: compact separators, bool before int, arrays keep order."""
    scalars = [True, False, 1, 0, None, 1.5, "s", [], {}]
    assert stable_json(scalars) == '[true,false,1,0,null,1.5,"s",[],{}]'
    nested = {"b": [3, 1, 2], "a": {"d": {}, "c": []}}
    assert stable_json(nested) == '{"a":{"c":[],"d":{}},"b":[3,1,2]}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12345678901234567890, "12345678901234567000"),  # §2.4 / §2.6 vector
        (2**53 + 1, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
        (1e20, "100000000000000000000"),
        (123456789012345680000, "123456789012345680000"),
        (1e16, "10000000000000000"),
        (9007199254740994.0, "9007199254740994"),  # integral doubles in (2^53, 1e16)
        (9674536625339404.0, "9674536625339404"),
        (-9943732754538448.0, "-9943732754538448"),
        (1e-5, "0.00001"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1 + 0.2, "0.30000000000000004"),
        (-2.5, "-2.5"),
        (100.0, "100"),
    ],
)
def test_numbers_in_text(value: int | float, expected: str) -> None:
    """Spec 10 §2.3 numbers / §2.4 double semantics (strings as printed by node v20)."""
    assert stable_json(value) == expected
    assert stable_json({"v": [value]}) == '{"v":[' + expected + "]}"


@given(
    st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**80), 2**80)
    | st.integers(-(10**17), 10**17).map(float)  # integral doubles around 2^53 .. 1e16
)
def test_writer_number_fast_path_equals_format_number(x: int | float) -> None:
    """Spec 10 §2.3: every number in the text is ECMAScript Number::toString (format_number)."""
    assert stable_json(x, negative_zero="zero") == format_number(x)


def test_big_integer_read_write_cycle() -> None:
    """Spec 10 §2.4: JSON text 12345678901234567890 becomes 12345678901234567000."""
    assert stable_json(parse_json('{"big":12345678901234567890}')) == '{"big":12345678901234567000}'


def test_number_and_str_subclasses_written_as_base_values() -> None:
    """Choice (module docstring): int/float/str subclasses are written as their base value."""

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        pass

    assert stable_json({"l": Level.HIGH, "n": Name("x"), Name("k"): 1.0}) == '{"k":1,"l":3,"n":"x"}'


# --------------------------------------------------------------------------- -0 (§2.4)


def test_negative_zero_rejected_by_default() -> None:
    """Spec 10 §2.4: -0 anywhere in an event is not encodable (ts: -0, args: {v: -0})."""
    for value in (-0.0, {"ts": -0.0}, {"args": {"v": -0.0}}, [1, [-0.0]], parse_json('{"ts":-0}')):
        with pytest.raises(NotStrictJSONError):
            stable_json(value)
        with pytest.raises(NotStrictJSONError):
            check_strict_json(value)


def test_negative_zero_as_zero_for_digests() -> None:
    """Spec 20 §9 item 26 (digests) and spec 10 §2.4 (args hash): -0 → 0 when asked."""
    assert stable_json({"v": -0.0, "w": [-0.0]}, negative_zero="zero") == '{"v":0,"w":[0]}'
    check_strict_json({"v": -0.0}, negative_zero="zero")
    assert stable_json(0.0) == "0"


def test_bad_negative_zero_mode() -> None:
    """API misuse is a ValueError, not a strict-JSON verdict."""
    with pytest.raises(ValueError):
        stable_json(1, negative_zero="keep")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- strict JSON


class _Obj:
    pass


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (math.nan, "(root)"),
        ({"a": math.inf}, "/a"),
        ({"a": [1, -math.inf]}, "/a/1"),
        ({"a": (1, 2)}, "/a"),  # tuple is not an array (§7.1 item 5)
        ({"a": {1, 2}}, "/a"),
        ({"a": b"x"}, "/a"),
        ({"a": _Obj()}, "/a"),
        ({"x/y~": {1: 2}}, "/x~1y~0"),  # non-str key; JSON-pointer escaping in the path
        ({"a": 10**400}, "/a"),  # overflows a double (JS: BigInt / Infinity)
        ({"a": range(3)}, "/a"),
    ],
)
def test_non_strict_values_rejected_with_path(value: Any, path: str) -> None:
    """Spec 10 §2.3: only strict JSON values are accepted; detail says where."""
    with pytest.raises(NotStrictJSONError) as info:
        check_strict_json(value)
    assert info.value.detail == path
    with pytest.raises(NotStrictJSONError) as info2:
        stable_json(value)
    assert info2.value.detail == path
    with pytest.raises(NotStrictJSONError):
        compact_json(value)


def test_list_subclasses_other_than_frozen_rejected() -> None:
    """Spec 10 §7.1 item 5: only plain lists (and our FrozenList) are arrays."""

    class MyList(list):  # type: ignore[type-arg]
        pass

    with pytest.raises(NotStrictJSONError):
        stable_json(MyList([1]))
    assert stable_json(freeze([1, [2]])) == "[1,[2]]"


def test_cycles_are_refused_not_recursion_error() -> None:
    """Choice: cyclic values raise NotStrictJSONError ('cyclic'), never RecursionError."""
    loop: list[Any] = []
    loop.append(loop)
    d: dict[str, Any] = {}
    d["self"] = {"again": d}
    for value in (loop, d):
        with pytest.raises(NotStrictJSONError, match="cyclic"):
            stable_json(value)
        with pytest.raises(NotStrictJSONError, match="cyclic"):
            check_strict_json(value)


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_depth_limit() -> None:
    """Choice: MAX_DEPTH (500) nested containers are accepted, one more is refused."""
    assert MAX_DEPTH == 500
    assert stable_json(_nested(MAX_DEPTH)) == "[" * 500 + "0" + "]" * 500
    with pytest.raises(NotStrictJSONError, match="deeper"):
        stable_json(_nested(MAX_DEPTH + 1))
    with pytest.raises(NotStrictJSONError, match="deeper"):
        check_strict_json(_nested(5000))


def test_compact_json_keeps_key_order() -> None:
    """Spec 10 §2.6 step 4: the body is compact JSON in the given key order."""
    value = {"b": 1, "a": {"d": 1.0, "c": [1e21]}, "10": None, "2": "x"}
    assert compact_json(value) == '{"b":1,"a":{"d":1,"c":[1e+21]},"10":null,"2":"x"}'


# --------------------------------------------------------------------------- parse_json §2.4


def test_parse_integer_model() -> None:
    """Spec 10 §2.4: ints stay int only when |n| <= 2^53, otherwise they are doubles."""
    assert parse_json("9007199254740992") == 2**53
    assert type(parse_json("9007199254740992")) is int
    assert type(parse_json("-9007199254740992")) is int
    big = parse_json("9007199254740993")
    assert type(big) is float and big == 2.0**53
    assert parse_json("12345678901234567890") == 12345678901234567000.0
    assert type(parse_json("1" + "0" * 5000)) is float  # no int-digit-limit error
    assert type(parse_json("1.0")) is float
    assert parse_json("1e2") == 100.0


@pytest.mark.parametrize("text", ["-0", "-0.0", "-0e0", "-0E+5", "[-0]"])
def test_parse_negative_zero(text: str) -> None:
    """Spec 10 §2.4: the literal -0 becomes -0.0 so that the encoder can refuse it."""
    value = parse_json(text)
    zero = value[0] if isinstance(value, list) else value
    assert zero == 0 and type(zero) is float and math.copysign(1.0, zero) == -1.0


def test_parse_positive_zero_is_int() -> None:
    """Spec 10 §2.4: 0 is an ordinary integer."""
    assert parse_json("0") == 0 and type(parse_json("0")) is int


def test_parse_overflowing_literal_like_json_parse() -> None:
    """Choice: 1e400 parses to inf (JSON.parse gives Infinity); writers then refuse it."""
    assert parse_json("1e400") == math.inf
    with pytest.raises(NotStrictJSONError):
        stable_json(parse_json("[1e400]"))


def test_parse_strings() -> None:
    """Spec 10 §2.3: lone surrogate escapes are kept; an escaped pair is one character."""
    assert parse_json(r'"a\ud800b"') == "a\ud800b"
    assert parse_json(r'"\ud83d\ude00"') == "😀"
    assert parse_json('{"a":1,"a":2}') == {"a": 2}  # JSON.parse: last duplicate wins


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "NaN",
        "Infinity",
        "-Infinity",
        '{"a":NaN}',
        "[1,]",
        "{'a':1}",
        "01",
        "1 2",
        '{"a":1}x',
        '{"a":1',
        '"\x01"',  # raw control character in a string
        "\ufeff1",  # BOM is not JSON whitespace
        "[1]\n]",
        "tru",
        ".5",
        "1.",
    ],
)
def test_parse_invalid_text(text: str) -> None:
    """Spec 10 §2.2 step 4 / §7: one JSON document or InvalidJSONTextError (torn lines too)."""
    with pytest.raises(InvalidJSONTextError):
        parse_json(text)


def test_parse_error_message_has_position() -> None:
    """The message names line and column, for humans reading a corrupt ledger."""
    with pytest.raises(InvalidJSONTextError, match="line 2 column 3"):
        parse_json('{"a":\n  ,}')


def test_parse_rejects_non_str() -> None:
    """parse_json takes text, not bytes."""
    with pytest.raises(InvalidJSONTextError):
        parse_json(b"1")  # type: ignore[arg-type]


def test_parse_depth_limit() -> None:
    """Choice: documents nested deeper than MAX_DEPTH are refused, deterministically."""
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert stable_json(parse_json(deepest)) == deepest
    for depth in (MAX_DEPTH + 1, 100_000):
        with pytest.raises(InvalidJSONTextError, match="deeper"):
            parse_json("[" * depth + "]" * depth)
    # Many brackets inside strings do not trip the check.
    assert parse_json('["' + "[" * 1000 + '"]') == ["[" * 1000]


# --------------------------------------------------------------------------- properties

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f == 0 and math.copysign(1, f) < 0)  # -0 is refused by default
    )
    | st.text(st.characters(blacklist_categories=()))  # includes lone surrogates
)
_keys = st.text(st.characters(blacklist_categories=()), max_size=6) | st.integers(0, 2**32).map(str)
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=30,
)


def _as_js(value: Any) -> Any:
    """What a JavaScript string round trip yields: surrogate pairs become astral characters."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, dict):
        return {_as_js(k): _as_js(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_js(v) for v in value]
    return value


@given(json_values)
def test_round_trip_through_parse(value: Any) -> None:
    """Spec 10 §2.2 step 4: the canonical text parses back to an equal value, and is stable."""
    text = stable_json(value)
    text.encode("utf-8")  # no raw surrogates
    back = parse_json(text)
    assert back == _as_js(value)
    assert stable_json(back) == text
    assert stable_json(freeze(value)) == text


_plain_keys = st.text(st.sampled_from("abcXYZ_é😀！"), min_size=1, max_size=5)
_plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_plain_keys, children, max_size=4)
    ),
    max_leaves=20,
)


def _utf16_sorted_json(value: Any) -> str:
    """Independent oracle built on the stdlib (no index-like keys in this strategy)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        members = (
            json.dumps(k, ensure_ascii=False) + ":" + _utf16_sorted_json(value[k]) for k in keys
        )
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_utf16_sorted_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


@given(_plain_values)
def test_agrees_with_stdlib_oracle(value: Any) -> None:
    """Spec 10 §2.3: for ints, text without surrogates and non-index keys, the text equals
    compact ``json.dumps`` with keys in UTF-16 order (§2.3 says json.dumps escaping matches)."""
    assert stable_json(value) == _utf16_sorted_json(value)


@given(st.dictionaries(_keys, st.none(), max_size=12))
def test_ordered_keys_is_a_two_tier_permutation(obj: dict[str, None]) -> None:
    """Spec 10 §2.3: ordered_keys is a permutation: index keys numerically, then UTF-16."""
    keys = ordered_keys(obj)
    assert sorted(keys) == sorted(obj)
    index = [k for k in keys if is_array_index_key(k)]
    rest = keys[len(index) :]
    assert keys[: len(index)] == index
    assert [int(k) for k in index] == sorted(int(k) for k in index)
    assert not any(is_array_index_key(k) for k in rest)
    units = [k.encode("utf-16-be", "surrogatepass") for k in rest]
    assert units == sorted(units)
