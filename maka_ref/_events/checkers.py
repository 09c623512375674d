"""Schema tables for the RuntimeEvent decoder: checkers and the object walker (spec 10 §1, §2.1).

Why: the closed schema has ~40 objects; describing each as a table of ``key -> checker``
and running them through one walker (:func:`object_of`) keeps every rule in one place —
absent ≠ null, unknown keys rejected, required keys present — instead of re-implementing
it per object. A checker is ``(value, path) -> frozen value`` and raises
:class:`~maka_ref._errors.RuntimeEventSchemaError` through :func:`fail`.

The value-level helpers (numbers, digests, free-form JSON freezing) live in
``_events._values`` and are re-exported here so the schema modules have one import source.

Depends on: ``_events._values``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from sys import intern as _intern
from typing import Any, TypeAlias

from maka_ref._codec.frozen import FrozenList
from maka_ref._events._values import (
    MAX_JSON_DEPTH,
    fail,
    freeze_json,
    frozen_dict,
    frozen_list,
    is_finite_number,
    is_safe_integer,
    is_sha256_digest,
    show_key,
    utf8_length,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "Checker",
    "bounded_id",
    "check_bool",
    "check_digest",
    "check_finite_number",
    "check_json",
    "check_json_not_null",
    "check_json_object",
    "check_nonempty_str",
    "check_nonnegative_safe_integer",
    "check_positive_safe_integer",
    "check_str",
    "check_true",
    "fail",
    "freeze_json",
    "frozen_dict",
    "frozen_list",
    "is_finite_number",
    "is_safe_integer",
    "is_sha256_digest",
    "list_of",
    "literal",
    "number_literal",
    "object_of",
    "one_of",
    "show_key",
    "utf8_length",
]

#: ``checker(value, path) -> frozen value``; raises :class:`RuntimeEventSchemaError`.
Checker: TypeAlias = Callable[[Any, str], Any]


# ---------------------------------------------------------------------------------------
# Checkers: ``(value, path) -> frozen value``
# ---------------------------------------------------------------------------------------


def check_json(value: Any, path: str) -> Any:
    """Any JSON value, ``null`` included (``args``, ``result``, ``providerOutput``…)."""
    return freeze_json(value, path)


def check_json_not_null(value: Any, path: str) -> Any:
    """Any JSON value except ``null`` (optional keys of open payloads: absent ≠ null)."""
    if value is None:
        fail(path, "null is not allowed (omit the key instead)")
    return freeze_json(value, path)


def check_json_object(value: Any, path: str) -> Any:
    """A JSON object with free-form contents (``stateDelta``, ``providerOptions``…)."""
    if not issubclass(type(value), dict):
        fail(path, "must be a JSON object")
    return freeze_json(value, path)


def check_str(value: Any, path: str) -> str:
    if type(value) is not str:
        fail(path, "must be a string")
    return value


def check_nonempty_str(value: Any, path: str) -> str:
    if type(value) is not str or not value:
        fail(path, "must be a non-empty string")
    return value


def check_bool(value: Any, path: str) -> bool:
    if type(value) is not bool:
        fail(path, "must be a boolean")
    return value


def check_true(value: Any, path: str) -> bool:
    if value is not True:
        fail(path, "must be literally true when present")
    return True


def check_finite_number(value: Any, path: str) -> int | float:
    if not is_finite_number(value):
        fail(path, "must be a finite number")
    return value


def check_nonnegative_safe_integer(value: Any, path: str) -> int | float:
    if not is_safe_integer(value) or value < 0:
        fail(path, "must be a safe integer >= 0")
    return value


def check_positive_safe_integer(value: Any, path: str) -> int | float:
    if not is_safe_integer(value) or value <= 0:
        fail(path, "must be a safe integer > 0")
    return value


def check_digest(value: Any, path: str) -> str:
    if not is_sha256_digest(value):
        fail(path, "must be 'sha256:' followed by 64 lowercase hex characters")
    return value


def literal(expected: str) -> Checker:
    """A checker accepting exactly the string ``expected`` (returned as ``expected`` itself)."""

    def check(value: Any, path: str) -> str:
        if type(value) is not str or value != expected:
            fail(path, f"must be exactly {expected!r}")
        return expected

    return check


def number_literal(expected: int) -> Checker:
    """A checker accepting exactly the number ``expected`` (``1.0`` counts; ``True`` does not)."""

    def check(value: Any, path: str) -> int | float:
        if (type(value) is not int and type(value) is not float) or value != expected:
            fail(path, f"must be exactly the number {expected}")
        return value

    return check


def one_of(members: tuple[str, ...]) -> Checker:
    """A checker accepting one of the enum's strings (returned as the member object itself)."""
    allowed = {member: member for member in members}

    def check(value: Any, path: str) -> str:
        if type(value) is not str or value not in allowed:
            fail(path, f"must be one of {', '.join(members)}")
        return allowed[value]

    return check


def bounded_id(max_bytes: int) -> Checker:
    """A non-empty string of at most ``max_bytes`` UTF-8 bytes."""

    def check(value: Any, path: str) -> str:
        if type(value) is not str or not value:
            fail(path, "must be a non-empty string")
        if len(value) * 4 > max_bytes and utf8_length(value) > max_bytes:
            fail(path, f"must be at most {max_bytes} UTF-8 bytes")
        return value

    return check


def list_of(element: Checker) -> Checker:
    """A checker for a JSON array whose items each pass ``element``."""

    def check(value: Any, path: str) -> FrozenList:
        if not issubclass(type(value), list):
            fail(path, "must be an array")
        return frozen_list([element(item, f"{path}[{index}]") for index, item in enumerate(list.__iter__(value))])

    return check


# Checkers that accept ``null`` as a value of an optional key (it is a JSON value for them).
_NULLABLE: frozenset[Checker] = frozenset({check_json})


def object_of(
    value: Any,
    path: str,
    required: Mapping[str, Checker],
    optional: Mapping[str, Checker],
    extra: Checker | None = None,
    build: Callable[[dict[str, Any]], Any] = frozen_dict,
) -> Any:
    """Validate one JSON object against ``required``/``optional`` key tables.

    ``extra`` is ``None`` for a closed object (unknown keys rejected) or the checker applied
    to every key not in the tables (open payloads). An optional key set to ``null`` is an
    error unless its checker accepts ``null`` as a JSON value.

    A key found in the tables is stored as its interned string — the schema's own object, as
    schema keys are identifier literals — rather than the parser's fresh copy (keys of open
    payloads are kept as given). Equal either way; but a decoded ledger then holds one
    ``"invocationId"`` instead of one per event, and every later field read finds its key by
    identity instead of comparing text in memory that is no longer cached. ``one_of`` and
    ``literal`` return the schema's own string for the same reason.
    """
    if not issubclass(type(value), dict):
        fail(path, "must be a JSON object")
    out: dict[str, Any] = {}
    seen_required = 0
    for key, item in dict.items(value):
        if type(key) is not str:
            fail(path, f"object key of type {type(key).__name__} (keys must be strings)")
        check = required.get(key)
        if check is not None:
            seen_required += 1
            key = _intern(key)
        else:
            check = optional.get(key)
            if check is not None:
                key = _intern(key)
            else:
                check = extra
                if check is None:
                    fail(path, f"unknown key {show_key(key)}")
            if item is None and check not in _NULLABLE:
                fail(f"{path}.{key}", "null is not allowed (omit the key instead)")
        out[key] = check(item, f"{path}.{key}")
    if seen_required != len(required):
        for key in required:
            if key not in out:
                fail(f"{path}.{key}", "required key is missing")
    return build(out)
