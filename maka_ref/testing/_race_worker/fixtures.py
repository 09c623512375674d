"""Fixture builders of the race worker: spec 30 §7.2's prepared database and worker payloads.

Tests import them (through :mod:`maka_ref.testing.race_worker`) to assert post-states, and the
worker modes build their writes from them. They hold no process plumbing, so they live apart
from the worker's protocol and main loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing import families as fam

__all__ = [
    "APPEND_INVOCATION",
    "APPEND_RUN",
    "APPEND_SESSION",
    "APPEND_TURN",
    "FIXED_TARGET",
    "OTHER_ARGS",
    "SOURCE_IDENTITY",
    "append_event",
    "completed_bundle_events",
    "continuation_claim",
    "continuation_source_events",
    "parked_bundle_events",
    "prepare_database",
    "t1_input",
    "t2_input",
]

OTHER_ARGS = {"path": "notes.txt", "content": "other"}
APPEND_SESSION = "session-1"
APPEND_INVOCATION = "append-invocation"
APPEND_RUN = "append-run"
APPEND_TURN = "append-turn"


def _call(event_id: str = "call-event-1", args: dict[str, Any] | None = None) -> dict[str, Any]:
    call = fam.with_fields(fam.w_call(id=event_id), ts=1)
    if args is not None:
        call["content"]["args"] = dict(args)
    return call


def _dispatch(event_id: str = "dispatch-event-1", args_hash: str = fam.WRITE_NOTES_HASH) -> dict[str, Any]:
    dispatch = fam.with_fields(fam.w_dispatch(id=event_id), ts=2)
    dispatch["actions"]["toolDispatch"]["canonicalArgsHash"] = args_hash
    return dispatch


def t1_input(variant: str = "exact") -> Any:
    """§7.2 T1 for ``operation-1`` (call ts 1, dispatch ts 2, committedAt 2).

    ``variant``: ``exact`` (the prepared database's T1), ``other_args`` (same event ids, args
    ``content: "other"`` and their hash: a conflicting retry, §2.8 → ``duplicate_event_id``),
    ``fresh_ids`` (``call-event-2``/``dispatch-event-2`` for the same provider call, §2.8 →
    ``duplicate_call``).
    """
    from maka_ref._store import T1Input

    call_id, dispatch_id, args = "call-event-1", "dispatch-event-1", None
    if variant == "other_args":
        args = OTHER_ARGS
    elif variant == "fresh_ids":
        call_id, dispatch_id = "call-event-2", "dispatch-event-2"
    elif variant != "exact":
        raise ValueError(f"unknown T1 variant {variant!r}")
    args_hash = canonical_args_hash("Write", args) if args is not None else fam.WRITE_NOTES_HASH
    return T1Input(
        operation_id="operation-1",
        journal_event_id="operation-1_prepared",
        runtime_event=_call(call_id, args),
        dispatch_runtime_event=_dispatch(dispatch_id, args_hash),
        provider_tool_call_id="provider-call-1",
        tool_name="Write",
        canonical_args_hash=args_hash,
        recovery_mode="reconcile",
        committed_at=2,
    )


def t2_input(response_id: str = "outcome-event-1") -> Any:
    """T2 for ``operation-1`` (Appendix A outcome, ts 3, committedAt 20)."""
    from maka_ref._store import T2Input

    return T2Input(
        operation_id="operation-1",
        journal_event_id="operation-1_outcome",
        runtime_event=fam.w_outcome(id=response_id),
        committed_at=20,
    )


def completed_bundle_events() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """§7.2 ``completed``: (reconcile ts 3, outcome ts 4, decision ts 5)."""
    reconcile = fam.with_fields(fam.w_reconcile(id="completed-reconcile"), ts=3)
    outcome = fam.with_fields(fam.w_outcome(id="completed-outcome"), ts=4)
    decision = fam.with_fields(fam.w_decision_completed(id="completed-decision"), ts=5)
    payload = decision["actions"]["toolRecovery"]["payload"]
    payload["outcomeEventId"] = "completed-outcome"
    payload["evidenceEventIds"] = ["call-event-1", "dispatch-event-1", "completed-reconcile", "completed-outcome"]
    return reconcile, outcome, decision


def parked_bundle_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """§7.2 ``parked``: (reconcile ts 3 ``diverged`` digest ``b``×64, decision ts 4)."""
    reconcile = fam.with_fields(fam.w_reconcile("diverged", id="parked-reconcile"), ts=3)
    reconcile["actions"]["toolRecovery"]["payload"]["observationDigest"] = "sha256:" + "b" * 64
    decision = fam.with_fields(fam.w_decision_parked("reconcile_diverged", id="parked-decision"), ts=4)
    decision["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = [
        "call-event-1", "dispatch-event-1", "parked-reconcile"
    ]
    return reconcile, decision


def append_event(worker: int, index: int) -> dict[str, Any]:
    """An ordinary (non-tool) model text event of its own invocation, distinct per worker."""
    return fam.event(
        f"append-w{worker}-e{index}",
        ts=100 + index,
        role="model",
        author="agent",
        content={"kind": "text", "text": f"worker {worker} event {index}"},
        sessionId=APPEND_SESSION,
        invocationId=APPEND_INVOCATION,
        runId=APPEND_RUN,
        turnId=APPEND_TURN,
    )


def prepare_database(root: str | Path, *, with_t1: bool = True, with_continuation_source: bool = False) -> Path:
    """§7.2 (adapted): ``<root>/runtime.sqlite`` created by a store, T1 committed for
    ``operation-1`` when ``with_t1``, the continuation source run (user ts 10, failed terminal
    ts 11 through the barrier) when ``with_continuation_source``; the store is closed before
    workers start. Returns the database path. (The root binding is not used here.)"""
    from maka_ref._store import DB_FILE_NAME, RuntimeStore

    with RuntimeStore.open(root) as store:
        if with_t1:
            store.commit_tool_prepared(t1_input())
        if with_continuation_source:
            user, terminal = continuation_source_events()
            store.append(user)
            store.ensure_terminal_durable(terminal)
    return Path(root) / DB_FILE_NAME


SOURCE_IDENTITY = {
    "sessionId": "session-1",
    "invocationId": "continuation-source-invocation",
    "runId": "continuation-source-run",
    "turnId": "continuation-source-turn",
}


def continuation_source_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """§7.2 source run: user event ts 10 + failed terminal ts 11 (``runtime_interrupted``);
    the spec 30 §2.6 golden prefix/manifest digests are computed over exactly these."""
    base = {**SOURCE_IDENTITY, "partial": False}
    user = {**base, "id": "continuation-source-user", "ts": 10, "role": "user", "author": "user",
            "content": {"kind": "text", "text": "continue after this completed boundary"}}
    terminal = {**base, "id": "continuation-source-terminal", "ts": 11, "role": "system", "author": "system",
                "status": "failed",
                "actions": {"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}}}
    return user, terminal


def continuation_claim(
    store: Any, claim_id: str, target: tuple[str, str, str], *, source_run: str = "continuation-source-run",
    up_to: int | None = None, claimed_at: int = 20, ancestors: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """A ``continuation_claim_v1`` over the store's current prefix of ``source_run`` (session-1),
    target ``(invocation, run, turn)``; ``ancestors`` are older segments (JSON or objects)."""
    from maka_ref._plan.prefix.digests import provider_replay_digest
    from maka_ref._plan.prefix.immutable import build_boundary_cursor, segment_of

    source = segment_of(store.read_immutable_prefix("session-1", source_run, up_to))
    boundary = build_boundary_cursor([*ancestors, source])
    invocation, run_id, turn = target
    header = {
        "runId": run_id, "sessionId": "session-1", "turnId": turn, "invocationId": invocation,
        "status": "created", "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model",
        "cwd": "/workspace", "permissionMode": "ask", "createdAt": claimed_at, "updatedAt": claimed_at,
        "parentRunId": source.identity.run_id, "parentTurnId": source.identity.turn_id,
        "continuationSource": {
            "protocol": "continuation_source_v2", "claimId": claim_id,
            "boundaryDigest": boundary.manifest_digest,
            "sourceInvocationId": source.identity.invocation_id, "sourceRunId": source.identity.run_id,
            "sourceTurnId": source.identity.turn_id,
            "sourceRuntimeEventHighWater": source.position.last_event_seq,
            "sourcePrefixDigest": source.prefix_digest, "replayManifestDigest": boundary.manifest_digest,
        },
    }
    return {
        "protocol": "continuation_claim_v1", "claimId": claim_id, "boundaryDigest": boundary.manifest_digest,
        "boundary": boundary.to_json(), "providerProjectionVersion": 1,
        "providerReplayDigest": provider_replay_digest([]),
        "target": {"sessionId": "session-1", "invocationId": invocation, "runId": run_id, "turnId": turn},
        "targetRunHeader": header, "claimedAt": claimed_at,
    }


FIXED_TARGET = ("fixed-target-invocation", "fixed-target-run", "fixed-target-turn")
