"""The model-history projector of continuation replay (spec 20 §1.10 step 3).

The spec only sketches the projector; the rules asserted here are the ones it lists
(skip partial and hidden events, terminal / actions-only / error content diagnostic only,
skip empty model text, skip system text, skip signed thinking in a tool turn whose calls
lack ``refs.stepId``, drop unmatched calls with ``unmatched_tool_call``, and the five
blocking codes) plus the item shapes chosen in ``docs/choices/v2-replay.md``. Also spec 20
§8 item 41 (empty model text is not a blocker) and §9 item 6 (content-less facts never
become provider items).
"""

from __future__ import annotations

import copy

import pytest

from maka_ref._plan.provider import (
    BLOCKING_DIAGNOSTIC_CODES,
    ProviderProjection,
    project_provider_items,
)

BASE = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}


def ev(id: str, role: str = "user", ts: int = 1, **fields) -> dict:
    out = {"id": id, **BASE, "ts": ts, "partial": False, "role": role, "author": "user" if role == "user" else "agent"}
    out.update(fields)
    return out


def text(id: str, role: str = "user", value: str | None = None, **fields) -> dict:
    return ev(id, role, content={"kind": "text", "text": id if value is None else value}, **fields)


def think(id: str, signature: str | None = "sig-1", role: str = "model", **fields) -> dict:
    content = {"kind": "thinking", "text": "reasoning"}
    if signature is not None:
        content["signature"] = signature
    return ev(id, role, content=content, **fields)


def fcall(id: str, call_id: str = "tool-1", name: str = "Read", role: str = "model", **fields) -> dict:
    return ev(id, role, content={"kind": "function_call", "id": call_id, "name": name, "args": {"p": 1}}, **fields)


def fresp(id: str, call_id: str = "tool-1", name: str = "Read", role: str = "tool", is_error=None, **fields) -> dict:
    content = {"kind": "function_response", "id": call_id, "name": name, "result": {"out": "x"}}
    if is_error is not None:
        content["isError"] = is_error
    return ev(id, role, content=content, **fields)


def codes(projection: ProviderProjection) -> list[str]:
    return [d.code for d in projection.diagnostics]


def item_ids(projection: ProviderProjection) -> list[str]:
    return [i["eventId"] for i in projection.items]


# ---------------------------------------------------------------------------------------
# Item shapes
# ---------------------------------------------------------------------------------------


def test_item_shapes():
    """Spec 20 §1.10 step 3: text/thinking/tool_call/tool_result items with eventId and ts."""
    events = [
        text("user-1", ts=1),
        think("thinking-1", ts=2, refs={"providerEventId": "msg-1"}),
        fcall("call-1", ts=3, refs={"stepId": "step-1"}),
        fresp("result-1", ts=4, is_error=True),
        text("assistant-1", "model", ts=5, refs={"providerEventId": "msg-2"}),
    ]
    projection = project_provider_items(events)
    assert [dict(i) for i in projection.items] == [
        {"kind": "text", "role": "user", "content": "user-1", "eventId": "user-1", "ts": 1},
        {"kind": "thinking", "text": "reasoning", "signature": "sig-1", "stepId": "msg-1", "eventId": "thinking-1",
         "ts": 2},
        {"kind": "tool_call", "toolCallId": "tool-1", "toolName": "Read", "input": {"p": 1}, "stepId": "step-1",
         "eventId": "call-1", "ts": 3},
        {"kind": "tool_result", "toolCallId": "tool-1", "toolName": "Read", "output": {"out": "x"}, "isError": True,
         "eventId": "result-1", "ts": 4},
        {"kind": "text", "role": "assistant", "content": "assistant-1", "stepId": "msg-2", "eventId": "assistant-1",
         "ts": 5},
    ]
    assert projection.blocking_diagnostics == ()


def test_is_error_is_a_strict_boolean_and_user_text_has_no_step_id():
    """Spec 20 §1.10 step 3 (choice): isError true only for ``isError === true``."""
    projection = project_provider_items(
        [text("user-1", refs={"providerEventId": "msg-0"}), fcall("call-1", refs={"stepId": "s"}), fresp("result-1")]
    )
    assert projection.items[0] == {"kind": "text", "role": "user", "content": "user-1", "eventId": "user-1", "ts": 1}
    assert projection.items[2]["isError"] is False


def test_attachments_are_referenced_in_the_text():
    """Spec 20 §0.1 text ``attachments``; replayed as text refs (choice)."""
    attachments = [{"name": "a.png", "mimeType": "image/png"}, {"name": "b.txt", "mimeType": "text/plain"}]
    event = ev("user-1", content={"kind": "text", "text": "look", "attachments": attachments})
    (item,) = project_provider_items([event]).items
    assert item["content"] == "look\n\n[attachment: a.png (image/png)] [attachment: b.txt (text/plain)]"
    assert item["attachments"] == attachments


def test_attachment_refs_render_missing_fields_like_javascript():
    """Choice: a missing attachment field renders as ``undefined`` (JavaScript ``String``)."""
    event = ev("user-1", content={"kind": "text", "text": "look", "attachments": [{"name": "a"}, {"size": 3}]})
    (item,) = project_provider_items([event]).items
    assert item["content"] == "look\n\n[attachment: a (undefined)] [attachment: undefined (undefined)]"


def test_items_are_frozen_and_input_is_not_mutated():
    """Spec 20 §1.8 (non-mutation) applied to the projector."""
    events = [text("user-1"), fcall("call-1", refs={"stepId": "s"}), fresp("result-1")]
    before = copy.deepcopy(events)
    projection = project_provider_items(events)
    assert events == before
    with pytest.raises(TypeError):
        projection.items[1]["input"]["p"] = 2


# ---------------------------------------------------------------------------------------
# Rules listed by spec 20 §1.10 step 3
# ---------------------------------------------------------------------------------------


def test_partial_events_are_skipped_with_a_blocking_diagnostic():
    """Spec 20 §1.10 step 3: skip partial events; partial_skipped blocks."""
    projection = project_provider_items([text("user-1"), text("model-1", "model", partial=True)])
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["partial_skipped"]
    assert projection.diagnostics[0].blocking


def test_hidden_events_are_skipped_without_blocking():
    """Spec 20 §1.10 step 3 (skip hidden events) and §8 item 27."""
    events = [
        text("user-1"),
        text("hidden-text", "tool", modelVisibility="hidden"),
        fcall("hidden-call", "nested-1", modelVisibility="hidden", origin="code_mode"),
        fresp("hidden-result", "nested-1", modelVisibility="hidden", origin="code_mode"),
        fresp("hidden-orphan", "nested-9", modelVisibility="hidden"),
    ]
    projection = project_provider_items(events)
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["hidden_skipped"] * 4
    assert projection.blocking_diagnostics == ()


def test_terminal_and_actions_only_events_are_diagnostic_only():
    """Spec 20 §1.10 step 3 and §9 item 6: terminal / actions-only facts never become items."""
    events = [
        text("user-1"),
        ev("perm-1", "system", actions={"permissionRequest": {"requestId": "r"}}),
        ev("bare-1", "system"),
        ev("terminal-1", "system", status="failed", actions={"endInvocation": True}),
    ]
    projection = project_provider_items(events)
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["system_runtime_fact_diagnostic_only", "terminal_fact_diagnostic_only"]
    assert projection.blocking_diagnostics == ()


def test_error_content_is_diagnostic_only():
    """Spec 20 §1.10 step 3: error content is diagnostic only (also on a terminal event)."""
    error_terminal = ev(
        "terminal-1",
        "system",
        status="failed",
        content={"kind": "error", "message": "boom", "code": "app_restarted"},
        actions={"endInvocation": True},
    )
    model_error = ev("err-1", "model", content={"kind": "error", "message": "x"})
    projection = project_provider_items([text("user-1"), model_error, error_terminal])
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == [
        "error_content_diagnostic_only",
        "terminal_fact_diagnostic_only",
        "error_content_diagnostic_only",
    ]
    assert projection.blocking_diagnostics == ()


def test_empty_model_text_is_skipped():
    """Spec 20 §1.10 step 3 (skip empty model text) and §8 item 41."""
    projection = project_provider_items([text("user-1"), text("model-empty", "model", value="")])
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["empty_text_skipped"]
    assert projection.blocking_diagnostics == ()


@pytest.mark.parametrize("role", ["user", "tool", "system"])
def test_empty_non_model_text_is_unsupported(role):
    """Choice (docs/choices/v2-replay.md): only empty *model* text is a benign step closer."""
    projection = project_provider_items([text("empty", role, value="")])
    assert codes(projection) == ["unsupported_content"]


def test_system_text_is_skipped():
    """Spec 20 §1.10 step 3: system text is skipped (system replay disabled)."""
    projection = project_provider_items([text("user-1"), text("system-1", "system")])
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["system_runtime_fact_diagnostic_only"]
    assert projection.blocking_diagnostics == ()


def test_signed_thinking_in_a_tool_turn_without_step_ids_is_skipped():
    """Spec 20 §1.10 step 3: skip signed thinking in a tool turn whose calls lack refs.stepId."""
    events = [text("user-1"), think("thinking-1"), fcall("call-1"), fresp("result-1")]
    projection = project_provider_items(events)
    assert item_ids(projection) == ["user-1", "call-1", "result-1"]
    assert codes(projection) == ["signed_thinking_in_tool_turn_skipped"]
    assert projection.blocking_diagnostics == ()


def test_signed_thinking_in_a_step_paired_tool_turn_is_kept():
    """Spec 20 §1.10 step 3: the skip applies only when the turn's calls lack refs.stepId."""
    events = [text("user-1"), think("thinking-1"), fcall("call-1", refs={"stepId": "step-1"}), fresp("result-1")]
    assert item_ids(project_provider_items(events)) == ["user-1", "thinking-1", "call-1", "result-1"]


def test_one_unpaired_call_makes_the_whole_turn_unpaired():
    """Spec 20 §1.10 step 3 (turn-granular, choice): any call without stepId in the turn."""
    events = [
        text("user-1"),
        think("thinking-1"),
        fcall("call-1", "tool-1", refs={"stepId": "step-1"}),
        fresp("result-1", "tool-1"),
        fcall("call-2", "tool-2"),
        fresp("result-2", "tool-2"),
    ]
    projection = project_provider_items(events)
    assert "thinking-1" not in item_ids(projection)
    assert codes(projection) == ["signed_thinking_in_tool_turn_skipped"]


def test_signed_thinking_in_another_turn_is_kept():
    """Spec 20 §1.10 step 3: the tool-turn rule is per turnId."""
    events = [text("user-1"), think("thinking-1", turnId="turn-0"), fcall("call-1"), fresp("result-1")]
    assert item_ids(project_provider_items(events)) == ["user-1", "thinking-1", "call-1", "result-1"]


def test_unsigned_thinking_is_skipped_without_blocking():
    """Choice: unsigned thinking cannot be replayed provider-native; skipped, not blocking."""
    events = [text("user-1"), think("thinking-1", signature=None), think("t2", signature="")]
    projection = project_provider_items(events)
    assert item_ids(projection) == ["user-1"]
    assert codes(projection) == ["unsigned_thinking_skipped"] * 2


def test_unmatched_calls_are_dropped_with_a_diagnostic():
    """Spec 20 §1.10 step 3: drop calls that never get a response (unmatched_tool_call)."""
    events = [
        text("user-1"),
        fcall("call-1", "tool-1", refs={"stepId": "a"}),
        fcall("call-2", "tool-2", refs={"stepId": "b"}),
        fresp("result-2", "tool-2"),
        text("assistant-1", "model"),
    ]
    projection = project_provider_items(events)
    assert item_ids(projection) == ["user-1", "call-2", "result-2", "assistant-1"]
    assert codes(projection) == ["unmatched_tool_call"]
    (diag,) = projection.unmatched_calls
    assert (diag.event_id, dict(diag.detail)) == ("call-1", {"toolCallId": "tool-1"})
    assert not diag.blocking


def test_unmatched_tool_result_blocks():
    """Spec 20 §1.10 step 3: unmatched_tool_result is blocking (also: response before its call)."""
    projection = project_provider_items([text("user-1"), fresp("result-1"), fcall("call-1")])
    assert codes(projection) == ["unmatched_tool_result", "unmatched_tool_call"]
    assert [d.code for d in projection.blocking_diagnostics] == ["unmatched_tool_result"]


def test_second_response_to_one_call_is_unmatched():
    """Choice: a call stops being pending once answered."""
    projection = project_provider_items([fcall("call-1"), fresp("result-1"), fresp("result-1b")])
    assert codes(projection) == ["unmatched_tool_result"]


def test_tool_name_mismatch_blocks():
    """Spec 20 §1.10 step 3: tool_id_mismatch (response name differs from the call's)."""
    projection = project_provider_items([fcall("call-1", name="Read"), fresp("result-1", name="Write")])
    assert codes(projection) == ["tool_id_mismatch"]
    assert dict(projection.diagnostics[0].detail) == {
        "toolCallId": "tool-1",
        "callName": "Read",
        "resultName": "Write",
        "callEventId": "call-1",
    }


@pytest.mark.parametrize(
    "event",
    [
        text("tool-text", "tool"),
        think("user-thinking", role="user"),
        fcall("user-call", role="user"),
        fresp("model-result", role="model"),
    ],
    ids=["text-tool", "thinking-user", "call-user", "response-model"],
)
def test_unsupported_roles_block(event):
    """Spec 20 §1.10 step 3: unsupported_role is blocking."""
    projection = project_provider_items([event])
    assert codes(projection) == ["unsupported_role"]
    assert projection.items == ()


@pytest.mark.parametrize(
    "event",
    [
        ev("odd-1", content={"kind": "image", "url": "x"}),
        ev("odd-2", content="text"),
        ev("odd-3", content={"kind": "text", "text": 5}),
        ev("odd-4", "model", content={"kind": "function_call", "id": 1, "name": "n", "args": {}}),
        None,
        42,
        "event",
        ["list"],
        {"id": "no-ts"},
        {"id": {"not": "hashable"}, "ts": 1},
        ev("nan-ts", ts=float("nan")),
        ev("bool-ts", ts=True),
        ev("list-kind", content={"kind": ["text"], "text": "x"}),
        ev("dict-status", status={"x": 1}, content={"kind": "image"}),
    ],
)
def test_unsupported_content_blocks_and_never_raises(event):
    """Spec 20 §1.10 step 3: unsupported_content is blocking; garbage never raises."""
    projection = project_provider_items([event])
    assert codes(projection) == ["unsupported_content"]
    assert projection.items == ()


def test_every_blocking_code_is_the_specs_list():
    """Spec 20 §1.10 step 3: exactly these five codes block."""
    assert BLOCKING_DIAGNOSTIC_CODES == {
        "partial_skipped",
        "unmatched_tool_result",
        "tool_id_mismatch",
        "unsupported_role",
        "unsupported_content",
    }


def test_unhashable_field_values_never_raise():
    """Architecture: fields of the wrong type are read defensively, never a crash."""
    events = [
        ev("a", role=["user"], content={"kind": "text", "text": "x"}),
        ev("b", "model", content={"kind": "function_call", "id": ["x"], "name": "n", "args": {}}),
        ev("c", "model", turnId={"t": 1}, content={"kind": "thinking", "text": "x", "signature": "s"}),
        ev("d", "model", refs=["stepId"], content={"kind": "function_call", "id": "x", "name": "n", "args": {}}),
        ev("e", modelVisibility={"hidden": True}, actions=[1], status=[2]),
    ]
    projection = project_provider_items(events)
    assert [d.code for d in projection.blocking_diagnostics] == ["unsupported_role", "unsupported_content"]


def test_non_iterable_input_never_raises():
    """Architecture: planners accept any value and never raise."""
    assert codes(project_provider_items(None)) == ["unsupported_content"]  # type: ignore[arg-type]


def test_diagnostic_json_omits_absent_fields():
    """Architecture: absent optional fields are omitted, never null."""
    projection = project_provider_items([None, fcall("call-1")])
    assert projection.diagnostics[0].to_json() == {
        "code": "unsupported_content",
        "message": "RuntimeEvent is not an object",
        "detail": {"type": "NoneType"},
    }
    assert projection.diagnostics[1].to_json() == {
        "code": "unmatched_tool_call",
        "message": "function_call has no matching function_response; dropped from model replay",
        "eventId": "call-1",
        "detail": {"toolCallId": "tool-1"},
    }
