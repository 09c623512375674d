"""Semantic lanes and generic-append reservations — spec 10 §4.1, §4.2, scenarios §7.3 (22–29).

Expected values are copied from the spec text; events come from the spec's fixture families.
"""

from __future__ import annotations

import copy

import pytest

from maka_ref._ledger.lanes import candidate_lanes, classify_lane, validate_generic_append
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref.testing.families import (
    T1,
    event,
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


def scan_issues(events):
    return [issue.to_json() for issue in scan_tool_ledger(events).issues]


# --- the five tool lanes and ordinary ------------------------------------------------------


def test_family_events_sit_on_their_lanes():
    """§4.1: each W-family fact matches exactly one lane envelope."""
    assert classify_lane(w_call()) == "function_call"
    assert classify_lane(w_dispatch()) == "tool_dispatch"
    assert classify_lane(w_outcome()) == "function_response"
    assert classify_lane(w_outcome_unbound()) == "function_response"
    assert classify_lane(w_reconcile()) == "reconcile_result"
    assert classify_lane(w_decision_completed()) == "recovery_decision"
    assert classify_lane(w_decision_parked()) == "recovery_decision"
    assert classify_lane(w_marker()) == "ordinary"


def test_candidate_lanes_lists_every_claim():
    """§4.1: candidate lanes; more than one candidate is a conflict."""
    assert candidate_lanes(w_marker()) == ()
    assert candidate_lanes(w_call()) == ("function_call",)
    both = with_fields(w_call(), actions=w_dispatch()["actions"])
    assert candidate_lanes(both) == ("function_call", "tool_dispatch")
    assert classify_lane(both) == "conflict"


# --- §7.3 scenarios --------------------------------------------------------------------------


def test_22_call_carrying_tool_dispatch_is_a_lane_conflict():
    """§7.3 #22: call event that also carries toolDispatch → semantic_lane_conflict@call-event-1."""
    call = w_call()
    call["actions"] = w_dispatch()["actions"]
    assert classify_lane(call) == "conflict"
    assert validate_generic_append(call) == "semantic_lane_conflict"
    assert scan_issues([call]) == [{"code": "semantic_lane_conflict", "eventId": "call-event-1"}]


def test_23_dispatch_with_status_completed_is_a_lane_conflict():
    """§7.3 #23: dispatch with status: completed → lane conflict."""
    assert classify_lane(with_fields(w_dispatch(), status="completed")) == "conflict"


def test_24_reconcile_with_text_content_is_a_lane_conflict():
    """§7.3 #24: reconcile event with text content → lane conflict."""
    rc = with_fields(w_reconcile(), content={"kind": "text", "text": "smuggled"})
    assert classify_lane(rc) == "conflict"


def test_25_response_and_call_action_smuggling():
    """§7.3 #25: response with endInvocation; response stateDelta {continuationStart}; call with artifactDelta."""
    assert classify_lane(with_fields(w_outcome(), actions={"endInvocation": True})) == "conflict"
    assert (
        classify_lane(with_fields(w_outcome(), actions={"stateDelta": {"continuationStart": True}})) == "conflict"
    )
    assert classify_lane(with_fields(w_call(), actions={"artifactDelta": {"a": "b"}})) == "conflict"


def test_26_generic_append_reservations():
    """§7.3 #26: D → reserved_tool_boundary_fact; bound O → same; RC → reserved_recovery_fact; C → ok."""
    assert validate_generic_append(w_dispatch()) == "reserved_tool_boundary_fact"
    assert validate_generic_append(w_outcome()) == "reserved_tool_boundary_fact"
    assert validate_generic_append(w_reconcile()) == "reserved_recovery_fact"
    assert validate_generic_append(w_decision_parked()) == "reserved_recovery_fact"
    assert validate_generic_append(w_call()) is None


def test_27_partial_dispatch_scans_as_exactly_one_lane_issue():
    """§7.3 #27: scanning [D with partial:true] → exactly [{semantic_lane_conflict, dispatch-event-1}]."""
    scan = scan_tool_ledger([with_fields(w_dispatch(), partial=True)])
    assert [i.to_json() for i in scan.issues] == [{"code": "semantic_lane_conflict", "eventId": "dispatch-event-1"}]
    assert scan.operations == ()


def test_28_call_with_branch_is_a_lane_conflict():
    """§7.3 #28: call with branch: child-1 → lane conflict."""
    assert classify_lane(with_fields(w_call(), branch="child-1")) == "conflict"


class TestScenario29LaneEdgeCases:
    """§7.3 #29 [X]: lane edge cases."""

    def test_call_state_delta_with_the_three_allowed_string_keys_is_ok(self):
        call = with_fields(
            w_call(), actions={"stateDelta": {"activityKind": "edit", "displayName": "Write", "intent": "save"}}
        )
        assert classify_lane(call) == "function_call"

    @pytest.mark.parametrize(
        "actions",
        [{"stateDelta": {"durationMs": 12}}, {"stateDelta": {}}, {}],
        ids=["durationMs", "empty-stateDelta", "empty-actions"],
    )
    def test_call_with_other_state_delta_or_empty_actions_conflicts(self, actions):
        assert classify_lane(with_fields(w_call(), actions=actions)) == "conflict"

    def test_response_duration_ms_ok_extra_key_conflicts(self):
        assert classify_lane(with_fields(w_outcome(), actions={"stateDelta": {"durationMs": 12}})) == "function_response"
        extra = with_fields(w_outcome(), actions={"stateDelta": {"durationMs": 12, "extra": 1}})
        assert classify_lane(extra) == "conflict"

    @pytest.mark.parametrize("override", [{"role": "tool"}, {"author": "tool"}, {"status": "completed"}])
    def test_call_with_wrong_role_author_or_status_conflicts(self, override):
        assert classify_lane(with_fields(w_call(), **override)) == "conflict"

    def test_dispatch_with_content_model_role_or_extra_action_conflicts(self):
        assert classify_lane(with_fields(w_dispatch(), content={"kind": "text", "text": "x"})) == "conflict"
        assert classify_lane(with_fields(w_dispatch(), role="model")) == "conflict"
        extra = w_dispatch()
        extra["actions"]["endInvocation"] = False
        assert classify_lane(extra) == "conflict"

    def test_dispatch_refs_rules(self):
        assert classify_lane(with_fields(w_dispatch(), refs={"operationId": "operation-1"})) == "conflict"
        both_parents = with_fields(
            w_dispatch(),
            refs={
                "operationId": "operation-1",
                "toolCallId": "provider-call-1",
                "parentToolCallId": "exec-1",
                "parentOperationId": "outer-op",
            },
        )
        assert classify_lane(both_parents) == "tool_dispatch"
        one_parent = with_fields(
            w_dispatch(),
            refs={"operationId": "operation-1", "toolCallId": "provider-call-1", "parentOperationId": "outer-op"},
        )
        assert classify_lane(one_parent) == "conflict"

    def test_reconcile_refs_missing_tool_call_id_conflicts(self):
        assert classify_lane(with_fields(w_reconcile(), refs={"operationId": "operation-1"})) == "conflict"

    def test_plain_system_event_is_ordinary(self):
        assert classify_lane(event("system-1")) == "ordinary"
        assert validate_generic_append(event("system-1")) is None

    def test_unbound_response_on_the_generic_path_is_ok(self):
        assert validate_generic_append(w_outcome_unbound()) is None


# --- our additions (documented in docs/choices/ledger.md) -----------------------------------


class TestUninterpretableEntries:
    """Outside the well-typed domain (non-objects, ill-typed identity/tool fields) the lane is
    a conflict (our fail-closed choice); an *absent* key reads as upstream's ``undefined``
    (``validateToolLedgerEventLane``, core/src/tool-ledger-scanner.ts:158). Never raises."""

    @pytest.mark.parametrize("value", [None, 1, "x", [], [w_call()], ("a",), object()])
    def test_non_objects_are_conflicts(self, value):
        assert classify_lane(value) == "conflict"
        assert candidate_lanes(value) == ()
        assert validate_generic_append(value) == "semantic_lane_conflict"

    @pytest.mark.parametrize("key", ["id", "invocationId", "sessionId", "runId", "turnId"])
    @pytest.mark.parametrize("bad", [None, 7, ["x"], {"a": 1}])
    def test_identity_fields_must_be_strings(self, key, bad):
        assert classify_lane(with_fields(event("e-1"), **{key: bad})) == "conflict"

    @pytest.mark.parametrize("key", ["id", "invocationId", "sessionId", "runId", "turnId"])
    def test_an_absent_identity_field_is_undefined_not_a_conflict(self, key):
        """Upstream reads a missing identity field as ``undefined``; the lane rules never look
        at identity fields, so the lane is the event's lane."""
        assert classify_lane(event("e-1", drop=[key])) == "ordinary"
        call = w_call()
        del call[key]
        assert classify_lane(call) == "function_call"

    @pytest.mark.parametrize(
        "mutate",
        [
            lambda e: e["content"].__setitem__("id", ["x"]),
            lambda e: e["content"].__setitem__("name", None),
            lambda e: e.__setitem__("partial", None),
            lambda e: e.__setitem__("partial", True),
            lambda e: e.__setitem__("actions", None),
            lambda e: e.__setitem__("actions", ["stateDelta"]),
        ],
    )
    def test_ill_typed_call_fields_conflict(self, mutate):
        call = w_call()
        mutate(call)
        assert classify_lane(call) == "conflict"

    @pytest.mark.parametrize("path", [("partial",), ("content", "id"), ("content", "name"), ("content", "args")])
    def test_absent_call_fields_keep_the_lane(self, path):
        """Upstream: an absent ``partial`` is not partial (``event.partial ||`` is falsy), and the
        lane rules never read ``content.id``/``name``/``args``."""
        call = w_call()
        parent = call
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        assert classify_lane(call) == "function_call"

    @pytest.mark.parametrize("key", ["operationId", "providerToolCallId", "toolName", "canonicalArgsHash"])
    def test_absent_dispatch_fields_keep_the_lane(self, key):
        dispatch = w_dispatch()
        del dispatch["actions"]["toolDispatch"][key]
        assert classify_lane(dispatch) == "tool_dispatch"

    @pytest.mark.parametrize("key", ["operationId", "providerToolCallId", "toolName", "canonicalArgsHash"])
    def test_dispatch_fields_read_by_the_scanner_must_be_strings(self, key):
        dispatch = w_dispatch()
        dispatch["actions"]["toolDispatch"][key] = {"unhashable": []}
        assert classify_lane(dispatch) == "conflict"
        dispatch["actions"]["toolDispatch"] = None
        assert classify_lane(dispatch) == "conflict"

    def test_recovery_fact_payload_operation_id_must_be_a_string(self):
        rc = w_reconcile()
        rc["actions"]["toolRecovery"]["payload"]["operationId"] = 3
        assert classify_lane(rc) == "conflict"
        rc["actions"]["toolRecovery"]["payload"] = "nope"
        assert classify_lane(rc) == "conflict"

    def test_unknown_tool_recovery_kind_is_ordinary_per_spec(self):
        fact = w_reconcile()
        fact["actions"]["toolRecovery"]["kind"] = "maka.tool.other"
        assert classify_lane(fact) == "ordinary"

    def test_response_duration_must_be_a_finite_number(self):
        for bad in (True, "12", None, float("inf"), float("nan")):
            e = with_fields(w_outcome(), actions={"stateDelta": {"durationMs": bad}})
            assert classify_lane(e) == "conflict"
        assert classify_lane(with_fields(w_outcome(), actions={"stateDelta": {"durationMs": 1.5}})) == "function_response"

    def test_marker_on_a_call_is_a_conflict(self):
        """§3: the marker cannot share an event with a function_call."""
        call = with_fields(w_call(), actions={"runtimeProtocol": {"toolBoundary": T1}})
        assert classify_lane(call) == "conflict"

    def test_lane_functions_do_not_mutate(self):
        events = [w_call(), w_dispatch(), w_outcome(), w_reconcile(), w_decision_completed(), w_marker()]
        before = copy.deepcopy(events)
        for e in events:
            classify_lane(e)
            candidate_lanes(e)
            validate_generic_append(e)
        assert events == before
