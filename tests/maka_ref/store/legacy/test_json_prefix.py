"""The incomplete-prefix classifier of the legacy JSONL profile (spec 30 §5, last paragraphs;
§5.2 rule 6; §9 item 142).

Unit cases are the spec's own list ("open object/array/string, partial literal t/tr/…, number
ending in -, ., e, e+, partial \\u escape with only hex so far, dangling , or :" →
incomplete prefix; "any wrong byte, control char in string, trailing garbage, depth > 512, a
, directly followed by a closing bracket" → invalid). The properties are algebraic: prefixes
of valid documents are never invalid, invalid is monotone, complete agrees with the JSON
parser, and every incomplete prefix has a completion.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._errors import InvalidJSONTextError
from maka_ref._store.legacy.json_prefix import (
    MAX_PREFIX_DEPTH,
    classify_json_bytes,
    classify_json_text,
    completion_suffix,
)
from maka_ref.testing.strategies import TornJsonl, json_values, torn_jsonl

MANY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parses(text: str) -> bool:
    try:
        parse_json(text)
    except InvalidJSONTextError:
        return False
    return True


# --------------------------------------------------------------------------- unit cases (§5)


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[]",
        '{"a":[1,2,{"b":null}]}',
        "0",
        "-0",
        "12",
        "1.5e-3",
        "1E+2",
        "true",
        "false",
        "null",
        '""',
        '"a\\u00e9\\n\\"\\\\\\/"',
        " \t\r\n{} \n",
        '{"id":"truncated"}',
    ],
)
def test_complete_documents(text: str) -> None:
    assert classify_json_text(text) == "complete"
    assert completion_suffix(text) == ""


@pytest.mark.parametrize(
    "text",
    [
        # the input ended inside a value: open object / array / string
        "{",
        "[",
        "[[{",
        '"',
        '"abc',
        '{"id":"truncated"',  # spec 30 §9 item 142's torn tail
        '{"a',  # inside a key
        '{"a"',  # key without its ":"
        # partial literals
        "t",
        "tr",
        "tru",
        "f",
        "fals",
        "n",
        "nul",
        "[tr",
        '{"a":nu',
        # numbers ending in -, ., e, e+ (and E, e-)
        "-",
        "1.",
        "1e",
        "1e+",
        "1e-",
        "1.5E",
        "[-",
        '{"n":2.',
        # a complete number that may still grow is not yet closed inside a container
        "[1",
        '{"n":12',
        # partial \u escape with only hex so far, and a lone backslash
        '"\\',
        '"\\u',
        '"\\u0',
        '"\\u00e',
        '{"k\\u12',
        # dangling , or :
        "[1,",
        '{"a":1,',
        '{"a":',
        '{"a" :  ',
        # the empty text is a prefix of every document
        "",
        "   ",
    ],
)
def test_incomplete_prefixes(text: str) -> None:
    assert classify_json_text(text) == "incomplete_prefix"
    suffix = completion_suffix(text)
    assert suffix is not None and _parses(text + suffix), (text, suffix)


@pytest.mark.parametrize(
    "text",
    [
        # any wrong byte
        "x",
        "{x",
        "[1 2",
        "{1:2}",
        "{'a':1}",
        "NaN",
        "Infinity",
        "-Infinity",
        "+1",
        ".5",
        "01",
        "[01",
        "1.e5",
        "[1.]",
        "1e+]",
        "trux",
        "nulL",
        "[tru]",
        '"\\x',
        '"\\u12g',
        '"\\u"',
        "\ufeff{}",  # a byte-order mark is not JSON whitespace
        "\u00a0{}",
        "[}",
        "{]",
        '{"a":1]',
        "]",
        # control characters inside a string
        '"\x00',
        '"a\nb"',
        '"tab\there"',
        '{"a":"\x1f',
        # trailing garbage
        "{} x",
        "{}{",
        "1 2",
        "[]]",
        'true"',
        # a "," directly followed by a closing bracket (with or without whitespace)
        "[1,]",
        '{"a":1,}',
        "[1, ]",
        "[,",
        "{,",
        # dangling ":" without a key / two colons
        '{"a"::',
    ],
)
def test_invalid_texts(text: str) -> None:
    assert classify_json_text(text) == "invalid"
    assert completion_suffix(text) is None


def test_depth_limit_is_512() -> None:
    """Spec 30 §5: depth > 512 is invalid; 512 is still allowed."""
    assert MAX_PREFIX_DEPTH == 512
    assert classify_json_text("[" * 512 + "]" * 512) == "complete"
    assert classify_json_text("[" * 512) == "incomplete_prefix"
    assert classify_json_text("[" * 513) == "invalid"
    assert classify_json_text('{"a":' * 512 + "1" + "}" * 512) == "complete"
    assert classify_json_text('{"a":' * 513) == "invalid"
    # Deep input never recurses: far beyond the recursion limit still answers.
    assert classify_json_text("[" * 100_000) == "invalid"


def test_classify_rejects_non_text() -> None:
    with pytest.raises(TypeError):
        classify_json_text(b"{}")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bytes


def test_bytes_cut_inside_a_multibyte_character() -> None:
    """A record torn inside a UTF-8 sequence is missing bytes, not an encoding error."""
    whole = '{"text":"日本語 😀"}'.encode()
    for cut in range(1, len(whole)):
        kind = classify_json_bytes(whole[:cut])
        assert kind == "incomplete_prefix", (cut, whole[:cut])
    assert classify_json_bytes(whole) == "complete"


def test_bytes_invalid_utf8_and_non_ascii_outside_strings() -> None:
    assert classify_json_bytes(b'"\xff"') == "invalid"  # never valid UTF-8
    assert classify_json_bytes(b'"\xc3\x28"') == "invalid"  # broken sequence mid-text
    assert classify_json_bytes(b'"\xed\xa0\x80"') == "invalid"  # encoded surrogate
    assert classify_json_bytes(b'{"a":1}' + "é".encode()[:1]) == "invalid"  # outside a string
    assert classify_json_bytes(b"[" + "日".encode()[:2]) == "invalid"  # a value cannot start so
    assert classify_json_bytes(b'["' + "日".encode()[:2]) == "incomplete_prefix"


# --------------------------------------------------------------------------- properties


def _texts_of(value: Any) -> st.SearchStrategy[str]:
    """Several spellings of one JSON value: canonical, compact, pretty, ASCII-escaped."""
    spellings = [
        json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        json.dumps(value, ensure_ascii=True),
        json.dumps(value, ensure_ascii=False, indent=2),
        " \r\n" + json.dumps(value, ensure_ascii=False, separators=(" , ", " : ")) + "\t",
    ]
    try:
        spellings.append(stable_json(value, negative_zero="zero"))
    except ValueError:
        pass
    return st.sampled_from(spellings)


documents = json_values(max_leaves=24).flatmap(_texts_of)


@MANY
@given(documents)
def test_every_prefix_of_a_valid_document_is_never_invalid(text: str) -> None:
    """Spec 30 §5: bytes missing only at the end keep a text an incomplete prefix."""
    assert classify_json_text(text) == "complete"
    for cut in range(len(text)):
        kind = classify_json_text(text[:cut])
        assert kind in ("incomplete_prefix", "complete"), (text, cut, kind)
        if kind == "complete":
            # Only a top-level scalar (or trailing whitespace) can be complete early.
            assert _parses(text[:cut])


@SOME
@given(json_values(lone_surrogates=False, max_leaves=16).flatmap(_texts_of))
def test_every_byte_prefix_of_a_valid_document_is_never_invalid(text: str) -> None:
    data = text.encode("utf-8")
    assert classify_json_bytes(data) == "complete"
    for cut in range(len(data)):
        assert classify_json_bytes(data[:cut]) in ("incomplete_prefix", "complete"), (data, cut)


@MANY
@given(documents, st.data())
def test_every_incomplete_prefix_has_a_completion(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    prefix = text[:cut]
    suffix = completion_suffix(prefix)
    assert suffix is not None
    assert _parses(prefix + suffix), (prefix, suffix)


# Random texts over the JSON alphabet hit every state, including invalid ones.
_JSONISH = st.text(alphabet=st.sampled_from(list('{}[]:,"\\ \n-+.0123456789eEtrufalsnxu\x01é')), max_size=30)


@MANY
@given(_JSONISH)
def test_complete_agrees_with_the_parser(text: str) -> None:
    assert (classify_json_text(text) == "complete") == _parses(text)


@MANY
@given(_JSONISH, _JSONISH)
def test_invalid_is_monotone_and_incomplete_is_sound(text: str, more: str) -> None:
    kind = classify_json_text(text)
    if kind == "invalid":
        # No continuation repairs an invalid text.
        assert classify_json_text(text + more) == "invalid"
        assert not _parses(text + more)
    elif kind == "incomplete_prefix":
        suffix = completion_suffix(text)
        assert suffix is not None and _parses(text + suffix)
    # A parseable extension means the text was a prefix of a valid document.
    if _parses(text + more):
        assert kind != "invalid"


@SOME
@given(torn_jsonl())
def test_torn_jsonl_tails_are_incomplete_prefixes(torn: TornJsonl) -> None:
    """The shared torn-JSONL strategy (cut strictly inside the last line, possibly inside a
    UTF-8 sequence) always yields an incomplete prefix, never garbage (spec 30 §5.2 rule 6)."""
    tail = torn.data.rsplit(b"\n", 1)[-1]
    assert classify_json_bytes(tail) == "incomplete_prefix"
