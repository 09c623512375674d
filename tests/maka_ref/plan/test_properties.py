"""Property-based tests of the Phase 0 ResumePlan (spec 20 §1.1–§1.8).

The oracle is the ground truth known by construction (``maka_ref.testing.strategies``),
never the code under test. Every property cites the spec rule it checks.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.phase0.plan import build_resume_plan
from maka_ref.testing.strategies import CORRUPTIONS, CorruptLedger, Ledger, corrupt_ledgers, garbage_event_lists, ledgers

SOME = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Spec 20 §1.3 item 2: operation status → diagnostic code.
_OP_DIAGNOSTIC = {
    "indeterminate": "pending_tool_result",
    "not_dispatched": "tool_not_dispatched",
    "corruption": "tool_recovery_corruption",
    "parked": "tool_recovery_parked",
}


def _plan_checked(events: list[Any], expected_high_water: Any = None) -> dict[str, Any]:
    """Build twice: never raises, deterministic, input untouched (spec 20 §1.8)."""
    snapshot = copy.deepcopy(events)
    first = build_resume_plan(events, expected_high_water).to_json()
    second = build_resume_plan(events, expected_high_water).to_json()
    assert first == second, "build_resume_plan is not deterministic"
    assert events == snapshot, "build_resume_plan mutated its input"
    assert first["disposition"] in ("safe_replay", "blocked")
    assert first["sourceRuntimeEventHighWater"] == len(events)  # §1.6
    assert ("directive" in first) is first["requiresVerification"]  # §1.1, §1.5
    return first


def _kind(event: Any) -> Any:
    content = event.get("content") if isinstance(event, dict) else None
    return content.get("kind") if isinstance(content, dict) else None


def _assert_replay_is_legal(plan: dict[str, Any]) -> None:
    """Spec 20 §1.7 consequence: every replayed function_call is followed, in the replay, by
    a function_response with the same call id and name (a provider never sees an unanswered
    call). Checked on every safe_replay plan."""
    replay = plan["replayRuntimeEvents"]
    for i, e in enumerate(replay):
        if _kind(e) != "function_call":
            continue
        c = e["content"]
        assert any(
            _kind(r) == "function_response" and r["content"].get("id") == c.get("id") and r["content"].get("name") == c.get("name")
            for r in replay[i + 1 :]
        ), f"replayed call {e.get('id')!r} has no replayed response"


# ---------------------------------------------------------------------------------------
# Totality, determinism, non-mutation (spec 20 §1.8)
# ---------------------------------------------------------------------------------------


@MANY
@given(garbage_event_lists(), st.one_of(st.none(), st.integers(0, 40)))
def test_plan_total_on_garbage(events: list[Any], expected_high_water: int | None) -> None:
    plan = _plan_checked(events, expected_high_water)
    if plan["disposition"] == "safe_replay":
        assert plan["rejectionReasons"] == [] and not plan["requiresVerification"]  # §1.2


@SOME
@given(corrupt_ledgers())
def test_plan_total_on_corrupt_ledgers(c: CorruptLedger) -> None:
    _plan_checked(c.event_list())


@SOME
@given(ledgers())
def test_plan_total_on_healthy_ledgers(ledger: Ledger) -> None:
    _plan_checked(ledger.event_list())


# ---------------------------------------------------------------------------------------
# Corruption blocks (spec 20 §1.2, §1.3, §1.4)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_corrupt_ledgers_are_blocked(corruption: str, data: st.DataObject) -> None:
    """Spec 20 §1.2: disposition is ``blocked`` whenever the resolution has corruption; the
    corruption surfaces as a diagnostic mapped to ``dangling_tool_state`` (§1.3, §1.4).
    (One parametrized case per corruption.)"""
    c = data.draw(corrupt_ledgers(corruptions=(corruption,)), label="corrupt ledger")
    plan = build_resume_plan(c.event_list()).to_json()
    assert plan["disposition"] == "blocked", (c.corruption, c.detail)
    assert "dangling_tool_state" in plan["rejectionReasons"], (c.corruption, c.detail, plan["diagnostics"])


# ---------------------------------------------------------------------------------------
# safe_replay and the replay subset (spec 20 §1.2, §1.7)
# ---------------------------------------------------------------------------------------


@MANY
@given(st.one_of(ledgers(call_id_reuse=None), corrupt_ledgers()))
def test_safe_replay_only_with_a_legal_replay(ledger: Ledger | CorruptLedger) -> None:
    """Spec 20 §1.2: ``safe_replay`` only with no corruption, no indeterminate and no
    not-dispatched visible operation; §1.7: then every replayed call has its response."""
    events = ledger.event_list()
    plan = build_resume_plan(events).to_json()
    if plan["disposition"] != "safe_replay":
        return
    resolution = resolve_recovery(events).to_json()
    assert resolution["hasCorruption"] is False
    assert all(d["status"] in ("completed",) for d in resolution["decisions"]), resolution["decisions"]
    assert all(op["status"] in ("succeeded", "failed") for op in plan["operations"])
    assert not plan["requiresVerification"] and plan["rejectionReasons"] == []
    _assert_replay_is_legal(plan)


@MANY
@given(ledgers())
def test_unresolved_calls_never_replayed(ledger: Ledger) -> None:
    """Spec 20 §1.7: an unresolved call (no committed response) never appears in replay; the
    replay is exactly the non-partial events minus the calls of unresolved operations
    (provider call ids unique in the ledger, as §1.7's pairing by call id presumes)."""
    plan = build_resume_plan(ledger.event_list()).to_json()
    replay_ids = [e["id"] for e in plan["replayRuntimeEvents"]]
    for op in ledger.operations:
        if not op.resolved:
            assert op.call_event_id not in replay_ids
    assert replay_ids == ledger.expected_replay_ids()
    if plan["disposition"] == "safe_replay":
        _assert_replay_is_legal(plan)


# ---------------------------------------------------------------------------------------
# Ground truth (spec 20 §1.1–§1.6)
# ---------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers())
def test_healthy_plan_matches_construction(ledger: Ledger) -> None:
    """Spec 20 §1.1 (operations and the status mapping), §1.3 item 2 (one diagnostic per
    unsettled operation, nothing else on a healthy ledger), §1.4, §1.5 and §1.2: a healthy
    ledger is ``safe_replay`` iff every operation has a committed result."""
    events = ledger.event_list()
    plan = _plan_checked(events)
    new = ledger.new_protocol
    expected_ops = [(op.call_event_id, op.tool_call_id, op.tool_name, op.expected_plan_status(new)) for op in ledger.operations]
    assert [(o["callRuntimeEventId"], o["toolCallId"], o["toolName"], o["status"]) for o in plan["operations"]] == expected_ops
    for o, truth in zip(plan["operations"], ledger.operations):
        assert o["args"] == truth.args
        decision = truth.expected_decision(new)
        assert o.get("responseRuntimeEventId") == decision.get("responseRuntimeEventId")
        assert o.get("responseIsError") == decision.get("responseIsError")
    statuses = [s for *_, s in expected_ops]
    expected_codes = [_OP_DIAGNOSTIC[s] for s in statuses if s in _OP_DIAGNOSTIC]
    assert [d["code"] for d in plan["diagnostics"]] == expected_codes
    assert plan["rejectionReasons"] == (["dangling_tool_state"] if expected_codes else [])
    assert plan["requiresVerification"] is ("indeterminate" in statuses)
    all_settled = all(s in ("succeeded", "failed") for s in statuses)
    assert plan["disposition"] == ("safe_replay" if all_settled else "blocked")
    assert plan["runtimeEvents"] == events


@SOME
@given(ledgers(call_id_reuse=True))
def test_call_ids_reused_across_invocations(ledger: Ledger) -> None:
    """Spec 10 §4.3 / §7.4 #37: the same provider call id in two invocations is two
    operations with their own statuses. The Phase 0 response check (§1.3 item 6) looks a
    response's operation up by call id alone, the last operation winning, as upstream does
    (runtime-resume.ts:1260): with every operation answered the plan is ``safe_replay``
    exactly when each response names the tool of the last operation with its call id, and
    otherwise blocked by ``tool_name_mismatch`` alone."""
    events = ledger.event_list()
    plan = build_resume_plan(events).to_json()
    statuses = [op.expected_plan_status(ledger.new_protocol) for op in ledger.operations]
    assert [o["status"] for o in plan["operations"]] == statuses
    if not all(s in ("succeeded", "failed") for s in statuses):
        return
    last_name = {op["toolCallId"]: op["toolName"] for op in plan["operations"]}
    mismatched = [e["id"] for e in events
                  if not e.get("partial") and e.get("modelVisibility") != "hidden"
                  and e.get("content", {}).get("kind") == "function_response"
                  and last_name.get(e["content"]["id"]) != e["content"]["name"]]
    if not mismatched:
        assert plan["disposition"] == "safe_replay", plan["diagnostics"]
    else:
        assert plan["disposition"] == "blocked"
        assert [(d["code"], d["eventId"]) for d in plan["diagnostics"]] == [("tool_name_mismatch", i) for i in mismatched]


@SOME
@given(ledgers(call_id_reuse=True))
def test_unresolved_calls_never_replayed_by_a_safe_plan(ledger: Ledger) -> None:
    """Spec 20 §1.7 "Consequences the harness MUST check": an unresolved call (no committed
    response) is never replayed. With call ids reused across invocations, the §1.7 pairing
    (by id alone, as upstream) can list an unanswered later call in ``replayRuntimeEvents``;
    the unanswered call is then an unsettled operation, so the plan is blocked and nothing is
    replayed (docs/spec-choices.md, "Phase 0 pairing")."""
    plan = build_resume_plan(ledger.event_list()).to_json()
    if any(not op.resolved for op in ledger.operations):
        assert plan["disposition"] == "blocked"
    if plan["disposition"] == "safe_replay":
        resolved_calls = {op.call_event_id for op in ledger.operations if op.resolved}
        replayed_calls = [e["id"] for e in plan["replayRuntimeEvents"]
                          if e.get("content", {}).get("kind") == "function_call"]
        assert set(replayed_calls) <= resolved_calls


@SOME
@given(ledgers(), st.integers(0, 60))
def test_expected_high_water_mismatch_blocks(ledger: Ledger, expected: int) -> None:
    """Spec 20 §1.3 item 1 / §1.6: a differing expected high-water yields the first
    diagnostic ``runtime_offset_mismatch`` with both numbers, the first reason of the same
    name, and ``blocked``; an equal one changes nothing."""
    events = ledger.event_list()
    plan = build_resume_plan(events, expected).to_json()
    if expected == len(events):
        assert plan == build_resume_plan(events).to_json()
        return
    first = plan["diagnostics"][0]
    assert first["code"] == "runtime_offset_mismatch"
    assert first["detail"] == {"expectedRuntimeEventHighWater": expected, "actualRuntimeEventHighWater": len(events)}
    assert plan["rejectionReasons"][0] == "runtime_offset_mismatch"
    assert plan["disposition"] == "blocked"


# ---------------------------------------------------------------------------------------
# Internal consistency of the plan on any input (spec 20 §1.1, §1.2, §1.4, §1.5)
# ---------------------------------------------------------------------------------------

_DANGLING = {
    "pending_tool_result",
    "tool_not_dispatched",
    "tool_recovery_parked",
    "tool_recovery_corruption",
    "tool_ledger_corruption",
    "duplicate_event_id",
    "semantic_lane_conflict",
    "protocol_marker_invalid",
    "unmatched_tool_result",
    "tool_name_mismatch",
}


@MANY
@given(
    st.one_of(garbage_event_lists(), corrupt_ledgers().map(lambda c: c.event_list()), ledgers().map(lambda l: l.event_list())),
    st.one_of(st.none(), st.integers(0, 30)),
)
def test_plan_is_consistent_with_the_resolution(events: list[Any], expected_high_water: int | None) -> None:
    """Spec 20 §1.1: operations are the decisions with a visible call, in decision order, with
    the status mapping (completed → succeeded/failed by responseIsError,
    definitely_not_dispatched → not_dispatched, others verbatim); §1.4: reasons are the
    first-seen, de-duplicated mapping of the diagnostics; §1.5: verification iff a visible
    operation is indeterminate or a hidden-call ``pending_tool_result`` exists; §1.2:
    safe_replay iff no reason, no verification, no corruption."""
    resolution = resolve_recovery(events).to_json()
    plan = build_resume_plan(events, expected_high_water).to_json()
    decisions = {d.get("callRuntimeEventId"): d for d in resolution["decisions"] if "callRuntimeEventId" in d}
    order = [d.get("callRuntimeEventId") for d in resolution["decisions"]]
    positions = [order.index(op["callRuntimeEventId"]) for op in plan["operations"]]
    assert positions == sorted(positions)
    for op in plan["operations"]:
        d = decisions[op["callRuntimeEventId"]]
        status = d["status"]
        expected = {"completed": "failed" if d.get("responseIsError") else "succeeded", "definitely_not_dispatched": "not_dispatched"}.get(
            status, status
        )
        assert op["status"] == expected
        assert op["toolCallId"] == d["toolCallId"]
    reasons: list[str] = []
    for diagnostic in plan["diagnostics"]:
        code = diagnostic["code"]
        reason = "runtime_offset_mismatch" if code == "runtime_offset_mismatch" else ("dangling_tool_state" if code in _DANGLING else None)
        assert reason is not None, code
        if reason not in reasons:
            reasons.append(reason)
    assert plan["rejectionReasons"] == reasons
    if any(op["status"] == "indeterminate" for op in plan["operations"]):
        assert plan["requiresVerification"]
    safe = not reasons and not plan["requiresVerification"] and not resolution["hasCorruption"]
    assert plan["disposition"] == ("safe_replay" if safe else "blocked")
