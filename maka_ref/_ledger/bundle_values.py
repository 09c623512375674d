"""Tolerant reads of JSON values for the recovery-bundle code (spec 10 §5.3, §5.4).

What: the missing-key sentinel, an empty mapping and helpers that read a value that may not
be a dict (or test JavaScript truthiness) without raising.
Why separate: ``bundle``, ``bundle_types`` and ``bundle_checks`` all read events through
them, so they sit below all three and import nothing of the package.
"""

from __future__ import annotations

from typing import Any, Mapping

_MISSING = object()
_EMPTY: Mapping[str, Any] = {}


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (never raises)."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (int, float)):
        return value == value and value != 0  # NaN and 0 are falsy
    return True


__all__: list[str] = []  # private helpers of the bundle modules only (imported by name)
