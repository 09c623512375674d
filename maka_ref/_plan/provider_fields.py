"""Defensive readers for RuntimeEvent fields, used by the provider-item projector.

Split out of :mod:`maka_ref._plan.provider_items` because the projector must accept garbage
events without raising: these tiny type-checking accessors keep that tolerance in one
place instead of inlined ``isinstance`` checks. Pure: no I/O, clock, randomness or state.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

__all__: list[str] = []  # private helpers of the provider-item projector, imported by name


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _is_finite_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _refs_str(event: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string ref (JS truthiness: an empty string counts as absent)."""
    refs = _mapping(event.get("refs"))
    value = refs.get(key) if refs is not None else None
    return value if isinstance(value, str) and value else None
