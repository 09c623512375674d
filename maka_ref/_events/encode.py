"""Lossless encoding of a RuntimeEvent: the one persisted representation (spec 10 §2.2, §2.5).

Why the round trip: "the same event" is defined as "the same canonical bytes" (§2.5), so the
bytes must determine the value. Encoding therefore (1) decodes, (2) omits absent keys —
automatic here, because Python has no ``undefined`` and decoded events never hold ``None``
for an optional key, (3) writes ``stable_json`` refusing ``-0`` and anything non-strict, and
(4) decodes the parsed bytes again and requires a deep, *type-strict* equality with step 1.
Step 4 is what catches values the bytes cannot carry: integers a double cannot represent,
``-0``, NaN/Infinity inside free-form payloads.

Type-strict equality: Python's ``==`` says ``True == 1`` and ``0.0 == -0.0``; we compare
JSON kinds first (``bool`` is never a number), then numbers by value (``1 == 1.0`` is right:
JavaScript has one number type), strings with ``str.__eq__``, containers element-wise.

Depends on: ``_codec.jsontext`` (``stable_json``, ``parse_json``), ``_events.schema``,
``_errors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maka_ref._codec.argshash import _sorted_compact
from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._errors import RuntimeEventNotSerializableError
from maka_ref._events._values import frozen_dict, frozen_list
from maka_ref._events.constants import CONTENT_KIND_TEXT
from maka_ref._events.schema import decode_runtime_event

__all__ = ["EncodedRuntimeEvent", "canonical_event_json", "encode_runtime_event", "json_strict_equal"]


@dataclass(frozen=True, slots=True)
class EncodedRuntimeEvent:
    """The canonical decoded event and its canonical JSON text (UTF-8 when stored)."""

    event: FrozenDict
    canonical_json: str


def _kind(value: Any) -> int:
    """0 null, 1 bool, 2 number, 3 string, 4 array, 5 object, -1 not JSON."""
    cls = type(value)
    if value is None:
        return 0
    if cls is bool:
        return 1
    if cls is int or cls is float:
        return 2
    if cls is str:
        return 3
    if issubclass(type(value), list):
        return 4
    if issubclass(type(value), dict):
        return 5
    return -1


def _utf16(text: str) -> bytes:
    """UTF-16 code units: a surrogate pair held as two code points equals the astral char."""
    return text.encode("utf-16-le", "surrogatepass")


def json_strict_equal(left: Any, right: Any) -> bool:
    """Deep equality of two JSON values that never confuses ``true`` with ``1``.

    Mirrors JavaScript deep strict equality on parsed JSON: kinds must match; numbers compare
    by value; strings compare as UTF-16 code units (as JavaScript strings are); ``-0`` is not
    distinguished here (the encoder refuses it earlier).
    """
    kind = _kind(left)
    if kind != _kind(right) or kind < 0:
        return False
    if kind == 0:
        return True
    if kind == 1:
        return left is right
    if kind == 2:
        return bool(left == right)
    if kind == 3:
        return str.__eq__(left, right) is True or _utf16(left) == _utf16(right)
    if kind == 4:
        if list.__len__(left) != list.__len__(right):
            return False
        return all(json_strict_equal(a, b) for a, b in zip(list.__iter__(left), list.__iter__(right)))
    if dict.__len__(left) != dict.__len__(right):
        return False
    for key, item in dict.items(left):
        if not dict.__contains__(right, key) or not json_strict_equal(item, dict.__getitem__(right, key)):
            return False
    return True


# --------------------------------------------------------------------------- fast path
#
# Steps (3)-(4) of the round trip, for a *plain* decoded event, without writing through the
# generic writer, parsing the text back and decoding it a second time. Plain (one walk, the
# same notion as the args-hash fast path in ``_codec.argshash``): only ``FrozenDict`` /
# ``FrozenList`` containers (what decode builds), ``str``, ``bool``, ``None`` and ``int`` with
# |n| ≤ 2^53 leaves, no key starting with an ASCII digit (so no array-index key), nesting
# below ``_PLAIN_DEPTH``, and — checked on the finished text — no character ≥ U+D800 in any
# key or string. For such an event:
#
# * the text: ``stable_json`` orders keys by UTF-16 code units with array-index keys first;
#   with no digit-leading key and no character ≥ U+D800 that is Python's ``sorted``, which is
#   what the C encoder with ``sort_keys`` does; both escape with ``encode_basestring`` and
#   write ints with ``int.__repr__``; ``_finish`` has no surrogate to fix. Same bytes.
# * the round trip: ``parse_json`` of that text gives back every leaf with its type and value
#   (no float, no unsafe int, no surrogate), so it is the event itself up to key order.
#   ``decode_runtime_event`` is idempotent on its own output (every checker returns its input
#   unchanged when given a value it produced, and the text normalisation is idempotent), so
#   the second decode yields the event again: the strict equality of step (4) holds.
# * the value returned: as the second decode would build it, i.e. every object in the text's
#   (sorted) key order, except a ``text`` content object, which the normaliser always builds
#   in its own fixed order (the first decode's object already has it).
#
# Anything else — floats, big ints, digit keys, astral or surrogate characters, other
# container types — takes the full round trip, which also produces the errors.
# ``tests/maka_ref/events/test_encode_fastpath.py`` checks both paths give identical results.

_PLAIN_DEPTH = 128
_MAX_SAFE_INT = 2**53
_DIGITS = frozenset("0123456789")

#: Tests switch this off to compare with the full round trip.
FAST_PATH_ENABLED = True


class _NotPlain(Exception):
    pass


def _plain_image(value: Any, depth: int) -> Any:
    """``value`` re-built in sorted key order; raises :class:`_NotPlain` (see above).

    Written for speed (it runs on every event the store writes): leaves are tested inline,
    only containers recurse, and an object whose keys are already sorted and whose values
    come back unchanged is returned as it is (it *is* its own image: same keys, same order,
    same values, and immutable)."""
    t = type(value)
    if t is FrozenDict:
        if depth >= _PLAIN_DEPTH:
            raise _NotPlain
        keys = list(value)
        ordered = sorted(keys)
        same = ordered == keys
        out = {}
        for key in ordered:
            if type(key) is not str or key[:1] in _DIGITS:
                raise _NotPlain
            item = value[key]
            ti = type(item)
            if ti is str or ti is bool or item is None:
                pass
            elif ti is int:
                if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                    raise _NotPlain
            else:
                image = _plain_image(item, depth + 1)
                if image is not item:
                    same = False
                item = image
            out[key] = item
        if same:
            return value
        result = _new_dict(FrozenDict)
        _init_dict(result, out)
        return result
    if t is str or t is bool or value is None:
        return value
    if t is int:
        if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            return value
        raise _NotPlain
    if t is FrozenList:
        if depth >= _PLAIN_DEPTH:
            raise _NotPlain
        return frozen_list([
            item if type(item) is str else _plain_image(item, depth + 1) for item in list.__iter__(value)
        ])
    raise _NotPlain


_new_dict = dict.__new__
_init_dict = dict.__init__


def _fast_encode(event: FrozenDict) -> EncodedRuntimeEvent | None:
    """The encoding of a plain decoded event, or None (use the full round trip)."""
    try:
        image = _plain_image(event, 0)
        content = dict.get(event, "content")
        if type(content) is FrozenDict and dict.get(content, "kind") == CONTENT_KIND_TEXT:
            # The normaliser's key order, as in the second decode (its values sorted as usual).
            rebuilt = frozen_dict({key: _plain_image(item, 2) for key, item in dict.items(content)})
            image = frozen_dict({key: (rebuilt if key == "content" else item) for key, item in dict.items(image)})
        text = _sorted_compact(image)
    except (_NotPlain, RecursionError, TypeError, ValueError):
        return None
    if text.isascii() or max(text) < "\ud800":
        return EncodedRuntimeEvent(event=image, canonical_json=text)
    return None


def _is_plain(value: Any, depth: int) -> bool:
    """True iff ``value`` is plain (see "fast path"), without building anything."""
    t = type(value)
    if t is FrozenDict:
        if depth >= _PLAIN_DEPTH:
            return False
        for key, item in dict.items(value):
            if type(key) is not str or key[:1] in _DIGITS:
                return False
            ti = type(item)
            if ti is str or ti is bool or item is None:
                continue
            if ti is int:
                if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                    return False
            elif not _is_plain(item, depth + 1):
                return False
        return True
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT
    if t is FrozenList:
        if depth >= _PLAIN_DEPTH:
            return False
        return all(type(item) is str or _is_plain(item, depth + 1) for item in list.__iter__(value))
    return False


def _fast_encode_unordered(event: FrozenDict) -> EncodedRuntimeEvent | None:
    """The canonical text of a plain decoded event, paired with the decoded event itself
    (its key order is the decoder's, not the text's), or None (use the full round trip)."""
    try:
        if not _is_plain(event, 0):
            return None
        text = _sorted_compact(event)
    except (RecursionError, TypeError, ValueError):
        return None
    if text.isascii() or max(text) < "\ud800":
        return EncodedRuntimeEvent(event=event, canonical_json=text)
    return None


def encode_runtime_event(value: Any, *, ordered: bool = True) -> EncodedRuntimeEvent:
    """Decode, serialise canonically and prove the bytes round-trip (§2.2).

    Raises :class:`RuntimeEventSchemaError` when ``value`` does not decode and
    :class:`RuntimeEventNotSerializableError` when the decoded event has no lossless
    canonical JSON. A plain event (see "fast path") skips the parse and second decode.

    ``ordered=False`` (the store's tool writers, which never look at key order): a plain
    event comes back as decoded, in the decoder's key order, instead of re-built in the
    text's order. Same canonical text, same errors, and an event equal to the ordered one
    key by key (the fast-path argument: the second decode gives back every leaf unchanged);
    only the iteration order of its objects differs. Not plain: exactly the ordered result.
    """
    event = decode_runtime_event(value)
    if FAST_PATH_ENABLED:
        fast = _fast_encode(event) if ordered else _fast_encode_unordered(event)
        if fast is not None:
            return fast
    try:
        canonical_json = stable_json(event, negative_zero="reject")
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise RuntimeEventNotSerializableError(detail=f"stable_json refused the event: {exc}") from None
    try:
        round_tripped = decode_runtime_event(parse_json(canonical_json))
    except (ValueError, TypeError, RecursionError) as exc:
        # RuntimeEventSchemaError and InvalidJSONTextError are ValueErrors: the bytes do not
        # decode back to an event, so they are not a lossless representation.
        raise RuntimeEventNotSerializableError(detail=f"canonical JSON does not decode back: {exc}") from None
    try:
        same = json_strict_equal(event, round_tripped)
    except RecursionError:
        same = False
    if not same:
        raise RuntimeEventNotSerializableError(detail="canonical JSON decodes to a different event")
    return EncodedRuntimeEvent(event=round_tripped, canonical_json=canonical_json)


def canonical_event_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (same errors as :func:`encode_runtime_event`)."""
    return encode_runtime_event(value).canonical_json
