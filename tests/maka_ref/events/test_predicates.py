"""Tests for ``maka_ref._events.predicates`` (spec 10 §1.5, §7.2 items 14–15; spec 20 §0.1, §4.3).

The predicates must be total: they run on un-decoded events (spec 10 §3, §8 item 22), so every
test also feeds values that are not events at all. Expected values are the spec's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._events.predicates import (
    has_model_visible_content,
    is_partial_event,
    is_terminal_event,
    terminal_run_status,
)
from maka_ref._events.schema import decode_runtime_event


def base(**overrides: Any) -> dict[str, Any]:
    """The base event of the anchor's runtime-event tests (model/agent)."""
    event: dict[str, Any] = {
        "id": "evt-1",
        "invocationId": "inv-1",
        "runId": "run-1",
        "sessionId": "sess-1",
        "turnId": "turn-1",
        "ts": 100,
        "partial": False,
        "role": "model",
        "author": "agent",
    }
    event.update(overrides)
    return event


def both(event: dict[str, Any]) -> list[Any]:
    """The raw event and its decoded form: predicates must agree on both."""
    return [event, decode_runtime_event(event)]


# --------------------------------------------------------------------------- terminal §1.5


@pytest.mark.parametrize("status", ["completed", "failed", "aborted", "cancelled"])
def test_item14_terminal_statuses(status: str) -> None:
    """§7.2 item 14: a terminal ``status`` makes the event terminal."""
    for event in both(base(status=status)):
        assert is_terminal_event(event) is True


@pytest.mark.parametrize(
    "event,expected",
    [
        (base(status="streaming"), False),
        (base(actions={"endInvocation": False}), False),
        (base(actions={"endInvocation": True}), True),
        (base(content={"kind": "text", "text": "hi"}), False),
        (base(status="streaming", actions={"endInvocation": True}), True),
    ],
)
def test_item14_terminal_classification(event: dict[str, Any], expected: bool) -> None:
    """§7.2 item 14: streaming → not; endInvocation false → not; endInvocation true → terminal."""
    for value in both(event):
        assert is_terminal_event(value) is expected


@pytest.mark.parametrize(
    "value",
    [
        None, 0, "completed", ["completed"], {"status": ["completed"]}, {"status": {"completed": 1}},
        {"status": "COMPLETED"}, {"actions": {"endInvocation": 1}}, {"actions": {"endInvocation": "true"}},
        {"actions": [True]}, {"actions": None},
    ],
)
def test_terminal_is_total_and_exact(value: Any) -> None:
    """§1.5: ``=== true`` / exact status strings; anything else (any type) is not terminal."""
    assert is_terminal_event(value) is False


# --------------------------------------------------------------------------- partial §1.5


@pytest.mark.parametrize(
    "value,expected",
    [({"partial": True}, True), ({"partial": False}, False), ({"partial": 1}, False),
     ({"partial": "true"}, False), ({}, False), (None, False), ([True], False)],
)
def test_partial_is_exactly_true(value: Any, expected: bool) -> None:
    """§1.5: partial event ⇔ ``partial === true``."""
    assert is_partial_event(value) is expected


def test_partial_on_decoded_events() -> None:
    """§1.5 on decoded events."""
    assert is_partial_event(decode_runtime_event(base(partial=True))) is True
    assert is_partial_event(decode_runtime_event(base())) is False


# --------------------------------------------------------------------------- model visibility


@pytest.mark.parametrize(
    "event",
    [
        base(role="user", author="user", content={"kind": "text", "text": "hi"}),
        base(content={"kind": "thinking", "text": "r"}),
        base(content={"kind": "function_call", "id": "1", "name": "Read", "args": {}}),
        base(content={"kind": "function_response", "id": "1", "name": "Bash", "result": "boom", "isError": True}),
        base(modelVisibility="visible", content={"kind": "thinking", "text": ""}),
    ],
)
def test_item15_visible(event: dict[str, Any]) -> None:
    """§7.2 item 15: user text ``hi``, thinking, function_call, function_response (even isError) are visible."""
    for value in both(event):
        assert has_model_visible_content(value) is True


@pytest.mark.parametrize(
    "event",
    [
        base(content={"kind": "text", "text": ""}),
        base(content={"kind": "error", "message": "upstream failed"}),
        base(actions={"tokenUsage": {"input": 1, "output": 1}}),
        base(refs={"toolCallId": "tc-1"}),
        base(origin="code_mode", modelVisibility="hidden",
             content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "a.ts"}},
             refs={"toolCallId": "nested-1", "operationId": "nested-op-1",
                   "parentToolCallId": "exec-1", "parentOperationId": "exec-op-1"}),
        base(modelVisibility="hidden", content={"kind": "text", "text": "hidden"}),
        base(role="system", author="system", modelVisibility="visible", actions={"toolDispatch": {
            "protocol": "t1_after_preflight_v1", "operationId": "op", "providerToolCallId": "c",
            "toolName": "Bash", "canonicalArgsHash": "h", "recoveryMode": "never_auto_retry"}}),
    ],
)
def test_item15_not_visible(event: dict[str, Any]) -> None:
    """§7.2 item 15 / §1.5: empty text, error, token-usage-only, refs-only, hidden Code Mode, dispatch → not visible."""
    for value in both(event):
        assert has_model_visible_content(value) is False


@pytest.mark.parametrize(
    "value",
    [
        None, "text", {"content": None}, {"content": "text"}, {"content": {"kind": ["text"]}},
        {"content": {"kind": "text", "text": 5}}, {"content": {"kind": "text"}}, {"content": {"kind": "image"}},
        {"content": {"kind": "error", "message": "m"}}, {"content": {"kind": "function_call"}, "modelVisibility": "hidden"},
    ],
)
def test_visibility_is_total(value: Any) -> None:
    """§1.5 on un-decoded values: wrong types mean "not visible", never an exception."""
    assert has_model_visible_content(value) is False


def test_visibility_ignores_an_unknown_visibility_value_on_raw_events() -> None:
    """§1.5: only ``hidden`` hides; visibility is decided by content (raw, un-decoded input)."""
    assert has_model_visible_content({"modelVisibility": ["hidden"], "content": {"kind": "thinking"}}) is True


# --------------------------------------------------------------------------- run status


@pytest.mark.parametrize(
    "status,expected",
    [("completed", "completed"), ("failed", "failed"), ("aborted", "cancelled"), ("cancelled", "cancelled"),
     ("streaming", None)],
)
def test_terminal_run_status_mapping(status: str, expected: str | None) -> None:
    """Spec 20 §0.1: completed→completed, failed→failed, aborted→cancelled, cancelled→cancelled, else none."""
    for value in both(base(status=status)):
        assert terminal_run_status(value) == expected
    assert terminal_run_status(status) == expected


@pytest.mark.parametrize(
    "value",
    [base(), base(actions={"endInvocation": True}), None, 1, [], {"status": ["failed"]}, {"status": None}, "idle"],
)
def test_terminal_run_status_none(value: Any) -> None:
    """Spec 20 §0.1 "anything else → none"; §4.3: an endInvocation-only event is not a fact."""
    assert terminal_run_status(value) is None


# --------------------------------------------------------------------------- totality


class _Hostile(dict):  # type: ignore[type-arg]
    """A dict whose Python-level accessors raise."""

    def get(self, *args: Any) -> Any:
        raise RuntimeError("boom")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("boom")


def test_hostile_dict_subclass_does_not_raise() -> None:
    """§3 "the resolver must not assume decoding": predicates read stored entries only."""
    hostile = _Hostile(status="completed", partial=True, content={"kind": "thinking", "text": "r"})
    assert is_terminal_event(hostile) is True
    assert is_partial_event(hostile) is True
    assert has_model_visible_content(hostile) is True
    assert terminal_run_status(hostile) == "completed"


class _SpoofedDict:
    """Claims to be a dict through ``__class__`` (``isinstance`` believes it; ``dict`` methods do not)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return dict


def test_spoofed_dict_is_not_an_event() -> None:
    """§1.5 totality: an object that only pretends to be a dict is simply not an event."""
    spoof = _SpoofedDict()
    assert is_terminal_event(spoof) is False
    assert is_partial_event(spoof) is False
    assert has_model_visible_content(spoof) is False
    assert terminal_run_status(spoof) is None


_any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | st.binary(max_size=3)
    | st.sampled_from(["completed", "aborted", "text", "thinking", "hidden"]),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner)
    | st.dictionaries(st.sampled_from(["status", "actions", "endInvocation", "partial", "content", "kind",
                                       "text", "modelVisibility"]) | st.integers(), inner, max_size=5),
    max_leaves=15,
)


@settings(max_examples=400)
@given(_any)
def test_predicates_never_raise(value: Any) -> None:
    """§1.5 / spec 20 §0.1: total on any value; booleans are real ``bool``s, statuses ``str | None``."""
    assert type(is_terminal_event(value)) is bool
    assert type(is_partial_event(value)) is bool
    assert type(has_model_visible_content(value)) is bool
    assert terminal_run_status(value) in (None, "completed", "failed", "cancelled")
