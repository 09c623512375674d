"""``diff_json``: the first differing JSON path, with the vectors' equality rule."""

from __future__ import annotations

import pytest

from conformance.reports import diff_json, json_path


def test_equal_values_have_no_diff() -> None:
    value = {"a": [1, {"b": None}], "c": "x", "d": True}
    assert diff_json(value, {"c": "x", "d": True, "a": [1.0, {"b": None}]}) is None


def test_leaf_difference_path() -> None:
    expected = {"decisions": [{"kind": "replay"}]}
    actual = {"decisions": [{"kind": "reexecute"}]}
    assert diff_json(expected, actual) == {
        "path": "$.decisions[0].kind", "expected": "replay", "actual": "reexecute"}


@pytest.mark.parametrize(("expected", "actual"), [
    (1, True), (0, False), (True, 1), (0, -0.0), (-0.0, 0.0), (None, 0), ("1", 1), ([], {}),
])
def test_json_equality_semantics_at_the_root(expected: object, actual: object) -> None:
    assert diff_json(expected, actual) == {"path": "$", "expected": expected, "actual": actual}


def test_int_and_float_are_the_same_number() -> None:
    assert diff_json({"n": 1}, {"n": 1.0}) is None
    assert diff_json([-0.0], [-0.0]) is None


def test_first_difference_follows_expected_key_order() -> None:
    expected = {"z": 1, "a": 2}
    actual = {"a": 3, "z": 4}
    assert diff_json(expected, actual)["path"] == "$.z"


def test_missing_and_extra_members() -> None:
    assert diff_json({"a": 1, "b": 2}, {"a": 1}) == {
        "path": "$.b", "expected": 2, "actual": None, "missing": "actual"}
    assert diff_json({"a": 1}, {"a": 1, "extra": None}) == {
        "path": "$.extra", "expected": None, "actual": None, "missing": "expected"}
    # A differing common member wins over extra keys of actual.
    assert diff_json({"a": 1}, {"extra": 0, "a": 2})["path"] == "$.a"


def test_array_length_differences() -> None:
    assert diff_json([1, 2, 3], [1, 2]) == {
        "path": "$[2]", "expected": 3, "actual": None, "missing": "actual"}
    assert diff_json([1], [1, {"x": 1}]) == {
        "path": "$[1]", "expected": None, "actual": {"x": 1}, "missing": "expected"}
    assert diff_json([1, 2], [9])["path"] == "$[0]"


def test_tuples_count_as_arrays_and_strings_do_not() -> None:
    assert diff_json([1, 2], (1, 2)) is None
    assert diff_json("ab", ["a", "b"])["path"] == "$"


def test_deep_path_and_quoted_keys() -> None:
    expected = {"a b": {"c-d": [[0, {"ok": 1}]]}}
    actual = {"a b": {"c-d": [[0, {"ok": 2}]]}}
    assert diff_json(expected, actual)["path"] == '$["a b"]["c-d"][0][1].ok'


def test_json_path_formatting() -> None:
    assert json_path([]) == "$"
    assert json_path(["a", 0, "_b1", "1x", 'q"']) == '$.a[0]._b1["1x"]["q\\""]'
