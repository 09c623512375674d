"""The canonical codec: JSON text and values byte-compatible with the JavaScript anchor.

What: parsing JSON text with JavaScript double semantics, writing the canonical compact
JSON of spec 10 §2.3 (two-tier key order, ECMAScript number text and string escaping),
ECMAScript ``Number::toString``, deep-frozen JSON containers, ICU-root-compatible collation
keys and the mainline-v1 ``canonicalArgsHash`` of spec 10 §2.6.

Why a layer of its own: every persisted event, digest and dispatch hash must be the exact
bytes the anchor produces, so the byte-level rules live in one place that every higher
layer (events, ledger, plans, stores, conformance) shares. Getting any of them subtly wrong
(``sort_keys=True``, ``repr(float)``, code-point order) silently forks hashes.

Depends on: :mod:`maka_ref._errors`, the standard library and ``pyuca`` (pure Python, read
lazily once for collation). Pure: no I/O beyond that one read-only table load, no clock, no
randomness, no mutable global state.

Modules: ``numbers`` (number text), ``jsontext`` (parse / write / strict check / key order),
``frozen`` (immutable containers), ``collation`` (sort keys), ``argshash`` (the args hash).

May import: ``maka_ref._errors``.
"""

from maka_ref._codec.argshash import args_hash_body, canonical_args_hash
from maka_ref._codec.collation import collation_key
from maka_ref._codec.frozen import FrozenDict, FrozenList, freeze, thaw
from maka_ref._codec.jsontext import (
    MAX_DEPTH,
    NegativeZero,
    check_strict_json,
    compact_json,
    is_array_index_key,
    ordered_keys,
    parse_json,
    stable_json,
)
from maka_ref._codec.numbers import format_number

__all__ = [
    "MAX_DEPTH",
    "FrozenDict",
    "FrozenList",
    "NegativeZero",
    "args_hash_body",
    "canonical_args_hash",
    "check_strict_json",
    "collation_key",
    "compact_json",
    "format_number",
    "freeze",
    "is_array_index_key",
    "ordered_keys",
    "parse_json",
    "stable_json",
    "thaw",
]
