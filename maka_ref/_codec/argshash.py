"""``canonicalArgsHash`` — the argument identity of a tool dispatch (spec 10 §2.6, mainline v1).

Why: a T1 dispatch fact records ``sha256`` of the call's tool name and arguments; the
scanner, the bundle validator and the T1 writer recompute it from the function_call event
and refuse the ledger when it differs. The bytes hashed are a *frozen historical format*
(protocol ``t1_after_preflight_v1``), separate from the event's canonical JSON (§8 item 1):

* object keys in the two-tier order of §2.3, and every key named exactly ``__proto__`` is
  dropped (at any depth) — a JavaScript quirk, while the event JSON keeps it as data;
* arrays keep their order, except an array that is the direct value of a property named
  ``required`` or ``enum``: its (already transformed) elements are stably sorted by their
  compact JSON text under ICU root collation (:mod:`maka_ref._codec.collation`);
* ``-0`` is accepted and written as ``0``; numbers follow JavaScript double semantics.

Changing any of this changes hashes already on disk; it needs a new dispatch protocol.
"""

from __future__ import annotations

import hashlib
from typing import Any

from maka_ref._codec.collation import collation_key
from maka_ref._codec.jsontext import check_strict_json, compact_json, ordered_keys
from maka_ref._errors import ArgsHashError, NotStrictJSONError

__all__ = ["args_hash_body", "canonical_args_hash"]

_SORTED_ARRAY_PARENTS = frozenset({"required", "enum"})


def _element_sort_key(element: Any) -> tuple[int, ...]:
    return collation_key(compact_json(element, negative_zero="zero"))


def _transform(value: Any, parent_key: str | None) -> Any:
    """The mainline-v1 canonicalisation of §2.6 step 3 (input already validated)."""
    if isinstance(value, dict):
        return {
            key: _transform(value[key], key) for key in ordered_keys(value) if key != "__proto__"
        }
    if isinstance(value, list):
        items = [_transform(item, None) for item in value]
        if parent_key in _SORTED_ARRAY_PARENTS:
            items.sort(key=_element_sort_key)  # list.sort is stable, like Array.prototype.sort
        return items
    return value


def args_hash_body(tool_name: str, args: Any) -> str:
    """The exact text that is hashed: ``{"args":…,"toolName":"…"}`` (§2.6 steps 1–4)."""
    if not isinstance(tool_name, str) or not tool_name:
        raise ArgsHashError("canonicalArgsHash requires a tool name")
    try:
        check_strict_json(args, negative_zero="zero")
    except NotStrictJSONError as exc:
        raise ArgsHashError("Tool arguments must be strict JSON values", detail=exc.detail) from exc
    # The top-level object is transformed like any other: "args" < "toolName", and "args"
    # is the parent key of the arguments (so a top-level array is never collation-sorted).
    canonical = _transform({"toolName": tool_name, "args": args}, None)
    return compact_json(canonical, negative_zero="zero")


def canonical_args_hash(tool_name: str, args: Any) -> str:
    """``"sha256:" + hex(SHA-256(UTF-8(args_hash_body(tool_name, args))))`` (§2.6 step 5).

    Raises ``ArgsHashError`` for an empty/non-str tool name or non-strict-JSON args.
    """
    body = args_hash_body(tool_name, args)
    # The body holds no raw surrogates (the writer escapes lone ones), so UTF-8 is total.
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()
