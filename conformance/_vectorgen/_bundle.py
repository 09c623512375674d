"""Vectors of ``bundle.json``: recovery bundles and their interpretation (spec 10 §5.3, §5.4, §7.6).

Separate because the W-family recovery facts and bundle identity are their own spec area.
"""

from __future__ import annotations

from typing import Any

from maka_ref.testing import families as F

from ._common import vec, WRITE_HASH
from ._events import C, D, D_with_tool_dispatch, DC, DP, O, payload_set, RC


# ---------------------------------------------------------------------------------------
# bundle.json — 10 §5.3, §5.4, §7.6
# ---------------------------------------------------------------------------------------

W_IDENTITY = {
    "operationId": "operation-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1",
    "providerToolCallId": "provider-call-1", "toolName": "Write", "canonicalArgsHash": WRITE_HASH,
    "recoveryMode": "reconcile", "callEventId": "call-event-1", "dispatchEventId": "dispatch-event-1",
}


def group_bundle() -> tuple[str, str, list[dict[str, Any]]]:
    g = "bundle"
    vs: list[dict[str, Any]] = []

    def interp(slug: str, spec: str, description: str, events: list[dict[str, Any]], kind: str, code: str | None = None) -> None:
        expected: dict[str, Any] = {"kind": kind}
        if code is not None:
            expected["code"] = code
        vs.append(vec(f"{g}/{slug}", spec, description, "interpret", {"events": events}, {"interpretation": expected}))

    vs.append(vec(
        f"{g}/validate-completed-bundle", "10 §5.3; 10 §7.6 #45",
        "The W-family identity tuple with C, D, RC, O, DC validates and returns the two payloads.",
        "validate_bundle",
        {"identity": W_IDENTITY, "callEvent": C(), "dispatchEvent": D(), "reconcileEvent": RC(),
         "outcomeEvent": O(), "decisionEvent": DC()},
        {"bundle": {"ok": True, "reconcile": RC()["actions"]["toolRecovery"]["payload"],
                    "decision": DC()["actions"]["toolRecovery"]["payload"]}},
    ))
    vs.append(vec(
        f"{g}/validate-self-authenticating-hash", "10 §5.3 check 2; 10 §7.6 #44",
        "A dispatch and identity that agree on a wrong hash are refused: the hash is recomputed from the call.",
        "validate_bundle",
        {"identity": {**W_IDENTITY, "canonicalArgsHash": "sha256:wrong"}, "callEvent": C(),
         "dispatchEvent": D_with_tool_dispatch(canonicalArgsHash="sha256:wrong"), "reconcileEvent": RC(),
         "outcomeEvent": O(), "decisionEvent": DC()},
        {"bundleSubset": {"ok": False, "code": "canonical_args_hash_conflict"}},
    ))

    interp("completed-valid", "10 §5.4; 10 §7.6 #46", "A completed bundle in causal order is valid.", [C(), D(), RC(), O(), DC()], "valid")
    interp("parked-valid", "10 §5.4", "A parked bundle in causal order is valid.", [C(), D(), RC("diverged"), DP()], "valid")
    interp("no-recovery-facts", "10 §5.4", "An operation without recovery facts is absent.", [C(), D()], "absent")
    interp("response-before-reconcile", "10 §5.4; 10 §7.6 #46, #47",
           "A response before the reconcile violates causal order.", [C(), D(), O(), RC(), DC()], "corruption", "event_order_conflict")
    interp("outcome-for-parked", "10 §5.3 check 9; 10 §7.6 #47", "A parked bundle with an outcome is outcome_for_parked.",
           [C(), D(), RC("diverged"), O(), DP()], "corruption", "outcome_for_parked")
    interp("reconcile-only", "10 §5.4; 10 §7.6 #47", "A reconcile without a decision is a shape conflict.",
           [C(), D(), RC()], "corruption", "recovery_fact_shape_conflict")
    interp("two-reconciles", "10 §5.4; 10 §7.6 #47", "Two reconciles are a shape conflict.",
           [C(), D(), RC("diverged"), RC("diverged", id="reconcile-event-2"), DP()], "corruption", "recovery_fact_shape_conflict")
    interp("decision-only", "10 §5.4; 10 §7.6 #47", "A decision without a reconcile is a shape conflict.",
           [C(), D(), DP()], "corruption", "recovery_fact_shape_conflict")
    interp("mode-never-auto-retry", "10 §5.3 check 4; 10 §7.6 #47", "A bundle for a never_auto_retry dispatch is unsupported.",
           [C(), F.w_dispatch(recovery_mode="never_auto_retry"), RC("diverged"), DP()], "corruption", "recovery_mode_unsupported")
    interp("evidence-order", "10 §5.3 check 10; 10 §7.6 #47", "Evidence listed as [dispatch, call, reconcile] is an evidence order conflict.",
           [C(), D(), RC("diverged"), payload_set(DP(), evidenceEventIds=["dispatch-event-1", "call-event-1", "reconcile-event-1"])],
           "corruption", "evidence_order_conflict")
    interp("error-outcome", "10 §5.3 check 9; 10 §7.6 #47", "A completed bundle with an error outcome is outcome_not_successful.",
           [C(), D(), RC(), O(err=True), DC()], "corruption", "outcome_not_successful")
    interp("diverged-parked-unreadable", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation diverged with reason reconcile_unreadable is a reconcile/decision conflict.",
           [C(), D(), RC("diverged"), DP("reconcile_unreadable")], "corruption", "reconcile_decision_conflict")
    interp("expected-state-parked", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation matches_expected_state with a parked decision is a reconcile/decision conflict.",
           [C(), D(), RC(), DP()], "corruption", "reconcile_decision_conflict")
    interp("diverged-completed", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation diverged with a completed decision is a reconcile/decision conflict.",
           [C(), D(), RC("diverged"), O(), DC()], "corruption", "reconcile_decision_conflict")
    interp("missing-outcome", "10 §5.3 check 9; 10 §7.6 #47", "A completed decision without an outcome is outcome_required.",
           [C(), D(), RC(), DC()], "corruption", "outcome_required")
    interp("wrong-outcome-reference", "10 §5.3 check 9; 10 §7.6 #47",
           "A completed decision naming another outcome event is outcome_reference_conflict.",
           [C(), D(), RC(), O(), payload_set(DC(), outcomeEventId="other")], "corruption", "outcome_reference_conflict")
    interp("reconcile-refs-tool-call", "10 §5.3 check 7; 10 §7.6 #47",
           "A reconcile whose refs.toolCallId is zzz is a recovery fact identity conflict.",
           [C(), D(), RC("diverged", refs={"operationId": "operation-1", "toolCallId": "zzz"}), DP()],
           "corruption", "recovery_fact_identity_conflict")
    interp("reconcile-refs-operation", "10 §5.3 check 7; 10 §7.6 #47",
           "A reconcile whose refs.operationId differs from its payload is a recovery fact identity conflict.",
           [C(), D(), RC("diverged", refs={"operationId": "operation-X", "toolCallId": "provider-call-1"}), DP()],
           "corruption", "recovery_fact_identity_conflict")
    interp("decision-refs-tool-call", "10 §5.3 check 7; 10 §7.6 #47",
           "A decision whose refs.toolCallId is other is a recovery fact identity conflict.",
           [C(), D(), RC(), O(), DC(refs={"operationId": "operation-1", "toolCallId": "other"})],
           "corruption", "recovery_fact_identity_conflict")
    interp("decision-before-reconcile", "10 §5.4; 10 §7.6 #47", "A decision before its reconcile violates causal order.",
           [C(), D(), DP(), RC("diverged")], "corruption", "event_order_conflict")
    interp("outcome-after-decision", "10 §5.4; 10 §7.6 #47", "An outcome after the decision violates causal order.",
           [C(), D(), RC(), DC(), O()], "corruption", "event_order_conflict")
    interp("undecoded-duplicate-evidence", "10 §5.3 check 6; 10 §7.6 #47; 10 §8 item 22",
           "An un-decoded decision whose evidence ids repeat is decision_fact_invalid.",
           [C(), D(), RC(), O(), payload_set(DC(), evidenceEventIds=[
               "call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "outcome-event-1"])],
           "corruption", "decision_fact_invalid")
    interp("self-authenticating-hash", "10 §5.3 check 2; 10 §7.6 #44",
           "A bundle over a dispatch with a wrong hash is a canonical args hash conflict.",
           [C(), D_with_tool_dispatch(canonicalArgsHash="sha256:wrong"), RC(), O(), DC()],
           "corruption", "canonical_args_hash_conflict")
    return "bundle", (
        "Recovery bundles (spec 10 §5.3–§5.4): direct validation against an identity tuple, and the "
        "interpretation of a scanned operation."
    ), vs
