"""Defensive readers of the Phase 0 planner's untrusted input (spec 20 §1).

Why a module of its own: ``build_resume_plan`` never raises, whatever it is given, so every
read of the supplied ledger, its events and the expected high-water goes through these small
helpers, which the projection and the diagnostics step share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__: list[str] = []  # private helpers of the planner, imported by name


def _as_event_tuple(events: Any) -> tuple[tuple[Any, ...], bool]:
    """The supplied ledger as a tuple of the very same objects, and whether it *is* a ledger.

    A tuple is used as is; any other iterable (list, generator, ...) is read once. A value that
    is not a ledger (``None``, a number, a string, a single mapping, a non-iterable, an
    iterator that fails) becomes ``(value,)`` and is reported ``False``: the plan then keeps it
    as its one runtime event, lets the resolver judge the original value (which it reports as
    uninterpretable corruption) and replays nothing.
    """
    if type(events) is tuple:
        return events, True
    if type(events) is list:
        return tuple(events), True
    if events is None or isinstance(events, (str, bytes, bytearray, Mapping)):
        return (events,), False
    try:
        return tuple(events), True
    except Exception:  # not iterable, or an iterator that fails: never raise (spec 20 §1)
        return (events,), False


_get = dict.get  # base-class reads: a dict subclass cannot make them raise


def _str_or_none(value: Any) -> str | None:
    """A non-empty ``str`` as is; anything else (absent, empty, wrong type) as None."""
    return value if type(value) is str and value else None


def _content_of(event: Any) -> dict[str, Any] | None:
    if not isinstance(event, dict):
        return None
    content = _get(event, "content")
    return content if isinstance(content, dict) else None


def _high_water_mismatch(expected: Any, actual: int) -> bool:
    """``expected !== actual`` with JavaScript number semantics (a bool is not a number)."""
    if expected is None:
        return False
    if type(expected) is not int and type(expected) is not float:
        return True  # bool, str, None-like wrappers, subclasses: never equal to a JS number
    return expected != actual
