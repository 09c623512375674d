"""Vectors of ``encoding.json``: RuntimeEvent validation and canonical encoding (spec 10 §1, §2.1–§2.4, §5.1, §7.2).

Includes the §2.2 golden encodings and their helpers. Separate because the encoding
rules are one spec area with its own fixtures.
"""

from __future__ import annotations

import copy
from typing import Any

from maka_ref.testing import families as F

from ._common import err, NOT_SERIALIZABLE_MESSAGE, SCHEMA_MESSAGE, T1, vec, WRITE_HASH
from ._events import (
    C, continuation_start20, D_with_tool_dispatch, DC, del_in, DP, drop, E, M, O, payload_set, RC, set_in, W,
)


# ---------------------------------------------------------------------------------------
# encoding.json — 10 §1, §2.1–§2.4, §5.1, §7.2
# ---------------------------------------------------------------------------------------

#: The envelope of the 10 §2.2 golden encodings.
GOLDEN_ENVELOPE = {"id": "evt-1", "invocationId": "inv-1", "runId": "run-1", "sessionId": "sess-1", "turnId": "turn-1",
                   "ts": 100, "partial": False}


def golden_rest(role: str) -> str:
    """The envelope tail that follows ``content`` in a golden line (cf. 10 §2.2 line 1)."""
    return (',"id":"evt-1","invocationId":"inv-1","partial":false,"role":"%s","runId":"run-1",'
            '"sessionId":"sess-1","ts":100,"turnId":"turn-1"}' % role)


def golden_event(role: str, author: str, **fields: Any) -> dict[str, Any]:
    return {**copy.deepcopy(GOLDEN_ENVELOPE), "role": role, "author": author, **copy.deepcopy(fields)}


def golden_event_json(role: str, author: str, content_json: str) -> str:
    """Event JSON *text* (non-canonical key order on purpose) with a literal ``content``."""
    return ('{"id":"evt-1","sessionId":"sess-1","runId":"run-1","invocationId":"inv-1","turnId":"turn-1",'
            '"ts":100,"partial":false,"role":"%s","author":"%s","content":%s}' % (role, author, content_json))


def group_encoding() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []
    g = "encoding"

    # --- the golden encodings of 10 §2.2 ----------------------------------------------
    vs.append(vec(
        f"{g}/golden-minimal-system-event", "10 §2.2 golden line 1; 10 §7.2 #21",
        "A minimal system event encodes with sorted keys and no whitespace.",
        "encode", {"event": golden_event("system", "system")},
        {"canonicalJson": '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
                          '"runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-dispatch-event", "10 §2.2 golden line 2; 10 §7.2 #21",
        "A T1 dispatch event encodes with sorted keys at every depth.",
        "encode", {"event": golden_event(
            "system", "system", id="dispatch-event-1",
            actions={"toolDispatch": {"protocol": T1, "operationId": "operation-1", "providerToolCallId": "provider-call-1",
                                      "toolName": "Write", "canonicalArgsHash": WRITE_HASH, "recoveryMode": "reconcile"}},
            refs={"toolCallId": "provider-call-1", "operationId": "operation-1"})},
        {"canonicalJson": '{"actions":{"toolDispatch":{"canonicalArgsHash":"sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",'
                          '"operationId":"operation-1","protocol":"t1_after_preflight_v1","providerToolCallId":"provider-call-1",'
                          '"recoveryMode":"reconcile","toolName":"Write"}},"author":"system","id":"dispatch-event-1",'
                          '"invocationId":"inv-1","partial":false,"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},'
                          '"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-reconcile-event", "10 §2.2 golden line 3; 10 §7.2 #21",
        "A reconcile observation encodes with its fact envelope keys sorted.",
        "encode", {"event": golden_event(
            "system", "system", id="reconcile-event-1", ts=2,
            actions={"toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 1, "payload": {
                "protocol": "tool_reconcile_v1", "operationId": "operation-1", "observation": "diverged",
                "observationSchema": "state_identity_v1", "observationDigest": F.OBSERVATION_DIGEST}}},
            refs={"operationId": "operation-1", "toolCallId": "provider-call-1"})},
        {"canonicalJson": '{"actions":{"toolRecovery":{"kind":"maka.tool.reconcile_result","payload":{"observation":"diverged",'
                          '"observationDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",'
                          '"observationSchema":"state_identity_v1","operationId":"operation-1","protocol":"tool_reconcile_v1"},'
                          '"version":1}},"author":"system","id":"reconcile-event-1","invocationId":"inv-1","partial":false,'
                          '"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},"role":"system","runId":"run-1",'
                          '"sessionId":"sess-1","ts":2,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-text-normalized", "10 §2.2 golden line 4; 10 §2.1 step 2",
        "displayText equal to text and empty attachments/quotes are dropped by normalisation.",
        "encode", {"event": golden_event("user", "user", content={
            "kind": "text", "text": "hi", "displayText": "hi", "attachments": [], "quotes": []})},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"hi"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-empty-inline-references-kept", "10 §2.2 golden line 5; 10 §2.1 step 2",
        "An empty inlineReferences array is kept (it is meaningful).",
        "encode", {"event": golden_event("user", "user", content={"kind": "text", "text": "hi", "inlineReferences": []})},
        {"canonicalJson": '{"author":"user","content":{"inlineReferences":[],"kind":"text","text":"hi"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-proto-is-data", "10 §2.2 golden line 6; 10 §7.1 #4",
        "A __proto__ key is ordinary data in event JSON (unlike the args hash).",
        "encode", {"eventJson": golden_event_json(
            "model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"b":1,"__proto__":{"admin":true}}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"__proto__":{"admin":true},"b":1},"id":"c1",'
                          '"kind":"function_call","name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-utf16-key-order", "10 §2.2 golden line 7; 10 §2.3",
        "Object keys sort by UTF-16 code units, so the astral 😀 sorts before U+FF01.",
        "encode", {"event": golden_event("model", "agent", content={
            "kind": "function_call", "id": "c1", "name": "X", "args": {"！": 1, "😀": 2, "a": 3}})},
        {"canonicalJson": '{"author":"agent","content":{"args":{"a":3,"😀":2,"！":1},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-number-text", "10 §2.2 golden line 8; 10 §2.3",
        "Numbers print as ECMAScript Number::toString: 1.0 as 1, 1e21 as 1e+21, 1e-7 as 1e-7.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"s":1e-7,"n":1e21,"f":1.0}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"f":1,"n":1e+21,"s":1e-7},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-string-escapes", "10 §2.2 golden line 9; 10 §2.3",
        "Control characters are escaped as lowercase \\u00xx; U+007F, non-ASCII and / stay raw.",
        "encode", {"event": golden_event("user", "user", content={"kind": "text", "text": "a\x00b\x1f\x7fé😀\"\\/"})},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"a\\u0000b\\u001f\x7fé😀\\"\\\\/"}'
                          + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-lone-surrogate", "10 §2.2 golden line 10; 10 §2.3",
        "A lone surrogate is written as a lowercase \\udxxx escape.",
        "encode", {"eventJson": golden_event_json("user", "user", '{"kind":"text","text":"a\\ud800b"}')},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"a\\ud800b"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/two-tier-key-order", "10 §2.3 (verified example)",
        "Array-index keys come first in numeric order, then all other keys in UTF-16 order.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent",
            '{"kind":"function_call","id":"c1","name":"X","args":{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,'
            '"4294967294":7,"4294967295":8,"1.5":9}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"2":3,"10":2,"4294967294":7,"-1":6,"01":5,"1.5":9,'
                          '"4294967295":8,"a":4,"b":1},"id":"c1","kind":"function_call","name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/number-text-edge-values", "10 §2.3; 10 §2.4",
        "Edge numbers print as in JavaScript, and an integer beyond 2^53 loses precision as a double.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent",
            '{"kind":"function_call","id":"c1","name":"X","args":{"a":0.000001,"b":123456789012345680000,'
            '"c":5e-7,"d":1.7976931348623157e308,"e":12345678901234567890,"f":100.0}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"a":0.000001,"b":123456789012345680000,"c":5e-7,'
                          '"d":1.7976931348623157e+308,"e":12345678901234567000,"f":100},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/fractional-ts-accepted", "10 §1.1; 10 §7.2 #21",
        "A fractional ts is accepted.",
        "encode", {"event": golden_event("system", "system", ts=1.5)},
        {"canonicalJson": '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
                          '"runId":"run-1","sessionId":"sess-1","ts":1.5,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/null-args-accepted", "10 §1.2; 10 §7.2 #21",
        "function_call args may be null (the key must be present).",
        "encode", {"event": golden_event("model", "agent", content={"kind": "function_call", "id": "c1", "name": "X", "args": None})},
        {"canonicalJson": '{"author":"agent","content":{"args":null,"id":"c1","kind":"function_call","name":"X"}'
                          + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/negative-zero-ts-not-encodable", "10 §2.4; 10 §7.2 #21",
        "ts -0 fails the canonical round trip.",
        "encode", {"eventJson": '{"id":"evt-1","invocationId":"inv-1","runId":"run-1","sessionId":"sess-1","turnId":"turn-1",'
                                '"ts":-0,"partial":false,"role":"system","author":"system"}'},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))
    vs.append(vec(
        f"{g}/negative-zero-args-not-encodable", "10 §2.4; 10 §7.2 #21",
        "-0 inside function_call args fails the canonical round trip.",
        "encode", {"eventJson": golden_event_json("model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"v":-0}}')},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))
    vs.append(vec(
        f"{g}/negative-zero-float-args-not-encodable", "10 §2.4",
        "-0.0 is the same double as -0 and is not encodable either.",
        "encode", {"eventJson": golden_event_json("model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":[-0.0]}')},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))

    # --- decode: accepted values ------------------------------------------------------
    def ok_decode(slug: str, spec: str, description: str, event: dict[str, Any], expected: dict[str, Any] | None = None) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "decode", {"event": event},
                      {"event": expected if expected is not None else event}))

    def bad_decode(slug: str, spec: str, description: str, event: dict[str, Any]) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "decode", {"event": event}, err(SCHEMA_MESSAGE)))

    ok_decode("reconcile-round-trips", "10 §5.1; 10 §7.2 #10",
              "A reconcile observation decodes unchanged.", RC())
    ok_decode("completed-decision-round-trips", "10 §5.1",
              "A completed recovery decision decodes unchanged.", DC())
    ok_decode("parked-decision-round-trips", "10 §5.1",
              "A parked recovery decision decodes unchanged.", DP())
    ok_decode("dispatch-empty-strings-decode", "10 §1.3.1; 10 §7.2 #21",
              "The decoder only type-checks dispatch strings: empty ids and a non-digest hash decode.",
              D_with_tool_dispatch(operationId="", providerToolCallId="", toolName="", canonicalArgsHash="not-a-digest"))
    ok_decode("continuation-start-v1-projection", "10 §1.3.2; 10 §7.2 #11",
              "A continuation-start event with providerProjectionVersion 1 decodes unchanged.",
              continuation_start20("continuation-start", 10, marker=True))
    # §1.3.2's carrier rules belong to the store's start writer (STORE-CONT-002), not to decode:
    # upstream's decoder accepts these (its store refuses them; sqlite-runtime-store.ts:3245).
    ok_decode("continuation-start-claim-repair-with-marker", "10 §1.3.2",
              "A claim_repair start carrying the marker decodes unchanged; the start writer refuses it.",
              continuation_start20("continuation-start", 10, marker=True, provenance="claim_repair"))
    ok_decode("continuation-start-model-carrier", "10 §1.3.2",
              "A continuation start on a model/agent event decodes unchanged; the start writer refuses it.",
              W(continuation_start20("continuation-start", 10, marker=False), role="model", author="agent"))
    ok_decode("permission-closure-sole-action", "10 §1.3; 10 §7.2 #12",
              "permissionClosureAccepted {requestId, reason: timed_out} as the only action decodes.",
              E("closure-1", actions={"permissionClosureAccepted": {"requestId": "request-1", "reason": "timed_out"}}))
    ok_decode("permission-answer-accepted", "10 §1.3; 10 §7.2 #13",
              "permissionAnswerAccepted with exactly {requestId} decodes.",
              E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "request-1"}}))
    ok_decode("user-question-answer-accepted", "10 §1.3; 10 §7.2 #13",
              "userQuestionAnswerAccepted with exactly {requestId} decodes.",
              E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "question-1"}}))
    ok_decode("code-mode-nested-call", "10 §1.5; 10 §7.2 #15",
              "A Code Mode nested call (origin code_mode, hidden, parent refs) decodes.",
              E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
                content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
                refs={"operationId": "nested-op", "toolCallId": "nested-1", "parentToolCallId": "exec-1",
                      "parentOperationId": "outer-op"}))
    ok_decode("source-message-digest-valid", "10 §1.4; 10 §7.2 #16",
              "refs.sourceMessageDigest accepts sha256: plus 64 lowercase hex characters.",
              E("event-1", refs={"sourceMessageDigest": "sha256:" + "0123456789abcdef" * 4}))
    ok_decode("text-display-text-differs-kept", "10 §2.1 step 2",
              "displayText is kept when it differs from text.",
              E("user-1", role="user", author="user", content={"kind": "text", "text": "hi", "displayText": "Hi there"}))
    ok_decode("text-normalization-quotes-kept", "10 §2.1 step 2; 10 §7.2 #17",
              "displayText equal to text and empty attachments are dropped; non-empty quotes are kept.",
              E("user-1", role="user", author="user", content={
                  "kind": "text", "text": "model", "displayText": "model", "attachments": [],
                  "quotes": [{"text": "earlier answer", "label": "Assistant"}]}),
              E("user-1", role="user", author="user", content={
                  "kind": "text", "text": "model", "quotes": [{"text": "earlier answer", "label": "Assistant"}]}))

    # --- decode: refused values -------------------------------------------------------
    base = E("event-1")
    bad_decode("status-null", "10 Conventions; 10 §7.2 #21",
               "An optional envelope field set to null is a schema violation.", W(base, status=None))
    bad_decode("model-visibility-null", "10 Conventions",
               "null never means absent: modelVisibility null is refused.", W(base, modelVisibility=None))
    bad_decode("unknown-top-level-key", "10 §1.1; 10 §7.2 #21",
               "Unknown top-level keys are rejected.", W(base, extra=1))
    bad_decode("empty-id", "10 §1.1; 10 §7.2 #21", "id must be non-empty.", W(base, id=""))
    bad_decode("missing-partial", "10 §1.1",
               "Required keys must be present even when falsy: partial is missing.", drop(base, "partial"))
    bad_decode("ts-string", "10 §1.1", "ts must be a number.", W(base, ts="1"))
    bad_decode("model-visibility-secret", "10 §1.1; 10 §7.2 #21",
               "modelVisibility is a closed enum.", W(base, modelVisibility="secret"))
    bad_decode("function-call-without-args", "10 §1.2",
               "function_call requires the args key (it may be null but must be present).",
               del_in(C(), "content.args"))
    bad_decode("function-response-without-result", "10 §1.2; 10 §7.2 #21",
               "function_response requires the result key.", del_in(O(), "content.result"))
    bad_decode("text-steering-false", "10 §1.2",
               "steering must be literally true when present.",
               E("user-1", role="user", author="user", content={"kind": "text", "text": "hi", "steering": False}))
    bad_decode("observation-digest-uppercase", "10 §5.1; 10 §7.2 #21",
               "observationDigest must be lowercase hex.",
               payload_set(RC(), observationDigest="sha256:" + "A" * 64))
    bad_decode("tool-recovery-version-999", "10 §5.1; 10 §7.2 #10",
               "A recovery fact envelope with version 999 is refused.",
               set_in(RC(), "actions.toolRecovery.version", 999))
    bad_decode("decision-duplicate-evidence", "10 §5.1; 10 §7.2 #21",
               "evidenceEventIds must be pairwise distinct.",
               payload_set(DP(), evidenceEventIds=["call-event-1", "call-event-1", "reconcile-event-1"]))
    bad_decode("parked-decision-with-outcome", "10 §5.1; 10 §7.2 #21",
               "A parked decision may not carry outcomeEventId.",
               payload_set(DP(), outcomeEventId="outcome-event-1"))
    bad_decode("completed-decision-park-reason", "10 §5.1; 10 §7.2 #21",
               "A completed decision must use reasonCode reconcile_matches_expected_state.",
               payload_set(DC(), reasonCode="reconcile_diverged"))
    bad_decode("marker-other-value", "10 §3; 10 §7.2 #21",
               "The decoder refuses a runtimeProtocol marker with another value.",
               set_in(M(), "actions.runtimeProtocol.toolBoundary", "future_protocol"))
    bad_decode("marker-extra-key", "10 §3; 10 §7.2 #21",
               "The decoder refuses a runtimeProtocol marker with an extra key.",
               set_in(M(), "actions.runtimeProtocol.extra", True))
    bad_decode("dispatch-recovery-mode-retry", "10 §1.3.1; 10 §7.2 #21",
               "recoveryMode is a closed enum: retry is refused.", D_with_tool_dispatch(recoveryMode="retry"))
    bad_decode("source-high-water-negative", "10 §1.4; 10 §7.2 #21",
               "refs.sourceRuntimeEventHighWater must be a safe integer >= 0.",
               W(base, refs={"sourceRuntimeEventHighWater": -1}))
    bad_decode("source-message-digest-uppercase", "10 §1.4; 10 §7.2 #16",
               "refs.sourceMessageDigest must be lowercase hex.",
               W(base, refs={"sourceMessageDigest": "sha256:" + "0123456789ABCDEF" * 4}))
    bad_decode("source-message-digest-no-prefix", "10 §1.4; 10 §7.2 #16",
               "refs.sourceMessageDigest must start with sha256:.",
               W(base, refs={"sourceMessageDigest": "0123456789abcdef" * 4}))
    bad_decode("provider-request-trace-id-number", "10 §1.4; 10 §7.2 #16",
               "refs.providerRequestTraceId must be a string.", W(base, refs={"providerRequestTraceId": 7}))
    bad_decode("continuation-start-v2-projection", "10 §1.3.2; 10 §7.2 #11",
               "providerProjectionVersion 2 is refused.",
               continuation_start20("continuation-start", 10, marker=True, version=2))
    closure = {"requestId": "request-1", "reason": "timed_out"}
    bad_decode("permission-closure-extra-key", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted has exactly {requestId, reason}.",
               E("closure-1", actions={"permissionClosureAccepted": {**closure, "extra": 1}}))
    bad_decode("permission-closure-long-request-id", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted refuses an over-long (257-byte) requestId.",
               E("closure-1", actions={"permissionClosureAccepted": {"requestId": "r" * 257, "reason": "timed_out"}}))
    bad_decode("permission-closure-reason-cancelled", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted.reason must be exactly timed_out.",
               E("closure-1", actions={"permissionClosureAccepted": {"requestId": "request-1", "reason": "cancelled"}}))
    bad_decode("permission-closure-with-answer", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted must be the only action key (here with permissionAnswerAccepted).",
               E("closure-1", actions={"permissionClosureAccepted": closure,
                                       "permissionAnswerAccepted": {"requestId": "request-1"}}))
    bad_decode("permission-closure-with-end-invocation", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted must be the only action key (here with endInvocation).",
               E("closure-1", actions={"permissionClosureAccepted": closure, "endInvocation": True}))
    bad_decode("permission-answer-extra-key", "10 §1.3; 10 §7.2 #13",
               "permissionAnswerAccepted has exactly {requestId}.",
               E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "request-1", "extra": 1}}))
    bad_decode("permission-answer-long-request-id", "10 §1.3; 10 §7.2 #13",
               "permissionAnswerAccepted refuses a 257-byte requestId.",
               E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "r" * 257}}))
    bad_decode("user-question-answer-extra-key", "10 §1.3; 10 §7.2 #13",
               "userQuestionAnswerAccepted has exactly {requestId}.",
               E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "question-1", "extra": 1}}))
    bad_decode("user-question-answer-long-request-id", "10 §1.3; 10 §7.2 #13",
               "userQuestionAnswerAccepted refuses a 257-byte requestId.",
               E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "q" * 257}}))
    return "encoding", (
        "RuntimeEvent decode and lossless encode (spec 10 §1, §2.1–§2.4, §5.1): the golden canonical "
        "encodings of §2.2, number and key-order rules, and the accepted and refused shapes of §7.2."
    ), vs
