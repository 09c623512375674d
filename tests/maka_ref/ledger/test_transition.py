"""Write-side transition validation — spec 10 §4.6, §2.5, scenarios §7.5 (38–43)."""

from __future__ import annotations

import copy

import pytest

from maka_ref._ledger.transition import TRANSITION_KINDS, TransitionResult, validate_transition
from maka_ref.testing.families import (
    W_REFS,
    w_call,
    w_decision_completed,
    w_decision_parked,
    w_dispatch,
    w_outcome,
    w_outcome_unbound,
    w_reconcile,
    with_fields,
    event,
)


def check(existing, candidates, kind):
    before = copy.deepcopy((existing, candidates))
    result = validate_transition(existing, candidates, kind)
    assert (existing, candidates) == before, "validate_transition must not mutate its inputs"
    return result.to_json()


OK = {"ok": True}


# --- §7.5 scenarios --------------------------------------------------------------------------


def test_38_generic_duplicate_call():
    """§7.5 #38 [T:auth]: no operationId in the refusal."""
    assert check([w_call()], [w_call(id="call-event-duplicate")], "generic_append") == {
        "ok": False,
        "code": "duplicate_call",
        "eventId": "call-event-duplicate",
        "toolCallId": "provider-call-1",
    }


def test_39_generic_unbound_response_after_dispatch():
    """§7.5 #39 [T:auth]."""
    assert check([w_call(), w_dispatch()], [w_outcome_unbound()], "generic_append") == {
        "ok": False,
        "code": "identity_conflict",
        "eventId": "outcome-event-1",
        "operationId": "operation-1",
        "toolCallId": "provider-call-1",
    }


class TestScenario40T1Prepare:
    """§7.5 #40 [X]: t1_prepare."""

    def test_call_and_dispatch_on_empty(self):
        assert check([], [w_call(), w_dispatch()], "t1_prepare") == OK

    def test_dispatch_with_existing_call(self):
        assert check([w_call()], [w_dispatch()], "t1_prepare") == OK

    def test_exact_retry(self):
        result = validate_transition([w_call(), w_dispatch()], [w_call(), w_dispatch()], "t1_prepare")
        assert result.to_json() == OK
        assert result.remaining == ()

    def test_dispatch_then_call_is_a_shape_conflict(self):
        assert check([], [w_dispatch(), w_call()], "t1_prepare") == {
            "ok": False,
            "code": "transition_shape_conflict",
            "eventId": "dispatch-event-1",
        }

    def test_call_alone_is_a_shape_conflict(self):
        assert check([], [w_call()], "t1_prepare") == {
            "ok": False,
            "code": "transition_shape_conflict",
            "eventId": "call-event-1",
        }

    def test_call_already_bound_by_refs_plus_dispatch(self):
        bound_call = with_fields(w_call(), refs=dict(W_REFS))
        assert check([], [bound_call, w_dispatch()], "t1_prepare") == OK

    def test_reused_id_with_different_content(self):
        changed = with_fields(w_call(), ts=99)
        assert check([w_call()], [changed, w_dispatch()], "t1_prepare") == {
            "ok": False,
            "code": "duplicate_event_id",
            "eventId": "call-event-1",
        }

    def test_existing_unbound_pair_then_t1(self):
        result = check([w_call(), w_outcome_unbound()], [w_call(), w_dispatch()], "t1_prepare")
        assert (result["ok"], result["code"], result["eventId"]) == (False, "event_order_conflict", "dispatch-event-1")


class TestScenario41T2Outcome:
    """§7.5 #41 [X]: t2_outcome."""

    def test_bound_outcome_after_t1(self):
        assert check([w_call(), w_dispatch()], [w_outcome()], "t2_outcome") == OK

    def test_unbound_outcome_is_a_shape_conflict(self):
        assert check([w_call(), w_dispatch()], [w_outcome_unbound()], "t2_outcome") == {
            "ok": False,
            "code": "transition_shape_conflict",
            "eventId": "outcome-event-1",
        }

    def test_two_responses_are_a_shape_conflict(self):
        result = check([w_call(), w_dispatch()], [w_outcome(), w_outcome(id="outcome-event-2")], "t2_outcome")
        assert result["code"] == "transition_shape_conflict"

    @pytest.mark.parametrize("kind", TRANSITION_KINDS)
    def test_empty_candidate_list_is_ok_for_any_kind(self, kind):
        assert check([w_call(), w_dispatch()], [], kind) == OK


class TestScenario42RecoveryBundle:
    """§7.5 #42 [X]: recovery_bundle."""

    def test_completed_and_parked_bundles(self):
        t1 = [w_call(), w_dispatch()]
        assert check(t1, [w_reconcile(), w_outcome(), w_decision_completed()], "recovery_bundle") == OK
        assert check(t1, [w_reconcile("diverged"), w_decision_parked()], "recovery_bundle") == OK

    def test_exact_retry_when_all_exist(self):
        stored = [w_call(), w_dispatch(), w_reconcile(), w_outcome(), w_decision_completed()]
        assert check(stored, [w_reconcile(), w_outcome(), w_decision_completed()], "recovery_bundle") == OK

    def test_conflicting_retry_over_a_parked_bundle(self):
        stored = [w_call(), w_dispatch(), w_reconcile("diverged"), w_decision_parked()]
        assert check(stored, [w_reconcile(), w_outcome(), w_decision_completed()], "recovery_bundle") == {
            "ok": False,
            "code": "duplicate_event_id",
            "eventId": "reconcile-event-1",
        }

    def test_outcome_after_decision_is_a_shape_conflict(self):
        result = check([w_call(), w_dispatch()], [w_reconcile(), w_decision_completed(), w_outcome()], "recovery_bundle")
        assert (result["code"], result["eventId"]) == ("transition_shape_conflict", "reconcile-event-1")

    def test_ordinary_event_inside_is_a_shape_conflict(self):
        candidates = [w_reconcile("diverged"), event("ordinary-1"), w_decision_parked()]
        assert check([w_call(), w_dispatch()], candidates, "recovery_bundle")["code"] == "transition_shape_conflict"


class TestScenario43GenericAppend:
    """§7.5 #43 [X]: generic_append."""

    def test_dispatch_is_reserved(self):
        assert check([w_call()], [w_dispatch()], "generic_append") == {
            "ok": False,
            "code": "reserved_tool_boundary_fact",
            "eventId": "dispatch-event-1",
        }

    def test_reconcile_is_reserved(self):
        assert check([w_call(), w_dispatch()], [w_reconcile()], "generic_append") == {
            "ok": False,
            "code": "reserved_recovery_fact",
            "eventId": "reconcile-event-1",
        }

    def test_corrupt_existing_ledger_refuses_any_candidate(self):
        corrupt = [w_call(), w_call(id="dup")]
        for candidate in ([event("ordinary-1")], [], [w_call()]):
            result = check(corrupt, candidate, "generic_append")
            assert (result["ok"], result["code"], result["eventId"]) == (False, "duplicate_call", "dup")

    def test_unbound_pair_is_ok(self):
        assert check([], [w_call(), w_outcome_unbound()], "generic_append") == OK

    def test_response_with_end_invocation_is_a_lane_conflict(self):
        response = with_fields(w_outcome_unbound(), actions={"endInvocation": True})
        assert check([w_call()], [response], "generic_append") == {
            "ok": False,
            "code": "semantic_lane_conflict",
            "eventId": "outcome-event-1",
        }

    def test_partial_call_is_a_lane_conflict(self):
        assert check([], [with_fields(w_call(), partial=True)], "generic_append") == {
            "ok": False,
            "code": "semantic_lane_conflict",
            "eventId": "call-event-1",
        }


# --- result shape and our choices --------------------------------------------------------------


def test_remaining_keeps_only_new_candidates_in_order():
    """§4.6 step 2: exact retries are dropped; `remaining` is what the writer must insert."""
    c, d = w_call(), w_dispatch()
    result = validate_transition([w_call()], [c, d], "t1_prepare")
    assert isinstance(result, TransitionResult)
    assert result.ok and result.issue is None
    assert result.remaining == (d,) and result.remaining[0] is d


def test_refusal_has_empty_remaining_and_an_issue():
    result = validate_transition([], [w_call()], "t1_prepare")
    assert result.ok is False and result.remaining == ()
    assert (result.code, result.event_id) == ("transition_shape_conflict", "call-event-1")


def test_a_candidate_that_cannot_be_encoded_differs():
    """Choice (§2.5): a candidate whose canonical JSON cannot be produced is never an exact retry."""
    bad = w_call()
    bad["content"]["args"] = {"v": float("nan")}
    assert check([w_call()], [bad, w_dispatch()], "t1_prepare") == {
        "ok": False,
        "code": "duplicate_event_id",
        "eventId": "call-event-1",
    }


def test_uninterpretable_candidates_are_lane_conflicts():
    """Choice: a non-object candidate (or one with an ill-typed id) is a semantic_lane_conflict
    without an eventId; a candidate that merely lacks an id is judged by its lane, and a shape
    conflict on it names ``"unknown"`` (upstream: ``events[0]?.id ?? 'unknown'``)."""
    assert check([], [None], "generic_append") == {"ok": False, "code": "semantic_lane_conflict"}
    assert check([w_call()], [{"id": 3}], "t1_prepare") == {"ok": False, "code": "semantic_lane_conflict"}
    idless = w_call()
    del idless["id"]
    assert check([], [idless], "t1_prepare") == {"ok": False, "code": "transition_shape_conflict", "eventId": "unknown"}


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError):
        validate_transition([], [], "t3_whatever")  # type: ignore[arg-type]
