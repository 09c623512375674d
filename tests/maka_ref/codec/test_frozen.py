"""Tests for ``maka_ref._codec.frozen`` (docs/architecture.md "Values"; spec 10 §2.1/§2.5:
a decoded event is a deep-frozen value that still is, compares and serialises as JSON)."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_ref._codec.frozen import FrozenDict, FrozenList, freeze, thaw
from maka_ref._codec.jsontext import stable_json

SAMPLE = {"a": [1, {"b": [2, 3]}, "s"], "n": None, "t": True, "f": 1.5, "e": {}}


def _frozen() -> Any:
    return freeze(SAMPLE)


def test_freeze_is_deep() -> None:
    """Every container below the root is frozen too."""
    value = _frozen()
    assert type(value) is FrozenDict
    assert type(value["a"]) is FrozenList
    assert type(value["a"][1]) is FrozenDict
    assert type(value["a"][1]["b"]) is FrozenList
    assert type(value["e"]) is FrozenDict


def test_freeze_converts_tuples_and_keeps_scalars() -> None:
    """list/tuple → FrozenList; scalars are returned unchanged."""
    assert freeze((1, (2,))) == [1, [2]]
    assert type(freeze((1, (2,)))[1]) is FrozenList
    for scalar in (None, True, 0, 1.5, "s"):
        assert freeze(scalar) is scalar


def test_freeze_reuses_frozen_subtrees() -> None:
    """Already-frozen values are returned as is (constructors freeze deeply)."""
    value = _frozen()
    assert freeze(value) is value
    outer = freeze({"inner": value})
    assert outer["inner"] is value


def test_constructors_freeze_contents() -> None:
    """FrozenDict/FrozenList built directly are deep-frozen as well."""
    d = FrozenDict({"x": [1, {"y": []}]}, z={"w": 1})
    assert type(d["x"]) is FrozenList and type(d["x"][1]["y"]) is FrozenList
    assert type(d["z"]) is FrozenDict
    lst = FrozenList([[1], {"a": 2}])
    assert type(lst[0]) is FrozenList and type(lst[1]) is FrozenDict


DICT_MUTATIONS: list[Callable[[Any], Any]] = [
    lambda d: d.__setitem__("k", 1),
    lambda d: d.__delitem__("n"),
    lambda d: d.update({"k": 1}),
    lambda d: d.pop("n"),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.setdefault("k", 1),
    lambda d: d.__ior__({"k": 1}),
]


@pytest.mark.parametrize("mutate", DICT_MUTATIONS)
def test_frozen_dict_mutators_raise(mutate: Callable[[Any], Any]) -> None:
    """Decoded events are immutable: every dict mutator raises TypeError."""
    value = _frozen()
    with pytest.raises(TypeError):
        mutate(value)
    assert value == SAMPLE


def test_frozen_dict_operator_forms_raise() -> None:
    """Statement forms of the mutators raise too."""
    value = _frozen()
    with pytest.raises(TypeError):
        value["k"] = 1
    with pytest.raises(TypeError):
        del value["n"]
    with pytest.raises(TypeError):
        value |= {"k": 1}
    assert value == SAMPLE


LIST_MUTATIONS: list[Callable[[Any], Any]] = [
    lambda x: x.append(1),
    lambda x: x.extend([1]),
    lambda x: x.insert(0, 1),
    lambda x: x.remove(1),
    lambda x: x.pop(),
    lambda x: x.clear(),
    lambda x: x.sort(),
    lambda x: x.reverse(),
    lambda x: x.__setitem__(0, 9),
    lambda x: x.__setitem__(slice(0, 1), [9]),
    lambda x: x.__delitem__(0),
    lambda x: x.__iadd__([1]),
    lambda x: x.__imul__(2),
]


@pytest.mark.parametrize("mutate", LIST_MUTATIONS)
def test_frozen_list_mutators_raise(mutate: Callable[[Any], Any]) -> None:
    """Every list mutator raises TypeError."""
    value = _frozen()
    with pytest.raises(TypeError):
        mutate(value["a"])
    assert value == SAMPLE


def test_frozen_list_augmented_assignment_raises() -> None:
    """``+=`` / ``*=`` must not silently mutate (nor rebind through __iadd__)."""
    items = freeze([1, 2])
    with pytest.raises(TypeError):
        items += [3]
    with pytest.raises(TypeError):
        items *= 2
    assert items == [1, 2]


def test_non_mutating_operations_return_plain_values() -> None:
    """Copy-producing operations give ordinary mutable containers."""
    value = _frozen()
    merged = value | {"k": 1}
    assert type(merged) is dict and merged["k"] == 1
    assert type(value.copy()) is dict
    assert type(value["a"] + [1]) is list
    assert type(value["a"][:1]) is list
    assert FrozenDict.fromkeys(["x"], 0) == {"x": 0}


def test_behaves_as_json() -> None:
    """Frozen values are JSON: isinstance, equality and json.dumps as plain values."""
    value = _frozen()
    assert isinstance(value, dict) and isinstance(value["a"], list)
    assert value == SAMPLE and value == SAMPLE
    assert json.dumps(value, sort_keys=True) == json.dumps(SAMPLE, sort_keys=True)
    assert stable_json(value) == stable_json(SAMPLE)


def test_thaw_returns_plain_mutable_copy() -> None:
    """thaw deep-converts back to plain dict/list."""
    plain = thaw(_frozen())
    assert plain == SAMPLE
    assert type(plain) is dict and type(plain["a"]) is list and type(plain["a"][1]) is dict
    plain["a"][1]["b"].append(4)  # mutable again
    assert thaw((1, [2])) == [1, [2]]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip(protocol: int) -> None:
    """Pickling must not replay the forbidden mutators and must keep the types."""
    value = _frozen()
    back = pickle.loads(pickle.dumps(value, protocol=protocol))
    assert back == value
    assert type(back) is FrozenDict and type(back["a"]) is FrozenList
    assert type(back["a"][1]) is FrozenDict


def test_copy_and_deepcopy() -> None:
    """copy shares (immutable); deepcopy gives an equal frozen value."""
    value = _frozen()
    assert copy.copy(value) is value
    assert copy.copy(value["a"]) is value["a"]
    deep = copy.deepcopy(value)
    assert deep == value and type(deep) is FrozenDict and type(deep["a"]) is FrozenList
    assert type(deep["a"][1]["b"]) is FrozenList


def test_repr_names_the_type() -> None:
    """repr makes frozen values recognisable when debugging."""
    assert repr(freeze({"a": [1]})) == "FrozenDict({'a': FrozenList([1])})"


def test_frozen_values_are_not_hashable() -> None:
    """Like dict/list (with which they compare equal), frozen containers are unhashable."""
    with pytest.raises(TypeError):
        hash(_frozen())


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_freeze_thaw_round_trip(value: Any) -> None:
    """freeze/thaw preserve the value exactly."""
    frozen = freeze(value)
    assert frozen == value
    assert thaw(frozen) == value
    assert pickle.loads(pickle.dumps(frozen)) == value
