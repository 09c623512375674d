"""ECMAScript ``Number::toString`` for IEEE-754 doubles (spec 10 §2.3, §2.4, Appendix A).

Why: every byte we persist or hash must equal what the JavaScript anchor writes, and the
anchor prints numbers with ``Number.prototype.toString``. Python's ``repr`` picks the same
*digits* (both produce the shortest string that round-trips to the same double) but lays them
out differently (``1e-07``, ``100.0``, ``1e+16``), so we take the digits from ``repr`` and
re-apply the ECMAScript layout rules (ECMA-262 §6.1.6.1.20, Number::toString):

* integral values print without ``.0``;
* exponent form exactly when ``|x| >= 1e21`` or ``0 < |x| < 1e-6``, written ``d[.ddd]e±N``
  with no zero padding of the exponent;
* plain decimal otherwise, padding with zeros (``123456789012345680000``, ``0.000001``).

Python ``int`` values are converted to a double first (JavaScript has only doubles), so
``12345678901234567890`` prints ``12345678901234567000`` exactly as in the anchor (§2.4).
``-0`` prints ``0`` (as in JavaScript); whether ``-0`` is *allowed* is the caller's decision.
"""

from __future__ import annotations

import math

from maka_ref._errors import NotStrictJSONError

__all__ = ["format_number", "to_double"]


def to_double(x: int | float) -> float:
    """Return ``x`` as a finite double, or raise :class:`NotStrictJSONError`.

    ``bool`` is rejected (it is an ``int`` subclass in Python but not a number in JSON);
    ints too large for a double (JavaScript would give ``Infinity``) and NaN/±Infinity are
    rejected because they have no strict-JSON text.
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise NotStrictJSONError("not a JSON number", detail=type(x).__name__)
    try:
        f = float(x)
    except OverflowError:
        raise NotStrictJSONError("number is not finite as a double", detail=repr(x)) from None
    if not math.isfinite(f):
        raise NotStrictJSONError("number is not finite", detail=repr(f))
    return f


def format_number(x: int | float) -> str:
    """Return the ECMAScript ``Number::toString`` text of ``x`` (as a double)."""
    f = to_double(x)
    if f == 0.0:
        return "0"  # covers -0.0 too, like JavaScript
    sign = "-" if f < 0 else ""
    # repr gives the shortest round-trip digits, in either "ddd.ddd" or "d.ddde±XX" layout.
    mantissa, _, exp_text = repr(abs(f)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    # ECMAScript's n: the value is 0.d1d2...dk × 10^n.
    n = len(int_part) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)

    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = ("e+" if e >= 0 else "e-") + str(abs(e))
        body = (digits if k == 1 else digits[0] + "." + digits[1:]) + exp
    return sign + body
