"""Garbage event lists for never-raise / never-mutate properties.

Healthy events mixed with wrong-typed and unhashable fields, random JSON, ``None``, NaN and
opaque objects, chosen so that ``copy.deepcopy`` keeps every leaf equal to itself.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._strategies.constants import T1
from maka_ref.testing._strategies.ledgers import ledgers
from maka_ref.testing._strategies.values import json_values


class _Opaque:
    """A non-JSON object that survives ``copy.deepcopy`` as itself (so equality checks of a
    snapshot against the original still hold)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Opaque:
        return self

    def __repr__(self) -> str:
        return "<opaque>"


_OPAQUE = _Opaque()
_NAN = float("nan")

_WRONG_VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    1.5,
    True,
    False,
    "",
    "x",
    T1,
    [],
    {},
    [None],
    {"kind": "function_call"},
    {"toolBoundary": T1},
    _NAN,
    float("inf"),
    2**70,
    10**400,
    _OPAQUE,
    b"bytes",
    ("tuple",),
    frozenset({1}),
    {1: "non-str key"},
    "\ud800",
)

_GARBAGE_PATHS: tuple[tuple[str, ...], ...] = (
    ("id",),
    ("invocationId",),
    ("runId",),
    ("sessionId",),
    ("turnId",),
    ("ts",),
    ("partial",),
    ("role",),
    ("author",),
    ("status",),
    ("branch",),
    ("modelVisibility",),
    ("content",),
    ("content", "kind"),
    ("content", "id"),
    ("content", "name"),
    ("content", "args"),
    ("content", "result"),
    ("content", "isError"),
    ("actions",),
    ("actions", "runtimeProtocol"),
    ("actions", "runtimeProtocol", "toolBoundary"),
    ("actions", "toolDispatch"),
    ("actions", "toolDispatch", "operationId"),
    ("actions", "toolDispatch", "providerToolCallId"),
    ("actions", "toolDispatch", "toolName"),
    ("actions", "toolDispatch", "canonicalArgsHash"),
    ("actions", "toolDispatch", "recoveryMode"),
    ("actions", "toolRecovery"),
    ("actions", "toolRecovery", "kind"),
    ("actions", "toolRecovery", "payload"),
    ("actions", "toolRecovery", "payload", "operationId"),
    ("actions", "toolRecovery", "payload", "evidenceEventIds"),
    ("actions", "toolRecovery", "payload", "outcomeEventId"),
    ("actions", "toolRecovery", "payload", "disposition"),
    ("actions", "endInvocation"),
    ("actions", "stateDelta"),
    ("refs",),
    ("refs", "operationId"),
    ("refs", "toolCallId"),
    ("refs", "parentToolCallId"),
)


def _set_path(event: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = event
    for key in path[:-1]:
        child = node.get(key) if isinstance(node, dict) else None
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def _decode_or_none(event: dict[str, Any]) -> Any:
    try:
        from maka_ref._events.schema import decode_runtime_event
    except ImportError:  # pragma: no cover - the events layer is part of the package
        return None
    try:
        return decode_runtime_event(event)
    except Exception:  # noqa: BLE001 - any refusal just means "keep the raw dict"
        return None


def _wrong_values() -> st.SearchStrategy[Any]:
    # A fresh copy per draw, so no mutable value is shared between examples (NaN and the
    # opaque object survive deepcopy as themselves).
    return st.sampled_from(_WRONG_VALUES).map(copy.deepcopy)


@st.composite
def garbage_event_lists(draw: Callable[[Any], Any], max_extras: int = 4) -> list[Any]:
    """Lists mixing healthy events (raw and decoded/frozen), events with wrong-typed or
    unhashable fields, random JSON values, ``None`` and non-JSON Python objects.

    Non-JSON leaves are chosen so that ``copy.deepcopy`` keeps them equal (NaN and opaque
    objects are shared, not copied), which lets never-mutate properties compare a snapshot.
    """
    base = draw(ledgers(max_turns=2, max_calls=2))
    out: list[Any] = []
    for e in base.events:
        action = draw(st.sampled_from(("keep", "keep", "decoded", "wrong_field", "wrong_field", "drop_key", "replace")))
        if action == "keep":
            out.append(e)
        elif action == "decoded":
            decoded = _decode_or_none(e)
            out.append(decoded if decoded is not None else e)
        elif action == "wrong_field":
            bad = copy.deepcopy(e)
            for _ in range(draw(st.integers(1, 3))):
                _set_path(bad, draw(st.sampled_from(_GARBAGE_PATHS)), draw(_wrong_values()))
            out.append(bad)
        elif action == "drop_key":
            bad = copy.deepcopy(e)
            key = draw(st.sampled_from(sorted(bad)))
            del bad[key]
            out.append(bad)
        else:
            out.append(draw(_wrong_values()))
    extras = draw(
        st.lists(
            st.one_of(
                json_values(max_leaves=6),
                _wrong_values(),
                st.dictionaries(st.sampled_from([p[0] for p in _GARBAGE_PATHS]), _wrong_values(), max_size=6),
            ),
            max_size=max_extras,
        )
    )
    for x in extras:
        out.insert(draw(st.integers(0, len(out))), x)
    return out
