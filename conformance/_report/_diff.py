"""The first difference between two JSON values, as a path a person can follow.

Why only the first: a resolver that gets one decision wrong usually gets everything after it
wrong too; the first differing path is the one worth reading, and it keeps reports small.
Equality is :func:`conformance.vectors.json_equal` (the vectors' rule: booleans are not
numbers, ``1 == 1.0``, ``0`` and ``-0.0`` differ), imported lazily so that loading reports
stays cheap.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

__all__ = ["diff_json", "json_path"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def json_path(parts: Sequence[str | int]) -> str:
    """``["a", "b c", 3]`` → ``$.a["b c"][3]`` (JSONPath-style, keys quoted when needed)."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def _is_array(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _first(expected: Any, actual: Any, parts: list[str | int], eq: Any) -> dict[str, Any] | None:
    if expected is actual and not isinstance(expected, float):  # the same object: nothing differs
        return None
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in expected:
            if key not in actual:
                return _found(parts + [str(key)], expected[key], None, missing="actual")
            found = _first(expected[key], actual[key], parts + [str(key)], eq)
            if found:
                return found
        for key in actual:
            if key not in expected:
                return _found(parts + [str(key)], None, actual[key], missing="expected")
        return None
    if _is_array(expected) and _is_array(actual):
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = _first(e, a, parts + [index], eq)
            if found:
                return found
        n = min(len(expected), len(actual))
        if len(expected) > n:
            return _found(parts + [n], expected[n], None, missing="actual")
        if len(actual) > n:
            return _found(parts + [n], None, actual[n], missing="expected")
        return None
    if eq(expected, actual):
        return None
    return _found(parts, expected, actual)


def _found(parts: list[str | int], expected: Any, actual: Any, missing: str | None = None) -> dict:
    diff: dict[str, Any] = {"path": json_path(parts), "expected": expected, "actual": actual}
    if missing:
        # ``None`` alone would be ambiguous with a JSON null; say which side lacks the member.
        diff["missing"] = missing
    return diff


def diff_json(expected: Any, actual: Any) -> dict[str, Any] | None:
    """The first path where ``actual`` differs from ``expected``, or ``None`` if JSON-equal.

    Returns ``{"path": "$.decisions[0].kind", "expected": ..., "actual": ...}``. Objects are
    walked in ``expected``'s key order, then keys only ``actual`` has; arrays index by index,
    then the first extra element. When a member or element exists on one side only, the
    other side is ``None`` and ``"missing"`` is ``"actual"`` or ``"expected"``. Values of
    different JSON types differ at their own path (``$`` for the roots).
    """
    from conformance.vectors import json_equal  # lazy: keeps ``import reports`` cheap

    return _first(expected, actual, [], json_equal)
