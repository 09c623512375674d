"""The recovery bundle through the wire protocol (spec 30 §2.5 ``commitToolRecoveryBundle``, its
§2.8 retry rule and §3.1 states; spec 10 §5.3, §5.6): STORE-BUNDLE-*.

Why a module of its own: the bundle is the third, recovery-only writer (reconcile fact +
outcome + decision in one transaction) with its own validation codes (spec 10 §5.3); T1/T2 are
in ``test_store_tool_writes.py`` and only set up the prepared operation here. Every clause runs
in its own workspace (pytest's ``tmp_path``) on the shared protocol session. Fixture events are
spec 30 Appendix A literally.

What a rejection clause proves: the answer is ``ok: false`` with the expected code *and*
nothing was written (the run's events and the operation's projection state are unchanged).
Expected codes: the bundle validation codes of spec 10 §5.3; for the spec's message-only
"plain errors" the code ``docs/protocol-codes.md`` assigns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal
from conformance.suite._store_support import (
    bundle_params, decision_event, dispatch_event, expect_rejected, nothing_written, open_store, reconcile_event,
    response_event, user_event,
)

# =============================================================================================
# Recovery bundle (spec 30 §2.5)
# =============================================================================================


@clause("STORE-BUNDLE-001", spec="30 §2.5; 30 §3.1; 30 §9 #41", capability="store",
        title="a completed bundle settles the operation: recovery_completed v4, result = outcome, 4 journal rows; retry is a no-op")
def test_bundle_completed(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 (atomic reconcile + outcome + decision), §3.1 (versions 2, 3, 4; journal
    ``reconcile_observed, outcome_committed, recovery_completed``), §9 #41, §2.8 (exact retry
    no-op). Proves the stored events, the record, the journal (derived ids, runtime event ids)
    and that an exact retry changes nothing."""
    store = open_store(maka, tmp_path)
    store.t1()
    store.bundle()
    ids = ["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "decision-event-1"]
    expect_equal(ids, store.event_ids(), what="events after the completed bundle")
    projection = store.project()
    record = store.operation("operation-1", projection) or {}
    expect_equal({"currentState": "recovery_completed", "version": 4, "resultEventId": "outcome-event-1"},
                 {k: record.get(k) for k in ("currentState", "version", "resultEventId")}, what="operation")
    expected_journal = [("operation-1_prepared", "prepared", "dispatch-event-1"),
                        ("reconcile-event-1_journal", "reconcile_observed", "reconcile-event-1"),
                        ("operation-1_outcome", "outcome_committed", "outcome-event-1"),
                        ("decision-event-1_journal", "recovery_completed", "decision-event-1")]
    journal = [(r.get("journalEventId"), r.get("state"), r.get("runtimeEventId"))
               for r in store.journal("operation-1", projection)]
    expect_equal(expected_journal, journal, what="journal after the completed bundle")
    expect_equal([], projection.get("unsettledOperations"), what="unsettled operations")
    store.bundle()
    expect_equal(store.tool_projection(projection), store.tool_projection(), what="projection after the exact retry")
    expect_equal(ids, store.event_ids(), what="events after the exact retry")
    store.close()


@clause("STORE-BUNDLE-002", spec="30 §2.5; 30 §2.8; 30 §3.1; 30 §9 #43", capability="store",
        title="a parked bundle twice is one park (recovery_parked v3); a later completed bundle is refused (duplicate_event_id)")
def test_bundle_parked_final(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 ("parked is terminal in v1: only its exact retry succeeds"), §2.8 (parked then
    completed reusing the reconcile id with another observation → ``duplicate_event_id``),
    §3.1, §9 #43."""
    store = open_store(maka, tmp_path)
    store.t1()
    store.bundle(parked=True)
    store.bundle(parked=True)
    projection = store.project()
    record = store.operation("operation-1", projection) or {}
    expect_equal({"currentState": "recovery_parked", "version": 3},
                 {k: record.get(k) for k in ("currentState", "version")}, what="operation after the park")
    if record.get("resultEventId") is not None:
        raise ClauseMismatch("a parked operation has a result event", evidence={"record": dict(record)})
    expect_equal(["prepared", "reconcile_observed", "recovery_parked"],
                 [r.get("state") for r in store.journal("operation-1", projection)], what="journal after the park")
    before = store.event_ids()
    reply = maka.call("store.commit_recovery_bundle", bundle_params(store.ws))
    expect_rejected(reply, "store.commit_recovery_bundle", "duplicate_event_id", "completed bundle after a park")
    nothing_written(store, before, "completed bundle after a park", state="recovery_parked")
    store.close()


def _bundle_case(case: str, ws: str) -> tuple[dict[str, Any], str]:
    if case == "outcome_not_successful":
        return bundle_params(ws, outcome=response_event(result="boom", is_error=True)), case
    if case == "evidence_order_conflict":
        decision = decision_event(evidence=["call-event-1", "dispatch-event-1", "reconcile-event-1"])
        return bundle_params(ws, decision=decision), case
    if case == "reconcile_decision_conflict":
        return bundle_params(ws, parked=True, reconcile=reconcile_event(observation="matches_prior_state"),
                             decision=decision_event(disposition="parked", reason="reconcile_diverged", ts=3)), case
    if case == "outcome_required":
        params = bundle_params(ws)
        del params["outcomeEvent"]
        return params, case
    if case == "outcome_for_parked":
        return bundle_params(ws, parked=True, outcome=response_event()), case
    if case == "outcome_reference_conflict":
        decision = decision_event(outcome_id="outcome-event-9",
                                  evidence=["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1"])
        return bundle_params(ws, decision=decision), case
    if case == "operation_identity_conflict":
        reconcile = reconcile_event()
        reconcile["actions"]["toolRecovery"]["payload"]["operationId"] = "operation-9"
        return bundle_params(ws, reconcile=reconcile), case
    if case == "reconcile_fact_invalid":
        return bundle_params(ws, reconcile=user_event("reconcile-event-1", ts=2)), case
    if case == "unknown_tool_operation":
        return bundle_params(ws, op="operation-9"), case
    raise AssertionError(case)


_BUNDLE_CASES = [
    ("STORE-BUNDLE-003", "outcome_not_successful", "30 §2.5; 30 §9 #47; 10 §5.3",
     "a completed decision with an isError outcome is refused (outcome_not_successful)"),
    ("STORE-BUNDLE-004", "evidence_order_conflict", "30 §2.5; 30 §9 #48; 10 §5.3",
     "evidence missing the outcome id is refused (evidence_order_conflict)"),
    ("STORE-BUNDLE-005", "reconcile_decision_conflict", "30 §2.5; 30 §9 #49; 10 §5.3",
     "a park whose reason does not match the observation is refused (reconcile_decision_conflict)"),
    ("STORE-BUNDLE-006", "outcome_required", "30 §2.5; 10 §5.3",
     "a completed decision without an outcome is refused (outcome_required)"),
    ("STORE-BUNDLE-007", "outcome_for_parked", "30 §2.5; 10 §5.3",
     "a parked decision with an outcome is refused (outcome_for_parked)"),
    ("STORE-BUNDLE-008", "outcome_reference_conflict", "30 §2.5; 10 §5.3",
     "a decision naming another outcome id is refused (outcome_reference_conflict)"),
    ("STORE-BUNDLE-009", "operation_identity_conflict", "30 §2.5; 10 §5.3",
     "a reconcile fact naming another operation is refused (operation_identity_conflict)"),
    ("STORE-BUNDLE-010", "reconcile_fact_invalid", "30 §2.5; 10 §5.3",
     "a bundle whose reconcile event is not a reconcile fact is refused (reconcile_fact_invalid)"),
    ("STORE-BUNDLE-011", "unknown_tool_operation", "30 §2.5 step 1",
     "a bundle for an operation that was never prepared is refused (unknown_tool_operation)"),
]


@pytest.mark.parametrize("case", [
    pytest.param(case, id=case, marks=clause(cid, spec=spec, capability="store", title=title))
    for cid, case, spec, title in _BUNDLE_CASES
])
def test_bundle_invalid(case: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 step 2 (bundle validation codes, spec 10 §5.3) and step 1; each invalid bundle
    is refused with its code and rolls back entirely: events [call, dispatch], state
    ``prepared``, journal [prepared]."""
    store = open_store(maka, tmp_path)
    store.t1()
    params, code = _bundle_case(case, store.ws)
    reply = maka.call("store.commit_recovery_bundle", params)
    expect_rejected(reply, "store.commit_recovery_bundle", code, case)
    nothing_written(store, ["call-event-1", "dispatch-event-1"], case, state="prepared")
    expect_equal(["prepared"], [r.get("state") for r in store.journal("operation-1")], what="journal")
    store.close()


@clause("STORE-BUNDLE-012", spec="30 §2.5; 30 §9 #46; 30 §10 #30", capability="store",
        title="a bundle on a replay_safe operation is refused (recovery_mode_unsupported)")
def test_bundle_mode_unsupported(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 step 2 (``recovery_mode_unsupported``: only ``reconcile`` operations can be
    recovered), §9 #46, §10 #30."""
    store = open_store(maka, tmp_path)
    store.t1(dispatch=dispatch_event(mode="replay_safe"), mode="replay_safe")
    reply = maka.call("store.commit_recovery_bundle", bundle_params(store.ws))
    expect_rejected(reply, "store.commit_recovery_bundle", "recovery_mode_unsupported", "bundle on replay_safe")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "bundle on replay_safe", state="prepared")
    store.close()
