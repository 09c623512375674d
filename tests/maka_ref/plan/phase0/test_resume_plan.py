"""Phase 0 ResumePlan (spec 20 §1.1–§1.8, §8 items 2–8 and 10; spec 10 §6.6, scenarios 62–63).

Expected values are copied from the spec (or follow directly from its rules, named next to
each test); they are never computed by the code under test.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._plan.phase0.plan import RESUME_DIRECTIVE, PlanDiagnostic, ResumePlan, ToolOperation, build_resume_plan
from maka_ref.testing.families import (
    BASH_DO_IT_HASH,
    T1,
    event,
    r_call,
    r_dispatch,
    r_initial,
    w_call,
    w_decision_parked,
    w_dispatch,
    w_marker,
    w_outcome,
    w_outcome_unbound,
    w_reconcile,
    with_fields,
)

#: canonicalArgsHash vectors of spec 10 §2.6.
EXEC_WORK_HASH = "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761"
READ_EMPTY_HASH = "sha256:98f17b72526ca658f49b9421e725a2642b943a4e0cd249bebf931651e319dfe6"


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def user(id: str = "user-1", text: str = "hello", **fields: Any) -> dict[str, Any]:
    return event(id, role="user", author="user", content={"kind": "text", "text": text}, **fields)


def call(id: str, call_id: str, name: str, args: Any = None, **fields: Any) -> dict[str, Any]:
    content = {"kind": "function_call", "id": call_id, "name": name, "args": {} if args is None else args}
    return event(id, role="model", author="agent", content=content, **fields)


def response(id: str, call_id: str, name: str, result: Any = "ok", is_error: bool = False, **fields: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"kind": "function_response", "id": call_id, "name": name, "result": result}
    if is_error:
        content["isError"] = True
    return event(id, role="tool", author="tool", content=content, **fields)


def codes(plan: ResumePlan) -> list[str]:
    return [d.code for d in plan.diagnostics]


def replay_ids(plan: ResumePlan) -> list[str]:
    return [e["id"] for e in plan.replay_runtime_events]


def diag(plan: ResumePlan) -> list[dict[str, Any]]:
    """Diagnostics without their (free-text) messages."""
    out = []
    for d in plan.to_json()["diagnostics"]:
        d = dict(d)
        assert isinstance(d.pop("message"), str) and d["code"]
        out.append(d)
    return out


def build_checked(events: list[Any], expected: Any = None) -> ResumePlan:
    """Build twice; check determinism and non-mutation (spec 20 §1.8) on every fixture."""
    before = copy.deepcopy(events)
    first = build_resume_plan(events, expected)
    second = build_resume_plan(events, expected)
    assert first == second
    assert first.to_json() == second.to_json()
    assert events == before
    assert len(first.runtime_events) == len(events)
    assert all(a is b for a, b in zip(first.runtime_events, events))
    return first


def assert_directive_contract(plan: ResumePlan) -> None:
    """Spec 20 §1.1 / §1.5: directive present iff requiresVerification."""
    js = plan.to_json()
    if plan.requires_verification:
        assert plan.directive is not None
        assert re.search(r"Do not retry", js["directive"], re.I)
        assert re.search(r"read-only", js["directive"], re.I)
    else:
        assert plan.directive is None
        assert "directive" not in js


# ---------------------------------------------------------------------------------------
# spec 20 §8 items 2–8 and 10
# ---------------------------------------------------------------------------------------


def test_item2_two_projections_equal_failed_and_indeterminate_ops() -> None:
    """§8 item 2: `[call-1 Bash tool-1, response tool-1 isError=true, call-2 Read tool-2]`."""
    events = [
        call("call-1", "tool-1", "Bash", {"command": "ls"}),
        response("result-1", "tool-1", "Bash", "permission denied", is_error=True),
        call("call-2", "tool-2", "Read", {"path": "a.txt"}),
    ]
    plan = build_checked(events)
    assert build_resume_plan(events) == build_resume_plan(events)
    assert [op.to_json() for op in plan.operations] == [
        {
            "toolCallId": "tool-1",
            "toolName": "Bash",
            "args": {"command": "ls"},
            "status": "failed",
            "callRuntimeEventId": "call-1",
            "responseRuntimeEventId": "result-1",
            "responseIsError": True,
        },
        {
            "toolCallId": "tool-2",
            "toolName": "Read",
            "args": {"path": "a.txt"},
            "status": "indeterminate",
            "callRuntimeEventId": "call-2",
        },
    ]
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert diag(plan) == [
        {"code": "pending_tool_result", "eventId": "call-2", "toolCallId": "tool-2", "toolName": "Read"}
    ]
    assert plan.requires_verification is True
    assert_directive_contract(plan)


def test_item3_error_response_is_replayable_failure() -> None:
    """§8 item 3 (first half), §9 item 1: `isError: true` → `failed`, still safe_replay."""
    events = [call("call-1", "tool-1", "Bash"), response("result-1", "tool-1", "Bash", "boom", is_error=True)]
    plan = build_checked(events)
    assert plan.disposition == "safe_replay"
    assert [op.status for op in plan.operations] == ["failed"]
    assert plan.operations[0].response_is_error is True
    assert plan.diagnostics == ()
    assert plan.rejection_reasons == ()
    assert plan.requires_verification is False
    assert_directive_contract(plan)
    assert replay_ids(plan) == ["call-1", "result-1"]


def test_item3_call_only_blocks_and_requires_verification() -> None:
    """§8 item 3 (second half): `[call only]`."""
    events = [call("call-1", "tool-1", "Bash", {"command": "touch x"})]
    plan = build_checked(events)
    assert plan.disposition == "blocked"
    assert [op.status for op in plan.operations] == ["indeterminate"]
    assert plan.requires_verification is True
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert plan.source_runtime_event_high_water == 1
    assert re.search(r"Do not retry", plan.directive or "", re.I)
    assert re.search(r"read-only", plan.directive or "", re.I)
    assert re.search(r"Do not retry", RESUME_DIRECTIVE, re.I) and re.search(r"read-only", RESUME_DIRECTIVE, re.I)
    assert plan.to_json()["directive"] == plan.directive
    assert plan.replay_runtime_events == ()


def test_item4_unresolved_call_absent_from_replay() -> None:
    """§8 item 4: `[user, unresolved call, system text]` → replay ids `[user-1, system-1]`."""
    events = [
        user("user-1"),
        call("call-1", "tool-1", "Bash"),
        event("system-1", role="system", author="system", content={"kind": "text", "text": "note"}),
    ]
    plan = build_checked(events)
    assert replay_ids(plan) == ["user-1", "system-1"]


def test_item5_hidden_code_mode_pair_is_not_an_operation() -> None:
    """§8 item 5: `[user, hidden code_mode call, hidden code_mode result]`."""
    events = [
        user("user-1"),
        call("nested-call-1", "nested-1", "Read", origin="code_mode", modelVisibility="hidden"),
        response("nested-result-1", "nested-1", "Read", origin="code_mode", modelVisibility="hidden"),
    ]
    plan = build_checked(events)
    assert plan.operations == ()
    assert replay_ids(plan) == ["user-1"]
    assert plan.disposition == "safe_replay"
    assert plan.diagnostics == ()
    assert plan.requires_verification is False


def _code_mode_t1_ledger() -> list[dict[str, Any]]:
    """§8 item 6: T1 ledger, outer `exec` call+dispatch+error response, hidden nested
    call+dispatch without response (ids follow the spec 10 §1.6 producer conventions)."""
    outer_refs = {"operationId": "outer-op", "toolCallId": "exec-1"}
    nested_refs = {
        "operationId": "nested-op",
        "toolCallId": "nested-1",
        "parentToolCallId": "exec-1",
        "parentOperationId": "outer-op",
    }
    return [
        r_initial(T1),
        call("exec-call-1", "exec-1", "exec", {"code": "work()"}, origin="provider", modelVisibility="visible", refs=outer_refs),
        event(
            "outer-op_dispatch",
            modelVisibility="visible",
            actions={
                "toolDispatch": {
                    "protocol": T1,
                    "operationId": "outer-op",
                    "providerToolCallId": "exec-1",
                    "toolName": "exec",
                    "canonicalArgsHash": EXEC_WORK_HASH,
                    "recoveryMode": "never_auto_retry",
                }
            },
            refs=outer_refs,
        ),
        call("nested-call-1", "nested-1", "Read", {}, origin="code_mode", modelVisibility="hidden", refs=nested_refs),
        event(
            "nested-op_dispatch",
            origin="code_mode",
            modelVisibility="hidden",
            actions={
                "toolDispatch": {
                    "protocol": T1,
                    "operationId": "nested-op",
                    "providerToolCallId": "nested-1",
                    "toolName": "Read",
                    "canonicalArgsHash": READ_EMPTY_HASH,
                    "recoveryMode": "never_auto_retry",
                }
            },
            refs=nested_refs,
        ),
        response(
            "outer-op_response",
            "exec-1",
            "exec",
            "interrupted",
            is_error=True,
            origin="provider",
            modelVisibility="visible",
            refs=outer_refs,
        ),
    ]


def test_item6_hidden_indeterminate_nested_call_blocks_and_requires_verification() -> None:
    """§8 item 6, §1.3 item 5, §1.5, §9 item 7."""
    plan = build_checked(_code_mode_t1_ledger())
    assert plan.disposition == "blocked"
    assert plan.requires_verification is True
    assert_directive_contract(plan)
    assert "pending_tool_result" in codes(plan)
    assert plan.rejection_reasons == ("dangling_tool_state",)
    # §1.1: hidden calls are not operations; the outer error response → failed.
    assert [(op.tool_call_id, op.status) for op in plan.operations] == [("exec-1", "failed")]
    # §1.3 item 5: the one diagnostic names the hidden call.
    assert diag(plan) == [
        {"code": "pending_tool_result", "eventId": "nested-call-1", "toolCallId": "nested-1", "toolName": "Read"}
    ]
    # §1.7: hidden events dropped; the content-less outer dispatch stays.
    assert replay_ids(plan) == ["initial-1", "exec-call-1", "outer-op_dispatch", "outer-op_response"]


def test_item7_response_only() -> None:
    """§8 item 7: `[response only]`."""
    events = [response("result-1", "tool-1", "Bash")]
    plan = build_checked(events)
    assert plan.disposition == "blocked"
    assert plan.requires_verification is False
    assert_directive_contract(plan)
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan) == ["tool_ledger_corruption", "unmatched_tool_result"]
    assert plan.diagnostics[0].detail == {"issueCode": "orphan_response"}
    assert plan.replay_runtime_events == ()
    assert plan.operations == ()


def test_item8_expected_high_water_mismatch() -> None:
    """§8 item 8: `[user]` with expected high-water 2."""
    plan = build_checked([user("user-1")], 2)
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("runtime_offset_mismatch",)
    assert codes(plan) == ["runtime_offset_mismatch"]
    assert diag(plan) == [
        {
            "code": "runtime_offset_mismatch",
            "detail": {"expectedRuntimeEventHighWater": 2, "actualRuntimeEventHighWater": 1},
        }
    ]
    assert plan.source_runtime_event_high_water == 1
    assert replay_ids(plan) == ["user-1"]


def test_expected_high_water_equal_is_accepted() -> None:
    """§1.6: only a *different* expected high-water is a mismatch."""
    plan = build_checked([user("user-1")], 1)
    assert plan.disposition == "safe_replay"
    assert plan.diagnostics == ()


@pytest.mark.parametrize("expected", [0, 3, True, "1", 1.5, [1]])
def test_expected_high_water_of_any_other_value_is_a_mismatch(expected: Any) -> None:
    """§1.6 (`expected !== actual`): a non-number (even `true` or `"1"`) never matches."""
    plan = build_checked([user("user-1")], expected)
    assert codes(plan) == ["runtime_offset_mismatch"]
    assert plan.diagnostics[0].detail == {"expectedRuntimeEventHighWater": expected, "actualRuntimeEventHighWater": 1}


def test_item10_t1_call_without_dispatch_is_not_dispatched() -> None:
    """§8 item 10 / §2 informative: T1-marked user + call (no dispatch)."""
    plan = build_checked([r_initial(T1), r_call()])
    assert plan.disposition == "blocked"
    assert [op.status for op in plan.operations] == ["not_dispatched"]
    assert plan.requires_verification is False
    assert_directive_contract(plan)
    assert codes(plan) == ["tool_not_dispatched"]
    assert diag(plan) == [
        {"code": "tool_not_dispatched", "eventId": "function-call-1", "toolCallId": "call-1", "toolName": "Bash"}
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert replay_ids(plan) == ["initial-1"]


def test_partial_events_count_toward_high_water() -> None:
    """§1.6 / §8 item 25: `[user, partial model text]` → high-water 2, replay `[user-1]`."""
    events = [
        user("user-1"),
        event("model-1", role="model", author="agent", partial=True, content={"kind": "text", "text": "hal"}),
    ]
    plan = build_checked(events)
    assert plan.source_runtime_event_high_water == 2
    assert replay_ids(plan) == ["user-1"]
    assert plan.disposition == "safe_replay"


def test_empty_ledger() -> None:
    plan = build_checked([])
    assert plan.to_json() == {
        "disposition": "safe_replay",
        "operations": [],
        "diagnostics": [],
        "rejectionReasons": [],
        "requiresVerification": False,
        "sourceRuntimeEventHighWater": 0,
        "runtimeEvents": [],
        "replayRuntimeEvents": [],
    }


# ---------------------------------------------------------------------------------------
# spec 10 scenarios 62 and 63 (resume plans), and the consumer facts of spec 10 §6.6
# ---------------------------------------------------------------------------------------


def test_spec10_scenario62_parked_bundle_blocks_without_verification() -> None:
    """Spec 10 scenario 62: `[C, D, RC(diverged), DP]`."""
    events = [w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()]
    plan = build_checked(events)
    assert plan.disposition == "blocked"
    assert plan.requires_verification is False
    assert_directive_contract(plan)
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan) == ["tool_recovery_parked"]
    assert diag(plan) == [
        {"code": "tool_recovery_parked", "eventId": "call-event-1", "toolCallId": "provider-call-1", "toolName": "Write"}
    ]
    assert [op.to_json() for op in plan.operations] == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "args": {"path": "notes.txt", "content": "after"},
            "status": "parked",
            "callRuntimeEventId": "call-event-1",
        }
    ]
    # §1.7: the unresolved call is dropped; the content-less facts stay.
    assert replay_ids(plan) == ["dispatch-event-1", "reconcile-event-1", "decision-event-1"]


def test_spec10_scenario63_unbound_recovery_fact_is_ledger_corruption() -> None:
    """Spec 10 scenario 63: `[C, O, RC(orphan-reconcile-event, unknown-operation)]`."""
    orphan = with_fields(
        w_reconcile(id="orphan-reconcile-event"),
        refs={"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"},
    )
    orphan["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    plan = build_checked([w_call(), w_outcome(), orphan])
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan) == ["tool_ledger_corruption"]
    assert diag(plan) == [
        {"code": "tool_ledger_corruption", "eventId": "orphan-reconcile-event", "detail": {"issueCode": "event_order_conflict"}}
    ]
    assert [op.status for op in plan.operations] == ["succeeded"]
    assert plan.requires_verification is False
    assert replay_ids(plan) == ["call-event-1", "outcome-event-1", "orphan-reconcile-event"]


# ---------------------------------------------------------------------------------------
# §1.3 diagnostic emission order
# ---------------------------------------------------------------------------------------


def test_runtime_offset_mismatch_comes_first() -> None:
    """§1.3 item 1 precedes everything; §1.4 reasons keep first-seen order."""
    plan = build_checked([user("user-1"), call("call-1", "tool-1", "Bash")], 5)
    assert codes(plan) == ["runtime_offset_mismatch", "pending_tool_result"]
    assert plan.rejection_reasons == ("runtime_offset_mismatch", "dangling_tool_state")
    assert plan.diagnostics[0].detail == {"expectedRuntimeEventHighWater": 5, "actualRuntimeEventHighWater": 2}


def test_per_operation_then_issue_then_unmatched() -> None:
    """Spec 10 scenario 86 under §1.3: items 2 (operation order), 3, then 6.

    `[M, C, C(p2, Read, {}), O(o3, unbound, call id p3, Bash), D]` → decisions
    provider-call-1 indeterminate, p2 definitely_not_dispatched, p3 orphan_response.
    """
    c2 = w_call(id="call-event-2")
    c2["content"] = {"kind": "function_call", "id": "p2", "name": "Read", "args": {}}
    o3 = w_outcome(id="o3")
    o3["content"] = {"kind": "function_response", "id": "p3", "name": "Bash", "result": "ok", "isError": False}
    o3["refs"] = {"toolCallId": "p3"}
    plan = build_checked([w_marker(), w_call(), c2, o3, w_dispatch()])
    assert [(op.tool_call_id, op.status) for op in plan.operations] == [
        ("provider-call-1", "indeterminate"),
        ("p2", "not_dispatched"),
    ]
    assert diag(plan) == [
        {"code": "pending_tool_result", "eventId": "call-event-1", "toolCallId": "provider-call-1", "toolName": "Write"},
        {"code": "tool_not_dispatched", "eventId": "call-event-2", "toolCallId": "p2", "toolName": "Read"},
        {"code": "tool_ledger_corruption", "eventId": "o3", "detail": {"issueCode": "orphan_response"}},
        {"code": "unmatched_tool_result", "eventId": "o3", "toolCallId": "p3", "toolName": "Bash"},
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert plan.requires_verification is True
    assert plan.disposition == "blocked"


def test_operation_diagnostic_precedes_issue_diagnostics() -> None:
    """Spec 10 scenario 57 `[I("future_protocol"), FC]`: op `pending_tool_result` (item 2)
    before the issue `protocol_marker_invalid` (item 3, own code)."""
    plan = build_checked([r_initial("future_protocol"), r_call()])
    assert diag(plan) == [
        {"code": "pending_tool_result", "eventId": "function-call-1", "toolCallId": "call-1", "toolName": "Bash"},
        {"code": "protocol_marker_invalid", "eventId": "initial-1"},
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)


def test_late_marker_is_protocol_marker_invalid() -> None:
    """Spec 10 scenario 56 `[I(), late-marker]` → diagnostics exactly `[protocol_marker_invalid]`."""
    late = event("late-marker", actions={"runtimeProtocol": {"toolBoundary": T1}})
    plan = build_checked([r_initial(), late])
    assert diag(plan) == [{"code": "protocol_marker_invalid", "eventId": "late-marker"}]
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert plan.requires_verification is False


def test_duplicate_event_id_and_lane_conflict_keep_their_codes() -> None:
    """Spec 10 scenario 61 `[C, C(same id), O with toolDispatch actions]`: the op is
    indeterminate; issues `duplicate_event_id`, `semantic_lane_conflict` keep their codes; the
    dropped-by-scanner response still matches the operation, so no item-6 diagnostic."""
    smuggled = with_fields(w_outcome(), actions={"toolDispatch": w_dispatch()["actions"]["toolDispatch"]})
    plan = build_checked([w_call(), w_call(), smuggled])
    assert diag(plan) == [
        {"code": "pending_tool_result", "eventId": "call-event-1", "toolCallId": "provider-call-1", "toolName": "Write"},
        {"code": "duplicate_event_id", "eventId": "call-event-1"},
        {"code": "semantic_lane_conflict", "eventId": "outcome-event-1"},
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)


def test_operation_corruption_and_issue_detail() -> None:
    """Spec 10 scenario 53 `[I(v1), FC, DI(name=Write)]`: op corruption →
    `tool_recovery_corruption`; issue identity_conflict → `tool_ledger_corruption`."""
    plan = build_checked([r_initial(T1), r_call(), r_dispatch("Write")])
    assert [op.status for op in plan.operations] == ["corruption"]
    assert diag(plan) == [
        {"code": "tool_recovery_corruption", "eventId": "function-call-1", "toolCallId": "call-1", "toolName": "Bash"},
        {"code": "tool_ledger_corruption", "eventId": "dispatch-1", "detail": {"issueCode": "identity_conflict"}},
    ]
    assert plan.requires_verification is False
    assert_directive_contract(plan)


def test_orphan_dispatch_is_tool_recovery_corruption() -> None:
    """Spec 10 scenario 51 `[I(v1), DI]`: §1.3 item 3 then item 4 (eventId = dispatch id)."""
    plan = build_checked([r_initial(T1), r_dispatch()])
    assert plan.operations == ()
    assert diag(plan) == [
        {"code": "tool_ledger_corruption", "eventId": "dispatch-1", "detail": {"issueCode": "event_order_conflict"}},
        {"code": "tool_recovery_corruption", "eventId": "dispatch-1", "toolCallId": "call-1", "toolName": "Bash"},
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert plan.requires_verification is False
    assert plan.disposition == "blocked"
    assert replay_ids(plan) == ["initial-1", "dispatch-1"]


def test_orphan_dispatch_with_response_all_items() -> None:
    """Spec 10 scenario 92 `[D, O]`: issues (item 3), orphan dispatch (item 4), then the
    response has no operation (item 6)."""
    plan = build_checked([w_dispatch(), w_outcome()])
    assert diag(plan) == [
        {"code": "tool_ledger_corruption", "eventId": "dispatch-event-1", "detail": {"issueCode": "event_order_conflict"}},
        {"code": "tool_ledger_corruption", "eventId": "outcome-event-1", "detail": {"issueCode": "identity_conflict"}},
        {"code": "tool_recovery_corruption", "eventId": "dispatch-event-1", "toolCallId": "provider-call-1", "toolName": "Write"},
        {"code": "unmatched_tool_result", "eventId": "outcome-event-1", "toolCallId": "provider-call-1", "toolName": "Write"},
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)


def test_tool_name_mismatch_detail() -> None:
    """Spec 10 scenario 76 `[C, O_unbound with name Read]` under §1.3 items 2, 3, 6."""
    misnamed = w_outcome_unbound()
    misnamed["content"]["name"] = "Read"
    plan = build_checked([w_call(), misnamed])
    assert diag(plan) == [
        {"code": "tool_recovery_corruption", "eventId": "call-event-1", "toolCallId": "provider-call-1", "toolName": "Write"},
        {"code": "tool_ledger_corruption", "eventId": "outcome-event-1", "detail": {"issueCode": "identity_conflict"}},
        {
            "code": "tool_name_mismatch",
            "eventId": "outcome-event-1",
            "toolCallId": "provider-call-1",
            "toolName": "Read",
            "detail": {"callToolName": "Write", "responseToolName": "Read"},
        },
    ]
    assert plan.rejection_reasons == ("dangling_tool_state",)
    # §1.7 / §9 item 5: a differently named response is unpaired, so neither half replays.
    assert replay_ids(plan) == []


def test_hidden_orphan_response_is_not_unmatched() -> None:
    """§1.3 item 6 only considers visible responses; the resolver still reports the orphan."""
    hidden = response("nested-result-1", "nested-1", "Read", modelVisibility="hidden", origin="code_mode")
    plan = build_checked([user("user-1"), hidden])
    assert codes(plan) == ["tool_ledger_corruption"]
    assert plan.diagnostics[0].detail == {"issueCode": "orphan_response"}
    assert plan.disposition == "blocked"


def test_partial_response_is_a_lane_conflict_not_unmatched() -> None:
    """§1.3 item 6 skips partial responses (a partial tool fact is a lane conflict)."""
    partial = response("result-1", "tool-1", "Bash", partial=True)
    plan = build_checked([user("user-1"), partial])
    assert codes(plan) == ["semantic_lane_conflict"]
    assert replay_ids(plan) == ["user-1"]


def test_completed_legacy_dispatch_response_succeeds() -> None:
    """Spec 10 scenario 67 (legacy `[C, D, O]`) → op succeeded, safe_replay, everything replays."""
    plan = build_checked([w_call(), w_dispatch(), w_outcome()])
    assert plan.disposition == "safe_replay"
    assert [op.to_json() for op in plan.operations] == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "args": {"path": "notes.txt", "content": "after"},
            "status": "succeeded",
            "callRuntimeEventId": "call-event-1",
            "responseRuntimeEventId": "outcome-event-1",
            "responseIsError": False,
        }
    ]
    assert replay_ids(plan) == ["call-event-1", "dispatch-event-1", "outcome-event-1"]


def test_resolver_corruption_alone_blocks() -> None:
    """§1.2: `hasCorruption` blocks even without a Phase 0 reason. Spec 10 scenario 73:
    `[M, C, D, other-run user event]` → invocation_identity_conflict (→ tool_ledger_corruption)
    plus a pending op."""
    other = user("other-run-user", runId="run-2")
    plan = build_checked([w_marker(), w_call(), w_dispatch(), other])
    assert codes(plan) == ["pending_tool_result", "tool_ledger_corruption"]
    assert plan.diagnostics[1].detail == {"issueCode": "invocation_identity_conflict"}
    assert plan.disposition == "blocked"


def test_call_id_reused_across_invocations_blocks_as_upstream() -> None:
    """§1.3 item 6 as upstream implements it (runtime-resume.ts:1260 ``operationsById``): a
    response is checked against the *last* operation with its provider call id, whatever the
    invocation. A provider that reuses ``tool-1`` for ``Bash`` and then ``Write`` therefore
    blocks with ``tool_name_mismatch`` (an earlier reference scoped the lookup by invocation
    and planned ``safe_replay``, handing the provider two calls of one id)."""
    second = {"invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}
    events = [
        call("call-1", "tool-1", "Bash"),
        response("result-1", "tool-1", "Bash"),
        call("call-2", "tool-1", "Write", **second),
        response("result-2", "tool-1", "Write", **second),
    ]
    plan = build_checked(events)
    assert [(op.call_runtime_event_id, op.tool_name, op.status) for op in plan.operations] == [
        ("call-1", "Bash", "succeeded"),
        ("call-2", "Write", "succeeded"),
    ]
    assert [(d.code, d.event_id, d.tool_call_id, d.tool_name, d.detail) for d in plan.diagnostics] == [
        ("tool_name_mismatch", "result-1", "tool-1", "Bash", {"callToolName": "Write", "responseToolName": "Bash"}),
    ]
    assert plan.disposition == "blocked" and plan.rejection_reasons == ("dangling_tool_state",)
    assert replay_ids(plan) == ["call-1", "result-1", "call-2", "result-2"]
    # The same id reused for the same tool: no mismatch, safe to replay (as upstream).
    same = [call("call-1", "tool-1", "Bash"), response("result-1", "tool-1", "Bash"),
            call("call-2", "tool-1", "Bash", **second), response("result-2", "tool-1", "Bash", **second)]
    assert build_checked(same).disposition == "safe_replay"
    # The second invocation's call unanswered: blocked by it, whatever the pairing lists.
    plan = build_checked(events[:3])
    assert codes(plan) == ["pending_tool_result", "tool_name_mismatch"]
    assert replay_ids(plan) == ["call-1", "result-1", "call-2"]


# ---------------------------------------------------------------------------------------
# shapes, identity, determinism, non-mutation, never raising
# ---------------------------------------------------------------------------------------


def test_to_json_shapes() -> None:
    """§1.1 camelCase names; absent optionals are absent, never null."""
    plan = build_checked([user("user-1"), call("call-1", "tool-1", "Bash")], 2)
    js = plan.to_json()
    assert list(js) == [
        "disposition",
        "operations",
        "diagnostics",
        "rejectionReasons",
        "requiresVerification",
        "sourceRuntimeEventHighWater",
        "directive",
        "runtimeEvents",
        "replayRuntimeEvents",
    ]
    assert js["directive"] == RESUME_DIRECTIVE
    assert js["runtimeEvents"] == [user("user-1"), call("call-1", "tool-1", "Bash")]
    assert js["operations"] == [
        {"toolCallId": "tool-1", "toolName": "Bash", "args": {}, "status": "indeterminate", "callRuntimeEventId": "call-1"}
    ]
    d = js["diagnostics"][0]
    assert set(d) == {"code", "message", "eventId", "toolCallId", "toolName"}
    assert None not in d.values()
    assert PlanDiagnostic("x", "m").to_json() == {"code": "x", "message": "m"}
    op = ToolOperation("t", "Bash", None, "succeeded", "c", "r", False)
    assert op.to_json() == {
        "toolCallId": "t",
        "toolName": "Bash",
        "args": None,
        "status": "succeeded",
        "callRuntimeEventId": "c",
        "responseRuntimeEventId": "r",
        "responseIsError": False,
    }


def test_runtime_events_and_args_are_the_input_objects() -> None:
    """§1.1: `runtimeEvents` is the input unchanged; nothing is copied."""
    events = [user("user-1"), call("call-1", "tool-1", "Bash", {"command": "x"}), response("r-1", "tool-1", "Bash")]
    plan = build_checked(events)
    assert plan.runtime_events == tuple(events)
    assert all(a is b for a, b in zip(plan.runtime_events, events))
    assert plan.operations[0].args is events[1]["content"]["args"]
    assert all(any(r is e for e in events) for r in plan.replay_runtime_events)
    as_tuple = tuple(events)
    assert build_resume_plan(as_tuple).runtime_events is as_tuple


def test_messages_are_stable_strings() -> None:
    """§1.8: messages are part of deep equality; they must not depend on anything but input."""
    events = [
        user("user-1"),
        call("call-1", "tool-1", "Bash"),
        response("orphan-1", "tool-9", "Read"),
    ]
    first = build_resume_plan(events, 7)
    second = build_resume_plan(copy.deepcopy(events), 7)
    assert [d.message for d in first.diagnostics] == [d.message for d in second.diagnostics]
    assert all(isinstance(d.message, str) and d.message.endswith(".") for d in first.diagnostics)


def test_message_texts_are_the_documented_ones() -> None:
    """Messages are our choice (docs/choices/plan.md); pinned so they stay stable."""
    plan = build_resume_plan([w_dispatch(), w_outcome()], 3)
    assert [d.message for d in plan.diagnostics] == [
        "The expected runtime event high-water does not match the number of supplied runtime "
        "events; the prefix is not the one that was planned.",
        "The tool ledger is corrupt at event dispatch-event-1 (event_order_conflict).",
        "The tool ledger is corrupt at event outcome-event-1 (identity_conflict).",
        "The recovery state of tool call provider-call-1 (Write) is corrupt (orphan_dispatch).",
        "The tool result event outcome-event-1 does not match any visible tool call.",
    ]
    plan = build_resume_plan(_code_mode_t1_ledger())
    assert [d.message for d in plan.diagnostics] == [
        "Hidden nested tool call nested-1 (Read) has no committed result; its side effects may "
        "or may not have happened."
    ]
    assert RESUME_DIRECTIVE == (
        "Tool execution was interrupted before a matching committed tool result was found, so the "
        "tool's side effects may or may not have happened. Do not retry the interrupted tool call "
        "immediately. First verify the current state with read-only inspection tools, then decide "
        "how to continue."
    )


def test_frozen_events_give_the_same_plan() -> None:
    """Decoded (deep-frozen) events are planned exactly like plain dicts."""
    from maka_ref._codec.frozen import freeze

    events = [w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()]
    frozen = [freeze(e) for e in events]
    assert build_resume_plan(frozen).to_json() == build_resume_plan(events).to_json()


def test_generator_input_is_read_once() -> None:
    events = [user("user-1"), call("call-1", "tool-1", "Bash")]
    plan = build_resume_plan(e for e in events)
    assert plan.source_runtime_event_high_water == 2
    assert plan.to_json() == build_resume_plan(events).to_json()


ODD_EVENTS: list[Any] = [
    None,
    1,
    "text",
    [],
    {},
    {"id": 5},
    {"id": "x", "content": "not an object"},
    {"id": "y", "content": None},
    {"id": "z", "content": {"kind": "function_call", "id": ["list"], "name": None}},
    {"id": "w", "content": {"kind": "function_response", "id": "c", "name": 3}},
    {"id": "v", "content": {"kind": 7}},
    {"id": "u", "partial": "yes", "modelVisibility": ["hidden"]},
    {"id": "t", "actions": "end", "refs": 4, "status": {}},
    {"id": "s", "content": {"kind": "function_call", "id": "c", "name": "Bash"}},  # no args key
    {"id": "s", "content": {"kind": "function_response", "id": "c", "name": "Bash", "result": 1}},
    {"id": "q", "actions": {"toolDispatch": None, "runtimeProtocol": "x", "toolRecovery": []}},
    {"id": "p", "actions": {"toolDispatch": {"providerToolCallId": {}, "operationId": []}}},
    {"id": float("nan"), "ts": float("inf")},
    {1: "non-str key"},
]


@pytest.mark.parametrize("index", range(len(ODD_EVENTS)))
def test_never_raises_on_odd_single_events(index: int) -> None:
    events = [ODD_EVENTS[index]]
    before = copy.deepcopy(events)
    plan = build_resume_plan(events)
    assert plan.source_runtime_event_high_water == 1
    assert isinstance(plan.to_json(), dict)
    assert repr(events) == repr(before)  # repr: NaN != NaN


def test_never_raises_on_all_odd_events_together() -> None:
    events = list(ODD_EVENTS) + [w_call(), w_dispatch(), w_outcome()]
    plan = build_resume_plan(events, "x")
    assert plan.source_runtime_event_high_water == len(events)
    assert plan.disposition == "blocked"
    assert plan.replay_runtime_events  # the W triple at least


@pytest.mark.parametrize("value", [None, 5, "abc", {"id": "e"}, object()])
def test_never_raises_on_a_non_ledger_argument(value: Any) -> None:
    """Our choice: a non-ledger argument is a one-entry ledger the resolver cannot interpret
    (corruption), so the plan blocks and replays nothing."""
    plan = build_resume_plan(value)
    assert plan.source_runtime_event_high_water == 1
    assert plan.runtime_events[0] is value
    assert plan.disposition == "blocked"
    assert plan.replay_runtime_events == ()
    assert plan.operations == ()


_json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(
    ["", "x", "Bash", "Write", "tool-1", "call-1", "hidden", "function_call", "function_response", "text", T1]
)
_json = st.recursive(_json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "kind", "name", "x"]), inner, max_size=3), max_leaves=6)
_ids = st.sampled_from(["e1", "e2", "e3", "e4"])
_call_ids = st.sampled_from(["tool-1", "tool-2"])
_names = st.sampled_from(["Bash", "Read"])


@st.composite
def _fuzz_event(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["call", "response", "text", "dispatch", "junk", "raw"]))
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["partial"] = draw(st.sampled_from([True, False, 1, None]))
    if draw(st.booleans()):
        fields["modelVisibility"] = draw(st.sampled_from(["hidden", "visible", None, 3]))
    if draw(st.booleans()):
        fields["runId"] = draw(st.sampled_from(["run-1", "run-2"]))
    eid = draw(_ids)
    if kind == "call":
        return call(eid, draw(_call_ids), draw(_names), **fields)
    if kind == "response":
        return response(eid, draw(_call_ids), draw(_names), is_error=draw(st.booleans()), **fields)
    if kind == "text":
        return user(eid, **fields)
    if kind == "dispatch":
        d = r_dispatch(draw(_names), id=eid)
        d["actions"]["toolDispatch"]["providerToolCallId"] = draw(_call_ids)
        d["actions"]["toolDispatch"]["canonicalArgsHash"] = draw(st.sampled_from([BASH_DO_IT_HASH, "sha256:x"]))
        d.update(fields)
        return d
    if kind == "junk":
        return draw(st.dictionaries(st.sampled_from(["id", "content", "partial", "actions", "refs", "modelVisibility"]), _json, max_size=4))
    return draw(_json)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fuzz_event(), max_size=7), st.none() | st.integers(0, 8))
def test_fuzz_never_raises_is_deterministic_and_consistent(events: list[Any], expected: Any) -> None:
    """§1.2–§1.8 invariants over arbitrary (often corrupt) ledgers."""
    before = copy.deepcopy(events)
    plan = build_resume_plan(events, expected)
    assert events == before
    assert plan == build_resume_plan(events, expected)
    js = plan.to_json()
    assert js["sourceRuntimeEventHighWater"] == len(events)
    # replay is an order-preserving sub-sequence (by identity) of the input
    it = iter(events)
    assert all(any(r is e for e in it) for r in plan.replay_runtime_events)
    # §1.4 reasons are de-duplicated; §1.5 directive iff verification
    assert len(set(plan.rejection_reasons)) == len(plan.rejection_reasons)
    assert ("directive" in js) == plan.requires_verification
    assert plan.requires_verification == (
        any(op.status == "indeterminate" for op in plan.operations)
        or any(d.code == "pending_tool_result" and d.event_id not in {op.call_runtime_event_id for op in plan.operations} for d in plan.diagnostics)
    )
    if plan.disposition == "safe_replay":
        assert plan.rejection_reasons == () and not plan.requires_verification
    if plan.diagnostics:
        assert plan.disposition == "blocked"
    # an unresolved call never appears in replay (§1.7 consequence)
    # (a list, not a set: fuzzed ids may be missing or unhashable)
    answered = [
        e["content"].get("id")
        for e in events
        if isinstance(e, dict) and isinstance(e.get("content"), dict) and e["content"].get("kind") == "function_response"
    ]
    for r in plan.replay_runtime_events:
        c = r.get("content")
        if isinstance(c, dict) and c.get("kind") == "function_call":
            assert c.get("id") in answered
