"""Vectors of spec 20: ``phase0-plan.json``, ``failpoints.json`` and ``segment-replay.json``.

The Phase 0 ResumePlan (20 §1.1–§1.7; 10 §6.6, §7.7 #62–#63), the failpoint catalogue and
crash ledgers (20 §2) and v2 continuation segment replay (20 §1.10). Kept apart from the
spec 10 modules because they read spec 20 ledgers.
"""

from __future__ import annotations

from typing import Any

from ._common import BASH_HASH, dm, EXEC_HASH, READ_PREPARED_HASH, vec
from ._events import (
    C, call20, continuation_start20, D, dispatch20, DP, ev20, ID20, ID20_RUN2, M, O, RC, response20,
    terminal20, text20, user20, W,
)


# ---------------------------------------------------------------------------------------
# phase0-plan.json — 20 §1.1–§1.7, §8 items 2–8, 10; 10 §6.6, §7.7 #62–#63
# ---------------------------------------------------------------------------------------


def group_phase0() -> tuple[str, str, list[dict[str, Any]]]:
    g = "phase0-plan"
    vs: list[dict[str, Any]] = []

    def p(slug: str, spec: str, description: str, events: list[dict[str, Any]], expected_hw: int | None = None, **expect: Any) -> None:
        input_: dict[str, Any] = {"events": events}
        if expected_hw is not None:
            input_["expectedRuntimeEventHighWater"] = expected_hw
        vs.append(vec(f"{g}/{slug}", spec, description, "plan", input_, expect))

    call_tool1 = call20("call-1", 1, "tool-1", "Bash", {"command": "ls"})
    p("s2-failed-and-pending", "20 §8 item 2",
      "An error result makes the call failed; a call without result stays indeterminate; projection is deterministic.",
      [call_tool1, response20("result-1", 2, "tool-1", "Bash", "boom", is_error=True),
       call20("call-2", 3, "tool-2", "Read", {"path": "notes.txt"})],
      operations=[dm(toolCallId="tool-1", status="failed", responseRuntimeEventId="result-1"),
                  dm(["responseRuntimeEventId"], toolCallId="tool-2", status="indeterminate")],
      deterministic=True)
    p("s3-error-response-safe", "20 §8 item 3; 20 §9 item 1", "A call with an error response is failed and safe to replay.",
      [call_tool1, response20("result-1", 2, "tool-1", "Bash", "boom", is_error=True)],
      planSubset={"disposition": "safe_replay"}, operations=[dm(status="failed")])
    p("s3-call-only-blocked", "20 §8 item 3; 20 §1.5",
      "A call without result blocks, requires verification and carries the directive.",
      [call_tool1],
      planSubset={"disposition": "blocked", "requiresVerification": True, "rejectionReasons": ["dangling_tool_state"],
                  "sourceRuntimeEventHighWater": 1},
      operations=[dm(status="indeterminate")], presentKeys=["directive"], directiveContains=["Do not retry", "read-only"])
    p("s4-unresolved-call-not-replayed", "20 §8 item 4; 20 §1.7",
      "An unresolved call is left out of replay; system text is kept.",
      [user20(), call20("call-1", 2, "tool-1", "Bash", {"command": "ls"}), text20("system-1", 3, "system", "system", "note")],
      replayEventIds=["user-1", "system-1"])
    p("s5-hidden-code-mode-pair", "20 §8 item 5", "A hidden Code Mode call and result are not operations and not replayed.",
      [user20(),
       call20("call-1", 2, "nested-1", "Read", {"path": "notes.txt"}, origin="code_mode", modelVisibility="hidden"),
       response20("result-1", 3, "nested-1", "Read", "contents", origin="code_mode", modelVisibility="hidden")],
      planSubset={"disposition": "safe_replay", "operations": []}, replayEventIds=["user-1"])
    parent = {"parentToolCallId": "exec-1", "parentOperationId": "outer-op"}
    p("s6-hidden-nested-pending", "20 §8 item 6; 20 §1.5",
      "A hidden nested call dispatched without result blocks and requires verification.",
      [user20(marker=True),
       call20("exec-call", 2, "exec-1", "exec", {"code": "work()"}, refs={"operationId": "outer-op", "toolCallId": "exec-1"}),
       dispatch20("outer-op_dispatch", 2, "outer-op", "exec-1", "exec", EXEC_HASH),
       call20("nested-call", 3, "nested-1", "Read", {"path": "prepared.txt"}, origin="code_mode", modelVisibility="hidden",
              refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent}),
       dispatch20("nested-op_dispatch", 3, "nested-op", "nested-1", "Read", READ_PREPARED_HASH,
                  refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent},
                  origin="code_mode", modelVisibility="hidden"),
       response20("outer-op_response", 4, "exec-1", "exec", "boom", is_error=True,
                  refs={"operationId": "outer-op", "toolCallId": "exec-1"})],
      planSubset={"disposition": "blocked", "requiresVerification": True, "rejectionReasons": ["dangling_tool_state"]},
      presentKeys=["directive"], diagnosticCodesInclude=["pending_tool_result"])
    p("s7-response-only", "20 §8 item 7", "A response alone blocks without verification: ledger corruption and an unmatched result.",
      [response20("result-1", 1, "tool-1", "Bash", "ok")],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      diagnosticCodes=["tool_ledger_corruption", "unmatched_tool_result"], replayEventIds=[])
    p("s8-high-water-mismatch", "20 §8 item 8; 20 §1.6", "An expected high-water that differs from the event count blocks.",
      [user20()], expected_hw=2,
      planSubset={"disposition": "blocked", "rejectionReasons": ["runtime_offset_mismatch"]},
      diagnosticCodes=["runtime_offset_mismatch"])
    p("high-water-below-committed", "20 §1.3 item 1; 20 §1.6",
      "An expected high-water below the committed event count blocks as well: any difference is a mismatch, not only "
      "a shortfall of the ledger.",
      [user20(), text20("model-1", 2, "model", "agent", "answer")], expected_hw=1,
      planSubset={"disposition": "blocked", "rejectionReasons": ["runtime_offset_mismatch"], "sourceRuntimeEventHighWater": 2},
      diagnosticCodes=["runtime_offset_mismatch"],
      diagnostics=[dm(code="runtime_offset_mismatch",
                      detail={"expectedRuntimeEventHighWater": 1, "actualRuntimeEventHighWater": 2})])
    p("high-water-zero-is-given", "20 §1.3 item 1; 20 §1.6",
      "An expected high-water of 0 is given (not absent) and differs from a one-event ledger: mismatch.",
      [user20()], expected_hw=0,
      planSubset={"disposition": "blocked", "rejectionReasons": ["runtime_offset_mismatch"], "sourceRuntimeEventHighWater": 1},
      diagnosticCodes=["runtime_offset_mismatch"])
    p("s10-t1-not-dispatched", "20 §8 item 10; 20 §9 items 2, 37",
      "Under the marker a call without dispatch is not_dispatched: blocked, but no verification.",
      [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "ls"})],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      operations=[dm(status="not_dispatched")], diagnosticCodes=["tool_not_dispatched"], absentKeys=["directive"])
    p("partial-counts-toward-high-water", "20 §1.6; 20 §9 item 3",
      "Phase 0 high-water counts partial events, which are never replayed.",
      [user20(), text20("partial-1", 2, "model", "agent", "draft", partial=True)],
      planSubset={"sourceRuntimeEventHighWater": 2}, replayEventIds=["user-1"])
    p("s62-parked-plan", "10 §7.7 #62; 10 §6.6", "A parked bundle blocks the plan with tool_recovery_parked.",
      [C(), D(), RC("diverged"), DP()],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      diagnosticCodes=["tool_recovery_parked"])
    orphan_rc = W(RC(), id="orphan-reconcile-event", refs={"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"})
    orphan_rc["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    p("s63-unbound-recovery-fact-plan", "10 §7.7 #63; 10 §6.6",
      "An unbound recovery fact blocks the plan with tool_ledger_corruption naming event_order_conflict.",
      [C(), O(), orphan_rc],
      planSubset={"disposition": "blocked", "rejectionReasons": ["dangling_tool_state"]},
      diagnostics=[dm(code="tool_ledger_corruption", detail={"issueCode": "event_order_conflict"})])
    return "phase0-plan", (
        "The Phase 0 ResumePlan (spec 20 §1.1–§1.7): operations, diagnostics, rejection reasons, verification and replay."
    ), vs


# ---------------------------------------------------------------------------------------
# failpoints.json — 20 §2, §8 item 1
# ---------------------------------------------------------------------------------------

FAILPOINT_PREFIXES = [
    ("P0", "before_function_call"), ("P1", "after_function_call"), ("P2", "after_function_call"),
    ("P3", "after_function_call"), ("P4", "after_function_call"), ("P5", "after_function_response"),
    ("P6", "after_function_response"), ("P7", "after_function_response"), ("P8", "after_function_response"),
    ("P9", "after_terminal_event"), ("P10", "after_terminal_event"), ("P11", "after_terminal_event"),
]
PREFIX_SIZE = {"before_function_call": 1, "after_function_call": 2, "after_function_response": 3, "after_terminal_event": 4}


def crash_ledger(fp: str) -> list[dict[str, Any]]:
    """The reference crash ledger of 20 §2 for failpoint ``fp`` (full, four events)."""
    identity = {"sessionId": f"session-{fp}", "invocationId": f"invocation-run-{fp}", "runId": f"run-{fp}", "turnId": f"turn-run-{fp}"}
    return [
        ev20("user", 1, identity, role="user", author="user", content={"kind": "text", "text": "run the tool"}),
        call20("call", 2, "tool-1", "Bash", {"command": "touch marker"}, identity=identity),
        response20("response", 3, "tool-1", "Bash", {"exitCode": 0}, identity=identity),
        ev20("terminal", 4, identity, role="system", author="system", status="failed", actions={"endInvocation": True}),
    ]


#: 20 §2 "Required decisions", one row per committed prefix.
PREFIX_DECISIONS: dict[str, dict[str, Any]] = {
    "before_function_call": {"disposition": "safe_replay", "status": None, "reasons": [], "replay": ["user"]},
    "after_function_call": {"disposition": "blocked", "status": "indeterminate", "reasons": ["dangling_tool_state"], "replay": ["user"]},
    "after_function_response": {"disposition": "safe_replay", "status": "succeeded", "reasons": [],
                                "replay": ["user", "call", "response"]},
    "after_terminal_event": {"disposition": "safe_replay", "status": "succeeded", "reasons": [],
                             "replay": ["user", "call", "response", "terminal"]},
}


def group_failpoints() -> tuple[str, str, list[dict[str, Any]]]:
    g = "failpoints"
    vs: list[dict[str, Any]] = [vec(
        f"{g}/catalogue", "20 §2; 20 §8 item 1",
        "The failpoint catalogue lists P0..P11 in order with their committed prefixes.",
        "failpoint_catalog", {}, {"failpoints": [{"id": fp, "committedPrefix": prefix} for fp, prefix in FAILPOINT_PREFIXES]},
    )]
    for fp, prefix in FAILPOINT_PREFIXES:
        size = PREFIX_SIZE[prefix]
        row = PREFIX_DECISIONS[prefix]
        subset: dict[str, Any] = {"disposition": row["disposition"], "rejectionReasons": row["reasons"],
                                  "sourceRuntimeEventHighWater": size}
        expect: dict[str, Any] = {"planSubset": subset}
        if row["status"] is None:
            subset["operations"] = []
        else:
            expect["operations"] = [dm(status=row["status"])]
        expect["replayEventIds"] = row["replay"]
        expect["deterministic"] = True
        vs.append(vec(
            f"{g}/{fp.lower()}-{prefix.replace('_', '-')}", "20 §2",
            f"Crash at {fp}: Phase 0 over the {prefix} prefix of the reference ledger.",
            "plan", {"failpoint": fp, "committedPrefix": prefix, "events": crash_ledger(fp)[:size]}, expect,
        ))
    for prefix, size in PREFIX_SIZE.items():
        fp = next(f for f, p_ in FAILPOINT_PREFIXES if p_ == prefix)
        vs.append(vec(
            f"{g}/{prefix.replace('_', '-')}-high-water-mismatch", "20 §2 ([doc]); 20 §1.6",
            f"An expected high-water one past the reopened {prefix} prefix is runtime_offset_mismatch.",
            "plan", {"failpoint": fp, "committedPrefix": prefix, "events": crash_ledger(fp)[:size],
                     "expectedRuntimeEventHighWater": size + 1},
            {"planSubset": {"disposition": "blocked"}, "diagnosticCodesInclude": ["runtime_offset_mismatch"],
             "rejectionReasonsInclude": ["runtime_offset_mismatch"]},
        ))
    return "failpoints", (
        "The P0–P11 crash contract (spec 20 §2): the catalogue and Phase 0 over each failpoint's committed prefix "
        "of the reference ledger."
    ), vs


# ---------------------------------------------------------------------------------------
# segment-replay.json — 20 §1.10, §8 items 26–31
# ---------------------------------------------------------------------------------------


def group_segment_replay() -> tuple[str, str, list[dict[str, Any]]]:
    g = "segment-replay"
    vs: list[dict[str, Any]] = []

    def seg(slug: str, spec: str, description: str, events: list[dict[str, Any]], version: int | None = None, **expect: Any) -> None:
        input_: dict[str, Any] = {"events": events}
        if version is not None:
            input_["providerProjectionVersion"] = version
        vs.append(vec(f"{g}/{slug}", spec, description, "segment_replay", input_, expect))

    thinking = ev20("thinking-1", 2, role="model", author="agent", content={"kind": "thinking", "text": "plan", "signature": "sig-1"})
    assistant = text20("assistant-1", 3, "model", "agent", "partial answer")
    seg("s26-trim-interrupted-suffix", "20 §8 item 26; 20 §1.10 step 5",
        "Signed thinking and assistant text after the last user message are trimmed.",
        [user20(marker=True), thinking, assistant],
        trimmedSuffixEventIds=["thinking-1", "assistant-1"], replayEventIds=["user-1"], providerItemEventIds=["user-1"])
    seg("s27-hidden-event-dropped", "20 §8 item 27", "A hidden tool-role text is not replayed.",
        [user20(marker=True), text20("hidden-1", 2, "tool", "tool", "internal", modelVisibility="hidden")],
        replayEventIds=["user-1"])
    run2 = ID20_RUN2
    seg("s28-continuation-without-anchor", "20 §8 item 28; 20 §1.10 step 5",
        "With no user/tool-result anchor every provider item is trimmed; content-less facts stay.",
        [continuation_start20("continuation-start", 1, marker=False),
         ev20("thinking-1", 2, run2, role="model", author="agent",
              content={"kind": "thinking", "text": "plan", "signature": "sig-1"}),
         text20("assistant-1", 3, "model", "agent", "partial answer", identity=run2),
         terminal20("failed-terminal", 4, identity=run2)],
        trimmedSuffixEventIds=["thinking-1", "assistant-1"], replayEventIds=["continuation-start", "failed-terminal"],
        providerItemEventIds=[])
    seg("s29-undispatched-call-trimmed", "20 §8 item 29; 20 §2 (informative)",
        "Under a marker-carrying live start an undispatched call is trimmed, not blocking.",
        [continuation_start20("continuation-start", 1, marker=True),
         call20("call-1", 2, "tool-1", "Write", {"path": "notes.txt", "content": "after"}, identity=run2),
         terminal20("failed-terminal", 3, identity=run2)],
        trimmedSuffixEventIds=["call-1"], replayEventIds=["continuation-start", "failed-terminal"], providerItemEventIds=[])
    seg("s30-non-suffix-gap", "20 §8 item 30; 20 §1.10 step 4",
        "An unmatched call followed by a provider item is a non-suffix gap.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Read", {"path": "notes.txt"}), assistant],
        blockReason="provider_replay_non_suffix_gap")
    seg("p1-like-t1-call-trimmed", "20 §2 (informative); 20 §1.10",
        "A P1-like T1 ledger (call, no dispatch) trims the call and does not block.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "do-it"})],
        trimmedSuffixEventIds=["call-1"], replayEventIds=["user-1"], providerItemEventIds=["user-1"])
    seg("p2-like-dispatch-unsettled", "20 §2 (informative); 20 §1.10 step 1",
        "A P2–P4-like T1 ledger (call and dispatch, no response) is blocked tool_recovery_unsettled.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "do-it"}),
         dispatch20("operation-1_dispatch", 2, "operation-1", "tool-1", "Bash", BASH_HASH)],
        blockReason="tool_recovery_unsettled")
    seg("parked-unsettled", "20 §1.10 step 1", "A parked operation blocks the segment as tool_recovery_unsettled.",
        [M(), C(), D(), RC("diverged"), DP()], blockReason="tool_recovery_unsettled")
    seg("orphan-response-corruption", "20 §1.10 step 1", "A corrupt ledger blocks the segment as tool_recovery_corruption.",
        [user20(marker=True), response20("result-1", 2, "tool-1", "Bash", "ok")], blockReason="tool_recovery_corruption")
    seg("projection-version-2", "20 §1.10 step 2; 20 §1.9",
        "A requested provider projection version other than 1 is provider_replay_unsupported.",
        [user20(marker=True)], version=2, blockReason="provider_replay_unsupported")

    root = ID20
    vs.append(vec(
        f"{g}/s31-two-generations", "20 §8 item 31; 20 §1.10 (composite)",
        "An ancestor's trimmed suffix never reappears: runtime context concatenates each segment's replay.",
        "composite_replay",
        {"segments": [
            {"events": [user20("root-user", 1, identity=root),
                        ev20("root-thinking", 2, root, role="model", author="agent",
                             content={"kind": "thinking", "text": "plan", "signature": "sig-1"}),
                        text20("root-interrupted-text", 3, "model", "agent", "partial answer", identity=root)]},
            {"events": [user20("child-user", 4, identity=run2)]},
        ]},
        {"runtimeContextEventIds": ["root-user", "child-user"],
         "trimmedSuffixEventIds": [["root-thinking", "root-interrupted-text"], []],
         "boundaryRunIds": ["run-1", "run-2"]},
    ))
    return "segment-replay", (
        "v2 continuation segment replay and the composite replay plan (spec 20 §1.10): trimming, blocking reasons and "
        "the concatenated runtime context."
    ), vs


# ---------------------------------------------------------------------------------------
# prefix-digest.json — 20 §1.9 (golden digests: spec 30 §2.6 and upstream)
# ---------------------------------------------------------------------------------------

#: Where the digests below come from. Spec 20 §1.9 fixes the byte construction but states no
#: value; spec 30 §2.6 states one (the concurrency fixture). Every other value was produced by
#: the upstream implementation (``buildImmutableRuntimePrefix`` of ``@maka/core``, maka-agent
#: commit f19eede03) on exactly these events, never by this repository's code.
UPSTREAM = "produced by upstream buildImmutableRuntimePrefix at commit f19eede03"


def group_prefix_digest() -> tuple[str, str, list[dict[str, Any]]]:
    g = "prefix-digest"
    vs: list[dict[str, Any]] = []

    def d(slug: str, spec: str, description: str, events: list[dict[str, Any]], digest: str) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "prefix_digest", {"events": events}, {"digest": digest}))

    fixture = {"sessionId": "session-1", "invocationId": "continuation-source-invocation",
               "runId": "continuation-source-run", "turnId": "continuation-source-turn"}
    d("golden-concurrency-fixture", "20 §1.9",
      "The concurrency fixture's source run (user event ts 10, failed terminal ts 11 with failureClass "
      "runtime_interrupted) has the golden prefix digest stated by spec 30 §2.6 (also reproduced by upstream "
      "buildImmutableRuntimePrefix at commit f19eede03).",
      [ev20("continuation-source-user", 10, fixture, role="user", author="user",
            content={"kind": "text", "text": "continue after this completed boundary"}),
       ev20("continuation-source-terminal", 11, fixture, role="system", author="system", status="failed",
            actions={"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}})],
      "sha256:316557ba0aa070940fd890417e2777d4c5149974110a013e67d3e9c581124eec")
    d("single-event", "20 §1.9",
      f"A one-row prefix (eventSeq 1) hashes domain, identity, U64BE(1) and the event; value {UPSTREAM}.",
      [user20()], "sha256:de399a444079f083f4c008a0fa59c0bc74fa58a6b5b82eb3b4b996d16cb96c41")
    op = {"operationId": "op-1", "toolCallId": "tool-1"}
    t1_run = [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "do-it"}, refs=op),
              dispatch20("dispatch-1", 3, "op-1", "tool-1", "Bash", BASH_HASH),
              response20("response-1", 4, "tool-1", "Bash", {"exitCode": 0}, refs=op),
              text20("text-1", 5, "model", "agent", "done"), terminal20("terminal-1", 6, status="completed")]
    d("t1-run", "20 §1.9",
      f"A completed T1 run (marker, call, dispatch, response, text, terminal: eventSeq 1..6); value {UPSTREAM}.",
      t1_run, "sha256:79c3bc5aa2923ca9c554804208aee9c1e843a43f4ced17a2e723e86567a3701f")
    d("t1-run-first-two-rows", "20 §1.9",
      f"The first two rows of the same run are a prefix with a digest of its own; value {UPSTREAM}.",
      t1_run[:2], "sha256:61e66fdf75d04cdd37b56bdaec406193b1d6d6f6ca126c7bbdbcea7fc550af91")
    d("non-ascii-text", "20 §1.9; 10 §2.3",
      "Non-ASCII and escaped characters are hashed as the canonical JSON writes them (raw UTF-8, JSON escapes "
      f"only where required); value {UPSTREAM}.",
      [user20(text="h\u00e9llo \u2028 \U0001F600 \"q\" \\ \u0007"), text20("text-1", 2, "model", "agent", "\uff01 ok")],
      "sha256:ead75ee1241e1ef9bbf6b5571cc27337ebfa8f2323f7bba841794ff80475fabb")
    d("legacy-automation-origin", "20 §1.9 (legacy quirk)",
      "A text event whose origin kind is legacy_automation is hashed as if the origin were automation with the same "
      f"automationId; value {UPSTREAM}.",
      [ev20("auto-1", 1, role="user", author="user",
            content={"kind": "text", "text": "scheduled",
                     "origin": {"kind": "legacy_automation", "automationId": "automation-1"}})],
      "sha256:2ee2e57c8b45b2a69c108537ffcd00480bffddf130cdf15c4506c8bb2269080a")
    return "prefix-digest", (
        "The v2 immutable prefix digest (spec 20 §1.9) over one run's rows: golden values from spec 30 §2.6 and from "
        "the upstream implementation (commit f19eede03), which no sensitivity property can replace."
    ), vs
