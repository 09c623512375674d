"""The continuation authority through the wire protocol (spec 30 §2.6; spec 20 §3.10–§3.12;
spec 10 §1.3.2): STORE-CONT-*.

Why these clauses exist: the *carrier* of a continuation start — a system/system event, not
partial, without content or status, whose actions are exactly ``{continuationStart}`` or
``{continuationStart, runtimeProtocol}``, the marker only on a live (``runtime_admission``)
start — is enforced by the store's start writer, not by the RuntimeEvent decoder. That is
where upstream enforces it (its decoder accepts any carrier; ``assertContinuationStartEvent``,
``storage/src/sqlite-runtime-store.ts:3245``, refuses a wrong one, and its store test builds
such an event and expects the *writer* to reject it). An earlier harness checked the rule as a
decode vector and so failed the implementation the spec was written from; these clauses
check it where it lives (protocol §4.2.2, capability ``store.continuation``).

Each clause persists the claim's source run (a user event and a failed terminal) through
``store.append``, builds a ``continuation_claim_v1`` over the source prefix read back (the
prefix and manifest digests of spec 20 §1.9, computed by the reference codec — they are golden
values: spec 30 §2.6 and the anchor vectors pin them), and acquires it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.clauses import clause, expect_equal, expect_ok
from conformance.suite._store_support import Store, expect_rejected, new_workspace, wire

SOURCE = {"sessionId": "session-1", "invocationId": "source-invocation", "runId": "source-run",
          "turnId": "source-turn"}
TARGET = {"sessionId": "session-1", "invocationId": "target-invocation", "runId": "target-run",
          "turnId": "target-turn"}
CLAIMED_AT = 20
START_CODES = ("continuation_start_invalid",)


def _source_events() -> list[dict[str, Any]]:
    base = {**SOURCE, "partial": False}
    return [
        {**base, "id": "source-user", "ts": 10, "role": "user", "author": "user",
         "content": {"kind": "text", "text": "continue after this boundary"}},
        {**base, "id": "source-terminal", "ts": 11, "role": "system", "author": "system", "status": "failed",
         "actions": {"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}}},
    ]


def _claim(events: list[Any]) -> dict[str, Any]:
    """A ``continuation_claim_v1`` (spec 20 §3.10–§3.11) over ``events``, the source run read back."""
    from maka_ref._plan.prefix.digests import provider_replay_digest
    from maka_ref._plan.prefix.immutable import build_boundary_cursor, build_immutable_prefix, segment_of

    source = segment_of(build_immutable_prefix([(i + 1, e) for i, e in enumerate(wire(events))]))
    boundary = build_boundary_cursor([source])
    header = {
        "runId": TARGET["runId"], "sessionId": TARGET["sessionId"], "turnId": TARGET["turnId"],
        "invocationId": TARGET["invocationId"], "status": "created", "backendKind": "fake",
        "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace", "permissionMode": "ask",
        "createdAt": CLAIMED_AT, "updatedAt": CLAIMED_AT,
        "parentRunId": SOURCE["runId"], "parentTurnId": SOURCE["turnId"],
        "continuationSource": {
            "protocol": "continuation_source_v2", "claimId": "claim-1", "boundaryDigest": boundary.manifest_digest,
            "sourceInvocationId": SOURCE["invocationId"], "sourceRunId": SOURCE["runId"],
            "sourceTurnId": SOURCE["turnId"], "sourceRuntimeEventHighWater": source.position.last_event_seq,
            "sourcePrefixDigest": source.prefix_digest, "replayManifestDigest": boundary.manifest_digest,
        },
    }
    return {
        "protocol": "continuation_claim_v1", "claimId": "claim-1", "boundaryDigest": boundary.manifest_digest,
        "boundary": boundary.to_json(), "providerProjectionVersion": 1,
        "providerReplayDigest": provider_replay_digest([]), "target": dict(TARGET), "targetRunHeader": header,
        "claimedAt": CLAIMED_AT,
    }


def _start(claim: Mapping[str, Any], provenance: str = "runtime_admission", *, marker: bool = False,
           event_id: str = "start-1") -> dict[str, Any]:
    """The continuation-start event of ``claim`` (spec 20 §3.12): ``event_seq`` 1 of the target."""
    source = claim["boundary"]["segments"][-1]
    actions: dict[str, Any] = {"continuationStart": {
        "protocol": "continuation_start_v2", "provenance": provenance, "claimId": claim["claimId"],
        "boundaryDigest": claim["boundaryDigest"],
        "immediateSource": {**source["identity"], "highWater": source["position"]["lastEventSeq"],
                            "prefixDigest": source["prefixDigest"]},
        "replayManifestDigest": claim["boundary"]["manifestDigest"],
        "providerProjectionVersion": 1, "providerReplayDigest": claim["providerReplayDigest"],
    }}
    if marker:
        actions["runtimeProtocol"] = {"toolBoundary": "t1_after_preflight_v1"}
    return {"id": event_id, **TARGET, "ts": CLAIMED_AT + 1, "partial": False, "role": "system", "author": "system",
            "actions": actions}


def _claimed(maka: Any, tmp_path: Path) -> tuple[Store, dict[str, Any]]:
    store = Store(maka, new_workspace(tmp_path))
    store.open()
    for event in _source_events():
        store.append(event)
    claim = _claim(store.events(SOURCE))
    result = expect_ok(store.call("store.claim_continuation", {"workspace": store.ws, "claim": claim}),
                       "store.claim_continuation")
    expect_equal("acquired", result.get("kind"), what="the first claim of a fresh boundary")
    return store, claim


def _commit(store: Store, claim: Mapping[str, Any], event: Mapping[str, Any], provenance: str) -> Any:
    return store.call("store.commit_continuation_start",
                      {"workspace": store.ws, "claim": claim, "event": event, "provenance": provenance})


@clause("STORE-CONT-001", spec="30 §2.6; 20 §3.10; 20 §3.12", capability="store.continuation",
        title="an acquired claim takes its live start at event_seq 1; an exact retry is a no-op; a second claim of the boundary is 'existing'")
def test_live_start(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.6: ``claimContinuation`` answers ``acquired`` once and ``existing`` for the same
    boundary; ``commitContinuationStart`` inserts the start as the target run's first event
    (``event_seq`` 1, spec 20 §3.12), carrying the T1 marker when the run is T1 (spec 10 §3);
    the byte-identical retry answers ``created: false``."""
    store, claim = _claimed(maka, tmp_path)
    again = expect_ok(store.call("store.claim_continuation", {"workspace": store.ws, "claim": claim}),
                      "store.claim_continuation")
    expect_equal("existing", again.get("kind"), what="a second claim of the same boundary")
    start = _start(claim, marker=True)
    first = expect_ok(_commit(store, claim, start, "runtime_admission"), "store.commit_continuation_start")
    expect_equal({"created": True, "runtimeEventSeq": 1},
                 {k: first.get(k) for k in ("created", "runtimeEventSeq")}, what="the live start")
    retry = expect_ok(_commit(store, claim, start, "runtime_admission"), "store.commit_continuation_start (retry)")
    expect_equal({"created": False, "runtimeEventSeq": 1},
                 {k: retry.get(k) for k in ("created", "runtimeEventSeq")}, what="the exact retry")
    expect_equal(["start-1"], store.event_ids(TARGET), what="the target run's events")


def _carrier_violations() -> list[Any]:
    """(label, edit of the start event): each breaks one carrier rule of spec 10 §1.3.2."""
    def set_(**fields: Any) -> Any:
        return lambda event: event.update(fields)

    def extra_action(event: dict[str, Any]) -> None:
        event["actions"]["endInvocation"] = False

    return [
        ("model-role", set_(role="model")),
        ("agent-author", set_(author="agent")),
        ("partial", set_(partial=True)),
        ("status", set_(status="completed")),
        ("content", set_(content={"kind": "text", "text": "continue"})),
        ("extra-action", extra_action),
    ]


@pytest.mark.parametrize(
    "label,edit",
    [pytest.param(label, edit, id=label,
                  marks=clause(f"STORE-CONT-002-{label}", spec="10 §1.3.2; 30 §2.6", capability="store.continuation",
                               title=f"the start writer refuses a continuation start whose carrier breaks §1.3.2 ({label})"))
     for label, edit in _carrier_violations()],
)
def test_carrier_refused(maka: Any, tmp_path: Path, label: str, edit: Any) -> None:
    """spec 10 §1.3.2: the event carrying ``continuationStart`` is system/system, not partial,
    without content or status, with actions exactly ``{continuationStart[, runtimeProtocol]}``.
    The start writer refuses any other carrier (``continuation_start_invalid``, protocol codes
    §2.6) and writes nothing; the claim then still takes a correct start."""
    store, claim = _claimed(maka, tmp_path)
    start = _start(claim)
    bad = copy.deepcopy(start)
    edit(bad)
    expect_rejected(_commit(store, claim, bad, "runtime_admission"), "store.commit_continuation_start", START_CODES,
                    f"a start with a wrong carrier ({label})")
    expect_equal([], store.event_ids(TARGET), what=f"the target run after refusing the {label} start")
    expect_ok(_commit(store, claim, start, "runtime_admission"), "store.commit_continuation_start (correct start)")


@clause("STORE-CONT-003", spec="10 §1.3.2; 10 §3; 30 §2.6", capability="store.continuation",
        title="the T1 marker rides only on a live start: a claim_repair start with the marker is refused, without it accepted")
def test_marker_only_on_a_live_start(maka: Any, tmp_path: Path) -> None:
    """spec 10 §1.3.2 ("the marker is only allowed when provenance is runtime_admission"), §3
    (the marker sits on the first canonical event of a run that really wired T1); spec 30 §2.6:
    the repair start writer takes only ``claim_repair`` starts and the live writer only
    ``runtime_admission`` ones."""
    store, claim = _claimed(maka, tmp_path)
    expect_rejected(_commit(store, claim, _start(claim, "claim_repair", marker=True), "claim_repair"),
                    "store.commit_continuation_start", START_CODES, "a claim_repair start carrying the marker")
    expect_rejected(_commit(store, claim, _start(claim, "claim_repair"), "runtime_admission"),
                    "store.commit_continuation_start", START_CODES, "a claim_repair start through the live writer")
    expect_equal([], store.event_ids(TARGET), what="the target run after the refusals")
    result = expect_ok(_commit(store, claim, _start(claim, "claim_repair"), "claim_repair"),
                       "store.commit_continuation_start (repair start)")
    expect_equal(1, result.get("runtimeEventSeq"), what="the repair start's event_seq")
