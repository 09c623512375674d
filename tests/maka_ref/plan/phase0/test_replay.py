"""Phase 0 provider-replay assembly (spec 20 §1.7, §9 items 4–7).

Expected ids are copied from the spec or follow directly from the §1.7 rule quoted in each
test's docstring.
"""

from __future__ import annotations

import copy
from typing import Any

from maka_ref._plan.phase0.replay import phase0_replay_events
from maka_ref._plan.phase0.plan import build_resume_plan
from maka_ref.testing.families import event, w_call, w_decision_parked, w_dispatch, w_outcome, w_reconcile


def user(id: str = "user-1", text: str = "hello", **fields: Any) -> dict[str, Any]:
    return event(id, role="user", author="user", content={"kind": "text", "text": text}, **fields)


def model_text(id: str, text: str = "thinking out loud", **fields: Any) -> dict[str, Any]:
    return event(id, role="model", author="agent", content={"kind": "text", "text": text}, **fields)


def call(id: str, call_id: str, name: str = "Bash", **fields: Any) -> dict[str, Any]:
    content = {"kind": "function_call", "id": call_id, "name": name, "args": {}}
    return event(id, role="model", author="agent", content=content, **fields)


def response(id: str, call_id: str, name: str = "Bash", **fields: Any) -> dict[str, Any]:
    content = {"kind": "function_response", "id": call_id, "name": name, "result": "ok"}
    return event(id, role="tool", author="tool", content=content, **fields)


def terminal(id: str = "terminal-1") -> dict[str, Any]:
    return event(id, status="failed", actions={"endInvocation": True})


def ids(events: list[Any] | tuple[Any, ...]) -> list[str]:
    return [e["id"] for e in events]


def replay(events: list[Any]) -> tuple[Any, ...]:
    before = copy.deepcopy(events)
    out = phase0_replay_events(events)
    assert events == before  # §1.8: never mutates
    assert isinstance(out, tuple)
    assert all(any(r is e for e in events) for r in out)  # the input objects themselves
    return out


def test_unresolved_call_never_appears() -> None:
    """§8 item 4: `[user, unresolved call, system text]` → `[user-1, system-1]`."""
    events = [user(), call("call-1", "tool-1"), event("system-1", content={"kind": "text", "text": "note"})]
    assert ids(replay(events)) == ["user-1", "system-1"]


def test_paired_call_and_response_are_kept() -> None:
    events = [user(), call("call-1", "tool-1"), response("result-1", "tool-1")]
    assert ids(replay(events)) == ["user-1", "call-1", "result-1"]


def test_orphan_response_never_appears() -> None:
    """§1.7 consequences; §8 item 7: `[response only]` → replay `[]`."""
    assert replay([response("result-1", "tool-1")]) == ()


def test_response_before_its_call_is_not_paired() -> None:
    """§1.7 step 1, §9 item 5: pairing needs the call *first*."""
    events = [user(), response("result-1", "tool-1"), call("call-1", "tool-1")]
    assert ids(replay(events)) == ["user-1"]


def test_name_mismatch_is_not_paired() -> None:
    """§1.7 step 1, §9 item 5: pairing needs an equal tool name."""
    events = [call("call-1", "tool-1", "Write"), response("result-1", "tool-1", "Read")]
    assert replay(events) == ()


def test_later_call_with_same_id_overwrites() -> None:
    """§1.7 step 1: a later call with the same id overwrites the recorded call, so the
    response is compared with the later call's name."""
    events = [
        call("call-1", "tool-1", "Write"),
        call("call-2", "tool-1", "Read"),
        response("result-1", "tool-1", "Write"),
    ]
    assert replay(events) == ()
    events[2]["content"]["name"] = "Read"
    # The id is paired now: both calls carrying it and the response are kept (§1.7 step 2).
    assert ids(replay(events)) == ["call-1", "call-2", "result-1"]


def test_terminal_fact_and_content_less_facts_stay() -> None:
    """§1.7 step 2 / §9 item 6: content-less facts (terminal, dispatch, recovery facts,
    permission requests) stay in the replay event list."""
    permission = event("permission-1", actions={"permissionRequest": {"requestId": "req-1"}})
    events = [user(), permission, w_call(), w_dispatch(), w_outcome(), terminal()]
    assert ids(replay(events)) == [
        "user-1",
        "permission-1",
        "call-event-1",
        "dispatch-event-1",
        "outcome-event-1",
        "terminal-1",
    ]


def test_unresolved_bundle_keeps_facts_drops_call() -> None:
    """Spec 10 scenario 62 ledger: the parked call has no response → dropped; facts stay."""
    events = [w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()]
    assert ids(replay(events)) == ["dispatch-event-1", "reconcile-event-1", "decision-event-1"]


def test_no_suffix_trimming_in_phase0() -> None:
    """§1.7, §9 item 4: an interrupted assistant text after the last user message is kept."""
    events = [user(), model_text("assistant-1"), event("thinking-1", role="model", author="agent", content={"kind": "thinking", "text": "hm", "signature": "sig"})]
    assert ids(replay(events)) == ["user-1", "assistant-1", "thinking-1"]


def test_error_thinking_and_empty_text_are_kept_unchanged() -> None:
    """§1.7 step 2: every other content kind is kept unchanged."""
    events = [
        user(),
        event("error-1", content={"kind": "error", "message": "boom"}),
        event("thinking-1", role="model", author="agent", content={"kind": "thinking", "text": "hm"}),
        model_text("empty-1", ""),
    ]
    assert ids(replay(events)) == ["user-1", "error-1", "thinking-1", "empty-1"]


def test_partial_events_are_dropped_and_do_not_pair() -> None:
    """§1.7: partial events are skipped by pairing and dropped by the filter."""
    events = [
        user(),
        model_text("partial-1", partial=True),
        call("partial-call", "tool-1", partial=True),
        response("result-1", "tool-1"),
    ]
    assert ids(replay(events)) == ["user-1"]
    # A partial response does not pair a committed call either.
    events = [call("call-1", "tool-1"), response("partial-result", "tool-1", partial=True)]
    assert replay(events) == ()


def test_hidden_events_are_dropped_but_take_part_in_pairing() -> None:
    """§1.7: "Hidden events participate in pairing but are dropped below."""
    events = [
        user(),
        call("hidden-call", "tool-1", modelVisibility="hidden", origin="code_mode"),
        response("visible-result", "tool-1"),
        call("nested-call", "nested-1", modelVisibility="hidden"),
        response("nested-result", "nested-1", modelVisibility="hidden"),
        event("hidden-text", content={"kind": "text", "text": "x"}, modelVisibility="hidden"),
        event("hidden-fact", actions={"endInvocation": True}, modelVisibility="hidden"),
    ]
    assert ids(replay(events)) == ["user-1", "visible-result"]


def test_visible_marker_on_content_less_event_is_kept() -> None:
    """`modelVisibility: "visible"` (or absent) never drops an event."""
    events = [event("fact-1", modelVisibility="visible", actions={"endInvocation": True}), user()]
    assert ids(replay(events)) == ["fact-1", "user-1"]


def test_non_object_events_and_odd_contents_are_dropped() -> None:
    """Our choice (docs/choices/plan.md): non-objects and non-object contents are dropped;
    `content: null` counts as no content; unknown content kinds are kept. A call and a
    response without ``name`` pair (upstream: ``undefined === undefined``)."""
    events: list[Any] = [
        None,
        7,
        "user-1",
        ["x"],
        user(),
        {"id": "no-content-null", "content": None},
        {"id": "content-string", "content": "hello"},
        {"id": "unknown-kind", "content": {"kind": "image"}},
        {"id": "no-kind", "content": {}},
        {"id": "call-bad-id", "content": {"kind": "function_call", "id": 1, "name": "Bash", "args": {}}},
        {"id": "resp-bad-id", "content": {"kind": "function_response", "id": 1, "name": "Bash", "result": 1}},
        {"id": "call-no-name", "content": {"kind": "function_call", "id": "c", "args": {}}},
        {"id": "resp-no-name", "content": {"kind": "function_response", "id": "c", "result": 1}},
    ]
    assert ids(replay(events)) == ["user-1", "no-content-null", "unknown-kind", "no-kind", "call-bad-id", "resp-bad-id",
                                   "call-no-name", "resp-no-name"]


def test_empty_and_iterables() -> None:
    assert phase0_replay_events([]) == ()
    events = [user(), terminal()]
    assert ids(phase0_replay_events(e for e in events)) == ["user-1", "terminal-1"]
    assert ids(phase0_replay_events(tuple(events))) == ["user-1", "terminal-1"]


def test_call_ids_are_paired_by_id_alone_and_the_plan_still_blocks() -> None:
    """§1.7 as upstream implements it (``collectPairedCallIds``, runtime-resume.ts:1443): a
    provider call id is paired by id alone, a later call overwriting the earlier one whatever
    its invocation. A reused id can therefore carry an unanswered call of a later invocation
    into the replay list, but that call is an unsettled operation, so the plan is blocked and
    the list is never replayed (docs/spec-choices.md, "Phase 0 pairing")."""
    second = {"invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}
    events = [
        call("call-1", "tool-1", "Bash"),
        response("result-1", "tool-1", "Bash"),
        call("call-2", "tool-1", "Write", **second),
    ]
    assert ids(replay(events)) == ["call-1", "result-1", "call-2"]
    assert build_resume_plan(events).disposition == "blocked"
    # A response in the other invocation pairs by id too; the resolver calls it an orphan.
    events = [call("call-1", "tool-1", "Bash"), response("result-2", "tool-1", "Bash", **second)]
    assert ids(replay(events)) == ["call-1", "result-2"]
    assert build_resume_plan(events).disposition == "blocked"
    # Both invocations answered: everything replays.
    events = [
        call("call-1", "tool-1", "Bash"),
        call("call-2", "tool-1", "Write", **second),
        response("result-2", "tool-1", "Write", **second),
        response("result-1", "tool-1", "Bash"),
    ]
    assert ids(replay(events)) == ["call-1", "call-2", "result-2", "result-1"]
