"""Vectors of ``predicates.json``, ``lanes.json``, ``scanner.json`` and ``transition.json`` (spec 10 §1.5, §4).

The event predicates, semantic lanes, the ledger scanner and write-side transition
validation: the read and write sides of the §4 ledger rules, kept together and apart
from the encoding (§2) and resolver (§6) modules.
"""

from __future__ import annotations

from typing import Any

from maka_ref.testing import families as F

from ._common import iss, vec
from ._events import C, D, D_with_tool_dispatch, DC, DP, drop, E, M, O, OU, RC, set_in, W


# ---------------------------------------------------------------------------------------
# predicates.json — 10 §1.5, §7.2 #14–#15
# ---------------------------------------------------------------------------------------


def group_predicates() -> tuple[str, str, list[dict[str, Any]]]:
    g = "predicates"
    vs: list[dict[str, Any]] = []

    def p(slug: str, spec: str, description: str, event: dict[str, Any], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "predicates", {"event": event}, expect))

    for status, terminal in (("completed", True), ("failed", True), ("aborted", True), ("cancelled", True), ("streaming", False)):
        p(f"status-{status}", "10 §1.5; 10 §7.2 #14",
          f"status {status} {'makes the event terminal' if terminal else 'is not terminal'}.",
          E(f"{status}-1", status=status), terminal=terminal)
    p("end-invocation-true", "10 §1.5; 10 §7.2 #14", "endInvocation true makes the event terminal.",
      E("end-1", actions={"endInvocation": True}), terminal=True)
    p("end-invocation-false", "10 §1.5; 10 §7.2 #14", "endInvocation false is not terminal.",
      E("end-1", actions={"endInvocation": False}), terminal=False)
    p("plain-event-not-terminal", "10 §1.5", "An event with neither a terminal status nor endInvocation is not terminal.",
      E("event-1"), terminal=False)
    p("user-text-visible", "10 §1.5; 10 §7.2 #15", "Non-empty user text is model-visible.",
      E("user-1", role="user", author="user", content={"kind": "text", "text": "hi"}), modelVisible=True)
    p("thinking-visible", "10 §1.5; 10 §7.2 #15", "Thinking content is model-visible.",
      E("thinking-1", role="model", author="agent", content={"kind": "thinking", "text": "hmm"}), modelVisible=True)
    p("function-call-visible", "10 §1.5; 10 §7.2 #15", "A function_call is model-visible.", C(), modelVisible=True)
    p("function-response-error-visible", "10 §1.5; 10 §7.2 #15", "A function_response is model-visible even with isError.",
      O(err=True), modelVisible=True)
    p("empty-text-invisible", "10 §1.5; 10 §7.2 #15", "Empty text is not model-visible.",
      E("user-1", role="user", author="user", content={"kind": "text", "text": ""}), modelVisible=False)
    p("error-content-invisible", "10 §1.5; 10 §7.2 #15", "error content is never model-visible.",
      E("error-1", content={"kind": "error", "message": "boom"}), modelVisible=False)
    p("token-usage-only-invisible", "10 §1.5; 10 §7.2 #15", "A token-usage-only event has no content and is not model-visible.",
      E("usage-1", actions={"tokenUsage": {"input": 10, "output": 5}}), modelVisible=False)
    p("refs-only-invisible", "10 §1.5; 10 §7.2 #15", "A refs-only event is not model-visible.",
      E("refs-1", refs={"traceEventId": "trace-1"}), modelVisible=False)
    p("hidden-code-mode-call-invisible", "10 §1.5; 10 §7.2 #15",
      "A Code Mode nested call with modelVisibility hidden is not model-visible.",
      E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
        content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
        refs={"operationId": "nested-op", "toolCallId": "nested-1", "parentToolCallId": "exec-1", "parentOperationId": "outer-op"}),
      modelVisible=False)
    p("dispatch-visible-stamp-invisible", "10 §1.5",
      "A dispatch stamped modelVisibility visible still has no content, so it is not model-visible.",
      W(D(), modelVisibility="visible"), modelVisible=False)
    return "predicates", (
        "Derived event predicates (spec 10 §1.5): terminal event and model-visible content."
    ), vs


# ---------------------------------------------------------------------------------------
# lanes.json — 10 §4.1, §4.2, §7.3
# ---------------------------------------------------------------------------------------


def group_lanes() -> tuple[str, str, list[dict[str, Any]]]:
    g = "lanes"
    vs: list[dict[str, Any]] = []

    def lane(slug: str, spec: str, description: str, event: dict[str, Any], expected: str) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "lane", {"event": event}, {"lane": expected}))

    def generic(slug: str, spec: str, description: str, event: dict[str, Any], code: str | None) -> None:
        expect = {"appendCheck": {"ok": True} if code is None else {"ok": False, "code": code}}
        vs.append(vec(f"{g}/{slug}", spec, description, "generic_append", {"event": event}, expect))

    # The plain lanes (10 §4.1 list).
    lane("call", "10 §4.1", "A function_call event is on lane function_call.", C(), "function_call")
    lane("dispatch", "10 §4.1", "A T1 dispatch event is on lane tool_dispatch.", D(), "tool_dispatch")
    lane("response", "10 §4.1", "A bound function_response is on lane function_response.", O(), "function_response")
    lane("reconcile", "10 §4.1", "A reconcile observation is on lane reconcile_result.", RC(), "reconcile_result")
    lane("decision", "10 §4.1", "A recovery decision is on lane recovery_decision.", DC(), "recovery_decision")
    lane("plain-system-event", "10 §4.1; 10 §7.3 #29", "A plain system event is on lane ordinary.", E("event-1"), "ordinary")
    lane("marker-user-event", "10 §4.1", "The marker-carrying user event is ordinary.", M(), "ordinary")

    # Conflicts named by the scenarios.
    toolDispatch = F.w_dispatch()["actions"]["toolDispatch"]
    lane("call-with-tool-dispatch", "10 §4.1; 10 §7.3 #22", "A call that also carries toolDispatch is on two lanes: conflict.",
         W(C(), actions={"toolDispatch": toolDispatch}), "conflict")
    lane("dispatch-with-status", "10 §4.1; 10 §7.3 #23", "A dispatch with status completed is a conflict.",
         W(D(), status="completed"), "conflict")
    lane("reconcile-with-text", "10 §4.1; 10 §7.3 #24", "A reconcile event with text content is a conflict.",
         W(RC(), content={"kind": "text", "text": "smuggled"}), "conflict")
    lane("response-with-end-invocation", "10 §4.1; 10 §7.3 #25", "A response with actions.endInvocation is a conflict.",
         W(O(), actions={"endInvocation": True}), "conflict")
    lane("response-with-continuation-state", "10 §4.1; 10 §7.3 #25",
         "A response with stateDelta {continuationStart: true} is a conflict.",
         W(O(), actions={"stateDelta": {"continuationStart": True}}), "conflict")
    lane("call-with-artifact-delta", "10 §4.1; 10 §7.3 #25", "A call with actions.artifactDelta is a conflict.",
         W(C(), actions={"artifactDelta": {"notes.txt": "v2"}}), "conflict")
    lane("call-with-branch", "10 §4.1; 10 §7.3 #28", "Any tool fact with branch present is a conflict.",
         W(C(), branch="child-1"), "conflict")
    lane("partial-dispatch", "10 §4.1; 10 §7.3 #27", "A partial tool fact is a conflict.", W(D(), partial=True), "conflict")
    lane("partial-call", "10 §4.1; 10 §7.5 #43", "A partial call is a conflict.", W(C(), partial=True), "conflict")

    # 10 §7.3 #29 edge cases.
    lane("call-with-display-state", "10 §4.1; 10 §7.3 #29",
         "A call may carry stateDelta with only activityKind/displayName/intent strings.",
         W(C(), actions={"stateDelta": {"activityKind": "edit", "displayName": "Write notes", "intent": "save"}}),
         "function_call")
    lane("call-with-duration-state", "10 §4.1; 10 §7.3 #29", "A call with stateDelta {durationMs} is a conflict.",
         W(C(), actions={"stateDelta": {"durationMs": 12}}), "conflict")
    lane("call-with-empty-state", "10 §4.1; 10 §7.3 #29", "A call with stateDelta {} is a conflict.",
         W(C(), actions={"stateDelta": {}}), "conflict")
    lane("call-with-empty-actions", "10 §4.1; 10 §7.3 #29", "A call with actions {} is a conflict (absent actions is fine).",
         W(C(), actions={}), "conflict")
    lane("call-with-non-string-state", "10 §4.1", "Call stateDelta values must be strings.",
         W(C(), actions={"stateDelta": {"intent": 1}}), "conflict")
    lane("call-with-bound-refs", "10 §4.1 (refs unconstrained on calls)",
         "Call refs are unconstrained: a call carrying refs.operationId is still a function_call.",
         W(C(), refs=dict(F.W_REFS)), "function_call")
    lane("response-with-duration", "10 §4.1; 10 §7.3 #29", "A response may carry stateDelta {durationMs: 12}.",
         W(O(), actions={"stateDelta": {"durationMs": 12}}), "function_response")
    lane("response-with-duration-and-extra", "10 §4.1; 10 §7.3 #29", "A response stateDelta with a key besides durationMs is a conflict.",
         W(O(), actions={"stateDelta": {"durationMs": 12, "extra": "x"}}), "conflict")
    lane("response-with-string-duration", "10 §4.1", "durationMs must be a finite number.",
         W(O(), actions={"stateDelta": {"durationMs": "12"}}), "conflict")
    lane("response-role-model", "10 §4.1", "A response must be role tool / author tool.", W(O(), role="model"), "conflict")
    lane("call-role-tool", "10 §4.1; 10 §7.3 #29", "A call with role tool is a conflict.", W(C(), role="tool"), "conflict")
    lane("call-author-tool", "10 §4.1; 10 §7.3 #29", "A call with author tool is a conflict.", W(C(), author="tool"), "conflict")
    lane("call-with-status", "10 §4.1; 10 §7.3 #29", "A call with status is a conflict.", W(C(), status="completed"), "conflict")
    lane("dispatch-with-content", "10 §4.1; 10 §7.3 #29", "A dispatch with content is a conflict.",
         W(D(), content={"kind": "text", "text": "x"}), "conflict")
    lane("dispatch-role-model", "10 §4.1; 10 §7.3 #29", "A dispatch with role model is a conflict.", W(D(), role="model"), "conflict")
    lane("dispatch-extra-action", "10 §4.1; 10 §7.3 #29", "A dispatch whose actions has another key is a conflict.",
         set_in(D(), "actions.endInvocation", True), "conflict")
    lane("dispatch-refs-missing-tool-call-id", "10 §4.1; 10 §7.3 #29", "Dispatch refs missing toolCallId is a conflict.",
         W(D(), refs={"operationId": "operation-1"}), "conflict")
    lane("dispatch-refs-absent", "10 §4.1", "A dispatch without refs is a conflict.", drop(D(), "refs"), "conflict")
    lane("dispatch-refs-both-parents", "10 §4.1; 10 §7.3 #29", "Dispatch refs with both parent refs are allowed.",
         W(D(), refs={**F.W_REFS, "parentToolCallId": "exec-1", "parentOperationId": "outer-op"}), "tool_dispatch")
    lane("dispatch-refs-one-parent", "10 §4.1; 10 §7.3 #29", "Dispatch refs with only parentOperationId is a conflict.",
         W(D(), refs={**F.W_REFS, "parentOperationId": "outer-op"}), "conflict")
    lane("dispatch-refs-step-id", "10 §4.1; 10 §1.6", "Dispatch refs may not carry stepId.",
         W(D(), refs={**F.W_REFS, "stepId": "step-1"}), "conflict")
    lane("reconcile-refs-missing-tool-call-id", "10 §4.1; 10 §7.3 #29", "Reconcile refs missing toolCallId is a conflict.",
         W(RC(), refs={"operationId": "operation-1"}), "conflict")
    lane("decision-role-user", "10 §4.1", "A recovery decision must be role system / author system.",
         W(DC(), role="user", author="user"), "conflict")
    lane("origin-visibility-unconstrained", "10 §4.1", "origin, modelVisibility and ts are not lane-constrained.",
         W(D(), origin="code_mode", modelVisibility="hidden", ts=99), "tool_dispatch")

    # Generic-append reservations (10 §4.2).
    generic("generic-call", "10 §4.2; 10 §7.3 #26", "The generic path accepts a function_call.", C(), None)
    generic("generic-dispatch", "10 §4.2; 10 §7.3 #26", "The generic path refuses a dispatch.", D(), "reserved_tool_boundary_fact")
    generic("generic-bound-response", "10 §4.2; 10 §7.3 #26", "The generic path refuses a response bound to an operation.",
            O(), "reserved_tool_boundary_fact")
    generic("generic-reconcile", "10 §4.2; 10 §7.3 #26", "The generic path refuses a reconcile observation.", RC(), "reserved_recovery_fact")
    generic("generic-decision", "10 §4.2", "The generic path refuses a recovery decision.", DP(), "reserved_recovery_fact")
    generic("generic-unbound-response", "10 §4.2; 10 §7.3 #29", "The generic path accepts an unbound response.", OU(), None)
    generic("generic-bound-call", "10 §4.2", "The generic path accepts a bound call.", W(C(), refs=dict(F.W_REFS)), None)
    generic("generic-ordinary", "10 §4.2", "The generic path accepts an ordinary event.", M(), None)
    generic("generic-lane-conflict", "10 §4.2 step 1", "A lane conflict is reported before any reservation.",
            W(D(), status="completed"), "semantic_lane_conflict")
    generic("generic-response-end-invocation", "10 §4.2; 10 §7.5 #43", "A response with endInvocation is a lane conflict.",
            W(OU(), actions={"endInvocation": True}), "semantic_lane_conflict")
    return "lanes", (
        "Semantic lanes (spec 10 §4.1) and the generic-append reservations (§4.2)."
    ), vs


# ---------------------------------------------------------------------------------------
# scanner.json — 10 §4.3–§4.5, §7.3 #22/#27, §7.4
# ---------------------------------------------------------------------------------------


def group_scanner() -> tuple[str, str, list[dict[str, Any]]]:
    g = "scanner"
    vs: list[dict[str, Any]] = []

    def s(slug: str, spec: str, description: str, events: list[dict[str, Any]], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "scan", {"events": events}, expect))

    toolDispatch = F.w_dispatch()["actions"]["toolDispatch"]
    s("call-with-tool-dispatch", "10 §7.3 #22", "A call that also carries toolDispatch is reported as a lane conflict.",
      [W(C(), actions={"toolDispatch": toolDispatch})],
      issuesBrief=iss(("semantic_lane_conflict", "call-event-1")))
    s("partial-dispatch", "10 §7.3 #27", "Scanning a lone partial dispatch yields exactly one lane-conflict issue.",
      [W(D(), partial=True)], issues=[{"code": "semantic_lane_conflict", "eventId": "dispatch-event-1"}])
    s("issue-catalogue-example", "10 §7.4 #30",
      "Dispatch-first, duplicate call and a reused operationId give the three issues with their attachments.",
      [D(), C(), C(id="call-event-2"),
       C(id="call-event-other", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                         "args": {"path": "notes.txt", "content": "after"}}),
       W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-event-other",
         refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})],
      issues=[
          {"code": "event_order_conflict", "eventId": "dispatch-event-1", "operationId": "operation-1", "toolCallId": "provider-call-1"},
          {"code": "duplicate_call", "eventId": "call-event-2", "operationId": "operation-1", "toolCallId": "provider-call-1"},
          {"code": "duplicate_operation", "eventId": "dispatch-event-other", "operationId": "operation-1", "toolCallId": "provider-call-2"},
      ], hasCorruption=True)
    s("unbound-response-before-dispatch", "10 §7.4 #31", "A dispatch after an unbound response is an order and identity conflict.",
      [C(), OU(), D()], issueCodesInclude=["event_order_conflict", "identity_conflict"], hasCorruption=True)
    s("wrong-args-hash", "10 §7.4 #32", "A dispatch whose hash differs from the call's recomputed hash is reported.",
      [C(), D_with_tool_dispatch(canonicalArgsHash="sha256:wrong")],
      issuesInclude=[{"code": "canonical_args_hash_conflict", "eventId": "dispatch-event-1",
                      "operationId": "operation-1", "toolCallId": "provider-call-1"}], hasCorruption=True)
    s("call-key-is-a-tuple", "10 §7.4 #33",
      "Calls keyed (\"a\\u0000b\", \"c\") and (\"a\", \"b\\u0000c\") stay distinct: two operations, no issue.",
      [E("call-a", invocationId="a\x00b", role="model", author="agent",
         content={"kind": "function_call", "id": "c", "name": "Read", "args": {}}),
       E("call-b", invocationId="a", role="model", author="agent",
         content={"kind": "function_call", "id": "b\x00c", "name": "Read", "args": {}})],
      hasCorruption=False, issues=[], operationCount=2)
    s("invocation-spine-drift", "10 §7.4 #34", "An invocation seen with another run/turn is an invocation identity conflict.",
      [C(), C(id="call-event-2", runId="run-2", turnId="turn-2",
              content={"kind": "function_call", "id": "provider-call-2", "name": "Read", "args": {}})],
      issueCodesInclude=["invocation_identity_conflict"], hasCorruption=True)
    s("response-other-run", "10 §7.4 #35", "A response from another run of the invocation gives two issues on that response.",
      [C(), O(runId="run-2", refs={"toolCallId": "provider-call-1"})],
      issuesBrief=iss(("invocation_identity_conflict", "outcome-event-1"), ("identity_conflict", "outcome-event-1")))
    s("partial-non-tool-event-ignored", "10 §7.4 #36", "A partial text event is ignored: no issue, one operation.",
      [E("partial-text-1", role="model", author="agent", partial=True, content={"kind": "text", "text": "draft"}), C()],
      issues=[], operationCount=1, hasCorruption=False)
    s("partial-call-only", "10 §4.5; 10 §7.4 #36", "A ledger whose only call is partial has zero operations and one lane issue.",
      [W(C(), partial=True)], issuesBrief=iss(("semantic_lane_conflict", "call-event-1")), operationCount=0)
    s("same-call-id-two-invocations", "10 §7.4 #37", "The same call id in two invocations makes two operations and no issue.",
      [C(), C(id="call-event-2", invocationId="invocation-2")], issues=[], operationCount=2, hasCorruption=False)
    s("healthy-bundle", "10 §4.3", "A complete T1/recovery-bundle ledger scans without issues into one operation.",
      [C(), D(), RC(), O(), DC()], issues=[], operationCount=1, hasCorruption=False)
    s("dispatch-wrong-name-and-hash", "10 §4.5 (example [X])",
      "A dispatch with wrong name and wrong hash emits identity_conflict then canonical_args_hash_conflict.",
      [C(), D_with_tool_dispatch(toolName="Read", canonicalArgsHash="sha256:x")],
      issueCodes=["identity_conflict", "canonical_args_hash_conflict"])
    s("empty-ledger", "10 §4.3 step 9", "An empty ledger has no operations and no issues.", [],
      issues=[], operationCount=0, hasCorruption=False)
    return "scanner", (
        "The tool-ledger scanner (spec 10 §4.3–§4.5): issue codes, their attachments and emission order."
    ), vs


# ---------------------------------------------------------------------------------------
# transition.json — 10 §4.6, §7.5
# ---------------------------------------------------------------------------------------


def group_transition() -> tuple[str, str, list[dict[str, Any]]]:
    g = "transition"
    vs: list[dict[str, Any]] = []

    def t(slug: str, spec: str, description: str, existing: list, candidates: list, kind: str, **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "validate_transition",
                      {"existing": existing, "candidates": candidates, "kind": kind}, expect))

    OK = {"transition": {"ok": True}}

    def refused(code: str, event_id: str) -> dict[str, Any]:
        return {"transitionSubset": {"ok": False, "code": code, "eventId": event_id}}

    t("generic-duplicate-call", "10 §7.5 #38", "A second call for the same call id is refused duplicate_call, without operationId.",
      [C()], [C(id="call-event-duplicate")], "generic_append",
      transition={"ok": False, "code": "duplicate_call", "eventId": "call-event-duplicate", "toolCallId": "provider-call-1"})
    t("generic-unbound-response-after-dispatch", "10 §7.5 #39",
      "An unbound response after a dispatch is refused identity_conflict with the operation's ids.",
      [C(), D()], [OU()], "generic_append",
      transition={"ok": False, "code": "identity_conflict", "eventId": "outcome-event-1",
                  "operationId": "operation-1", "toolCallId": "provider-call-1"})
    t("t1-call-and-dispatch", "10 §7.5 #40", "t1_prepare [C, D] on an empty ledger is ok.", [], [C(), D()], "t1_prepare", **OK)
    t("t1-dispatch-after-existing-call", "10 §7.5 #40", "t1_prepare [D] when the call already exists is ok.",
      [C()], [D()], "t1_prepare", **OK)
    t("t1-exact-retry", "10 §7.5 #40", "An exact retry of [C, D] is ok.", [C(), D()], [C(), D()], "t1_prepare", **OK)
    t("t1-wrong-order", "10 §7.5 #40", "t1_prepare [D, C] is a shape conflict at the dispatch.",
      [], [D(), C()], "t1_prepare", **refused("transition_shape_conflict", "dispatch-event-1"))
    t("t1-call-alone", "10 §7.5 #40; 10 §4.6 step 3", "t1_prepare [C] alone is a shape conflict at the first candidate.",
      [], [C()], "t1_prepare", **refused("transition_shape_conflict", "call-event-1"))
    t("t1-bound-call", "10 §7.5 #40", "A call that already carries refs.operationId plus its dispatch is ok.",
      [], [W(C(), refs=dict(F.W_REFS)), D()], "t1_prepare", **OK)
    t("t1-id-reused-different-content", "10 §7.5 #40; 10 §4.6 step 2",
      "A candidate reusing an existing id with different content is refused duplicate_event_id.",
      [C()], [C(ts=9), D()], "t1_prepare", **refused("duplicate_event_id", "call-event-1"))
    t("t1-after-unbound-pair", "10 §7.5 #40", "A dispatch for a call already answered by an unbound response is an order conflict.",
      [C(), OU()], [C(), D()], "t1_prepare", **refused("event_order_conflict", "dispatch-event-1"))
    t("t2-bound-response", "10 §7.5 #41", "t2_outcome [O] after [C, D] is ok.", [C(), D()], [O()], "t2_outcome", **OK)
    t("t2-unbound-response", "10 §7.5 #41", "t2_outcome [O_unbound] is a shape conflict.",
      [C(), D()], [OU()], "t2_outcome", **refused("transition_shape_conflict", "outcome-event-1"))
    t("t2-two-responses", "10 §7.5 #41", "t2_outcome with two responses is a shape conflict.",
      [C(), D()], [O(), O(id="outcome-event-2")], "t2_outcome", **refused("transition_shape_conflict", "outcome-event-1"))
    for kind in ("generic_append", "t1_prepare", "t2_outcome", "recovery_bundle"):
        t(f"empty-candidates-{kind.replace('_', '-')}", "10 §7.5 #41; 10 §4.6 step 3",
          f"An empty candidate list is ok for {kind}.", [C(), D()], [], kind, **OK)
    t("bundle-completed", "10 §7.5 #42", "recovery_bundle [RC, O, DC] after [C, D] is ok.",
      [C(), D()], [RC(), O(), DC()], "recovery_bundle", **OK)
    t("bundle-parked", "10 §7.5 #42", "recovery_bundle [RC(diverged), DP] after [C, D] is ok.",
      [C(), D()], [RC("diverged"), DP()], "recovery_bundle", **OK)
    t("bundle-exact-retry", "10 §7.5 #42", "An exact retry of a stored completed bundle is ok.",
      [C(), D(), RC(), O(), DC()], [RC(), O(), DC()], "recovery_bundle", **OK)
    t("bundle-conflicting-retry", "10 §7.5 #42",
      "A completed bundle over a stored parked bundle is refused duplicate_event_id at the reconcile event.",
      [C(), D(), RC("diverged"), DP()], [RC(), O(), DC()], "recovery_bundle",
      **refused("duplicate_event_id", "reconcile-event-1"))
    t("bundle-wrong-order", "10 §7.5 #42", "recovery_bundle [RC, DC, O] is a shape conflict.",
      [C(), D()], [RC(), DC(), O()], "recovery_bundle", **refused("transition_shape_conflict", "reconcile-event-1"))
    t("bundle-with-ordinary-event", "10 §7.5 #42", "An ordinary event inside a bundle is a shape conflict.",
      [C(), D()], [RC("diverged"), E("note-1"), DP()], "recovery_bundle",
      **refused("transition_shape_conflict", "reconcile-event-1"))
    t("generic-dispatch-reserved", "10 §7.5 #43", "generic_append of D is refused reserved_tool_boundary_fact.",
      [C()], [D()], "generic_append", transitionSubset={"ok": False, "code": "reserved_tool_boundary_fact"})
    t("generic-reconcile-reserved", "10 §7.5 #43", "generic_append of RC is refused reserved_recovery_fact.",
      [C(), D()], [RC()], "generic_append", transitionSubset={"ok": False, "code": "reserved_recovery_fact"})
    t("generic-on-corrupt-ledger", "10 §7.5 #43; 10 §4.6 step 1",
      "Any candidate on an already corrupt ledger is refused with the ledger's first issue.",
      [C(), C(id="dup")], [E("note-1")], "generic_append", **refused("duplicate_call", "dup"))
    t("generic-exact-retry-on-corrupt-ledger", "10 §2.5; 10 §4.6 step 1",
      "Even an exact retry is refused while the existing ledger has an issue.",
      [C(), C(id="dup")], [C()], "generic_append", **refused("duplicate_call", "dup"))
    t("generic-unbound-pair", "10 §7.5 #43", "generic_append of the unbound pair [C, O_unbound] is ok.",
      [], [C(), OU()], "generic_append", **OK)
    t("generic-response-end-invocation", "10 §7.5 #43", "A response with endInvocation is refused as a lane conflict.",
      [C()], [W(OU(), actions={"endInvocation": True})], "generic_append",
      transitionSubset={"ok": False, "code": "semantic_lane_conflict"})
    t("generic-partial-call", "10 §7.5 #43", "A partial call is refused as a lane conflict.",
      [], [W(C(), partial=True)], "generic_append", transitionSubset={"ok": False, "code": "semantic_lane_conflict"})
    return "transition", (
        "Write-side transition validation (spec 10 §4.6): exact retries, shapes per kind, reservations and fail-closed refusal."
    ), vs
