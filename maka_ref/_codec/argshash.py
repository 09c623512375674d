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
import json
from collections.abc import Callable
from typing import Any

from maka_ref._codec.collation import collation_key
from maka_ref._codec.frozen import FrozenDict, FrozenList
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
    body = _plain_body(tool_name, args)
    return body if body is not None else _general_body(tool_name, args)


def _general_body(tool_name: str, args: Any) -> str:
    """§2.6 steps 2–4 for any arguments: validate, transform, write (tool name already checked)."""
    try:
        check_strict_json(args, negative_zero="zero")
    except NotStrictJSONError as exc:
        raise ArgsHashError("Tool arguments must be strict JSON values", detail=exc.detail) from exc
    # The top-level object is transformed like any other: "args" < "toolName", and "args"
    # is the parent key of the arguments (so a top-level array is never collation-sorted).
    canonical = _transform({"toolName": tool_name, "args": args}, None)
    return compact_json(canonical, negative_zero="zero")


# --------------------------------------------------------------------------- fast path
#
# Almost every real argument object is "plain": string keys that are neither array indexes
# nor one of the three special names, and string / small-integer / bool / null leaves. For
# such a value the canonical body is exactly what the C ``json`` encoder writes with
# ``sort_keys=True``; ``_plain_body`` proves that in one walk and lets C write the text,
# instead of the three walks of ``_general_body`` (check, transform, write). Why the bytes
# are identical (tests/maka_ref/codec/test_argshash_fastpath.py checks it against the general path):
#
# * validation: only exact ``dict``/``FrozenDict`` (``str`` keys), ``list``/``FrozenList``,
#   ``str``, ``bool``, ``None`` and ``int`` with |n| ≤ 2^53 are accepted, nested at most
#   ``_PLAIN_DEPTH`` deep (so never cyclic): all strict JSON, so ``check_strict_json`` passes;
# * transform: no ``__proto__`` key (nothing dropped) and no ``required``/``enum`` key (no
#   array is collation-sorted), so ``_transform`` only reorders keys;
# * key order: no key starts with an ASCII digit, so none is an array index and
#   ``ordered_keys`` is a sort by UTF-16 code units, which equals Python's code-point sort
#   when no character is ≥ U+D800 (checked on the finished text below);
# * writing: both paths escape strings with ``json.encoder.encode_basestring`` and write a
#   safe integer with ``int.__repr__``; with no character ≥ U+D800 there is no surrogate, so
#   ``_finish`` changes nothing;
# * anything else (floats, big integers, other types, deeper nesting, special keys, text with
#   a character ≥ U+D800) returns None and takes the general path, which also raises.

_PLAIN_DEPTH = 64
_MAX_SAFE_INT = 2**53
_SPECIAL_KEYS = frozenset({"__proto__", "required", "enum"})
_DIGITS = frozenset("0123456789")
_escape_str: Callable[[str], str] = json.encoder.encode_basestring  # as in jsontext


def _make_sorted_compact() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``.

    ``JSONEncoder.encode`` builds a new C encoder on every call, which for the small argument
    objects hashed once per dispatch costs as much as the encoding itself; the C encoder is
    stateless without circular-reference markers (plain values are acyclic), so it is built
    once. Falls back to ``JSONEncoder.encode`` where the C accelerator is missing or differs.
    """
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is not None:
        try:
            c_encode = make(None, encoder.default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
            sample = {"b": [1, None, True, "\u00e9\n"], "a": {}}
            if "".join(c_encode(sample, 0)) == encoder.encode(sample):
                return lambda value: "".join(c_encode(value, 0))
        except Exception:  # a different private signature: use the public encoder
            pass
    return encoder.encode


_sorted_compact = _make_sorted_compact()


def _is_plain(value: Any, depth: int) -> bool:
    """True iff ``value`` is plain (see above); never raises, never calls user code."""
    t = type(value)
    if t is FrozenDict or t is dict:  # arguments are almost always an object
        if depth >= _PLAIN_DEPTH:
            return False
        for key, child in value.items():
            if type(key) is not str or key in _SPECIAL_KEYS or key[:1] in _DIGITS:
                return False
            if type(child) is not str and not _is_plain(child, depth + 1):
                return False
        return True
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT
    if t is FrozenList or t is list:
        if depth >= _PLAIN_DEPTH:
            return False
        for child in value:
            if type(child) is not str and not _is_plain(child, depth + 1):
                return False
        return True
    return False


def _plain_body(tool_name: str, args: Any) -> str | None:
    """The body of plain arguments written by the C encoder, or None (use the general path)."""
    if type(tool_name) is not str or not _is_plain(args, 0):
        return None
    body = '{"args":' + _sorted_compact(args) + ',"toolName":' + _escape_str(tool_name) + "}"
    if body.isascii() or max(body) < "\ud800":
        return body
    return None


def canonical_args_hash(tool_name: str, args: Any) -> str:
    """``"sha256:" + hex(SHA-256(UTF-8(args_hash_body(tool_name, args))))`` (§2.6 step 5).

    Raises ``ArgsHashError`` for an empty/non-str tool name or non-strict-JSON args.
    """
    global _last
    last = _last
    if last is not None and last[1] is args and last[0] == tool_name:
        return last[2]
    body = args_hash_body(tool_name, args)
    # The body holds no raw surrogates (the writer escapes lone ones), so UTF-8 is total.
    digest = "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()
    if type(args) is FrozenDict and type(tool_name) is str:
        _last = (tool_name, args, digest)
    return digest


#: The last ``(tool_name, args, digest)`` hashed with *frozen* arguments. Why: a tool call's
#: arguments are hashed by T1's pre-checks and again by the ledger scanner when the transition
#: check binds the dispatch to the call — the same decoded (immutable) object twice in a row.
#: Reused only for that very object (``is``; the entry keeps it alive, so its id cannot be
#: recycled) and an equal tool name; a ``FrozenDict`` is immutable and its values are frozen
#: deeply, so the digest cannot have changed.
_last: tuple[str, Any, str] | None = None
