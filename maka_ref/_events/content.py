"""``content`` variants of a RuntimeEvent (spec 10 §1.2), closed per ``kind``.

Why separate from the envelope: the content union is the largest part of the schema and the
only part that is normalised (§2.1 step 2), so it is easiest to review on its own.

Exact shapes come from §1.2. The nested text-content payloads (attachments, inline
references, TurnOrigin) are not spelled out by the spec; they are validated by the rule
written down in docs/choices/events.md: object type, the keys the normaliser relies on,
no ``null`` for optional keys, otherwise any JSON value. Quotes are closed because §2.1 names
their exact key set.

Depends on: ``_events.checkers``, ``_events.normalize``, ``_events.constants``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._events.checkers import (
    Checker,
    check_bool,
    check_json,
    check_json_not_null,
    check_json_object,
    check_nonnegative_safe_integer,
    check_str,
    check_true,
    fail,
    freeze_json,
    frozen_list,
    list_of,
    literal,
    object_of,
)
from maka_ref._events.constants import (
    CONTENT_KIND_ERROR,
    CONTENT_KIND_FUNCTION_CALL,
    CONTENT_KIND_FUNCTION_RESPONSE,
    CONTENT_KIND_TEXT,
    CONTENT_KIND_THINKING,
    CONTENT_KINDS,
)
from maka_ref._events.normalize import normalize_text_content

_NONE: dict[str, Checker] = {}


def _attachment(value: Any, path: str) -> Any:
    # ``bytes`` is the one field §2.1 normalises; the anchor requires an integer count.
    return object_of(value, path, _NONE, {"bytes": check_nonnegative_safe_integer}, check_json_not_null)


def _inline_reference(value: Any, path: str) -> Any:
    return object_of(value, path, _NONE, _NONE, check_json_not_null)


def _turn_origin(value: Any, path: str) -> Any:
    # ``kind`` is what the legacy rewrite (§2.1) dispatches on.
    return object_of(value, path, {"kind": check_str}, _NONE, check_json_not_null)


_QUOTE_REQUIRED: dict[str, Checker] = {"text": check_str}
_QUOTE_OPTIONAL: dict[str, Checker] = {"label": check_str, "sourceTurnId": check_str}


def _quote(value: Any, path: str) -> Any:
    return object_of(value, path, _QUOTE_REQUIRED, _QUOTE_OPTIONAL)


def _error_details(value: Any, path: str) -> Any:
    """``details``: an array of strings **or** a free-form object (§1.2)."""
    if issubclass(type(value), list):
        items = list(list.__iter__(value))
        for index, item in enumerate(items):
            if type(item) is not str:
                fail(f"{path}[{index}]", "must be a string")
        return frozen_list(items)
    if issubclass(type(value), dict):
        return freeze_json(value, path)
    fail(path, "must be an array of strings or a JSON object")


def _kind(name: str) -> dict[str, Checker]:
    return {"kind": literal(name)}


#: kind -> (required keys, optional keys). Every table is closed (unknown keys rejected).
_SHAPES: dict[str, tuple[dict[str, Checker], dict[str, Checker]]] = {
    CONTENT_KIND_TEXT: (
        {**_kind(CONTENT_KIND_TEXT), "text": check_str},
        {
            "displayText": check_str,
            "attachments": list_of(_attachment),
            "quotes": list_of(_quote),
            "inlineReferences": list_of(_inline_reference),
            "origin": _turn_origin,
            "steering": check_true,
            "providerOptions": check_json_object,
        },
    ),
    CONTENT_KIND_THINKING: (
        {**_kind(CONTENT_KIND_THINKING), "text": check_str},
        {"signature": check_str, "providerOptions": check_json_object},
    ),
    CONTENT_KIND_FUNCTION_CALL: (
        # ``args`` must be present but may be any JSON value, ``null`` included.
        {**_kind(CONTENT_KIND_FUNCTION_CALL), "id": check_str, "name": check_str, "args": check_json},
        {"providerOptions": check_json_object, "providerExecuted": check_bool},
    ),
    CONTENT_KIND_FUNCTION_RESPONSE: (
        {**_kind(CONTENT_KIND_FUNCTION_RESPONSE), "id": check_str, "name": check_str, "result": check_json},
        {"isError": check_bool, "providerExecuted": check_bool, "providerOutput": check_json},
    ),
    CONTENT_KIND_ERROR: (
        {**_kind(CONTENT_KIND_ERROR), "message": check_str},
        {"code": check_str, "reason": check_str, "details": _error_details},
    ),
}


def decode_content(value: Any, path: str = "$.content") -> Any:
    """Validate one ``content`` object and return it frozen (text content normalised)."""
    if not issubclass(type(value), dict):
        fail(path, "must be a JSON object")
    kind = dict.get(value, "kind")
    if type(kind) is not str or kind not in _SHAPES:
        if not dict.__contains__(value, "kind"):
            fail(f"{path}.kind", "required key is missing")
        fail(f"{path}.kind", f"must be one of {', '.join(CONTENT_KINDS)}")
    required, optional = _SHAPES[kind]
    if kind == CONTENT_KIND_TEXT:
        return normalize_text_content(object_of(value, path, required, optional, build=dict))
    return object_of(value, path, required, optional)
