"""Result types keep the dataclass contract (docs/architecture.md "Results").

``Decision`` (``_ledger.results``) and ``ToolOperation`` (``_plan.resume_plan``) are built
once per tool operation, so they define their own ``__init__`` (the same assignments as the
generated frozen one, with ``object.__setattr__`` looked up once). These tests pin that the
hand-written constructor is indistinguishable from the generated one: same parameters and
defaults, frozen, equal, hashable, ``replace``-able, picklable.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from maka_ref._ledger.results import Decision
from maka_ref._plan.phase0.plan import ToolOperation


def _generated_twin(cls: type) -> type:
    """The class ``@dataclass(frozen=True, slots=True)`` would generate from ``cls``'s fields."""
    fields = [
        (f.name, f.type, dataclasses.field(default=f.default))
        if f.default is not dataclasses.MISSING
        else (f.name, f.type)
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(f"Generated{cls.__name__}", fields, frozen=True, slots=True)


def _parameters(cls: type) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(cls.__init__).parameters.values()]


@pytest.mark.parametrize("cls", [Decision, ToolOperation])
def test_constructor_matches_the_generated_one(cls: type) -> None:
    assert _parameters(cls) == _parameters(_generated_twin(cls))
    assert cls.__match_args__ == _generated_twin(cls).__match_args__  # type: ignore[attr-defined]


_SAMPLES: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (Decision, ("call-1", "completed", "matching_response"), {}),
    (
        Decision,
        ("call-1", "completed", "matching_response", "Write", "op-1", "normal_t2", "c-1", "d-1", "r-1", False),
        {},
    ),
    (Decision, ("call-1",), {"status": "parked", "reason": "r", "operation_id": "op-1"}),
    (ToolOperation, ("call-1", "Write", {"path": "x"}, "succeeded", "c-1"), {}),
    (ToolOperation, ("call-1", "Write", None, "failed", "c-1", "r-1", True), {}),
    (ToolOperation, ("call-1",), {"tool_name": "Bash", "args": [], "status": "indeterminate", "call_runtime_event_id": "c"}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), _SAMPLES)
def test_instances_behave_like_generated_ones(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    twin = _generated_twin(cls)
    ours, theirs = cls(*args, **kwargs), twin(*args, **kwargs)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert ours == cls(*args, **kwargs)
    assert repr(ours).removeprefix(cls.__name__) == repr(theirs).removeprefix(twin.__name__)
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(ours, first, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(ours, first)
    assert getattr(dataclasses.replace(ours, **{first: "other"}), first) == "other"
    if cls is Decision:
        assert hash(ours) == hash(cls(*args, **kwargs))
        assert pickle.loads(pickle.dumps(ours)) == ours


@pytest.mark.parametrize("cls", [Decision, ToolOperation])
def test_missing_and_unknown_arguments_are_refused(cls: type) -> None:
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(TypeError):
        cls("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")
    with pytest.raises(TypeError):
        cls("a", "b", "c", not_a_field=1)
