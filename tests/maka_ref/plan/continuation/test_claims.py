"""Existing-claim classification, start/claim matching and terminal facts (spec 20 §3.5, §3.12, §4.3).

Pure functions over claim + target header + target events: every step of §3.5 (1–10), the
§3.12 start-event shape rules, the §3.5 header compatibility rule (§9 item 20, §10 item 8),
and the §4.3 terminal classification used for ``terminalRepairSucceeded`` (§3.3; §9 items
23–24).
"""

from __future__ import annotations

import copy

import pytest

from tests.maka_ref.continuation.support import MemoryWorld, header, model_text, terminal, user, v2_child
from maka_ref._plan.continuation import (
    ClaimState,
    classify_existing_claim,
    classify_terminal,
    header_matches_fact,
    start_matches_claim,
    target_header_compatible,
    terminal_repair_succeeded,
)
from maka_ref._plan.continuation.claims import MUTABLE_HEADER_FIELDS


def fixture(status="failed", child_events=None, provenance="runtime_admission"):
    world = MemoryWorld()
    world.add(header(1), [user("user-1"), terminal("terminal-1")])
    claim, start, hdr = v2_child(world, ["run-1"], 2,
                                 [terminal("terminal-2", 2)] if child_events is None else child_events,
                                 status=status, provenance=provenance)
    return claim, start, hdr, world.events["run-2"], world.claims[claim["boundaryDigest"]]


def classify(state, hdr, events):
    return classify_existing_claim(state, hdr, events)


def test_step_8_already_exists():
    claim, _, hdr, events, state = fixture()
    c = classify(state, hdr, events)
    assert (c.reason, c.step) == ("continuation_already_exists", 8)
    assert c.detail() == {"continuationClaimId": "claim-2", "continuationRunId": "run-2"}


def test_step_1_target_missing():
    _, _, _, events, state = fixture()
    assert classify(state, None, events).reason == "continuation_claim_repair_required"


def test_step_2_incompatible_header_but_mutable_fields_ignored():
    _, _, hdr, events, state = fixture()
    for field in ("modelId", "cwd", "parentRunId"):
        tampered = {**hdr, field: "tampered"}
        assert classify(state, tampered, events).step == 2
    assert MUTABLE_HEADER_FIELDS == {"status", "updatedAt", "completedAt", "failureClass", "failureMessage",
                                     "abortSource", "traceWriteError"}
    changed = {**hdr, "failureMessage": "boom", "completedAt": 9, "traceWriteError": "x"}
    assert target_header_compatible(changed, state.claim["targetRunHeader"])
    # §10 item 8: runComposition is not excluded
    assert not target_header_compatible({**hdr, "runComposition": {"a": 1}}, state.claim["targetRunHeader"])


def test_step_3_target_prefix_unreadable():
    _, _, hdr, _, state = fixture()
    assert classify(state, hdr, None).step == 3
    assert classify(state, hdr, ()).step == 3


def test_step_4_start_problems():
    claim, start, hdr, events, state = fixture()
    assert classify(ClaimState(claim, None, state.start_kind), hdr, events).step == 4
    assert classify(ClaimState(claim, "other", state.start_kind), hdr, events).step == 4
    assert classify(ClaimState(claim, state.start_event_id, "claim_repair"), hdr, events).step == 4


def test_step_5_terminal_not_last():
    _, _, hdr, events, state = fixture(child_events=[terminal("terminal-2", 2), model_text("late", 2)])
    assert classify(state, hdr, events).step == 5


def test_step_6_ambiguous_or_incomplete_terminal():
    _, _, hdr, events, state = fixture(child_events=[terminal("t-a", 2), terminal("t-b", 2)])
    assert classify(state, hdr, events).step in (5, 6)
    incomplete = terminal("terminal-2", 2, failure_class=None)
    _, _, hdr, events, state = fixture(child_events=[incomplete])
    hdr.pop("failureClass")
    assert classify(state, hdr, events).step == 6


def test_step_7_fact_but_header_not_terminal():
    _, _, hdr, events, state = fixture()
    assert classify(state, {**hdr, "status": "running"}, events).step == 7


def test_step_9_disagreeing_terminal_header():
    _, _, hdr, events, state = fixture()
    assert classify(state, {**hdr, "failureClass": "other"}, events).step == 9
    _, _, hdr, events, state = fixture(status="failed", child_events=[])
    assert classify(state, hdr, events).step == 9  # header terminal, no fact


def test_step_10_started_indeterminate():
    _, _, hdr, events, state = fixture(status="running", child_events=[model_text("m", 2)])
    c = classify(state, hdr, events)
    assert (c.reason, c.step) == ("continuation_started_indeterminate", 10)


# --- §3.12 start matching ---------------------------------------------------------------


def test_start_shape_rules():
    claim, start, _, _, _ = fixture()
    assert start_matches_claim(start, claim, "runtime_admission")
    variants = []
    for mutate in (
        lambda s: s.update(status="completed"),
        lambda s: s.update(content={"kind": "text", "text": "x"}),
        lambda s: s.update(refs={"stepId": "x"}),
        lambda s: s.update(role="user"),
        lambda s: s.update(author="host"),
        lambda s: s.update(partial=True),
        lambda s: s.update(ts=claim["claimedAt"] - 1),
        lambda s: s.update(runId="run-9"),
        lambda s: s["actions"].update(stateDelta={}),
        lambda s: s["actions"].update(runtimeProtocol={"toolBoundary": "other"}),
        lambda s: s["actions"]["continuationStart"].update(extra=1),
        lambda s: s["actions"]["continuationStart"].update(providerProjectionVersion=2),
        lambda s: s["actions"]["continuationStart"]["immediateSource"].update(highWater=1),
    ):
        variant = copy.deepcopy(start)
        mutate(variant)
        variants.append(variant)
    for variant in variants:
        assert not start_matches_claim(variant, claim, "runtime_admission"), variant
    # a live start may omit the T1 marker; ts later than claimedAt is fine for a live start
    no_marker = copy.deepcopy(start)
    del no_marker["actions"]["runtimeProtocol"]
    no_marker["ts"] = claim["claimedAt"] + 10
    assert start_matches_claim(no_marker, claim, "runtime_admission")


def test_repair_start_rules():
    claim, start, _, _, _ = fixture(provenance="claim_repair")
    assert "runtimeProtocol" not in start["actions"]
    assert start_matches_claim(start, claim, "claim_repair")
    assert not start_matches_claim(start, claim, "runtime_admission")  # provenance mirrors startKind
    later = {**start, "ts": claim["claimedAt"] + 1}
    assert not start_matches_claim(later, claim, "claim_repair")  # repair: ts == claimedAt exactly
    marked = copy.deepcopy(start)
    marked["actions"]["runtimeProtocol"] = {"toolBoundary": "t1_after_preflight_v1"}
    assert not start_matches_claim(marked, claim, "claim_repair")


# --- §4.3 terminal classification ---------------------------------------------------------


def test_terminal_kinds():
    hdr = header(1)
    assert classify_terminal(hdr, [user("u")]).kind == "none"
    assert classify_terminal(hdr, [terminal("a"), terminal("b")]).kind == "ambiguous"
    end_only = user("end", actions={"endInvocation": True})
    assert classify_terminal(hdr, [end_only]).kind == "incomplete_single_terminal"
    partial = terminal("p", partial=True)
    assert classify_terminal(hdr, [partial]).kind == "none"
    other_run = terminal("o", runId="run-9")
    assert classify_terminal(hdr, [other_run]).kind == "none"


def test_failure_class_derivation_order_and_header_fallback():
    """§4.3, §9 item 24."""
    hdr = header(1, failureClass="header_class")
    bare = terminal("t", failure_class=None)
    fact = classify_terminal(hdr, [bare])
    assert fact.is_fact and fact.failure_class == "header_class" and header_matches_fact(hdr, fact)
    assert classify_terminal(header(1, failureClass=None), [bare]).kind == "incomplete_single_terminal"
    ev = terminal("t", failure_class=None, content={"kind": "error", "message": "m", "code": "c", "reason": "r"})
    ev["actions"]["stateDelta"] = {"reason": "", "code": "delta_code"}
    assert classify_terminal(hdr, [ev]).failure_class == "delta_code"
    ev["actions"]["stateDelta"] = {"errorClass": "ec", "failureClass": "fc"}
    assert classify_terminal(hdr, [ev]).failure_class == "fc"
    ev["actions"]["stateDelta"] = {}
    assert classify_terminal(hdr, [ev]).failure_class == "r"


def test_abort_source_and_statuses():
    """§9 item 23: aborted and cancelled → run cancelled, turn aborted."""
    hdr = header(1, status="cancelled")
    for status in ("aborted", "cancelled"):
        fact = classify_terminal(hdr, [terminal("t", status=status)])
        assert (fact.run_status, fact.turn_status, fact.abort_source) == ("cancelled", "aborted", "user")
        assert header_matches_fact(hdr, fact)
        assert not header_matches_fact({**hdr, "abortSource": "system"}, fact)
    refs_only = terminal("t", status="aborted", refs={"source": "ref_source"})
    refs_only["actions"] = {"endInvocation": True}
    assert classify_terminal(header(1, status="cancelled", abortSource=None), [refs_only]).abort_source == "ref_source"


@pytest.mark.parametrize(
    ("hdr", "events", "expected"),
    [
        (header(1), [user("u"), terminal("t")], True),
        (header(1, status="running", failureClass=None), [user("u"), terminal("t")], False),  # §8 item 38
        (header(1, status="completed", failureClass=None), [user("u"), terminal("t")], False),  # item 39
        (header(1), [user("u"), terminal("t"), model_text("late")], False),  # item 40
        (header(1, status="completed", failureClass=None), [user("u"), terminal("t", status="completed")], True),
        (header(1), [user("u")], False),
    ],
)
def test_terminal_repair_succeeded(hdr, events, expected):
    assert terminal_repair_succeeded(hdr, events) is expected
