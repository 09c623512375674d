"""Value-level helpers of the RuntimeEvent decoder (spec 10 §1, §2.1, §2.4).

Why a module of its own: these are the leaf rules every schema table relies on — what counts
as a finite number or a safe integer under JavaScript double semantics, how long a string is
in UTF-8 bytes as the anchor measures it, what a sha256 digest looks like, and how a
free-form JSON value is validated and deep-frozen in one pass.

Choices that matter for speed and safety (the store decodes every row):

* frozen containers are built with :func:`frozen_dict` / :func:`frozen_list`, which skip
  ``FrozenDict.__init__``'s re-freezing copy because every child is already frozen here;
* containers are read through the base-class methods (``dict.items(x)``, ``list.__iter__``),
  so a ``dict``/``list`` subclass cannot rewrite what we read (the Python analogue of the
  anchor's "accessors / custom serialization hooks");
* scalars must be *exactly* ``str``/``int``/``float``/``bool``/``None`` — ``bool`` is never
  a number, subclasses (``IntEnum``, numpy scalars, ``str`` subclasses) are rejected;
* free-form JSON (``args``, ``result``, ``stateDelta``…) may nest at most
  :data:`MAX_JSON_DEPTH` levels, which also turns reference cycles into a schema error;
* the path for ``detail`` is built only when something fails.

Depends on: ``_codec.frozen`` (container types), ``_errors``, ``_events.constants``.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events.constants import MAX_SAFE_INTEGER, SHA256_DIGEST_LENGTH, SHA256_DIGEST_PREFIX

#: Deepest nesting accepted inside one free-form JSON value (documented choice, see
#: docs/choices/events.md). Far above real payloads, far below Python's recursion limit.
MAX_JSON_DEPTH = 256

_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_HEX_DIGITS = "0123456789abcdef"


def fail(path: str, what: str) -> NoReturn:
    """Raise the one decode error; the message is fixed, ``detail`` says where and why."""
    raise RuntimeEventSchemaError(detail=f"{path}: {what}")


def frozen_dict(items: dict[str, Any]) -> FrozenDict:
    """Wrap a dict whose values are already frozen, without a second deep copy."""
    result = dict.__new__(FrozenDict)
    dict.__init__(result, items)
    return result


def frozen_list(items: list[Any]) -> FrozenList:
    """Wrap a list whose items are already frozen, without a second deep copy."""
    result = list.__new__(FrozenList)
    list.__init__(result, items)
    return result


def show_key(key: str) -> str:
    """A short printable form of an arbitrary key for ``detail`` messages."""
    return json.dumps(key[:64] + ("…" if len(key) > 64 else ""))


# ---------------------------------------------------------------------------------------
# Numbers, strings, digests
# ---------------------------------------------------------------------------------------


def is_finite_number(value: Any) -> bool:
    """A JSON number that is a finite double (JavaScript ``Number.isFinite``); never a bool.

    An ``int`` too large for a double counts as non-finite (JavaScript would read it as
    ``Infinity``); ``float(int)`` rounds exactly like a JavaScript numeric literal.
    """
    cls = type(value)
    if cls is float:
        return math.isfinite(value)
    if cls is int:
        try:
            float(value)
        except OverflowError:
            return False
        return True
    return False


def is_safe_integer(value: Any) -> bool:
    """JavaScript ``Number.isSafeInteger``: integral, |x| ≤ 2^53−1; ``1.0`` counts, ``True`` not."""
    cls = type(value)
    if cls is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if cls is float:
        return value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return False


def utf8_length(text: str) -> int:
    """Bytes of ``text`` as JavaScript's ``TextEncoder`` would write them.

    A surrogate pair stored as two Python code points counts as one 4-byte character and a
    lone surrogate counts as U+FFFD (3 bytes), exactly as in the anchor.
    """
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return len(joined.encode("utf-8"))


def is_sha256_digest(value: Any) -> bool:
    """``sha256:`` followed by exactly 64 lowercase hex characters (spec 10 §1.3.2)."""
    return (
        type(value) is str
        and len(value) == SHA256_DIGEST_LENGTH
        and value.startswith(SHA256_DIGEST_PREFIX)
        and not value[len(SHA256_DIGEST_PREFIX) :].strip(_HEX_DIGITS)
    )


# ---------------------------------------------------------------------------------------
# Free-form JSON values
# ---------------------------------------------------------------------------------------


class _Bad(Exception):
    """Internal: a free-form value failed; ``segments`` collect the path on the way out."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        self.segments: list[str | int] = []


def _freeze(value: Any, depth: int) -> Any:
    cls = type(value)
    if cls in _SCALAR_TYPES:
        return value
    if issubclass(type(value), dict):
        if depth >= MAX_JSON_DEPTH:
            raise _Bad(f"nested deeper than {MAX_JSON_DEPTH} levels (or cyclic)")
        out: dict[str, Any] = {}
        changed = cls is not FrozenDict
        for key, item in dict.items(value):
            if type(key) is not str:
                raise _Bad(f"object key of type {type(key).__name__} (keys must be strings)")
            if type(item) not in _SCALAR_TYPES:
                try:
                    frozen = _freeze(item, depth + 1)
                except _Bad as bad:
                    bad.segments.append(key)
                    raise
                changed = changed or frozen is not item
                item = frozen
            out[key] = item
        return frozen_dict(out) if changed else value
    if issubclass(type(value), list):
        if depth >= MAX_JSON_DEPTH:
            raise _Bad(f"nested deeper than {MAX_JSON_DEPTH} levels (or cyclic)")
        items: list[Any] = []
        changed = cls is not FrozenList
        for index, item in enumerate(list.__iter__(value)):
            if type(item) not in _SCALAR_TYPES:
                try:
                    frozen = _freeze(item, depth + 1)
                except _Bad as bad:
                    bad.segments.append(index)
                    raise
                changed = changed or frozen is not item
                item = frozen
            items.append(item)
        return frozen_list(items) if changed else value
    raise _Bad(f"{cls.__name__} is not a JSON value")


def _render(path: str, segments: list[str | int]) -> str:
    parts = [path]
    for segment in reversed(segments):
        if type(segment) is int:
            parts.append(f"[{segment}]")
        elif segment.isidentifier():
            parts.append(f".{segment}")
        else:
            parts.append(f"[{show_key(segment)}]")
    return "".join(parts)


def freeze_json(value: Any, path: str) -> Any:
    """Validate that ``value`` is a JSON value (any shape) and return it deep-frozen.

    Non-finite floats and ``-0.0`` are JSON-typed numbers and pass here: like the anchor,
    decode is structural and the encoder's lossless round trip refuses them (§2.2, §2.4).
    """
    try:
        return _freeze(value, 0)
    except _Bad as bad:
        fail(_render(path, bad.segments), bad.what)
