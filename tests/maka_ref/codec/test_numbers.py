"""Tests for ``maka_ref._codec.numbers`` (spec 10 §2.3 numbers, §2.4, Appendix A)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_ref._codec.numbers import format_number
from maka_ref._errors import NotStrictJSONError

# Expected strings are what JavaScript prints: they were generated once with node v20
# (`node -e 'console.log(String(v))'` for each value) and pasted here as literals.
# Spec 10 Appendix A lists the edge values 0, -0, 1.5, 100, 1e20, 1e21,
# 123456789012345680000, 1e-7, 1e-6, 1/3, 5e-324, max double, 2^53, 2^53+1, 1e100.
NODE_VECTORS: list[tuple[int | float, str]] = [
    (0, "0"),
    (0.0, "0"),
    (-0.0, "0"),
    (1, "1"),
    (-1, "-1"),
    (1.0, "1"),
    (1.5, "1.5"),
    (100, "100"),
    (100.0, "100"),
    (100.5, "100.5"),
    (0.1, "0.1"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1 / 3, "0.3333333333333333"),
    (-1 / 3, "-0.3333333333333333"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (-1e21, "-1e+21"),
    (123456789012345680000, "123456789012345680000"),
    (123456789012345680000.0, "123456789012345680000"),
    (1e-7, "1e-7"),
    (-1e-7, "-1e-7"),
    (1e-6, "0.000001"),
    (1.5e-7, "1.5e-7"),
    (5e-7, "5e-7"),
    (1.2e-10, "1.2e-10"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (2**53, "9007199254740992"),
    (2**53 + 1, "9007199254740992"),  # int beyond 2^53: double semantics (§2.4)
    (2**53 + 2, "9007199254740994"),
    (float(2**53 + 2), "9007199254740994"),
    (1e100, "1e+100"),
    (12345678901234567890, "12345678901234567000"),  # §2.4 / §2.6 big-integer vector
    (1e16, "10000000000000000"),
    (1e-5, "0.00001"),
    (0.00001234, "0.00001234"),
    (2.5e-5, "0.000025"),
    (1.7e-6, "0.0000017"),
    (1e-4, "0.0001"),
    (123.456, "123.456"),
    (1e15 + 0.3, "1000000000000000.2"),
    (4.35, "4.35"),
    (2**31, "2147483648"),
    (2**32 - 2, "4294967294"),
    (1e22, "1e+22"),
    (1.23e21, "1.23e+21"),
    (9.999999999999999e20, "999999999999999900000"),
    (2.2250738585072014e-308, "2.2250738585072014e-308"),
    (0.5, "0.5"),
    (1234567.125, "1234567.125"),
]


@pytest.mark.parametrize(("value", "expected"), NODE_VECTORS, ids=[e for _, e in NODE_VECTORS])
def test_matches_javascript_number_to_string(value: int | float, expected: str) -> None:
    """Spec 10 §2.3 / Appendix A: ECMAScript Number::toString layout."""
    assert format_number(value) == expected


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 10**400, -(10**400)])
def test_non_finite_rejected(bad: int | float) -> None:
    """Spec 10 §2.3: NaN/±Infinity (and ints that overflow a double) are not strict JSON."""
    with pytest.raises(NotStrictJSONError):
        format_number(bad)


@pytest.mark.parametrize("bad", [True, False, "1", None, 1j])
def test_non_numbers_rejected(bad: object) -> None:
    """Spec 10 §2.4: bool is not a number (tested before int)."""
    with pytest.raises(NotStrictJSONError):
        format_number(bad)  # type: ignore[arg-type]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_round_trips_through_float(x: float) -> None:
    """Spec 10 §2.3: shortest round-trip digits, so the text parses back to the same double."""
    assert float(format_number(x)) == x


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_layout_rules(x: float) -> None:
    """Spec 10 §2.3: exponent form exactly when |x| >= 1e21 or 0 < |x| < 1e-6; no '.0'."""
    text = format_number(x)
    exponent = "e" in text
    assert exponent == (abs(x) >= 1e21 or 0 < abs(x) < 1e-6)
    assert not text.endswith(".0")
    if exponent:
        mantissa, exp = text.split("e")
        assert exp[0] in "+-" and not exp[1:].startswith("0")
        assert not mantissa.endswith("0") or "." not in mantissa
