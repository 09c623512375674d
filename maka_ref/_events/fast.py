"""``fast_decode_event``: one ledger line to a decoded RuntimeEvent at C speed, or ``None``.

Why: on the restart path (``maka-ref resolve``/``plan``, the store's reads, ``repair``,
``inspect``) decoding — ``parse_json`` then the closed-schema walk of
:func:`~maka_ref._events.schema.decode_runtime_event` — cost more than parsing and
resolving together (issue 18, docs/performance.md). Here ``msgspec`` parses the line twice
in C: once against a typed model of the *common* event shapes (closed structs, literal
enums, digest patterns: the schema check), once into plain values (which keep the line's key
order, as the exact path does). A small builder then freezes those values the way the exact
decoder would.

The contract is one-sided and is what makes this safe: a result is returned only when it is
**identical** to ``decode_runtime_event(parse_json(text))`` — same value, same key order,
same types (``int`` stays ``int``) — and ``None`` otherwise, for the caller to take the
exact path, which then produces the exact value or the exact error. ``None`` is returned for
anything not proven: every msgspec error (invalid JSON, lone surrogates, ``1e400``, a shape
the model does not cover, a value the model refuses even if the exact schema would accept
it), any text that *might* hold an integer beyond 2^53 or a ``-0`` (msgspec reads them as
exact ints, JavaScript and ``parse_json`` as doubles), deep nesting, and a duplicated content
``kind``. The model is deliberately narrower than the schema: rarer shapes (attachments,
recovery facts, continuation starts, permissions…) always take the exact path. A
differential property test (tests/maka_ref/events/test_fast.py) pins fast = exact.

Depends on: ``msgspec`` (third party), ``_events.checkers``, ``_events.normalize``,
``_events.constants``. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from maka_ref._codec.frozen import FrozenDict
from maka_ref._events.checkers import frozen_dict, frozen_list
from maka_ref._events.constants import (
    AUTHORS,
    CONTENT_KINDS,
    MODEL_VISIBILITIES,
    ORIGINS,
    RECOVERY_MODES,
    REF_STRING_KEYS,
    ROLES,
    STATUSES,
    T1_PROTOCOL,
)
from maka_ref._events.normalize import normalize_text_content

__all__ = ["fast_decode_event"]

_UNSET = msgspec.UNSET
_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_Digest = Annotated[str, msgspec.Meta(pattern="^sha256:[0-9a-f]{64}$")]
# Safe integers only as ints: a float spelling (``3.0``) is left to the exact path.
_SafeUInt = Annotated[int, msgspec.Meta(ge=0, le=2**53 - 1)]


def _lit(values: tuple[str, ...]) -> Any:
    return Literal[values]  # type: ignore[valid-type]


class _Closed(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Every model object is closed; optional fields default to ``UNSET`` (absent ≠ null)."""


class _Text(_Closed, tag_field="kind", tag="text"):
    text: str
    displayText: str | msgspec.UnsetType = _UNSET
    steering: Literal[True] | msgspec.UnsetType = _UNSET


class _Thinking(_Closed, tag_field="kind", tag="thinking"):
    text: str
    signature: str | msgspec.UnsetType = _UNSET


class _Call(_Closed, tag_field="kind", tag="function_call"):
    id: str
    name: str
    args: Any
    providerExecuted: bool | msgspec.UnsetType = _UNSET


class _Response(_Closed, tag_field="kind", tag="function_response"):
    id: str
    name: str
    result: Any
    isError: bool | msgspec.UnsetType = _UNSET
    providerExecuted: bool | msgspec.UnsetType = _UNSET


class _Error(_Closed, tag_field="kind", tag="error"):
    message: str
    code: str | msgspec.UnsetType = _UNSET
    reason: str | msgspec.UnsetType = _UNSET


class _Dispatch(_Closed):
    protocol: Literal[T1_PROTOCOL]  # type: ignore[valid-type]
    operationId: str
    providerToolCallId: str
    toolName: str
    canonicalArgsHash: str
    recoveryMode: _lit(RECOVERY_MODES)  # type: ignore[valid-type]


class _Protocol(_Closed):
    toolBoundary: Literal[T1_PROTOCOL]  # type: ignore[valid-type]


class _Actions(_Closed):
    toolDispatch: _Dispatch | msgspec.UnsetType = _UNSET
    runtimeProtocol: _Protocol | msgspec.UnsetType = _UNSET


_Refs = msgspec.defstruct(
    "_Refs",
    [(key, str | msgspec.UnsetType, _UNSET) for key in REF_STRING_KEYS]
    + [
        ("sourceMessageDigest", _Digest | msgspec.UnsetType, _UNSET),
        ("sourceRuntimeEventHighWater", _SafeUInt | msgspec.UnsetType, _UNSET),
    ],
    bases=(_Closed,),
)


class _Event(_Closed):
    id: _NonEmpty
    invocationId: _NonEmpty
    runId: _NonEmpty
    sessionId: _NonEmpty
    turnId: _NonEmpty
    # ``ts`` as an int only: a float may be ``inf`` or ``-0.0``; the exact path decides.
    ts: Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)]
    partial: bool
    role: _lit(ROLES)  # type: ignore[valid-type]
    author: _lit(AUTHORS)  # type: ignore[valid-type]
    branch: str | msgspec.UnsetType = _UNSET
    origin: _lit(ORIGINS) | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]
    modelVisibility: _lit(MODEL_VISIBILITIES) | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]
    status: _lit(STATUSES) | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]
    content: _Text | _Thinking | _Call | _Response | _Error | msgspec.UnsetType = _UNSET
    actions: _Actions | msgspec.UnsetType = _UNSET
    refs: _Refs | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]


_CHECK = msgspec.json.Decoder(_Event)
_PLAIN = msgspec.json.Decoder()

#: ``-0`` after a JSON value separator: msgspec reads it as the int ``0``, ``parse_json`` (like
#: JavaScript) as ``-0.0``. Searched only when the line holds ``-0`` at all (a C substring
#: test); it also matches inside strings (``"a:-0"``): those lines just take the exact path.
_NEGATIVE_ZERO = re.compile(r"[:\[,]\s*-0")
#: ``parse_json``'s nesting cap (500) and ``freeze_json``'s (256) are far above any modelled
#: shape; a line with this many brackets takes the exact path, which owns the depth rules.
_MAX_BRACKETS = 200
_MAX_SAFE = 2**53

_ENUMS: dict[str, str] = {
    member: member
    for members in (ROLES, AUTHORS, ORIGINS, MODEL_VISIBILITIES, STATUSES, RECOVERY_MODES, (T1_PROTOCOL,))
    for member in members
}
_SHARED_FIELDS = ("invocationId", "runId", "sessionId", "turnId")
_OPTIONAL_ENUMS = ("origin", "modelVisibility", "status")
_CONTENT_KINDS = {kind: kind for kind in CONTENT_KINDS}
_CONTENT_KIND = {_Text: "text", _Thinking: "thinking", _Call: "function_call", _Response: "function_response", _Error: "error"}


class _Unsafe(Exception):
    """Internal: a free-form value holds an integer JavaScript would read as a double."""


def _freeze(value: Any) -> Any:
    """``freeze_json`` of a msgspec value (no other types, depth already bounded), refusing
    integers beyond 2^53, which ``parse_json`` would have made floats. An object or array of
    scalars (most tool arguments) is wrapped without a per-item copy."""
    cls = type(value)
    if cls is dict:
        for item in value.values():
            kind = type(item)
            if kind is dict or kind is list or (kind is int and not -_MAX_SAFE <= item <= _MAX_SAFE):
                return frozen_dict({key: _freeze(item) for key, item in value.items()})
        return frozen_dict(value)
    if cls is list:
        return frozen_list([_freeze(item) for item in value])
    if cls is int and not -_MAX_SAFE <= value <= _MAX_SAFE:
        raise _Unsafe
    return value


def _content(value: dict[str, Any]) -> Any:
    value["kind"] = _CONTENT_KINDS[value["kind"]]
    if "args" in value:
        value["args"] = _freeze(value["args"])
    if "result" in value:
        value["result"] = _freeze(value["result"])
    if value["kind"] == "text":
        return normalize_text_content(value)
    return frozen_dict(value)


def _actions(value: dict[str, Any]) -> FrozenDict:
    dispatch = value.get("toolDispatch")
    if dispatch is not None:
        dispatch["protocol"] = T1_PROTOCOL
        dispatch["recoveryMode"] = _ENUMS[dispatch["recoveryMode"]]
        value["toolDispatch"] = frozen_dict(dispatch)
    protocol = value.get("runtimeProtocol")
    if protocol is not None:
        value["runtimeProtocol"] = frozen_dict({"toolBoundary": T1_PROTOCOL})
    return frozen_dict(value)


def fast_decode_event(text: str, shared: dict[str, str] | None = None) -> FrozenDict | None:
    """``decode_runtime_event(parse_json(text))`` when that is proven identical, else ``None``.

    Never raises for a ``str``: ``None`` means "take the exact path". ``shared``, when given,
    maps identity strings (``invocationId``, ``runId``, ``sessionId``, ``turnId``) already
    seen to one object, which this event then reuses (equal values; a large ledger holds one
    copy per run instead of four per event)."""
    try:
        if "-0" in text and _NEGATIVE_ZERO.search(text):
            return None
        if text.count("[") + text.count("{") > _MAX_BRACKETS:
            return None
        checked = _CHECK.decode(text)
        event = _PLAIN.decode(text)
        content = checked.content
        if content is not _UNSET:
            if event["content"]["kind"] != _CONTENT_KIND[type(content)]:
                return None  # a duplicated "kind": the model read the first, JSON keeps the last
            event["content"] = _content(event["content"])
        if shared is not None:
            for key in _SHARED_FIELDS:
                value = event[key]
                if len(value) <= 256:
                    event[key] = shared.setdefault(value, value)
        event["role"] = _ENUMS[event["role"]]
        event["author"] = _ENUMS[event["author"]]
        for key in _OPTIONAL_ENUMS:
            if key in event:
                event[key] = _ENUMS[event[key]]
        if checked.actions is not _UNSET:
            event["actions"] = _actions(event["actions"])
        if checked.refs is not _UNSET:
            event["refs"] = frozen_dict(event["refs"])
        return frozen_dict(event)
    except Exception:  # noqa: BLE001 - any doubt: the exact path decides (and reports)
        return None
