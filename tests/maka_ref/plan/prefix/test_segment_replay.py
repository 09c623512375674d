"""Continuation segment replay and the composite replay plan (spec 20 §1.10).

Scenarios are spec 20 §8 items 11 and 26–31 (the anchor's ``continuation-replay.test.ts``),
plus every blocked reason of §1.10 steps 1–4, §9 item 4 (v2 trims, Phase 0 does not),
§9 item 6 (content-less facts stay in replay lists), §10 item 9 (fail closed on forged
prefixes / bad lineages) and the "never raises" contract of the planners.
"""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from maka_ref._plan.prefix.digests import provider_replay_digest
from maka_ref._plan.prefix.immutable import ImmutableRuntimePrefix, PrefixPosition, build_immutable_prefix, segment_of
from maka_ref._plan.prefix.replay import (
    CompositeReplayBlocked,
    CompositeReplayPlan,
    SegmentReplay,
    SegmentReplayBlocked,
    build_composite_replay_plan,
    build_segment_replay,
)

T1 = "t1_after_preflight_v1"
DIGEST_A = "sha256:" + "a" * 64
IDENTITY = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
IDENTITY_2 = {"sessionId": "session-1", "invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}
IDENTITY_3 = {"sessionId": "session-1", "invocationId": "invocation-3", "runId": "run-3", "turnId": "turn-3"}


def text_event(id: str, role: str, identity: dict = IDENTITY, ts: int = 1, **fields) -> dict:
    """The anchor test's ``textEvent``: content text = id."""
    out = {
        "id": id,
        **identity,
        "ts": ts,
        "partial": False,
        "role": role,
        "author": "user" if role == "user" else "agent",
        "content": {"kind": "text", "text": id},
    }
    out.update(fields)
    return out


def t1_user(id: str = "user-1", identity: dict = IDENTITY) -> dict:
    return text_event(id, "user", identity, actions={"runtimeProtocol": {"toolBoundary": T1}})


def thinking(
    id: str, identity: dict = IDENTITY, signature: str | None = "signed-1", role: str = "model", **fields
) -> dict:
    content = {"kind": "thinking", "text": "unfinished"}
    if signature is not None:
        content["signature"] = signature
    return text_event(id, role, identity, content=content, **fields)


def call(id: str, call_id: str = "tool-1", name: str = "Read", identity: dict = IDENTITY, args=None, **fields) -> dict:
    return text_event(
        id,
        "model",
        identity,
        content={"kind": "function_call", "id": call_id, "name": name, "args": {} if args is None else args},
        **fields,
    )


def result(id: str, call_id: str = "tool-1", name: str = "Read", identity: dict = IDENTITY, **fields) -> dict:
    return text_event(
        id,
        "tool",
        identity,
        author="tool",
        content={"kind": "function_response", "id": call_id, "name": name, "result": "ok"},
        **fields,
    )


def system(id: str, identity: dict = IDENTITY, ts: int = 1, **fields) -> dict:
    out = {"id": id, **identity, "ts": ts, "partial": False, "role": "system", "author": "system"}
    out.update(fields)
    return out


def failed_terminal(id: str = "failed-terminal", identity: dict = IDENTITY, ts: int = 4) -> dict:
    return system(id, identity, ts, status="failed", actions={"endInvocation": True})


def continuation_start(identity: dict = IDENTITY, *, t1: bool = False) -> dict:
    """A live ``continuation_start_v2`` (spec 20 §3.12)."""
    actions: dict = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": "runtime_admission",
            "claimId": "claim-1",
            "boundaryDigest": DIGEST_A,
            "immediateSource": {
                "sessionId": identity["sessionId"],
                "invocationId": "ancestor-invocation",
                "runId": "ancestor-run",
                "turnId": "ancestor-turn",
                "highWater": 2,
                "prefixDigest": DIGEST_A,
            },
            "replayManifestDigest": DIGEST_A,
            "providerProjectionVersion": 1,
            "providerReplayDigest": DIGEST_A,
        }
    }
    if t1:
        actions["runtimeProtocol"] = {"toolBoundary": T1}
    return system("continuation-start", identity, 1, actions=actions)


def prefix(*events: dict, identity: dict = IDENTITY) -> ImmutableRuntimePrefix:
    return build_immutable_prefix([(i + 1, e) for i, e in enumerate(events)], identity=identity)


def ids(events) -> list[str]:
    return [e["id"] for e in events]


def replayable(result_) -> SegmentReplay:
    assert isinstance(result_, SegmentReplay), result_
    assert result_.kind == "replayable" and not result_.blocked
    return result_


def blocked(result_) -> SegmentReplayBlocked:
    assert isinstance(result_, SegmentReplayBlocked), result_
    assert result_.kind == "blocked" and result_.blocked
    return result_


# ---------------------------------------------------------------------------------------
# Spec 20 §8 items 26–31 (continuation-replay.test.ts)
# ---------------------------------------------------------------------------------------


def test_item_26_trims_interrupted_assistant_suffix_after_last_user_anchor():
    """Spec 20 §8 item 26 / §1.10 step 5: [T1 user, signed thinking, assistant text]."""
    ledger = prefix(t1_user(), thinking("thinking-1"), text_event("assistant-1", "model"))
    seg = replayable(build_segment_replay(ledger))
    assert list(seg.trimmed_suffix_event_ids) == ["thinking-1", "assistant-1"]
    assert ids(seg.replay_runtime_events) == ["user-1"]
    assert [item["eventId"] for item in seg.provider_items] == ["user-1"]


def test_item_27_hidden_nested_events_are_excluded_from_replay_context():
    """Spec 20 §8 item 27 / §1.10 steps 3, 6: [T1 user, hidden tool-role text]."""
    hidden = text_event("hidden-nested-result", "tool", modelVisibility="hidden")
    seg = replayable(build_segment_replay(prefix(t1_user(), hidden)))
    assert ids(seg.replay_runtime_events) == ["user-1"]
    assert list(seg.trimmed_suffix_event_ids) == []
    assert [item["eventId"] for item in seg.provider_items] == ["user-1"]


def test_item_28_segment_without_anchor_trims_every_model_visible_item():
    """Spec 20 §8 item 28 / §1.10 step 5 (no anchor): start, thinking, text, failed terminal."""
    seg = replayable(
        build_segment_replay(
            prefix(
                continuation_start(),
                thinking("thinking-1"),
                text_event("assistant-1", "model"),
                failed_terminal(),
            )
        )
    )
    assert list(seg.trimmed_suffix_event_ids) == ["thinking-1", "assistant-1"]
    assert ids(seg.replay_runtime_events) == ["continuation-start", "failed-terminal"]
    assert list(seg.provider_items) == []


def test_item_29_pre_t1_call_of_a_live_start_is_trimmed():
    """Spec 20 §8 item 29: [live start with T1 marker, Write call (no dispatch), failed terminal]."""
    write = call(
        "call-1", "tool-call-1", "Write", author="agent", ts=2, args={"path": "notes.txt", "content": "hello"}
    )
    seg = replayable(build_segment_replay(prefix(continuation_start(t1=True), write, failed_terminal(ts=3))))
    assert list(seg.trimmed_suffix_event_ids) == ["call-1"]
    assert ids(seg.replay_runtime_events) == ["continuation-start", "failed-terminal"]
    assert list(seg.provider_items) == []


def test_item_30_unmatched_call_followed_by_assistant_text_is_a_non_suffix_gap():
    """Spec 20 §8 item 30 / §1.10 step 4: [T1 user, unmatched Read call, assistant text]."""
    res = blocked(build_segment_replay(prefix(t1_user(), call("call-1"), text_event("assistant-1", "model"))))
    assert res.reason == "provider_replay_non_suffix_gap"
    assert [d.code for d in res.diagnostics] == ["unmatched_tool_call"]
    assert res.diagnostics[0].event_id == "call-1"


def test_item_31_every_lineage_segment_is_projected_once():
    """Spec 20 §8 item 31 / §1.10 composite: ancestor [user, thinking, text], source [user]."""
    ancestor = prefix(
        t1_user("root-user"),
        thinking("root-thinking", signature="signed-root"),
        text_event("root-interrupted-text", "model"),
    )
    source = prefix(t1_user("child-user", IDENTITY_2), identity=IDENTITY_2)
    plan = build_composite_replay_plan([ancestor, source])
    assert isinstance(plan, CompositeReplayPlan) and not plan.blocked
    assert ids(plan.runtime_context) == ["root-user", "child-user"]
    assert [list(s.trimmed_suffix_event_ids) for s in plan.segments] == [["root-thinking", "root-interrupted-text"], []]
    assert [s.identity.run_id for s in plan.boundary.segments] == ["run-1", "run-2"]
    assert [item["eventId"] for item in plan.provider_items] == ["root-user", "child-user"]


def test_item_11_t1_call_without_dispatch_and_failed_terminal_continues():
    """Spec 20 §8 item 11 (with item 10's ledger): runtimeContext [user-1, terminal-1].

    The T1 marker makes the undispatched call ``definitely_not_dispatched`` (not blocking,
    §1.10 step 1); the projector drops it as unmatched and step 5 trims it.
    """
    bash = call("call-1", "tool-1", "Bash", args={"command": "do-it"})
    ledger = prefix(t1_user(), bash, failed_terminal("terminal-1"))
    plan = build_composite_replay_plan([ledger])
    assert isinstance(plan, CompositeReplayPlan)
    assert ids(plan.runtime_context) == ["user-1", "terminal-1"]
    assert list(plan.segments[0].trimmed_suffix_event_ids) == ["call-1"]


# ---------------------------------------------------------------------------------------
# Steps 1–4: every blocked reason
# ---------------------------------------------------------------------------------------


def test_step_1_corruption_blocks():
    """Spec 20 §1.10 step 1: resolver corruption (an orphan response) → tool_recovery_corruption."""
    res = blocked(build_segment_replay(prefix(t1_user(), result("result-1"))))
    assert res.reason == "tool_recovery_corruption"


def test_step_1_unsettled_tool_state_blocks():
    """Spec 20 §1.10 step 1: legacy call without response is indeterminate → tool_recovery_unsettled."""
    res = blocked(build_segment_replay(prefix(text_event("user-1", "user"), call("call-1"))))
    assert res.reason == "tool_recovery_unsettled"


def test_step_1_definitely_not_dispatched_does_not_block():
    """Spec 20 §1.10 step 1: definitely_not_dispatched does *not* block."""
    replayable(build_segment_replay(prefix(t1_user(), call("call-1"))))


@pytest.mark.parametrize("version", [2, 0, True, "1", None])
def test_step_2_only_projection_version_1_is_supported(version):
    """Spec 20 §1.9/§1.10 step 2: any version other than 1 → provider_replay_unsupported."""
    res = blocked(build_segment_replay(prefix(t1_user()), provider_projection_version=version))
    assert res.reason == "provider_replay_unsupported"
    composite = build_composite_replay_plan([prefix(t1_user())], provider_projection_version=version)
    assert isinstance(composite, CompositeReplayBlocked)
    assert (composite.reason, composite.segment_index) == ("provider_replay_unsupported", 0)


def test_step_1_precedes_step_2():
    """Spec 20 §1.10: tool state is checked before the projection version."""
    res = blocked(build_segment_replay(prefix(t1_user(), result("result-1")), provider_projection_version=2))
    assert res.reason == "tool_recovery_corruption"


@pytest.mark.parametrize(
    "bad, code",
    [
        (text_event("tool-text", "tool"), "unsupported_role"),
        (text_event("empty-user", "user", content={"kind": "text", "text": ""}), "unsupported_content"),
        (thinking("user-thinking", role="user"), "unsupported_role"),
    ],
    ids=["tool-role-text", "empty-user-text", "user-thinking"],
)
def test_step_3_blocking_projection_diagnostics(bad, code):
    """Spec 20 §1.10 step 3: a blocking projector diagnostic → provider_replay_unsupported."""
    res = blocked(build_segment_replay(prefix(t1_user(), bad)))
    assert res.reason == "provider_replay_unsupported"
    assert [d.code for d in res.diagnostics] == [code]


def test_step_4_gap_before_a_tool_result_blocks():
    """Spec 20 §1.10 step 4: an unmatched call followed by a later provider item."""
    ledger = prefix(t1_user(), call("call-1", "tool-1"), call("call-2", "tool-2"), result("result-2", "tool-2"))
    res = blocked(build_segment_replay(ledger))
    assert res.reason == "provider_replay_non_suffix_gap"
    assert res.diagnostics[0].event_id == "call-1"


# ---------------------------------------------------------------------------------------
# Step 5/6 details
# ---------------------------------------------------------------------------------------


def test_tool_result_is_an_anchor():
    """Spec 20 §1.10 step 5: the last tool_result anchors; later assistant output is trimmed."""
    ledger = prefix(
        t1_user(),
        call("call-1", "tool-1", refs={"stepId": "step-1"}),
        result("result-1", "tool-1"),
        text_event("assistant-1", "model"),
        call("call-2", "tool-2", refs={"stepId": "step-2"}),
        failed_terminal(ts=9),
    )
    seg = replayable(build_segment_replay(ledger))
    assert list(seg.trimmed_suffix_event_ids) == ["assistant-1", "call-2"]
    assert ids(seg.replay_runtime_events) == ["user-1", "call-1", "result-1", "failed-terminal"]
    assert [item["eventId"] for item in seg.provider_items] == ["user-1", "call-1", "result-1"]


def test_completed_segment_without_suffix_keeps_everything():
    """Spec 20 §1.10 steps 5–6 and §9 item 6: content-less facts stay in replay lists."""
    ledger = prefix(
        t1_user(),
        call("call-1", "tool-1", refs={"stepId": "step-1"}),
        system("dispatch-note", ts=1, actions={"stateDelta": {"note": "x"}}),
        result("result-1", "tool-1"),
        failed_terminal(ts=9),
    )
    seg = replayable(build_segment_replay(ledger))
    assert list(seg.trimmed_suffix_event_ids) == []
    assert ids(seg.replay_runtime_events) == ["user-1", "call-1", "dispatch-note", "result-1", "failed-terminal"]


def test_v2_trims_where_phase_0_keeps():
    """Spec 20 §9 item 4: v2 trims the interrupted assistant text Phase 0 would keep."""
    seg = replayable(build_segment_replay(prefix(t1_user(), text_event("assistant-1", "model"))))
    assert list(seg.trimmed_suffix_event_ids) == ["assistant-1"]
    assert ids(seg.replay_runtime_events) == ["user-1"]


def test_segment_replay_json_shape_and_digest():
    """Spec 20 §1.10 step 6 (output keys) and §1.9 (provider replay digest formula)."""
    seg = replayable(build_segment_replay(prefix(t1_user())))
    doc = seg.to_json()
    assert list(doc) == ["boundary", "trimmedSuffixEventIds", "replayRuntimeEvents", "providerItems"]
    assert doc["boundary"] == segment_of(prefix(t1_user())).to_json()
    assert doc["providerItems"] == [
        {"kind": "text", "role": "user", "content": "user-1", "eventId": "user-1", "ts": 1}
    ]
    body = {"items": doc["providerItems"], "protocol": "provider_replay_plan_v1", "providerProjectionVersion": 1}
    expected = "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert seg.provider_replay_digest == expected


# ---------------------------------------------------------------------------------------
# Composite plan
# ---------------------------------------------------------------------------------------


def test_composite_plan_shape():
    """Spec 20 §1.10 composite: protocol, version 1, boundary cursor, items, context, digest."""
    ancestor = prefix(t1_user("root-user"), text_event("root-text", "model"))
    source = prefix(t1_user("child-user", IDENTITY_2), identity=IDENTITY_2)
    plan = build_composite_replay_plan([ancestor, source])
    assert isinstance(plan, CompositeReplayPlan)
    doc = plan.to_json()
    assert set(doc) == {
        "protocol",
        "providerProjectionVersion",
        "boundary",
        "providerReplayDigest",
        "segments",
        "runtimeContext",
        "providerItems",
    }
    assert doc["protocol"] == "continuation_replay_plan_v1"
    assert doc["providerProjectionVersion"] == 1
    assert doc["boundary"]["protocol"] == "runtime_boundary_cursor_v1"
    assert [s["prefixDigest"] for s in doc["boundary"]["segments"]] == [ancestor.prefix_digest, source.prefix_digest]
    assert [list(s) for s in doc["segments"]] == [["boundary", "replayRuntimeEvents", "trimmedSuffixEventIds"]] * 2
    assert [e["id"] for e in doc["runtimeContext"]] == ["root-user", "child-user"]
    items = [
        {"kind": "text", "role": "user", "content": "root-user", "eventId": "root-user", "ts": 1},
        {"kind": "text", "role": "user", "content": "child-user", "eventId": "child-user", "ts": 1},
    ]
    assert doc["providerItems"] == items
    body = {"items": items, "protocol": "provider_replay_plan_v1", "providerProjectionVersion": 1}
    expected = "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert doc["providerReplayDigest"] == expected == provider_replay_digest(items)


def test_three_generations_never_reintroduce_an_ancestor_suffix():
    """Spec 20 §1.10 / §3.15: A→B→C; a suffix trimmed from A never reappears."""
    a = prefix(t1_user("a-user"), text_event("a-interrupted", "model"))
    b = prefix(
        continuation_start(IDENTITY_2),
        call("b-call", "b-tool", refs={"stepId": "s"}, identity=IDENTITY_2),
        result("b-result", "b-tool", identity=IDENTITY_2),
        text_event("b-interrupted", "model", IDENTITY_2),
        failed_terminal("b-terminal", IDENTITY_2),
        identity=IDENTITY_2,
    )
    c = prefix(
        continuation_start(IDENTITY_3),
        thinking("c-thinking", IDENTITY_3),
        failed_terminal("c-terminal", IDENTITY_3),
        identity=IDENTITY_3,
    )
    plan = build_composite_replay_plan([a, b, c])
    assert isinstance(plan, CompositeReplayPlan)
    assert ids(plan.runtime_context) == [
        "a-user",
        "continuation-start",
        "b-call",
        "b-result",
        "b-terminal",
        "continuation-start",
        "c-terminal",
    ]
    assert [list(s.trimmed_suffix_event_ids) for s in plan.segments] == [
        ["a-interrupted"],
        ["b-interrupted"],
        ["c-thinking"],
    ]
    assert [i["eventId"] for i in plan.provider_items] == ["a-user", "b-call", "b-result"]


def test_composite_reports_the_first_blocked_segment_index():
    """Spec 20 §1.10 composite: block on the first blocked segment; report its index."""
    good = prefix(t1_user())
    bad = prefix(t1_user("child-user", IDENTITY_2), result("orphan", identity=IDENTITY_2), identity=IDENTITY_2)
    res = build_composite_replay_plan([good, bad])
    assert isinstance(res, CompositeReplayBlocked)
    assert (res.reason, res.segment_index) == ("tool_recovery_corruption", 1)
    assert res.to_json()["segmentIndex"] == 1


def test_composite_with_repeated_run_fails_closed():
    """Spec 20 §1.9 cursor rules and §10 item 9 (fail closed): the same run twice."""
    res = build_composite_replay_plan([prefix(t1_user()), prefix(t1_user())])
    assert isinstance(res, CompositeReplayBlocked)
    assert (res.reason, res.segment_index) == ("boundary_invalid", 1)
    assert [d.code for d in res.diagnostics] == ["boundary_duplicate_run_id"]


def test_composite_needs_a_prefix():
    """Spec 20 §1.10: the plan is over [oldest … immediate source] (non-empty)."""
    res = build_composite_replay_plan([])
    assert isinstance(res, CompositeReplayBlocked)
    assert res.reason == "boundary_invalid" and res.segment_index is None
    assert "segmentIndex" not in res.to_json()


# ---------------------------------------------------------------------------------------
# Forged prefixes and garbage never raise
# ---------------------------------------------------------------------------------------


def test_forged_prefix_is_blocked_not_trusted():
    """Spec 20 §1.9 (no forged position/digest) and §10 item 9 (fail closed)."""
    real = prefix(t1_user(), text_event("assistant-1", "model"))
    position = PrefixPosition(1, 1, "user-1")
    forged_position = ImmutableRuntimePrefix(real.identity, position, real.prefix_digest, real.events)
    forged_digest = ImmutableRuntimePrefix(real.identity, real.position, DIGEST_A, real.events)
    for forged, code in ((forged_position, "prefix_position_mismatch"), (forged_digest, "prefix_digest_mismatch")):
        res = blocked(build_segment_replay(forged))
        assert res.reason == "prefix_unverifiable"
        assert [d.code for d in res.diagnostics] == [code]
        composite = build_composite_replay_plan([real.to_json(), forged])
        assert isinstance(composite, CompositeReplayBlocked) and composite.segment_index == 1


GARBAGE_EVENTS = [
    None,
    1,
    "event",
    [],
    {},
    {"id": "x"},
    {"id": {"not": "hashable"}, "content": []},
    dict(text_event("nan", "user"), ts=float("nan")),
    dict(text_event("set-args", "model"), content={"kind": "function_call", "id": "c", "name": "n", "args": {1, 2}}),
]


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "prefix",
        [],
        {"protocol": "immutable_runtime_prefix_v1"},
        {"protocol": "immutable_runtime_prefix_v1", "identity": IDENTITY, "position": {}, "events": []},
        {
            "protocol": "immutable_runtime_prefix_v1",
            "identity": IDENTITY,
            "position": {"lastEventSeq": len(GARBAGE_EVENTS), "eventCount": len(GARBAGE_EVENTS), "lastEventId": "x"},
            "prefixDigest": DIGEST_A,
            "events": GARBAGE_EVENTS,
        },
        ImmutableRuntimePrefix(
            prefix(t1_user()).identity, PrefixPosition(9, 9, "x"), DIGEST_A, tuple(GARBAGE_EVENTS)
        ),
    ],
)
def test_planners_never_raise_on_garbage(value):
    """Spec 20 §1.10 + architecture: planners return blocked, they never raise."""
    original = copy.deepcopy(value) if not isinstance(value, ImmutableRuntimePrefix) else None
    res = build_segment_replay(value)
    assert isinstance(res, SegmentReplayBlocked)
    assert res.reason == "prefix_unverifiable"
    composite = build_composite_replay_plan([value])
    assert isinstance(composite, CompositeReplayBlocked) and composite.segment_index == 0
    if original is not None:
        assert value == original  # not mutated
    assert isinstance(build_composite_replay_plan(value), CompositeReplayBlocked)


def test_segment_replay_does_not_mutate_and_is_deterministic():
    """Spec 20 §1.8 (determinism, non-mutation) applied to the v2 planners."""
    raw = [t1_user(), thinking("thinking-1"), text_event("assistant-1", "model")]
    before = copy.deepcopy(raw)
    p = build_immutable_prefix([(i + 1, e) for i, e in enumerate(raw)])
    first = build_composite_replay_plan([p])
    second = build_composite_replay_plan([p])
    assert raw == before
    assert first.to_json() == second.to_json()
