"""The RecoveryResolver — spec 10 §6.1–§6.4, scenarios §7.7 (48–93).

Decision dicts are compared with exact equality via ``to_json()`` wherever the spec gives
them in full; ``iss`` lists are compared as ``code@eventId``.
"""

from __future__ import annotations

import copy

import pytest

from maka_ref._ledger.resolver import resolve_recovery
from maka_ref.testing.families import (
    T1,
    W_REFS,
    event,
    r_call,
    r_dispatch,
    r_initial,
    r_response,
    w_call,
    w_decision_completed,
    w_decision_parked,
    w_dispatch,
    w_marker,
    w_outcome,
    w_outcome_unbound,
    w_reconcile,
    with_fields,
)


def resolve(events):
    before = copy.deepcopy(events)
    resolution = resolve_recovery(events)
    assert events == before, "the resolver must not mutate its input"
    return resolution


def decisions(resolution):
    return [d.to_json() for d in resolution.decisions]


def status_reason(resolution, index=0):
    d = resolution.decisions[index]
    return (d.status, d.reason)


def iss(resolution):
    return [f"{i.code}@{i.event_id}" for i in resolution.issues]


def call_for(call_id, *, id, name="Write", args=None, **fields):
    e = w_call(id=id)
    e["content"]["id"] = call_id
    e["content"]["name"] = name
    if args is not None:
        e["content"]["args"] = args
    e.update(fields)
    return e


def late_marker(id="late-marker", **fields):
    return event(id, actions={"runtimeProtocol": {"toolBoundary": T1}}, **fields)


# --- family R, [T:res] ------------------------------------------------------------------------


def test_48_new_protocol_call_only():
    """§7.7 #48."""
    r = resolve([r_initial(T1), r_call()])
    assert r.tool_boundary_protocol == T1
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "status": "definitely_not_dispatched",
            "reason": "new_protocol_before_dispatch",
            "callRuntimeEventId": "function-call-1",
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (False, False)


def test_49_dispatch_without_response_requires_reconciliation():
    """§7.7 #49."""
    r = resolve([r_initial(T1), r_call(), r_dispatch()])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "operationId": "operation-1",
            "status": "indeterminate",
            "reason": "dispatch_without_response",
            "callRuntimeEventId": "function-call-1",
            "dispatchRuntimeEventId": "dispatch-1",
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (False, True)


def test_50_pre_t1_synthetic_error_response():
    """§7.7 #50."""
    r = resolve([r_initial(T1), r_call(), r_response(err=True)])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "status": "completed",
            "reason": "matching_response",
            "settlementOrigin": "pre_t1_synthetic",
            "callRuntimeEventId": "function-call-1",
            "responseRuntimeEventId": "function-response-1",
            "responseIsError": True,
        }
    ]
    assert r.requires_reconciliation is False


def test_51_orphan_dispatch():
    """§7.7 #51: no callRuntimeEventId."""
    r = resolve([r_initial(T1), r_dispatch()])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "orphan_dispatch",
            "dispatchRuntimeEventId": "dispatch-1",
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)


def test_52_orphan_response():
    """§7.7 #52."""
    r = resolve([r_initial(T1), r_response()])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "status": "corruption",
            "reason": "orphan_response",
            "responseRuntimeEventId": "function-response-1",
            "responseIsError": False,
        }
    ]
    assert r.has_corruption is True


def test_53_dispatch_names_another_tool():
    """§7.7 #53."""
    r = resolve([r_initial(T1), r_call(), r_dispatch("Write")])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "identity_conflict",
            "callRuntimeEventId": "function-call-1",
            "dispatchRuntimeEventId": "dispatch-1",
        }
    ]
    assert r.has_corruption is True


def test_54_duplicate_dispatch():
    """§7.7 #54."""
    r = resolve([r_initial(T1), r_call(), r_dispatch(), r_dispatch(id="dispatch-2")])
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "duplicate_dispatch",
            "callRuntimeEventId": "function-call-1",
            "dispatchRuntimeEventId": "dispatch-1",
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)


def test_55_duplicate_response():
    """§7.7 #55."""
    events = [
        r_initial(T1),
        r_call(),
        r_dispatch(),
        r_response(op="operation-1"),
        r_response(op="operation-1", id="function-response-2"),
    ]
    r = resolve(events)
    assert decisions(r) == [
        {
            "toolCallId": "call-1",
            "toolName": "Bash",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "duplicate_response",
            "callRuntimeEventId": "function-call-1",
            "dispatchRuntimeEventId": "dispatch-1",
            "responseRuntimeEventId": "function-response-1",
            "responseIsError": False,
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)


def test_56_late_marker():
    """§7.7 #56: issues exactly [protocol_marker_invalid@late-marker]; no toolBoundaryProtocol."""
    r = resolve([r_initial(), late_marker()])
    assert [i.to_json() for i in r.issues] == [{"code": "protocol_marker_invalid", "eventId": "late-marker"}]
    assert r.tool_boundary_protocol is None
    assert "toolBoundaryProtocol" not in r.to_json()
    assert r.has_corruption is True


def test_57_unknown_first_marker_is_an_issue_and_legacy():
    """§7.7 #57."""
    r = resolve([r_initial("future_protocol"), r_call()])
    assert r.tool_boundary_protocol is None
    assert iss(r) == ["protocol_marker_invalid@initial-1"]
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)


def test_58_response_bound_to_another_operation():
    """§7.7 #58."""
    r = resolve([r_initial(T1), r_call(), r_dispatch(), r_response(op="another-operation")])
    assert status_reason(r) == ("corruption", "identity_conflict")
    assert r.decisions[0].response_runtime_event_id == "function-response-1"
    assert r.has_corruption is True


# --- family W, [T:eq] -------------------------------------------------------------------------


def test_59_completed_recovery_bundle():
    """§7.7 #59."""
    r = resolve([w_call(), w_dispatch(), w_reconcile(), w_outcome(), w_decision_completed()])
    assert decisions(r) == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "completed",
            "reason": "recovery_bundle_completed",
            "settlementOrigin": "recovery_bundle",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
            "responseRuntimeEventId": "outcome-event-1",
            "responseIsError": False,
        }
    ]
    assert r.issues == ()
    assert (r.has_corruption, r.requires_reconciliation) == (False, False)


@pytest.mark.parametrize(
    "events,expected",
    [
        ([w_call(), w_dispatch()], "indeterminate"),
        ([w_call(), w_dispatch(), w_outcome()], "completed"),
        ([w_call(), w_dispatch(), w_outcome(err=True)], "completed"),
        ([w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()], "parked"),
    ],
    ids=["prepared", "outcome", "error-outcome", "parked"],
)
def test_60_store_produced_ledgers(events, expected):
    """§7.7 #60."""
    assert resolve(events).decisions[0].status == expected


def test_61_duplicate_id_and_smuggled_dispatch():
    """§7.7 #61: issue codes [duplicate_event_id, semantic_lane_conflict]; decision stays legacy."""
    smuggled = with_fields(w_outcome(), actions=w_dispatch()["actions"])
    r = resolve([w_call(), w_call(), smuggled])
    assert [i.code for i in r.issues] == ["duplicate_event_id", "semantic_lane_conflict"]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")


def test_62_parked_bundle():
    """§7.7 #62."""
    r = resolve([w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()])
    assert decisions(r) == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "parked",
            "reason": "reconcile_diverged",
            "settlementOrigin": "recovery_bundle",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
        }
    ]
    assert (r.has_corruption, r.requires_reconciliation) == (False, False)


def test_63_unbound_recovery_fact_is_a_global_issue():
    """§7.7 #63."""
    orphan = w_reconcile(id="orphan-reconcile-event")
    orphan["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    orphan["refs"] = {"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"}
    r = resolve([w_call(), w_outcome(), orphan])
    assert r.has_corruption is True
    assert (r.decisions[0].status, r.decisions[0].settlement_origin) == ("completed", "pre_t1_synthetic")
    assert iss(r) == ["event_order_conflict@orphan-reconcile-event"]


# --- [X] ----------------------------------------------------------------------------------------


def test_64_empty_ledger():
    """§7.7 #64."""
    assert resolve([]).to_json() == {"decisions": [], "issues": [], "hasCorruption": False, "requiresReconciliation": False}


def test_65_legacy_call_only_requires_reconciliation():
    """§7.7 #65."""
    r = resolve([r_initial(), w_call()])
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")
    assert r.requires_reconciliation is True


def test_66_legacy_dispatch_without_response():
    """§7.7 #66."""
    r = resolve([r_initial(), w_call(), w_dispatch()])
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")
    assert r.requires_reconciliation is True


def test_67_normal_t2_both_protocols():
    """§7.7 #67."""
    r = resolve([w_marker(), w_call(), w_dispatch(), w_outcome()])
    d = r.decisions[0]
    assert (d.status, d.reason, d.settlement_origin) == ("completed", "matching_response", "normal_t2")
    d = resolve([w_call(), w_dispatch(), w_outcome(err=True)]).decisions[0]
    assert (d.status, d.settlement_origin, d.response_is_error) == ("completed", "normal_t2", True)


def test_68_dispatch_before_call():
    """§7.7 #68."""
    r = resolve([w_marker(), w_dispatch(), w_call()])
    d = r.decisions[0]
    assert (d.status, d.reason) == ("corruption", "event_order_conflict")
    assert (d.call_runtime_event_id, d.dispatch_runtime_event_id) == ("call-event-1", "dispatch-event-1")
    assert iss(r) == ["event_order_conflict@dispatch-event-1"]


def test_69_response_before_call():
    """§7.7 #69."""
    d = resolve([w_marker(), w_outcome_unbound(), w_call()]).decisions[0]
    assert (d.status, d.reason, d.call_runtime_event_id) == ("corruption", "orphan_response", "call-event-1")


def test_70_normal_response_plus_parked_bundle():
    """§7.7 #70."""
    r = resolve([w_call(), w_dispatch(), w_reconcile("diverged"), w_outcome(), w_decision_parked()])
    assert decisions(r) == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "recovery_fact_corruption",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
            "responseRuntimeEventId": "outcome-event-1",
            "responseIsError": False,
        }
    ]
    assert r.issues == ()
    assert r.has_corruption is True


def _evidence(dp, ids):
    dp["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = ids
    return dp


def _outcome_ref(dc, ref):
    dc["actions"]["toolRecovery"]["payload"]["outcomeEventId"] = ref
    return dc


def _refs(e, **refs):
    e["refs"].update(refs)
    return e


SCENARIO_71 = {
    "reconcile-only": [w_call(), w_dispatch(), w_reconcile()],
    "decision-only": [w_call(), w_dispatch(), w_decision_parked()],
    "outcome-before-reconcile": [w_call(), w_dispatch(), w_outcome(), w_reconcile(), w_decision_completed()],
    "never-auto-retry": [
        w_call(),
        w_dispatch(recovery_mode="never_auto_retry"),
        w_reconcile("diverged"),
        w_decision_parked(),
    ],
    "wrong-evidence-order": [
        w_call(),
        w_dispatch(),
        w_reconcile("diverged"),
        _evidence(w_decision_parked(), ["dispatch-event-1", "call-event-1", "reconcile-event-1"]),
    ],
    "error-outcome": [w_call(), w_dispatch(), w_reconcile(), w_outcome(err=True), w_decision_completed()],
    "reason-mismatch": [w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked("reconcile_unreadable")],
    "observation-mismatch": [w_call(), w_dispatch(), w_reconcile(), w_decision_parked()],
    "missing-outcome": [w_call(), w_dispatch(), w_reconcile(), w_decision_completed()],
    "wrong-outcome-id": [w_call(), w_dispatch(), w_reconcile(), w_outcome(), _outcome_ref(w_decision_completed(), "other")],
    "bad-fact-refs": [w_call(), w_dispatch(), _refs(w_reconcile(), toolCallId="zzz"), w_outcome(), w_decision_completed()],
    "two-reconciles": [
        w_call(),
        w_dispatch(),
        w_reconcile("diverged"),
        w_reconcile("diverged", id="reconcile-event-2"),
        w_decision_parked(),
    ],
    "decision-before-reconcile": [w_call(), w_dispatch(), w_decision_parked(), w_reconcile("diverged")],
    "outcome-after-decision": [w_call(), w_dispatch(), w_reconcile(), w_decision_completed(), w_outcome()],
}


@pytest.mark.parametrize("events", list(SCENARIO_71.values()), ids=list(SCENARIO_71))
def test_71_recovery_fact_corruption_without_resolver_issues(events):
    """§7.7 #71: each → corruption/recovery_fact_corruption with no resolver issues."""
    r = resolve(events)
    assert status_reason(r) == ("corruption", "recovery_fact_corruption")
    assert r.decisions[0].settlement_origin is None
    assert r.issues == ()
    assert r.has_corruption is True


def test_72_other_park_reasons():
    """§7.7 #72."""
    r = resolve([w_call(), w_dispatch(), w_reconcile("matches_prior_state"), w_decision_parked("reconcile_matches_prior_state")])
    assert status_reason(r) == ("parked", "reconcile_matches_prior_state")
    r = resolve([w_call(), w_dispatch(), w_reconcile("unreadable"), w_decision_parked("reconcile_unreadable")])
    assert status_reason(r) == ("parked", "reconcile_unreadable")


def test_73_other_run_in_the_same_invocation():
    """§7.7 #73: corr true, recon false."""
    other = event("other-run-user", role="user", author="user", content={"kind": "text", "text": "hi"}, runId="run-2")
    r = resolve([w_marker(), w_call(), w_dispatch(), other])
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")
    assert iss(r) == ["invocation_identity_conflict@other-run-user"]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)


def test_74_duplicate_call_beats_duplicate_dispatch():
    """§7.7 #74."""
    r = resolve([w_call(), w_call(id="call-2"), w_dispatch(), w_dispatch(id="dispatch-2")])
    assert status_reason(r) == ("corruption", "duplicate_call")
    assert iss(r) == ["duplicate_call@call-2", "duplicate_dispatch@dispatch-2"]


def test_75_priority_is_not_emission_order():
    """§7.7 #75."""
    d = w_dispatch()
    d["actions"]["toolDispatch"]["toolName"] = "Read"
    d["actions"]["toolDispatch"]["canonicalArgsHash"] = "sha256:x"
    r = resolve([w_call(), d])
    assert iss(r) == ["identity_conflict@dispatch-event-1", "canonical_args_hash_conflict@dispatch-event-1"]
    assert r.decisions[0].reason == "canonical_args_hash_conflict"


def test_76_responses_on_unbound_operations():
    """§7.7 #76."""
    read = w_outcome_unbound()
    read["content"]["name"] = "Read"
    assert status_reason(resolve([w_call(), read])) == ("corruption", "identity_conflict")
    no_refs = w_outcome_unbound()
    del no_refs["refs"]
    d = resolve([w_call(), no_refs]).decisions[0]
    assert (d.status, d.settlement_origin) == ("completed", "pre_t1_synthetic")
    d = resolve([w_call(), w_outcome()]).decisions[0]
    assert (d.status, d.settlement_origin) == ("completed", "pre_t1_synthetic")


def test_77_malformed_dispatch_refs_vanish_from_grouping():
    """§7.7 #77."""
    bad = with_fields(w_dispatch(), refs={"operationId": "operation-1"})
    r = resolve([w_call(), bad])
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")
    assert iss(r) == ["semantic_lane_conflict@dispatch-event-1"]
    assert (r.has_corruption, r.requires_reconciliation) == (True, False)
    r = resolve([w_marker(), w_call(), bad])
    assert status_reason(r) == ("definitely_not_dispatched", "new_protocol_before_dispatch")
    assert r.has_corruption is True


def test_78_dispatch_refs_name_another_operation():
    """§7.7 #78."""
    bad = with_fields(w_dispatch(), refs={"operationId": "operation-X", "toolCallId": "provider-call-1"})
    assert status_reason(resolve([w_call(), bad])) == ("corruption", "identity_conflict")


def test_79_dispatch_with_both_parent_refs():
    """§7.7 #79."""
    nested = with_fields(
        w_dispatch(), refs={**W_REFS, "parentToolCallId": "exec-1", "parentOperationId": "outer-op"}
    )
    r = resolve([w_call(), nested])
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")
    assert r.issues == ()


class TestScenario80MarkerPlacement:
    """§7.7 #80 [X]."""

    def test_invalid_first_and_late_marker(self):
        r = resolve([r_initial("future"), w_call(), late_marker("late")])
        assert iss(r) == ["protocol_marker_invalid@initial-1", "protocol_marker_invalid@late"]

    def test_call_with_marker_as_first_event(self):
        call = with_fields(w_call(), actions={"runtimeProtocol": {"toolBoundary": T1}})
        r = resolve([call])
        assert r.tool_boundary_protocol == T1
        assert r.decisions == ()
        assert iss(r) == ["semantic_lane_conflict@call-event-1"]

    def test_system_first_event_with_valid_marker(self):
        r = resolve([late_marker("system-start"), w_call()])
        assert r.issues == ()
        assert status_reason(r) == ("definitely_not_dispatched", "new_protocol_before_dispatch")

    def test_partial_first_event_with_marker_is_still_honored(self):
        r = resolve([with_fields(w_marker(), partial=True), w_call()])
        assert r.tool_boundary_protocol == T1
        assert status_reason(r) == ("definitely_not_dispatched", "new_protocol_before_dispatch")

    def test_marker_on_a_partial_later_event(self):
        r = resolve([r_initial(), late_marker("late-partial", partial=True)])
        assert iss(r) == ["protocol_marker_invalid@late-partial"]

    def test_late_marker_on_a_duplicate_id_copy(self):
        """§3: any event at index ≥ 1 with a marker, even a duplicate-id copy."""
        r = resolve([w_marker(), w_marker()])
        assert iss(r) == ["protocol_marker_invalid@initial-1", "duplicate_event_id@initial-1"]
        assert r.tool_boundary_protocol == T1


def test_81_duplicate_operation():
    """§7.7 #81: both corruption/duplicate_operation; only the first has operationId; one issue."""
    c2 = call_for("provider-call-2", id="call-event-2")
    d2 = w_dispatch(id="dispatch-2")
    d2["actions"]["toolDispatch"]["providerToolCallId"] = "provider-call-2"
    d2["refs"] = {"operationId": "operation-1", "toolCallId": "provider-call-2"}
    r = resolve([w_call(), c2, w_dispatch(), d2])
    assert [status_reason(r, i) for i in (0, 1)] == [("corruption", "duplicate_operation")] * 2
    assert [d.to_json().get("operationId") for d in r.decisions] == ["operation-1", None]
    assert iss(r) == ["duplicate_operation@dispatch-2"]


def test_82_duplicate_unbound_response():
    """§7.7 #82."""
    o1 = w_outcome_unbound()
    del o1["refs"]
    o2 = w_outcome_unbound(id="o2")
    del o2["refs"]
    assert status_reason(resolve([w_call(), o1, o2])) == ("corruption", "duplicate_response")


def test_83_reconcile_before_dispatch():
    """§7.7 #83."""
    r = resolve([w_call(), w_reconcile(), w_dispatch()])
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")
    assert iss(r) == ["event_order_conflict@reconcile-event-1"]
    assert r.has_corruption is True


def test_84_orphan_dispatch_never_consults_facts():
    """§7.7 #84."""
    assert status_reason(resolve([w_dispatch(), w_reconcile("diverged"), w_decision_parked()])) == (
        "corruption",
        "orphan_dispatch",
    )


def test_85_decision_for_an_unknown_operation():
    """§7.7 #85."""
    dp = w_decision_parked()
    dp["actions"]["toolRecovery"]["payload"]["operationId"] = "nope"
    dp["refs"]["operationId"] = "nope"
    r = resolve([w_call(), dp])
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")
    assert iss(r) == ["event_order_conflict@decision-event-1"]


def test_86_creation_order():
    """§7.7 #86."""
    p2 = call_for("p2", id="call-event-2", name="Read", args={})
    o3 = w_outcome_unbound(id="o3")
    o3["content"]["id"] = "p3"
    o3["content"]["name"] = "Bash"
    o3["refs"] = {"toolCallId": "p3"}
    r = resolve([w_marker(), w_call(), p2, o3, w_dispatch()])
    assert [(d.tool_call_id, d.status, d.reason) for d in r.decisions] == [
        ("provider-call-1", "indeterminate", "dispatch_without_response"),
        ("p2", "definitely_not_dispatched", "new_protocol_before_dispatch"),
        ("p3", "corruption", "orphan_response"),
    ]


def test_87_unbound_outcome_after_dispatch():
    """§7.7 #87."""
    assert status_reason(resolve([w_call(), w_dispatch(), w_outcome_unbound()])) == ("corruption", "identity_conflict")


def test_88_hash_of_other_args():
    """§7.7 #88: hash(Write, {path: other.txt, content: after}) on the dispatch."""
    d = w_dispatch()
    d["actions"]["toolDispatch"]["canonicalArgsHash"] = (
        "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838"
    )
    assert status_reason(resolve([w_call(), d])) == ("corruption", "canonical_args_hash_conflict")


def test_89_response_before_dispatch():
    """§7.7 #89."""
    assert status_reason(resolve([w_call(), w_outcome(), w_dispatch()])) == ("corruption", "event_order_conflict")
    r = resolve([w_call(), w_outcome_unbound(), w_dispatch()])
    assert status_reason(r) == ("corruption", "identity_conflict")
    assert iss(r) == ["event_order_conflict@dispatch-event-1", "identity_conflict@outcome-event-1"]


def test_90_read_side_never_dedups():
    """§7.7 #90."""
    r = resolve([w_call(), w_call(), w_dispatch()])
    assert iss(r) == ["duplicate_event_id@call-event-1"]
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")
    r = resolve([w_call(), w_dispatch(id="call-event-1")])
    assert iss(r) == ["duplicate_event_id@call-event-1"]
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")


def test_91_recovery_fact_from_another_run():
    """§7.7 #91."""
    r = resolve([w_call(), w_dispatch(), with_fields(w_reconcile("diverged"), runId="run-2"), w_decision_parked()])
    assert iss(r) == ["invocation_identity_conflict@reconcile-event-1"]
    assert status_reason(r) == ("corruption", "recovery_fact_corruption")


class TestScenario92:
    """§7.7 #92 [X]."""

    def test_dispatch_then_response(self):
        r = resolve([w_dispatch(), w_outcome()])
        d = r.decisions[0]
        assert (d.status, d.reason) == ("corruption", "orphan_dispatch")
        assert (d.response_runtime_event_id, d.response_is_error) == ("outcome-event-1", False)
        assert iss(r) == ["event_order_conflict@dispatch-event-1", "identity_conflict@outcome-event-1"]

    def test_dispatch_then_call_with_another_name(self):
        read = w_call()
        read["content"]["name"] = "Read"
        assert status_reason(resolve([w_dispatch(), read])) == ("corruption", "identity_conflict")

    def test_unbound_response_call_dispatch(self):
        d = resolve([w_outcome_unbound(), w_call(), w_dispatch()]).decisions[0]
        assert (d.status, d.reason, d.operation_id) == ("corruption", "orphan_response", "operation-1")

    def test_call_response_duplicate_call(self):
        assert status_reason(resolve([w_call(), w_outcome(), w_call(id="call-dup")])) == (
            "corruption",
            "duplicate_call",
        )


def test_93_call_and_dispatch_in_different_invocations():
    """§7.7 #93: two decisions — legacy indeterminate (call) and orphan_dispatch (dispatch)."""
    call = w_call()
    call["invocationId"] = "invocation-2"
    r = resolve([call, w_dispatch()])
    assert [status_reason(r, i) for i in (0, 1)] == [
        ("indeterminate", "legacy_dispatch_unknown"),
        ("corruption", "orphan_dispatch"),
    ]


# --- §6.2 / §6.3 mechanics and robustness --------------------------------------------------------


def test_issue_order_markers_then_scanner():
    """§6.2 step 2: marker issues (first, then later ones) precede scanner issues."""
    r = resolve([r_initial("bad"), w_call(), w_call(), late_marker()])
    assert iss(r) == [
        "protocol_marker_invalid@initial-1",
        "protocol_marker_invalid@late-marker",
        "duplicate_event_id@call-event-1",
    ]


def test_event_order_is_last_index_wins():
    """§6.2 step 3 / §8.19: a repeated id uses its last index (here the bundle stays in order)."""
    dup_of_call = with_fields(event("call-event-1"))
    events = [w_call(), w_dispatch(), dup_of_call, w_reconcile(), w_outcome(), w_decision_completed()]
    r = resolve(events)
    # the copy of call-event-1 (index 2) is after the dispatch (index 1) → causal order broken
    assert status_reason(r) == ("corruption", "recovery_fact_corruption")
    assert iss(r) == ["duplicate_event_id@call-event-1"]


def test_resolution_to_json_shape():
    """§6.1: toolBoundaryProtocol present only for new-protocol runs."""
    assert resolve([w_marker(), w_call()]).to_json() == {
        "toolBoundaryProtocol": T1,
        "decisions": [
            {
                "toolCallId": "provider-call-1",
                "toolName": "Write",
                "status": "definitely_not_dispatched",
                "reason": "new_protocol_before_dispatch",
                "callRuntimeEventId": "call-event-1",
            }
        ],
        "issues": [],
        "hasCorruption": False,
        "requiresReconciliation": False,
    }


def test_empty_operation_id_is_omitted_but_bound():
    """§6.1: operationId omitted if empty; the op is still bound (decoder allows empty strings, §7.2 #21)."""
    d = w_dispatch()
    d["actions"]["toolDispatch"]["operationId"] = ""
    d["refs"]["operationId"] = ""
    r = resolve([w_call(), d])
    assert "operationId" not in r.decisions[0].to_json()
    assert status_reason(r) == ("indeterminate", "dispatch_without_response")


@pytest.mark.parametrize(
    "first",
    [
        with_fields(r_initial(), actions={"runtimeProtocol": None}),
        with_fields(r_initial(), actions={"runtimeProtocol": T1}),
        with_fields(r_initial(), actions={"runtimeProtocol": {"toolBoundary": ["t1"]}}),
    ],
)
def test_undecoded_invalid_first_markers(first):
    """§3 case 1 / §8.22: the resolver tolerates un-decoded marker values."""
    r = resolve([first, w_call()])
    assert iss(r) == ["protocol_marker_invalid@initial-1"]
    assert r.tool_boundary_protocol is None


def test_marker_rule_for_uninterpretable_entries():
    """Choice: a non-object has no marker; the scanner reports it without an eventId."""
    r = resolve([None, w_call()])
    assert r.tool_boundary_protocol is None
    assert iss(r) == ["semantic_lane_conflict@None"]
    assert r.to_json()["issues"] == [{"code": "semantic_lane_conflict"}]
    assert status_reason(r) == ("indeterminate", "legacy_dispatch_unknown")


@pytest.mark.parametrize("value", [None, 0, "x", {"id": "a"}, object()])
def test_non_sequence_input_is_corruption_not_an_exception(value):
    r = resolve_recovery(value)
    assert r.has_corruption is True and r.decisions == ()
