"""Codec mutants (spec 10 §2: canonical JSON, number text, strict JSON, the args hash)."""

from __future__ import annotations

from typing import Any

from maka_ref.adapter._mutants._patch import replace
from maka_ref.adapter._mutants._registry import mutant

_VEC_CODEC = "LEDGER-VEC and (encoding or args-hash)"


@mutant("codec-codepoint-key-order", layer="codec", spec="10 §2.3", family="LEDGER-VEC:encoding/*, LEDGER-VEC:args-hash/*",
        keyword=_VEC_CODEC)
def apply_codepoint_key_order() -> None:
    """Object keys are ordered by Unicode code point instead of UTF-16 code units.

    Spec 10 §2.3 orders non-index keys by UTF-16 code units (JavaScript's string order); the
    two orders differ as soon as a key holds an astral character and another a character in
    U+E000–U+FFFF. Killed by the encoding and args-hash golden vectors with astral keys.
    """
    from bisect import bisect_left

    from maka_ref._codec import jsontext

    def ordered_keys(obj: Any) -> list[str]:
        keys = sorted(obj)  # code-point order only: the mutation
        lo = bisect_left(keys, "0")
        if lo == len(keys) or keys[lo][0] > "9":
            return keys
        hi = bisect_left(keys, ":", lo)
        digit_run = keys[lo:hi]
        index_keys = sorted((k for k in digit_run if jsontext.is_array_index_key(k)), key=int)
        if not index_keys:
            return keys
        others = [k for k in digit_run if not jsontext.is_array_index_key(k)]
        return index_keys + keys[:lo] + others + keys[hi:]

    replace("maka_ref._codec.jsontext", "ordered_keys", ordered_keys)


@mutant("codec-python-float-text", layer="codec", spec="10 §2.3", family="LEDGER-VEC:encoding/*, LEDGER-VEC:args-hash/*",
        keyword=_VEC_CODEC)
def apply_python_float_text() -> None:
    """Non-integral and large numbers are written with Python's ``repr`` (``1e-07``, ``1e+16``)
    instead of ECMAScript ``Number::toString`` (``1e-7``, ``10000000000000000``).

    Spec 10 §2.3: numbers are written as JavaScript writes them. Killed by the number vectors
    of the encoding and args-hash files.
    """
    import math

    from maka_ref._codec import jsontext

    def _float_text(x: float, zero_ok: bool) -> str:
        if x == 0.0:
            if not zero_ok and math.copysign(1.0, x) < 0:
                raise jsontext._Refused
            return "0"
        if not math.isfinite(x):
            raise jsontext._Refused
        if x.is_integer() and abs(x) <= 2**53:
            return int.__repr__(int(x))
        return float.__repr__(x)  # the mutation: Python's float text

    replace("maka_ref._codec.jsontext", "_float_text", _float_text)


@mutant("codec-negative-zero-accepted", layer="codec", spec="10 §2.4", family="LEDGER-VEC:encoding/* (-0 refusals)",
        keyword=_VEC_CODEC)
def apply_negative_zero_accepted() -> None:
    """``-0`` is accepted in RuntimeEvents (written as ``0``) where spec 10 §2.4 refuses it.

    The strict-JSON check treats every ``negative_zero`` policy as ``"zero"``. Killed by the
    encoding vectors that expect the ``-0 is not encodable`` refusal.
    """

    def _zero_ok(negative_zero: Any) -> bool:
        return True

    replace("maka_ref._codec.jsontext", "_zero_ok", _zero_ok)


@mutant("codec-collation-dropped", layer="codec", spec="10 §2.6 step 3", family="LEDGER-VEC:args-hash/*",
        keyword="LEDGER-VEC and args-hash")
def apply_collation_dropped() -> None:
    """``required``/``enum`` arrays in canonicalArgsHash are sorted by plain code-point order of
    their JSON text instead of ICU root collation (``localeCompare``).

    Spec 10 §2.6 step 3 sorts them with the collator; ``"B" < "a"`` by code point but
    ``"a" < "B"`` under collation. Killed by the args-hash golden vectors.
    """
    from maka_ref._codec.jsontext import compact_json

    def _element_sort_key(element: Any) -> Any:
        return compact_json(element, negative_zero="zero")

    replace("maka_ref._codec.argshash", "_element_sort_key", _element_sort_key)
