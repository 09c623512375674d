"""JSON text in and out, byte-compatible with the JavaScript anchor (spec 10 §2.2–§2.4).

Why this exists: the persisted form of every RuntimeEvent, every digest and every args hash
is *text produced by JavaScript* (``JSON.parse`` / ``JSON.stringify`` over doubles and
UTF-16 strings). Python's ``json`` differs in four ways that change bytes: number model and
layout, key order (two-tier: array-index keys numerically, then UTF-16 code units), handling
of lone surrogates, and what it accepts (NaN, tuples, non-str keys...). This module closes
those gaps:

* ``parse_json`` — one JSON document with JavaScript double semantics (§2.4);
* ``stable_json`` — the canonical text of §2.3 (two-tier key order at every depth);
* ``compact_json`` — the same writer keeping the given key order (args-hash body, §2.6 step 4);
* ``check_strict_json`` — the strict-JSON value check, with a path to the offending value;
* ``ordered_keys`` / ``is_array_index_key`` — the key order of §2.3.

Choices the spec leaves open (documented for docs/spec-choices.md):

* Nesting depth is capped at ``MAX_DEPTH`` (500) containers in both directions: deeper values
  are refused with ``NotStrictJSONError`` (write) / ``InvalidJSONTextError`` (read). JavaScript
  allows more, but Python's recursion limit would otherwise make the outcome depend on the
  caller's stack depth; a fixed cap keeps the behaviour deterministic. A cyclic value is
  reported as such (never as ``RecursionError``).
* ``parse_json`` follows ``JSON.parse`` for number literals that overflow a double: ``1e400``
  parses to ``inf`` (JavaScript: ``Infinity``); the literal words ``NaN``/``Infinity`` are
  invalid text. Such a value is then refused by every writer, as in the anchor.
* Accepted Python types: ``None``, ``bool``, ``int``/``float``/``str`` (subclasses written as
  their base value), ``list`` and ``FrozenList`` only (tuples and other list subclasses are
  refused, §7.1 item 5), any ``dict`` subclass with ``str`` keys (§7.1 item 6).
* A Python ``str`` holding a surrogate pair as two code points is the same UTF-16 string as
  the astral character, so it is written as that character (§2.3). Two keys of one object
  that differ only that way are not detected (JavaScript cannot even represent them).
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import msgspec

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._codec.numbers import format_number
from maka_ref._errors import InvalidJSONTextError, NotStrictJSONError

__all__ = [
    "MAX_DEPTH",
    "NegativeZero",
    "check_strict_json",
    "compact_json",
    "is_array_index_key",
    "iter_answer_json",
    "ordered_keys",
    "parse_json",
    "stable_json",
]

NegativeZero = Literal["reject", "zero"]

#: Maximum container nesting accepted by the writers and by ``parse_json``.
MAX_DEPTH = 500

_MAX_SAFE_INT = 2**53
_MAX_ARRAY_INDEX = 2**32 - 2
_SURROGATE = re.compile("[\ud800-\udfff]")
# The C-accelerated ``json`` string escaper (ensure_ascii=False flavour): its escaping equals
# ECMAScript JSON.stringify for every string without lone surrogates (§2.3).
_escape_str: Callable[[str], str] = json.encoder.encode_basestring


# --------------------------------------------------------------------------- key order (§2.3)


def is_array_index_key(k: str) -> bool:
    """True iff ``k`` is a canonical array index: ``0|[1-9][0-9]*`` with value ≤ 2^32−2."""
    if k == "0":
        return True
    return (
        0 < len(k) <= 10
        and k.isascii()
        and k.isdigit()
        and k[0] != "0"
        and int(k) <= _MAX_ARRAY_INDEX
    )


def _utf16_units(k: str) -> bytes:
    return k.encode("utf-16-be", "surrogatepass")


def ordered_keys(obj: Mapping[str, Any]) -> list[str]:
    """Return the keys of ``obj`` in the two-tier order of spec 10 §2.3.

    Array-index keys first in ascending numeric order, then every other key ascending by
    UTF-16 code units (JavaScript's default string order).
    """
    keys = sorted(obj)  # code-point order
    if keys:
        joined = "".join(keys)
        # Code-point and UTF-16 order differ only when an astral character is involved.
        if not joined.isascii() and max(joined) > "\uffff":
            keys.sort(key=_utf16_units)
    # Keys starting with an ASCII digit form one contiguous run in either order.
    lo = bisect_left(keys, "0")
    if lo == len(keys) or keys[lo][0] > "9":
        return keys
    hi = bisect_left(keys, ":", lo)
    digit_run = keys[lo:hi]
    index_keys = [k for k in digit_run if is_array_index_key(k)]
    if not index_keys:
        return keys
    index_keys.sort(key=int)
    others = [k for k in digit_run if not is_array_index_key(k)]
    return index_keys + keys[:lo] + others + keys[hi:]


# --------------------------------------------------------------------------- parsing (§2.4)


def _parse_int(literal: str) -> int | float:
    # JavaScript reads every number as a double: keep exact ints only where doubles are exact.
    if len(literal) <= 17:  # "-9007199254740992" is 17 characters
        n = int(literal)
        if -_MAX_SAFE_INT <= n <= _MAX_SAFE_INT:
            if n == 0 and literal[0] == "-":
                return -0.0
            return n
    return float(literal)


def _refuse_constant(name: str) -> Any:
    raise InvalidJSONTextError(f"invalid JSON text: {name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_constant=_refuse_constant)


def _nesting_depth(value: Any) -> int:
    """Container nesting depth of a parsed value (iterative: the value may be deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def parse_json(text: str) -> Any:
    """Parse exactly one JSON document with JavaScript double semantics (spec 10 §2.4).

    Integer literals stay ``int`` when |n| ≤ 2^53 and become ``float`` otherwise; ``-0``
    (any spelling) becomes ``-0.0``; lone surrogate escapes are kept. Empty text, trailing
    garbage, ``NaN``/``Infinity`` and any other invalid text raise ``InvalidJSONTextError``.
    """
    if not isinstance(text, str):
        raise InvalidJSONTextError(f"invalid JSON text: expected str, got {type(text).__name__}")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InvalidJSONTextError(
            f"invalid JSON text: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidJSONTextError(
            f"invalid JSON text: nested deeper than {MAX_DEPTH} containers"
        ) from None
    # Cheap pre-check (C speed) so the depth walk only runs on suspicious documents.
    if text.count("[") + text.count("{") > MAX_DEPTH and _nesting_depth(value) > MAX_DEPTH:
        raise InvalidJSONTextError(f"invalid JSON text: nested deeper than {MAX_DEPTH} containers")
    return value


# --------------------------------------------------------------------------- strict JSON check


def _check(value: Any, path: str, depth: int, on_path: set[int], zero_ok: bool) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE_INT:
            try:
                float(value)
            except OverflowError:
                raise NotStrictJSONError("integer overflows a double", detail=path) from None
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotStrictJSONError("number is not finite", detail=path)
        if value == 0.0 and not zero_ok and math.copysign(1.0, value) < 0:
            raise NotStrictJSONError("-0 is not encodable", detail=path)
        return
    is_dict = isinstance(value, dict)
    if not is_dict and type(value) is not list and type(value) is not FrozenList:
        raise NotStrictJSONError(f"{type(value).__name__} is not a JSON value", detail=path)
    if id(value) in on_path:
        raise NotStrictJSONError("value is cyclic", detail=path)
    if depth >= MAX_DEPTH:
        raise NotStrictJSONError(f"nested deeper than {MAX_DEPTH} containers", detail=path)
    on_path.add(id(value))
    if is_dict:
        for key, child in value.items():
            if not isinstance(key, str):
                raise NotStrictJSONError(f"object key {key!r} is not a string", detail=path)
            _check(child, f"{path}/{_pointer_token(key)}", depth + 1, on_path, zero_ok)
    else:
        for i, child in enumerate(value):
            _check(child, f"{path}/{i}", depth + 1, on_path, zero_ok)
    on_path.discard(id(value))


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def check_strict_json(value: Any, *, negative_zero: NegativeZero = "reject") -> None:
    """Raise ``NotStrictJSONError`` unless ``value`` is strict JSON (``detail``: JSON pointer).

    Strict JSON (spec 10 §2.3): ``None``, ``bool``, ``int`` (representable as a finite
    double), finite ``float``, ``str``, ``list``/``FrozenList`` and ``dict`` with ``str`` keys.
    ``negative_zero="reject"`` refuses ``-0.0`` (events, §2.4); ``"zero"`` accepts it
    (args hash, digests). Cycles and nesting beyond ``MAX_DEPTH`` are refused.
    """
    try:
        _check(value, "", 0, set(), _zero_ok(negative_zero))
    except NotStrictJSONError as exc:
        if not exc.detail:
            exc.detail = "(root)"
        raise


def _zero_ok(negative_zero: NegativeZero) -> bool:
    if negative_zero == "reject":
        return False
    if negative_zero == "zero":
        return True
    raise ValueError(f"negative_zero must be 'reject' or 'zero', not {negative_zero!r}")


# --------------------------------------------------------------------------- writing (§2.3)


class _Refused(Exception):
    """Internal: the fast writer met a value it will not write; re-checked for a precise error."""


def _float_text(x: float, zero_ok: bool) -> str:
    if x == 0.0:
        if not zero_ok and math.copysign(1.0, x) < 0:
            raise _Refused
        return "0"
    a = abs(x)
    if x.is_integer():
        # Up to 2^53 the exact integer is also the shortest round-trip digit string.
        return int.__repr__(int(x)) if a <= _MAX_SAFE_INT else format_number(x)
    if 1e-4 <= a < 1e16:
        # Non-integral: Python's repr uses the plain layout here, with JS's shortest digits.
        return float.__repr__(x)
    if a == math.inf or x != x:
        raise _Refused
    return format_number(x)


def _write(value: Any, out: list[str], depth: int, sort: bool, zero_ok: bool) -> None:
    t = type(value)
    if t is str:
        out.append(_escape_str(value))
    elif t is int:
        if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            out.append(int.__repr__(value))
        else:
            out.append(format_number(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif t is float:
        out.append(_float_text(value, zero_ok))
    elif isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise _Refused
        if not value:
            out.append("{}")
            return
        sep = "{"
        if sort:
            for key in ordered_keys(value):
                out.append(sep)
                out.append(_escape_str(key))
                out.append(":")
                _write(value[key], out, depth + 1, sort, zero_ok)
                sep = ","
        else:
            for key, child in value.items():
                out.append(sep)
                out.append(_escape_str(key))  # TypeError for a non-str key
                out.append(":")
                _write(child, out, depth + 1, sort, zero_ok)
                sep = ","
        out.append("}")
    elif t is list or t is FrozenList:
        if depth >= MAX_DEPTH:
            raise _Refused
        if not value:
            out.append("[]")
            return
        sep = "["
        for child in value:
            out.append(sep)
            _write(child, out, depth + 1, sort, zero_ok)
            sep = ","
        out.append("]")
    elif isinstance(value, str):
        out.append(_escape_str(str.__str__(value)))
    elif isinstance(value, bool):
        raise _Refused  # unreachable: bool cannot be subclassed
    elif isinstance(value, int):
        out.append(format_number(int(value)) if abs(value) > _MAX_SAFE_INT else int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float_text(float(value), zero_ok))
    else:
        raise _Refused


def _escape_lone_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _finish(text: str) -> str:
    """Apply §2.3 surrogate rules: join split pairs, escape lone surrogates (lowercase hex)."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    # Raw surrogates only occur inside string literals, so fixing the whole text is safe.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub(_escape_lone_surrogate, text)


def _serialize(value: Any, sort: bool, negative_zero: NegativeZero, depth: int = 0) -> str:
    zero_ok = _zero_ok(negative_zero)
    out: list[str] = []
    try:
        _write(value, out, depth, sort, zero_ok)
    except (_Refused, TypeError, RecursionError, OverflowError, NotStrictJSONError):
        # Slow path only on failure: find the offending value and report its path.
        check_strict_json(value, negative_zero=negative_zero)
        raise  # strict JSON, yet the writer failed: a bug, do not mask it
    return _finish("".join(out))


_INF_MARK = "\x00maka-inf\x00"
_NEG_INF_MARK = "\x00maka-neg-inf\x00"


def _marked_infinities(value: Any) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return _INF_MARK if value > 0 else _NEG_INF_MARK
    if isinstance(value, Mapping):
        return {k: _marked_infinities(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_marked_infinities(v) for v in value]
    return value


def write_with_infinities(write: Callable[[Any], str], value: Any) -> str:
    """``write(value)``, with ±infinity written as ``±1e400``.

    Why: a ledger may hold ``1e400``, which a double parser — JavaScript's, and ours (§2.4) —
    reads as +infinity, so answers about it (a plan's operation args) hold infinity too. JSON
    has no other spelling for it, and ``1e400`` reads back as the same value, so a writer of
    *answers* (the adapter's lines, the CLI's documents — never the canonical form, which
    refuses it) uses that spelling instead of failing. ``write`` is tried as is first; the
    marked copy is built only when it refuses."""
    try:
        return write(value)
    except (ValueError, NotStrictJSONError):  # json.dumps: ValueError; our writers: NotStrictJSONError
        text = write(_marked_infinities(value))
    return text.replace(write(_INF_MARK), "1e400").replace(write(_NEG_INF_MARK), "-1e400")


def iter_answer_json(value: Any, *, split_depth: int = 2) -> Iterator[str]:
    """``write_with_infinities(compact_json(·, negative_zero="zero"), value)`` — the CLI's and
    the adapter's answer text — as consecutive pieces whose concatenation is exactly that text.

    Why pieces: a plan over a large ledger is a document of hundreds of megabytes; built as
    one string it costs its fragments, the joined text and every copy a writer makes. Here
    objects and arrays down to ``split_depth`` are opened and closed in place and every value
    below is written on its own (at its true depth, so the depth limit is the same), so the
    caller can write each piece and drop it. Each piece is a whole JSON value or punctuation,
    so the surrogate rules and the ``±1e400`` spelling (both local to a value) apply to a
    piece exactly as to the whole text."""
    yield from _pieces(value, 0, split_depth)


def _splittable(value: Any, depth: int) -> bool:
    if depth >= MAX_DEPTH or not value:
        return False
    t = type(value)
    if t is list or t is FrozenList:
        return True
    return isinstance(value, dict) and all(type(key) is str for key in value)


#: Answer pieces at most this deep are written by msgspec when :func:`_msgspec_safe`.
FAST_ANSWERS = True
_ENCODE = msgspec.json.Encoder().encode


def _msgspec_safe(value: Any, depth: int) -> bool:
    """True when ``msgspec``'s compact writer gives exactly ``compact_json(value,
    negative_zero="zero")``: only ``str``, ``bool``, ``None``, ints within ±2^53 (their text
    is the same), ``dict``s with ``str`` keys and ``list``/``FrozenList`` — no ``float`` (its
    shortest text is spelled differently from JavaScript's: ``1e16`` vs
    ``10000000000000000``, ``-0.0`` vs ``0``), no subclass of ``str``/``int``, no tuple — within
    the depth limit. String escaping is the same in both (tests/maka_ref/codec/
    test_answer_fast.py); a lone or split surrogate makes msgspec refuse, and the caller then
    takes the exact writer."""
    t = type(value)
    if t is str or value is None or t is bool:
        return True
    if t is int:
        return -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT
    if not (t is dict or t is FrozenDict or t is list or t is FrozenList):
        return False
    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        if level >= MAX_DEPTH:
            return False
        t = type(node)
        if t is dict or t is FrozenDict:  # not other subclasses: they may override items()
            if node and set(map(type, node)) != _ONLY_STR:
                return False
            children: Any = node.values()
        else:
            children = node
        # Type sets are taken at C speed; the loop below only runs for ints and containers.
        kinds = set(map(type, children))
        if kinds <= _LEAF_TYPES:
            continue
        if not kinds <= _SAFE_TYPES:
            return False
        for child in children:
            kind = type(child)
            if kind is int:
                if not -_MAX_SAFE_INT <= child <= _MAX_SAFE_INT:
                    return False
            elif kind is not str and kind is not bool and child is not None:
                stack.append((child, level + 1))
    return True


_ONLY_STR = {str}
_LEAF_TYPES = frozenset({str, bool, type(None)})
_SAFE_TYPES = _LEAF_TYPES | {int, dict, FrozenDict, list, FrozenList}


def _answer_piece(value: Any, depth: int) -> str:
    """One leaf piece of :func:`iter_answer_json`: msgspec (C) when proven identical, else the
    exact writer (issue 18: writing the answer was most of ``maka-ref plan``'s time)."""
    if FAST_ANSWERS and _msgspec_safe(value, depth):
        try:
            return _ENCODE(value).decode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError, msgspec.EncodeError):
            pass  # e.g. a surrogate msgspec cannot write: the exact writer joins or escapes it
    return write_with_infinities(lambda v: _serialize(v, False, "zero", depth), value)


def _pieces(value: Any, depth: int, split_depth: int) -> Iterator[str]:
    if depth >= split_depth or not _splittable(value, depth):
        yield _answer_piece(value, depth)
        return
    if isinstance(value, dict):
        sep = "{"
        for key, child in value.items():
            yield sep + _finish(_escape_str(key)) + ":"
            yield from _pieces(child, depth + 1, split_depth)
            sep = ","
        yield "}"
    else:
        sep = "["
        for child in value:
            yield sep
            yield from _pieces(child, depth + 1, split_depth)
            sep = ","
        yield "]"


def stable_json(value: Any, *, negative_zero: NegativeZero = "reject") -> str:
    """Canonical compact JSON text of spec 10 §2.3 (the persisted, hashed, compared form).

    Two-tier key order at every depth, arrays in order, no whitespace, ECMAScript string
    escaping and number text. ``negative_zero="reject"`` (events) refuses ``-0``;
    ``"zero"`` writes it as ``0`` (args hash, spec 20 digests). Raises ``NotStrictJSONError``.
    """
    return _serialize(value, True, negative_zero)


def compact_json(value: Any, *, negative_zero: NegativeZero = "reject") -> str:
    """Like ``stable_json`` but keeps each object's own key order (spec 10 §2.6 step 4)."""
    return _serialize(value, False, negative_zero)
