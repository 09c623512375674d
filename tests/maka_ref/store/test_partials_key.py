"""The stream key's direct writer (``maka_ref._store.partials._parts_json``) is ``stable_json``.

Why a test of its own: every immutable final the store inserts derives a stream key, and the
store writes the key's JSON array itself when every part is a string or null (a faster path
than the general serialiser). The bytes are hashed into ``stream_key``, so any difference would
silently orphan partial snapshots; this compares the two writers on generated parts, including
control characters, U+2028/U+2029, astral characters and lone surrogates.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._codec.jsontext import stable_json
from maka_ref._store.partials import _parts_json, stream_key

_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=12)
_PART = st.one_of(st.none(), _TEXT, st.sampled_from(["\ud800", "\udc00x", "a\u2028b", "\x00\x1f\"\\/", "é", "😀"]))


@settings(max_examples=500, deadline=None)
@given(st.lists(_PART, max_size=8))
def test_direct_writer_equals_stable_json(parts: list[Any]) -> None:
    assert _parts_json(parts) == stable_json(parts)


def test_other_part_types_take_the_general_path() -> None:
    assert _parts_json(["a", 1, None]) == '["a",1,null]'
    assert _parts_json(["a", True]) == '["a",true]'


def test_known_key() -> None:
    # Hex SHA-256 of the UTF-8 text ["tool:call:c1","s","i","r","t",null,"tool","tool"],
    # computed independently (hashlib over the literal text).
    event = {"sessionId": "s", "invocationId": "i", "runId": "r", "turnId": "t", "role": "tool", "author": "tool"}
    import hashlib

    literal = '["tool:call:c1","s","i","r","t",null,"tool","tool"]'
    assert stream_key("tool:call:c1", event) == hashlib.sha256(literal.encode("utf-8")).hexdigest()
