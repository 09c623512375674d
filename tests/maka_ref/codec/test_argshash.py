"""Tests for ``maka_ref._codec.argshash`` and ``collation`` (spec 10 §2.6, §7.1, §8 items 1–2).

Every expected hash and body below is copied from the spec (anchor-produced vectors).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import pytest

from maka_ref._codec.argshash import args_hash_body, canonical_args_hash
from maka_ref._codec.collation import collation_key
from maka_ref._codec.frozen import freeze
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._errors import ArgsHashError

# Spec 10 §2.6 vector table, all 25 rows: (toolName, args as JSON text, hash, body or None).
SPEC_VECTORS: list[tuple[str, str, str, str | None]] = [
    (
        "Write",
        r'{"content":"after","path":"notes.txt"}',
        "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",
        None,
    ),
    (
        "X",
        r'{"path":"prepared.txt"}',
        "sha256:b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1",
        None,
    ),
    (
        "X",
        r'{"required":["b","a"]}',
        "sha256:0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43",
        None,
    ),
    (
        "X",
        r'{"nested":{"enum":["z","a"]}}',
        "sha256:a1545a7c4bb9197d99d49327067d31da23188091e1bf6641e2a1698d9a906eca",
        None,
    ),
    (
        "X",
        r'{"__proto__":{"admin":true}}',
        "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9",
        None,
    ),
    (
        "X",
        r'{"ordinaryArray":["b","a"]}',
        "sha256:4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351",
        None,
    ),
    (
        "Bash",
        r'{"command":"do-it"}',
        "sha256:83f3a7d12c96b30b1e7b8e8afc4e13829dc19a0fa0f893647a0e31375b0a0669",
        None,
    ),
    (
        "Write",
        r"{}",
        "sha256:9a3dd70ae85e22878030f346a283f4c208e57b432eed170a0143773fd334c9f6",
        None,
    ),
    (
        "Read",
        r"{}",
        "sha256:98f17b72526ca658f49b9421e725a2642b943a4e0cd249bebf931651e319dfe6",
        None,
    ),
    (
        "exec",
        r'{"code":"work()"}',
        "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761",
        None,
    ),
    (
        "Write",
        r'{"path":"other.txt","content":"after"}',
        "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838",
        None,
    ),
    (
        "Read",
        r'{"path":"prepared.txt"}',
        "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2",
        None,
    ),
    (
        "X",
        r'{"required":["B","a","b","A"]}',
        "sha256:a4e3053a4c26254b5652a507fe66787ff36b2412ebb3a19b0f2f5a9e981c5984",
        '{"args":{"required":["a","A","b","B"]},"toolName":"X"}',  # spec: sorted ["a","A","b","B"]
    ),
    (
        "X",
        r'{"required":["a-b","ab","a_b","a b","a1","a10","a2"]}',
        "sha256:fe91ba6cfcc6f430333ad4e16891b30da45798be6cc37070802d21250c97c88e",
        '{"args":{"required":["a b","a_b","a-b","a1","a10","a2","ab"]},"toolName":"X"}',
    ),
    (
        "X",
        r'{"enum":[10,9,1,"x",null,true]}',
        "sha256:cc5a983d5392f0168a2cfdc45bf5b16cded378e9549877a8fffc5b6eb0786c55",
        '{"args":{"enum":["x",1,10,9,null,true]},"toolName":"X"}',
    ),
    (
        "X",
        r'{"required":[["b"],["a"]]}',
        "sha256:a8cb62a4ce0ba52e2b91c4b423565446aca635b9d98b296da4d12af3cb15d226",
        '{"args":{"required":[["a"],["b"]]},"toolName":"X"}',
    ),
    (
        "X",
        r'{"required":{"enum":["b","a"]}}',
        "sha256:d538d428c1fb4256c7db06e101af5a2ffcfbf835bcce6710f5a912d5875a8a83",
        None,
    ),
    (
        "X",
        r'{"n":1.0,"f":1.5,"big":1e21,"small":1e-7}',
        "sha256:fd79b143265ed94d2096cf6f698529a6f4051c0dc4dca05ebe53ce2e306d8b87",
        '{"args":{"big":1e+21,"f":1.5,"n":1,"small":1e-7},"toolName":"X"}',
    ),
    (
        "X",
        r'{"é":1,"z":2,"Z":3,"\ud83d\ude00":4,"\uff01":5}',
        "sha256:8936508bc7caeb62d3e746e5c1595fcbbaabc6669ce21ecde64c4ae6f898348f",
        '{"args":{"Z":3,"z":2,"é":1,"😀":4,"！":5},"toolName":"X"}',  # spec: key order Z,z,é,😀,！
    ),
    (
        "X",
        r'{"s":"line\nbreak\u0001\u007f\u2028\"\\/"}',
        "sha256:866256c3ba406edde80cc112c0172cded11549e8e8127ba30abfb395e20f126f",
        None,
    ),
    (
        "X",
        r'[1,{"b":1,"a":2}]',
        "sha256:fe52842902f94e18319df60a587073958e67425c37c8a51970bd94a73d499e94",
        None,
    ),
    (
        "X",
        r'"plain string args"',
        "sha256:46a9a7e2e69f16e4623c2293de7832aadd1e2d67e1f89621e8ca34aaf037ca52",
        None,
    ),
    ("X", r"null", "sha256:6dc46f9f4e99c4224c2be66356156527206902d447ad81837d2cf33b835329fb", None),
    (
        "X",
        r'{"big":12345678901234567890}',
        "sha256:c62174887c26654d600658e60826423ec0a07f2af9ce51d98f74c926f806873a",
        # spec: the body prints 12345678901234567000
        '{"args":{"big":12345678901234567000},"toolName":"X"}',
    ),
    (
        "X",
        r'{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,"4294967294":7,"4294967295":8,"1.5":9}',
        "sha256:3fbf2fda5e82c573a7673bbb2cdf31e998d35a3001a022bcb2fe48378848c689",
        '{"args":{"2":3,"10":2,"4294967294":7,"-1":6,"01":5,"1.5":9,"4294967295":8,"a":4,"b":1},"toolName":"X"}',
    ),
]

WRITE_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
EMPTY_X_HASH = (
    "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9"  # hash(X, {})
)


def test_spec_table_has_25_rows() -> None:
    """Spec 10 §2.6: the vector table has 25 rows; all of them are checked below."""
    assert len(SPEC_VECTORS) == 25


@pytest.mark.parametrize(("tool", "args_text", "expected", "body"), SPEC_VECTORS)
def test_spec_vectors(tool: str, args_text: str, expected: str, body: str | None) -> None:
    """Spec 10 §2.6 vector table and §7.1 items 3 and 7: anchor-produced hashes."""
    args = parse_json(args_text)  # §2.6: parse with double semantics
    assert canonical_args_hash(tool, args) == expected
    if body is not None:
        assert args_hash_body(tool, args) == body


def test_frozen_args_hash_the_same() -> None:
    """Spec 10 §2.6: decoded (frozen) events carry frozen args; the hash must not change."""
    for tool, args_text, expected, _ in SPEC_VECTORS:
        assert canonical_args_hash(tool, freeze(parse_json(args_text))) == expected


def test_key_order_does_not_matter() -> None:
    """Spec 10 §7.1 item 1: hash(Write,{content,path}) == hash(Write,{path,content})."""
    a = {"content": "after", "path": "notes.txt"}
    b = {"path": "notes.txt", "content": "after"}
    assert canonical_args_hash("Write", a) == canonical_args_hash("Write", b) == WRITE_HASH


@pytest.mark.parametrize(
    "bad_args",
    [
        {"v": math.nan},
        {"v": math.inf},
        {"v": -math.inf},
        [math.nan],
        {1: "non-str key"},
        {"t": (1, 2)},
        (1, 2),
        {"s": {1, 2}},
        {"b": b"bytes"},
        {"o": object()},
        {"big": 10**400},  # JS: BigInt / Infinity, both refused
        {"nested": {"deep": [1, {"x": math.nan}]}},
    ],
)
def test_non_strict_args_rejected(bad_args: Any) -> None:
    """Spec 10 §2.6 errors and §7.1 item 2: non-strict-JSON args → 'strict JSON' error."""
    with pytest.raises(ArgsHashError) as info:
        canonical_args_hash("X", bad_args)
    assert info.value.message == "Tool arguments must be strict JSON values"


def test_proto_value_is_still_validated() -> None:
    """Spec 10 §2.6 step 2: validation covers the whole value, including dropped keys."""
    with pytest.raises(ArgsHashError, match="strict JSON"):
        canonical_args_hash("X", {"__proto__": {"v": math.nan}})


@pytest.mark.parametrize("name", ["", None, 7, b"X"])
def test_tool_name_required(name: Any) -> None:
    """Spec 10 §2.6 step 1 and §7.1 item 7: empty tool name → 'requires a tool name'."""
    with pytest.raises(ArgsHashError) as info:
        canonical_args_hash(name, {})
    assert info.value.message == "canonicalArgsHash requires a tool name"


def test_negative_zero_hashes_as_zero() -> None:
    """Spec 10 §2.4: in the args hash alone -0 is accepted and printed as 0."""
    assert args_hash_body("X", {"v": -0.0}) == '{"args":{"v":0},"toolName":"X"}'
    assert canonical_args_hash("X", parse_json('{"v":-0}')) == canonical_args_hash("X", {"v": 0})


def test_proto_dropped_in_hash_but_kept_in_event_json() -> None:
    """Spec 10 §7.1 item 4 and §8 item 1: __proto__ is data in event JSON, dropped in the hash."""
    with_proto = parse_json('{"__proto__":{"admin":true}}')
    assert stable_json(with_proto) != stable_json({})
    assert canonical_args_hash("X", with_proto) == canonical_args_hash("X", {}) == EMPTY_X_HASH
    nested = parse_json('{"nested":{"__proto__":{"admin":true}}}')
    assert canonical_args_hash("X", nested) == canonical_args_hash("X", {"nested": {}})
    assert args_hash_body("X", nested) == '{"args":{"nested":{}},"toolName":"X"}'


def test_only_plain_lists_are_arrays() -> None:
    """Spec 10 §7.1 item 5: anything that is not a plain list is refused (tuples, subclasses)."""

    class MyList(list):  # type: ignore[type-arg]
        pass

    for bad in ((1,), MyList([1]), range(2)):
        with pytest.raises(ArgsHashError, match="strict JSON"):
            canonical_args_hash("X", {"a": bad})


def test_any_dict_with_str_keys_is_an_object() -> None:
    """Spec 10 §7.1 item 6: a null-prototype object hashes like the plain one (any dict)."""

    class MyDict(dict):  # type: ignore[type-arg]
        pass

    plain = {"content": "after", "path": "notes.txt"}
    for mapping in (OrderedDict(plain), MyDict(plain), freeze(plain)):
        assert canonical_args_hash("Write", mapping) == WRITE_HASH


def test_sorted_arrays_use_transformed_elements() -> None:
    """Spec 10 §2.6 step 3: sorting compares the element after __proto__ is dropped."""
    # Without the drop, '{"__proto__":...,"b":1}' would sort before '{"a":1}' ('_' < 'a').
    args = {"enum": [{"b": 1, "__proto__": 0}, {"a": 1}]}
    assert args_hash_body("X", args) == '{"args":{"enum":[{"a":1},{"b":1}]},"toolName":"X"}'


def test_sort_is_stable_for_collation_ties() -> None:
    """Spec 10 §2.6 / §8 item 2: equal-collating items keep their input order (stable sort).

    U+00AD (soft hyphen) is completely ignorable, so "a\u00adb" and "ab" collate equal; the
    expected orders were checked once with node v20:
    ["b","a\u00adb","ab"].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))).
    """
    assert args_hash_body("X", {"required": ["b", "a\u00adb", "ab"]}) == (
        '{"args":{"required":["a\u00adb","ab","b"]},"toolName":"X"}'
    )
    assert args_hash_body("X", {"required": ["b", "ab", "a\u00adb"]}) == (
        '{"args":{"required":["ab","a\u00adb","b"]},"toolName":"X"}'
    )


def test_top_level_array_and_non_required_parents_are_not_sorted() -> None:
    """Spec 10 §2.6: only the direct value of 'required'/'enum' is sorted (not args itself)."""
    assert args_hash_body("X", ["b", "a"]) == '{"args":["b","a"],"toolName":"X"}'
    assert args_hash_body("X", {"required": [{"enum": 1}, ["b", "a"]]}) == (
        '{"args":{"required":[["b","a"],{"enum":1}]},"toolName":"X"}'
    )


@pytest.mark.parametrize(
    "ordered",
    [
        ["a", "A", "b", "B"],  # §8 item 2: a < A < b < B
        ["a b", "a_b", "a-b", "a1", "a10", "a2", "ab"],  # space < _ < - < digits < letters
        ['"x"', "1", "10", "9", "null", "true"],  # '"' before digits
    ],
)
def test_collation_key_orders_like_icu_root(ordered: list[str]) -> None:
    """Spec 10 §8 item 2 (orders taken from the §2.6 collation vectors)."""
    for shuffled in (ordered[::-1], ordered[1:] + ordered[:1]):
        assert sorted(shuffled, key=collation_key) == ordered


def test_collation_key_rejects_non_str() -> None:
    """collation_key is only defined on text (the compact JSON of an element)."""
    with pytest.raises(TypeError):
        collation_key(1)  # type: ignore[arg-type]
