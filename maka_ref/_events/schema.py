"""``decode_runtime_event``: the RuntimeEvent closed schema and normalisation (spec 10 §2.1).

Why it matters: decoding is the gate every persisted or recovered fact passes through. Its
two guarantees are what the scanner, resolver and planners rely on:

1. anything that decodes satisfies §1.1–§1.4 exactly (closed key sets at every level, closed
   enums, digest formats, recovery facts per §5.1, the marker and dispatch protocol strings,
   ``permissionClosureAccepted`` alone, the continuation-start event shape of §1.3.2), and
   optional fields are *absent*, never ``null``;
2. the result is deep-frozen and normalised (§2.1 step 2), so equal facts are equal values.

Any failure — for **any** Python input: non-dicts, non-string keys, cycles, deep nesting,
bytes, hostile subclasses — raises :class:`RuntimeEventSchemaError` with the fixed message
"Invalid RuntimeEvent schema" and a ``detail`` of the form ``"<path>: <what>"``; nothing else
escapes.

Depends on: ``_events.checkers``, ``_events.content``, ``_events.actions``,
``_events.constants``, ``_errors``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._codec.frozen import FrozenDict
from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events.actions import decode_actions
from maka_ref._events.checkers import (
    Checker,
    check_bool,
    check_digest,
    check_finite_number,
    check_nonempty_str,
    check_nonnegative_safe_integer,
    check_str,
    fail,
    object_of,
    one_of,
)
from maka_ref._events.content import decode_content
from maka_ref._events.constants import (
    AUTHORS,
    MODEL_VISIBILITIES,
    ORIGINS,
    REF_STRING_KEYS,
    ROLES,
    STATUSES,
)

__all__ = ["decode_runtime_event"]

_ROOT = "$"

_REFS_OPTIONAL: dict[str, Checker] = {
    **{key: check_str for key in REF_STRING_KEYS},
    "sourceMessageDigest": check_digest,
    "sourceRuntimeEventHighWater": check_nonnegative_safe_integer,
}


def _refs(value: Any, path: str) -> FrozenDict:
    """§1.4: every key optional, unknown keys rejected."""
    return object_of(value, path, {}, _REFS_OPTIONAL)


_ENVELOPE_REQUIRED: dict[str, Checker] = {
    "id": check_nonempty_str,
    "invocationId": check_nonempty_str,
    "runId": check_nonempty_str,
    "sessionId": check_nonempty_str,
    "turnId": check_nonempty_str,
    "ts": check_finite_number,
    "partial": check_bool,
    "role": one_of(ROLES),
    "author": one_of(AUTHORS),
}
_ENVELOPE_OPTIONAL: dict[str, Checker] = {
    "branch": check_str,
    "origin": one_of(ORIGINS),
    "modelVisibility": one_of(MODEL_VISIBILITIES),
    "status": one_of(STATUSES),
    "content": decode_content,
    "actions": decode_actions,
    "refs": _refs,
}


def _decode(value: Any) -> FrozenDict:
    # The *carrier* of a continuation start (system/system, not partial, no content or status,
    # actions exactly {continuationStart[, runtimeProtocol]}, the marker only on a
    # runtime_admission start; spec 10 §1.3.2) is checked by the store's start writer, not
    # here: upstream's decoder accepts any carrier and its store refuses a wrong one
    # (decodeRuntimeEvent vs assertContinuationStartEvent, storage/src/sqlite-runtime-store.ts
    # :3245; its store test builds such an event and expects the *writer* to reject it).
    # docs/choices/events.md, "Continuation-start carrier".
    return object_of(value, _ROOT, _ENVELOPE_REQUIRED, _ENVELOPE_OPTIONAL)


def decode_runtime_event(value: Any) -> FrozenDict:
    """Validate ``value`` as a RuntimeEvent and return it normalised and deep-frozen.

    Raises :class:`RuntimeEventSchemaError` ("Invalid RuntimeEvent schema") and nothing else.
    """
    try:
        return _decode(value)
    except RuntimeEventSchemaError:
        raise
    except RecursionError:
        raise RuntimeEventSchemaError(detail=f"{_ROOT}: nested too deeply to decode") from None
    except Exception as exc:  # defensive net: hostile objects must not leak other errors
        raise RuntimeEventSchemaError(detail=f"{_ROOT}: undecodable value ({type(exc).__name__})") from None
