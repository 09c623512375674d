"""Vectors of ``resolver.json``: the RecoveryResolver (spec 10 §3, §6, §7.7).

The marker, the per-operation decision table and ledger-level issues over families R and W.
Separate because it is the largest single group.
"""

from __future__ import annotations

from typing import Any

from maka_ref.testing import families as F

from ._common import decision, dm, iss, resolution, T1, vec, WRITE_OTHER_HASH
from ._events import C, D, D_with_tool_dispatch, DC, DP, drop, E, M, O, OU, payload_set, RC, set_in, USER, W


# ---------------------------------------------------------------------------------------
# resolver.json — 10 §3, §6, §7.7
# ---------------------------------------------------------------------------------------


def group_resolver() -> tuple[str, str, list[dict[str, Any]]]:
    g = "resolver"
    vs: list[dict[str, Any]] = []

    def r(slug: str, spec: str, description: str, events: list[dict[str, Any]], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "resolve", {"events": events}, expect))

    I1 = F.r_initial(T1)
    FC = F.r_call()
    DI = F.r_dispatch()
    # --- family R (10 §7.7 #48–#58) ---------------------------------------------------
    r("s48-new-protocol-call-only", "10 §7.7 #48", "Under the marker a call without dispatch was definitely not dispatched.",
      [I1, FC], resolution=resolution(
          [decision("call-1", "definitely_not_dispatched", "new_protocol_before_dispatch", toolName="Bash", call="function-call-1")],
          [], False, False, t1=True))
    r("s49-dispatch-without-response", "10 §7.7 #49", "A dispatch without response is indeterminate and requires reconciliation.",
      [I1, FC, DI], resolution=resolution(
          [decision("call-1", "indeterminate", "dispatch_without_response", toolName="Bash", operationId="operation-1",
                    call="function-call-1", dispatch="dispatch-1")],
          [], False, True, t1=True))
    r("s50-pre-t1-synthetic-error", "10 §7.7 #50", "A call answered without dispatch is completed as pre_t1_synthetic, keeping isError.",
      [I1, FC, F.r_response(err=True)], resolutionSubset={
          "decisions": [decision("call-1", "completed", "matching_response", toolName="Bash", settlementOrigin="pre_t1_synthetic",
                                 call="function-call-1", response="function-response-1", isError=True)],
          "requiresReconciliation": False})
    r("s51-orphan-dispatch", "10 §7.7 #51", "A dispatch with no call is corruption/orphan_dispatch without callRuntimeEventId.",
      [I1, DI], resolutionSubset={
          "toolBoundaryProtocol": T1,
          "decisions": [decision("call-1", "corruption", "orphan_dispatch", toolName="Bash", operationId="operation-1",
                                 dispatch="dispatch-1")],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s52-orphan-response", "10 §7.7 #52", "A response with no call is corruption/orphan_response.",
      [I1, F.r_response()], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "orphan_response", toolName="Bash",
                                 response="function-response-1", isError=False)],
          "hasCorruption": True})
    r("s53-dispatch-name-mismatch", "10 §7.7 #53", "A dispatch naming another tool is corruption/identity_conflict.",
      [I1, FC, F.r_dispatch("Write")], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "identity_conflict", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1")],
          "hasCorruption": True})
    r("s54-duplicate-dispatch", "10 §7.7 #54", "A second dispatch is corruption/duplicate_dispatch and the first dispatch id is kept.",
      [I1, FC, DI, F.r_dispatch(id="dispatch-2")], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "duplicate_dispatch", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1")],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s55-duplicate-response", "10 §7.7 #55", "A second response is corruption/duplicate_response and the first response id is kept.",
      [I1, FC, DI, F.r_response(op="operation-1"), F.r_response(op="operation-1", id="function-response-2")],
      resolutionSubset={
          "decisions": [decision("call-1", "corruption", "duplicate_response", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1", response="function-response-1", isError=False)],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s56-late-marker", "10 §7.7 #56", "A marker on a later event is protocol_marker_invalid and does not upgrade the run.",
      [F.r_initial(), E("late-marker", actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolution=resolution([], [("protocol_marker_invalid", "late-marker")], True, False, t1=False))
    r("s57-invalid-first-marker", "10 §7.7 #57", "A first marker with another value is an issue and the run is legacy.",
      [F.r_initial("future_protocol"), FC], resolution=resolution(
          [decision("call-1", "indeterminate", "legacy_dispatch_unknown", toolName="Bash", call="function-call-1")],
          [("protocol_marker_invalid", "initial-1")], True, False, t1=False))
    r("s58-response-other-operation", "10 §7.7 #58", "A response bound to another operation is corruption/identity_conflict.",
      [I1, FC, DI, F.r_response(op="another-operation")], resolutionSubset={"hasCorruption": True},
      decisions=[dm(status="corruption", reason="identity_conflict", responseRuntimeEventId="function-response-1")])

    # --- family W (10 §7.7 #59–#93) ---------------------------------------------------
    r("s59-completed-bundle", "10 §7.7 #59", "A completed recovery bundle settles the operation as recovery_bundle_completed.",
      [C(), D(), RC(), O(), DC()], resolution=resolution(
          [decision("provider-call-1", "completed", "recovery_bundle_completed", toolName="Write", operationId="operation-1",
                    settlementOrigin="recovery_bundle", call="call-event-1", dispatch="dispatch-event-1",
                    response="outcome-event-1", isError=False)],
          [], False, False, t1=False))
    r("s60-prepared", "10 §7.7 #60", "A store-produced [C, D] resolves indeterminate.", [C(), D()],
      decisions=[dm(status="indeterminate")])
    r("s60-outcome-committed", "10 §7.7 #60", "A store-produced [C, D, O] resolves completed.", [C(), D(), O()],
      decisions=[dm(status="completed")])
    r("s60-outcome-committed-error", "10 §7.7 #60", "A store-produced [C, D, O(err)] resolves completed.", [C(), D(), O(err=True)],
      decisions=[dm(status="completed")])
    r("s60-recovery-parked", "10 §7.7 #60", "A store-produced parked bundle resolves parked.", [C(), D(), RC("diverged"), DP()],
      decisions=[dm(status="parked")])
    r("s61-duplicate-id-and-lane-conflict", "10 §7.7 #61",
      "A duplicate id and an outcome smuggling toolDispatch are global issues; the call stays legacy indeterminate.",
      [C(), C(), W(O(), actions={"toolDispatch": F.w_dispatch()["actions"]["toolDispatch"]})],
      issueCodes=["duplicate_event_id", "semantic_lane_conflict"],
      resolutionSubset={"hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s62-parked-bundle", "10 §7.7 #62", "A parked bundle resolves parked with the decision's reason code.",
      [C(), D(), RC("diverged"), DP()], resolution=resolution(
          [decision("provider-call-1", "parked", "reconcile_diverged", toolName="Write", operationId="operation-1",
                    settlementOrigin="recovery_bundle", call="call-event-1", dispatch="dispatch-event-1")],
          [], False, False, t1=False))
    orphan_rc = W(RC(), id="orphan-reconcile-event", refs={"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"})
    orphan_rc["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    r("s63-unbound-recovery-fact", "10 §7.7 #63",
      "A recovery fact naming an unknown operation is a global order issue; the pre-T1 call stays completed.",
      [C(), O(), orphan_rc], resolutionSubset={
          "issues": iss(("event_order_conflict", "orphan-reconcile-event")), "hasCorruption": True},
      decisions=[dm(status="completed", settlementOrigin="pre_t1_synthetic")])
    r("s64-empty", "10 §7.7 #64", "An empty ledger resolves to nothing.", [],
      resolution=resolution([], [], False, False, t1=False))
    r("s65-legacy-call-only", "10 §7.7 #65", "In a legacy run a call without dispatch is indeterminate and requires reconciliation.",
      [USER(), C()], resolution=resolution(
          [decision("provider-call-1", "indeterminate", "legacy_dispatch_unknown", toolName="Write", call="call-event-1")],
          [], False, True, t1=False))
    r("s66-legacy-dispatch-without-response", "10 §7.7 #66", "In a legacy run a dispatch without response is indeterminate.",
      [USER(), C(), D()], resolution=resolution(
          [decision("provider-call-1", "indeterminate", "dispatch_without_response", toolName="Write", operationId="operation-1",
                    call="call-event-1", dispatch="dispatch-event-1")],
          [], False, True, t1=False))
    r("s67-normal-t2", "10 §7.7 #67", "A dispatched call with its bound response is completed/normal_t2.",
      [M(), C(), D(), O()], decisions=[dm(status="completed", reason="matching_response", settlementOrigin="normal_t2")])
    r("s67-legacy-normal-t2-error", "10 §7.7 #67", "A legacy error response keeps responseIsError true.",
      [C(), D(), O(err=True)],
      decisions=[dm(status="completed", settlementOrigin="normal_t2", responseIsError=True)])
    r("s68-dispatch-before-call", "10 §7.7 #68", "A dispatch before its call is corruption/event_order_conflict.",
      [M(), D(), C()], resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"))},
      decisions=[dm(status="corruption", reason="event_order_conflict",
                    callRuntimeEventId="call-event-1", dispatchRuntimeEventId="dispatch-event-1")])
    r("s69-response-before-call", "10 §7.7 #69", "A response before its call is corruption/orphan_response with the call id.",
      [M(), OU(), C()], decisions=[dm(status="corruption", reason="orphan_response", callRuntimeEventId="call-event-1")])
    r("s70-parked-with-outcome", "10 §7.7 #70",
      "A parked bundle with an outcome is recovery_fact_corruption; response ids stay, settlementOrigin goes.",
      [C(), D(), RC("diverged"), O(), DP()], resolutionSubset={"issues": [], "hasCorruption": True},
      decisions=[dm(["settlementOrigin"], status="corruption", reason="recovery_fact_corruption",
                    responseRuntimeEventId="outcome-event-1", responseIsError=False)])

    # --- 10 §7.7 #71 expanded ---------------------------------------------------------
    rfc_cases: list[tuple[str, str, list[dict[str, Any]]]] = [
        ("reconcile-only", "A reconcile without a decision", [C(), D(), RC()]),
        ("decision-only", "A decision without a reconcile", [C(), D(), DP()]),
        ("response-before-reconcile", "A normal T2 response before a completed bundle", [C(), D(), O(), RC(), DC()]),
        ("never-auto-retry", "A parked bundle for a never_auto_retry dispatch",
         [C(), F.w_dispatch(recovery_mode="never_auto_retry"), RC("diverged"), DP()]),
        ("evidence-order", "A parked decision with evidence [dispatch, call, reconcile]",
         [C(), D(), RC("diverged"),
          payload_set(DP(), evidenceEventIds=["dispatch-event-1", "call-event-1", "reconcile-event-1"])]),
        ("error-outcome", "A completed bundle whose outcome is an error", [C(), D(), RC(), O(err=True), DC()]),
        ("diverged-parked-unreadable", "Observation diverged with reason reconcile_unreadable",
         [C(), D(), RC("diverged"), DP("reconcile_unreadable")]),
        ("expected-state-parked", "Observation matches_expected_state with a parked decision", [C(), D(), RC(), DP()]),
        ("diverged-completed", "Observation diverged with a completed decision", [C(), D(), RC("diverged"), O(), DC()]),
        ("missing-outcome", "A completed decision without an outcome", [C(), D(), RC(), DC()]),
        ("wrong-outcome-reference", "A completed decision naming another outcome",
         [C(), D(), RC(), O(), payload_set(DC(), outcomeEventId="other")]),
        ("reconcile-refs-tool-call", "A reconcile with refs.toolCallId zzz",
         [C(), D(), RC("diverged", refs={"operationId": "operation-1", "toolCallId": "zzz"}), DP()]),
        ("reconcile-refs-operation", "A reconcile with refs.operationId operation-X",
         [C(), D(), RC("diverged", refs={"operationId": "operation-X", "toolCallId": "provider-call-1"}), DP()]),
        ("decision-refs-tool-call", "A decision with refs.toolCallId other",
         [C(), D(), RC(), O(), DC(refs={"operationId": "operation-1", "toolCallId": "other"})]),
        ("two-reconciles", "Two reconciles before a parked decision",
         [C(), D(), RC("diverged"), RC("diverged", id="reconcile-event-2"), DP()]),
        ("decision-before-reconcile", "A decision before its reconcile", [C(), D(), DP(), RC("diverged")]),
        ("outcome-after-decision", "An outcome after the decision", [C(), D(), RC(), DC(), O()]),
        ("undecoded-duplicate-evidence", "An un-decoded decision whose evidence ids repeat",
         [C(), D(), RC(), O(), payload_set(DC(), evidenceEventIds=[
             "call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "outcome-event-1"])]),
    ]
    for slug, what, events in rfc_cases:
        spec = "10 §7.7 #71" + ("; 10 §8 item 22" if slug.startswith("undecoded") else "")
        r(f"s71-{slug}", spec, f"{what} is recovery_fact_corruption, visible only via the decision (no resolver issue).",
          events, resolutionSubset={"issues": [], "hasCorruption": True, "requiresReconciliation": False},
          decisions=[dm(status="corruption", reason="recovery_fact_corruption")])

    r("s72-parked-prior-state", "10 §7.7 #72", "A matches_prior_state bundle parks with reason reconcile_matches_prior_state.",
      [C(), D(), RC("matches_prior_state"), DP("reconcile_matches_prior_state")],
      decisions=[dm(status="parked", reason="reconcile_matches_prior_state")])
    r("s72-parked-unreadable", "10 §7.7 #72", "An unreadable bundle parks with reason reconcile_unreadable.",
      [C(), D(), RC("unreadable"), DP("reconcile_unreadable")],
      decisions=[dm(status="parked", reason="reconcile_unreadable")])
    r("s73-other-run-in-invocation", "10 §7.7 #73",
      "An event of another run in the same invocation is a global issue; recon is false because the ledger is corrupt.",
      [M(), C(), D(), USER("other-run-user", runId="run-2")],
      resolutionSubset={"issues": iss(("invocation_identity_conflict", "other-run-user")),
                        "hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s74-duplicate-call-beats-duplicate-dispatch", "10 §7.7 #74", "duplicate_call wins over duplicate_dispatch by priority.",
      [C(), C(id="call-2"), D(), D(id="dispatch-2")],
      resolutionSubset={"issues": iss(("duplicate_call", "call-2"), ("duplicate_dispatch", "dispatch-2"))},
      decisions=[dm(status="corruption", reason="duplicate_call")])
    r("s75-priority-not-emission-order", "10 §7.7 #75",
      "identity_conflict is emitted first but canonical_args_hash_conflict wins by priority.",
      [C(), D_with_tool_dispatch(toolName="Read", canonicalArgsHash="sha256:x")],
      resolutionSubset={"issues": iss(("identity_conflict", "dispatch-event-1"), ("canonical_args_hash_conflict", "dispatch-event-1"))},
      decisions=[dm(status="corruption", reason="canonical_args_hash_conflict")])
    r("s76-unbound-response-other-name", "10 §7.7 #76", "An unbound response naming another tool is corruption/identity_conflict.",
      [C(), set_in(OU(), "content.name", "Read")], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s76-response-without-refs", "10 §7.7 #76", "A response without refs to an undispatched call is completed/pre_t1_synthetic.",
      [C(), drop(O(), "refs")],
      decisions=[dm(status="completed", reason="matching_response", settlementOrigin="pre_t1_synthetic")])
    r("s76-bound-refs-no-dispatch", "10 §7.7 #76; 10 §8 item 10",
      "operationId refs on a response to an undispatched call are not objected to: completed/pre_t1_synthetic.",
      [C(), O()], decisions=[dm(status="completed", reason="matching_response", settlementOrigin="pre_t1_synthetic")])
    r("s77-malformed-dispatch-legacy", "10 §7.7 #77; 10 §8 item 7",
      "A lane-conflicted dispatch vanishes from grouping; the call looks legacy-undispatched but the ledger is corrupt.",
      [C(), W(D(), refs={"operationId": "operation-1"})],
      resolutionSubset={"issues": iss(("semantic_lane_conflict", "dispatch-event-1")),
                        "hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s77-malformed-dispatch-new-protocol", "10 §7.7 #77",
      "Under the marker the call even looks definitely_not_dispatched, yet hasCorruption is true.",
      [M(), C(), W(D(), refs={"operationId": "operation-1"})],
      resolutionSubset={"hasCorruption": True}, decisions=[dm(status="definitely_not_dispatched")])
    r("s78-dispatch-refs-other-operation", "10 §7.7 #78", "Dispatch refs naming operation-X are corruption/identity_conflict.",
      [C(), W(D(), refs={"operationId": "operation-X", "toolCallId": "provider-call-1"})],
      decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s79-dispatch-parent-refs", "10 §7.7 #79", "Dispatch refs with both parent refs are healthy.",
      [C(), W(D(), refs={**F.W_REFS, "parentToolCallId": "exec-1", "parentOperationId": "outer-op"})],
      resolutionSubset={"issues": []}, decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s80-invalid-first-and-late-marker", "10 §7.7 #80", "An invalid first marker and a late marker are both reported, in order.",
      [F.r_initial("future"), C(), E("late", actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolutionSubset={"issues": iss(("protocol_marker_invalid", "initial-1"), ("protocol_marker_invalid", "late"))},
      absentKeys=["toolBoundaryProtocol"])
    r("s80-marker-on-call", "10 §7.7 #80; 10 §3",
      "A marker on a first-event call is honored but the call is a lane conflict: zero decisions.",
      [W(C(), actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolution=resolution([], [("semantic_lane_conflict", "call-event-1")], True, False, t1=True))
    r("s80-system-first-event-marker", "10 §7.7 #80; 10 §3", "A system first event carrying a valid marker is honored.",
      [E("initial-1", actions={"runtimeProtocol": {"toolBoundary": T1}}), C()],
      resolutionSubset={"toolBoundaryProtocol": T1},
      decisions=[dm(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")])
    r("s80-partial-first-event-marker", "10 §7.7 #80", "A partial first event's marker is still honored.",
      [W(M(), partial=True), C()], resolutionSubset={"toolBoundaryProtocol": T1},
      decisions=[dm(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")])
    r("s80-partial-late-marker", "10 §7.7 #80", "A marker on a partial later event is protocol_marker_invalid.",
      [USER(), E("late", partial=True, actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolutionSubset={"issues": iss(("protocol_marker_invalid", "late")), "hasCorruption": True},
      absentKeys=["toolBoundaryProtocol"])
    C2 = C(id="call-event-2", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                       "args": {"path": "notes.txt", "content": "after"}})
    D2 = W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-2",
           refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})
    r("s81-duplicate-operation", "10 §7.7 #81", "An operationId reused by a second call: both decisions duplicate_operation, one issue.",
      [C(), C2, D(), D2], resolutionSubset={"issues": iss(("duplicate_operation", "dispatch-2"))},
      decisions=[dm(status="corruption", reason="duplicate_operation", toolCallId="provider-call-1", operationId="operation-1"),
                 dm(["operationId"], status="corruption", reason="duplicate_operation", toolCallId="provider-call-2")])
    r("s82-duplicate-unbound-response", "10 §7.7 #82", "Two refs-less responses to one call are corruption/duplicate_response.",
      [C(), drop(O(), "refs"), W(drop(O(), "refs"), id="o2")],
      decisions=[dm(status="corruption", reason="duplicate_response")])
    r("s83-recovery-fact-before-dispatch", "10 §7.7 #83", "A reconcile before the dispatch binds nothing: global order issue.",
      [C(), RC(), D()], resolutionSubset={"issues": iss(("event_order_conflict", "reconcile-event-1")), "hasCorruption": True},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s84-orphan-dispatch-with-bundle", "10 §7.7 #84", "Recovery facts are never consulted for an orphan dispatch.",
      [D(), RC("diverged"), DP()], decisions=[dm(status="corruption", reason="orphan_dispatch")])
    dp_nope = payload_set(DP(refs={"operationId": "nope", "toolCallId": "provider-call-1"}), operationId="nope")
    r("s85-decision-unknown-operation", "10 §7.7 #85", "A decision naming an unknown operation is a global order issue.",
      [C(), dp_nope], resolutionSubset={"issues": iss(("event_order_conflict", "decision-event-1"))},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s86-creation-order", "10 §7.7 #86", "Decisions come in operation creation order.",
      [M(), C(), C(id="call-event-2", content={"kind": "function_call", "id": "p2", "name": "Read", "args": {}}),
       E("o3", role="tool", author="tool", content={"kind": "function_response", "id": "p3", "name": "Bash", "result": "ok"},
         refs={"toolCallId": "p3"}),
       D()],
      decisions=[dm(toolCallId="provider-call-1", status="indeterminate", reason="dispatch_without_response"),
                 dm(toolCallId="p2", status="definitely_not_dispatched"),
                 dm(toolCallId="p3", status="corruption", reason="orphan_response")])
    r("s87-unbound-response-after-dispatch", "10 §7.7 #87", "An unbound response to a dispatched call is corruption/identity_conflict.",
      [C(), D(), OU()], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s88-hash-of-other-args", "10 §7.7 #88", "A dispatch carrying the hash of other args is corruption/canonical_args_hash_conflict.",
      [C(), D_with_tool_dispatch(canonicalArgsHash=WRITE_OTHER_HASH)],
      decisions=[dm(status="corruption", reason="canonical_args_hash_conflict")])
    r("s89-dispatch-after-bound-response", "10 §7.7 #89", "A dispatch after a bound response is corruption/event_order_conflict.",
      [C(), O(), D()], decisions=[dm(status="corruption", reason="event_order_conflict")])
    r("s89-dispatch-after-unbound-response", "10 §7.7 #89",
      "A dispatch after an unbound response gives both issues; identity_conflict wins by priority.",
      [C(), OU(), D()],
      resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"), ("identity_conflict", "outcome-event-1"))},
      decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s90-exact-duplicate-call", "10 §7.7 #90", "The read side never dedups: an exact copy is duplicate_event_id.",
      [C(), C(), D()], resolutionSubset={"issues": iss(("duplicate_event_id", "call-event-1"))},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s90-dispatch-reusing-call-id", "10 §7.7 #90", "A dispatch reusing the call's event id is ignored: legacy_dispatch_unknown.",
      [C(), D(id="call-event-1")], resolutionSubset={"issues": iss(("duplicate_event_id", "call-event-1"))},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s91-recovery-fact-other-run", "10 §7.7 #91", "A reconcile from another run is an identity issue and recovery_fact_corruption.",
      [C(), D(), RC("diverged", runId="run-2"), DP()],
      resolutionSubset={"issues": iss(("invocation_identity_conflict", "reconcile-event-1"))},
      decisions=[dm(status="corruption", reason="recovery_fact_corruption")])
    r("s92-orphan-dispatch-with-response", "10 §7.7 #92", "An orphan dispatch keeps its response ids.",
      [D(), O()],
      resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"), ("identity_conflict", "outcome-event-1"))},
      decisions=[dm(["callRuntimeEventId"], status="corruption", reason="orphan_dispatch",
                    dispatchRuntimeEventId="dispatch-event-1", responseRuntimeEventId="outcome-event-1")])
    r("s92-late-call-other-name", "10 §7.7 #92", "A late call naming another tool: identity_conflict beats event_order_conflict.",
      [D(), set_in(C(), "content.name", "Read")], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s92-orphan-response-then-dispatch", "10 §7.7 #92", "A response-first operation later dispatched stays orphan_response, with operationId.",
      [OU(), C(), D()], decisions=[dm(status="corruption", reason="orphan_response", operationId="operation-1")])
    r("s92-call-after-response-duplicate", "10 §7.7 #92", "A second call after a response is duplicate_call.",
      [C(), O(), C(id="call-dup")], decisions=[dm(status="corruption", reason="duplicate_call")])
    r("s93-call-and-dispatch-in-two-invocations", "10 §7.7 #93",
      "A call in invocation-2 and a dispatch in invocation-1 are two operations.",
      [C(invocationId="invocation-2"), D()],
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown"),
                 dm(status="corruption", reason="orphan_dispatch")])
    r("s30-issue-catalogue-decisions", "10 §7.4 #30",
      "The scanner example resolves provider-call-1 to duplicate_call and provider-call-2 to duplicate_operation.",
      [D(), C(), C(id="call-event-2"),
       C(id="call-event-other", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                         "args": {"path": "notes.txt", "content": "after"}}),
       W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-event-other",
         refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})],
      decisions=[dm(toolCallId="provider-call-1", status="corruption", reason="duplicate_call", operationId="operation-1",
                    callRuntimeEventId="call-event-1", dispatchRuntimeEventId="dispatch-event-1"),
                 dm(["operationId"], toolCallId="provider-call-2", status="corruption", reason="duplicate_operation")])
    # --- a repeated event id after a bundle: the last index orders it (10 §6.2 step 3) ----
    # The scanner keeps the first occurrence (10 §4.3 step 1), the resolver's eventOrder the
    # last; §5.4 then finds the bound event *after* the decision, so the bundle's causal order
    # fails and row 6 decides corruption/recovery_fact_corruption (settlementOrigin removed).
    # With the first index the bundle would read valid (completed/recovery_bundle_completed).
    broken_bundle = decision("provider-call-1", "corruption", "recovery_fact_corruption", toolName="Write",
                             operationId="operation-1", call="call-event-1", dispatch="dispatch-event-1",
                             response="outcome-event-1", isError=False)
    r("duplicate-id-after-bundle-call", "10 §6.2 step 3; 10 §5.4; 10 §6.3 row 6; 10 §8 item 19",
      "An event reusing the call's id after a completed bundle moves the call last in eventOrder: the bundle's order "
      "check fails (recovery_fact_corruption), besides the duplicate_event_id issue.",
      [C(), D(), RC(), O(), DC(), E("call-event-1", role="model", author="agent", content={"kind": "text", "text": "echo"})],
      resolution=resolution([broken_bundle], [("duplicate_event_id", "call-event-1")], True, False, t1=False))
    r("duplicate-id-after-bundle-reconcile", "10 §6.2 step 3; 10 §5.4; 10 §6.3 row 6; 10 §8 item 19",
      "A byte-identical copy of the reconcile fact after the decision puts the reconcile after the outcome in "
      "eventOrder: recovery_fact_corruption, besides the duplicate_event_id issue.",
      [C(), D(), RC(), O(), DC(), RC()],
      resolution=resolution([broken_bundle], [("duplicate_event_id", "reconcile-event-1")], True, False, t1=False))
    return "resolver", (
        "The RecoveryResolver (spec 10 §3, §6): the marker, the per-operation decision table and the "
        "ledger-level issues, over families R and W of §7."
    ), vs
