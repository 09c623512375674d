"""Derived RuntimeEvent predicates (spec 10 §1.5; spec 20 §0.1, §4.3).

Why they are total functions: the scanner, resolver, planners and startup repair apply them
to events that may never have been decoded (the resolver "must not assume decoding", spec 10
§3, §8 item 22). So every predicate accepts **any** value and never raises: a non-object, a
missing field or a field of the wrong type simply makes the answer ``False`` / ``None``.

Fields are read with ``dict.get`` on the base class and compared only after an exact
``type(x) is str`` / ``is True`` test, so hostile subclasses and unhashable values cannot make
a predicate raise.

Depends on: ``_events.constants``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._events.constants import (
    ALWAYS_VISIBLE_CONTENT_KINDS,
    CONTENT_KIND_TEXT,
    MODEL_VISIBILITY_HIDDEN,
    RUN_STATUS_BY_TERMINAL_STATUS,
    TERMINAL_STATUSES,
)

__all__ = ["has_model_visible_content", "is_partial_event", "is_terminal_event", "terminal_run_status"]

_TERMINAL = frozenset(TERMINAL_STATUSES)
_ALWAYS_VISIBLE = frozenset(ALWAYS_VISIBLE_CONTENT_KINDS)


def _field(value: Any, key: str) -> Any:
    """``value[key]`` if ``value`` is a JSON object holding ``key``, else ``None``."""
    if issubclass(type(value), dict):
        return dict.get(value, key)
    return None


def _status(event: Any) -> str | None:
    status = _field(event, "status")
    return status if type(status) is str else None


def is_terminal_event(event: Any) -> bool:
    """Terminal: ``status`` in completed/failed/aborted/cancelled, or ``actions.endInvocation`` is ``true``.

    ``status: streaming`` and ``endInvocation: false`` are not terminal (§1.5).
    """
    status = _status(event)
    if status is not None and status in _TERMINAL:
        return True
    return _field(_field(event, "actions"), "endInvocation") is True


def is_partial_event(event: Any) -> bool:
    """Partial: ``partial`` is exactly ``true`` (§1.5)."""
    return _field(event, "partial") is True


def has_model_visible_content(event: Any) -> bool:
    """Model-visible content (§1.5): not hidden, has content, and the content kind qualifies.

    ``text`` qualifies iff its ``text`` is a non-empty string; ``thinking``,
    ``function_call`` and ``function_response`` always; ``error`` never. Callers still drop
    partial events from model history.
    """
    visibility = _field(event, "modelVisibility")
    if type(visibility) is str and visibility == MODEL_VISIBILITY_HIDDEN:
        return False
    content = _field(event, "content")
    kind = _field(content, "kind")
    if type(kind) is not str:
        return False
    if kind == CONTENT_KIND_TEXT:
        text = _field(content, "text")
        return type(text) is str and len(text) > 0
    return kind in _ALWAYS_VISIBLE


def terminal_run_status(event: Any) -> str | None:
    """AgentRun status implied by a terminal event's ``status`` (spec 20 §0.1), else ``None``.

    ``completed→completed``, ``failed→failed``, ``aborted→cancelled``, ``cancelled→cancelled``;
    anything else (no status, ``streaming``, an ``endInvocation``-only event, a non-event)
    gives ``None`` — an event with only ``endInvocation`` is not a terminal *fact* (spec 20
    §4.3). For convenience a bare status string is accepted as well.
    """
    status = event if type(event) is str else _status(event)
    if status is None:
        return None
    return RUN_STATUS_BY_TERMINAL_STATUS.get(status)
