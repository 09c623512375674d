"""Shared fixtures for the ``tests/test_plan_continuation_*.py`` files (spec 20 §3, §8 items 9–50).

Event builders follow the anchor tests' shapes (``textEvent`` etc.); :class:`MemoryWorld` is
the in-memory :class:`~maka_ref._plan.continuation.planner.ContinuationWorld` used wherever a
scenario of spec 20 §8 needs a store (headers, pinned prefixes, claim states, run lists).
"""

from __future__ import annotations

from typing import Any

from maka_ref._plan.continuation.claims import ClaimState
from maka_ref._plan.prefix.immutable import build_immutable_prefix
from maka_ref._plan.prefix.replay import CompositeReplayPlan, build_composite_replay_plan

T1 = "t1_after_preflight_v1"
SESSION = "session-1"


def ident(n: int | str, session: str = SESSION) -> dict[str, str]:
    return {"sessionId": session, "invocationId": f"invocation-{n}", "runId": f"run-{n}", "turnId": f"turn-{n}"}


def ev(id: str, role: str = "user", n: int | str = 1, ts: int = 1, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": id,
        **ident(n),
        "ts": ts,
        "partial": False,
        "role": role,
        "author": {"user": "user", "model": "agent", "tool": "tool", "system": "system"}[role],
        "content": {"kind": "text", "text": id},
    }
    out.update(fields)
    return {k: v for k, v in out.items() if v is not None}


def user(id: str = "user-1", n: int | str = 1, t1: bool = False, **fields: Any) -> dict[str, Any]:
    if t1:
        fields.setdefault("actions", {"runtimeProtocol": {"toolBoundary": T1}})
    return ev(id, "user", n, **fields)


def model_text(id: str, n: int | str = 1, text: str | None = None, **fields: Any) -> dict[str, Any]:
    return ev(id, "model", n, content={"kind": "text", "text": id if text is None else text}, **fields)


def thinking(id: str, n: int | str = 1, signature: str = "signed-1") -> dict[str, Any]:
    return ev(id, "model", n, content={"kind": "thinking", "text": "thinking", "signature": signature})


def call(id: str, call_id: str = "tool-1", name: str = "Bash", n: int | str = 1) -> dict[str, Any]:
    return ev(id, "model", n, content={"kind": "function_call", "id": call_id, "name": name, "args": {}})


def result(id: str, call_id: str = "tool-1", name: str = "Bash", n: int | str = 1, **fields: Any) -> dict[str, Any]:
    return ev(
        id, "tool", n, content={"kind": "function_response", "id": call_id, "name": name, "result": "ok"}, **fields
    )


def terminal(
    id: str, n: int | str = 1, status: str = "failed", failure_class: str | None = "provider_error", **fields: Any
) -> dict:
    actions: dict[str, Any] = {"endInvocation": True}
    if status == "failed" and failure_class is not None:
        actions["stateDelta"] = {"failureClass": failure_class}
    if status in ("aborted", "cancelled"):
        actions["stateDelta"] = {"abortSource": "user"}
    fields.setdefault("content", None)
    return ev(id, "system", n, status=status, actions=actions, **fields)


def legacy_start(id: str, n: int | str) -> dict[str, Any]:
    """A v1 fixture's first event: an ordinary actions-only fact (§3.12 last bullet)."""
    return ev(id, "system", n, content=None, actions={"stateDelta": {"continuationStart": True}})


def permission_request(id: str, request_id: str = "perm-1", n: int | str = 1) -> dict[str, Any]:
    return ev(id, "system", n, content=None, actions={"permissionRequest": {"requestId": request_id}})


def header(n: int | str, status: str = "failed", **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        **ident(n),
        "status": status,
        "backendKind": "fake",
        "llmConnectionSlug": "conn",
        "modelId": "model-1",
        "cwd": "/workspace/repo",
        "permissionMode": "ask",
        "createdAt": 1,
        "updatedAt": 2,
        "workspaceIdentity": "workspace-1",
    }
    if status == "failed":
        out["failureClass"] = "provider_error"
    if status == "cancelled":
        out["abortSource"] = "user"
    out.update(fields)
    return {k: v for k, v in out.items() if v is not None}


def prefix(events: list[dict[str, Any]], high_water: int | None = None):
    rows = [(i + 1, e) for i, e in enumerate(events)]
    if high_water is not None:
        rows = rows[:high_water]
    return build_immutable_prefix(rows, high_water=high_water)


class MemoryWorld:
    """In-memory world: headers, events, claim states and session runs."""

    def __init__(self) -> None:
        self.headers: dict[str, dict[str, Any]] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.claims: dict[str, ClaimState] = {}
        self.session_cwd = "/workspace/repo"
        self.observation: dict[str, Any] | None = {
            "workspaceIdentity": "workspace-1",
            "backgroundOperationsSettled": True,
            "availableToolNames": ["Bash", "Write"],
        }
        self.prefix_override: dict[str, Any] = {}
        self.reads: list[tuple[str, Any]] = []

    def add(self, hdr: dict[str, Any], events: list[dict[str, Any]]) -> None:
        self.headers[hdr["runId"]] = hdr
        self.events[hdr["runId"]] = events

    # planner readers
    def read_run_header(self, session_id: str, run_id: str):
        if run_id not in self.headers:
            raise KeyError(f"ENOENT {run_id}")
        return self.headers[run_id]

    def read_prefix(self, session_id: str, run_id: str, up_to_event_seq: int | None = None):
        self.reads.append((run_id, up_to_event_seq))
        if run_id in self.prefix_override:
            value = self.prefix_override[run_id]
            if isinstance(value, Exception):
                raise value
            return value
        if run_id not in self.events:
            raise KeyError(f"ENOENT {run_id}")
        return prefix(self.events[run_id], up_to_event_seq)

    def read_claim_state(self, boundary_digest: str):
        return self.claims.get(boundary_digest)

    def list_session_runs(self, session_id: str):
        return sorted(self.headers.values(), key=lambda h: (h["createdAt"], h["runId"]))

    # host wrapper readers
    def inspect(self, session_id: str):
        if self.observation is None:
            raise RuntimeError("inspector failed")
        return self.observation

    def read_session_cwd(self, session_id: str) -> str:
        return self.session_cwd


class ClaimlessWorld(MemoryWorld):
    """A world without the optional claim-state dependency."""

    read_claim_state = None  # type: ignore[assignment]


def ids(*values: str):
    return iter(values)


DEFAULT_IDS = ("invocation-2", "run-2", "turn-2", "claim-2")


def v2_child(
    world: MemoryWorld,
    ancestors: list[str],
    n: int | str,
    child_events: list[dict[str, Any]],
    *,
    claim_id: str | None = None,
    claimed_at: int = 100,
    provenance: str = "runtime_admission",
    status: str = "failed",
    record_claim: bool = True,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Add a v2 continuation run ``n`` of the ancestor runs ``ancestors`` (oldest first).

    Returns ``(claim, start event, header)``; the start event is prepended to
    ``child_events``. Ancestors are read at their full current prefix.
    """
    claim_id = claim_id or f"claim-{n}"
    prefixes = [prefix(world.events[r]) for r in ancestors]
    replay = build_composite_replay_plan(prefixes)
    assert isinstance(replay, CompositeReplayPlan), replay
    immediate = replay.boundary.immediate_source
    manifest = replay.boundary.manifest_digest
    target = {k: v for k, v in ident(n).items()}
    start_payload = {
        "protocol": "continuation_start_v2",
        "provenance": provenance,
        "claimId": claim_id,
        "boundaryDigest": manifest,
        "immediateSource": {**immediate.identity.to_json(), "highWater": immediate.position.last_event_seq,
                            "prefixDigest": immediate.prefix_digest},
        "replayManifestDigest": manifest,
        "providerProjectionVersion": 1,
        "providerReplayDigest": replay.provider_replay_digest,
    }
    actions: dict[str, Any] = {"continuationStart": start_payload}
    if provenance == "runtime_admission":
        actions["runtimeProtocol"] = {"toolBoundary": T1}
    start = {"id": f"start-{n}", **target, "ts": claimed_at, "partial": False, "role": "system",
             "author": "system", "actions": actions}
    source_v2 = {
        "protocol": "continuation_source_v2",
        "claimId": claim_id,
        "boundaryDigest": manifest,
        "sourceInvocationId": immediate.identity.invocation_id,
        "sourceRunId": immediate.identity.run_id,
        "sourceTurnId": immediate.identity.turn_id,
        "sourceRuntimeEventHighWater": immediate.position.last_event_seq,
        "sourcePrefixDigest": immediate.prefix_digest,
        "replayManifestDigest": manifest,
    }
    claimed_header = header(n, status="created", createdAt=claimed_at, updatedAt=claimed_at,
                            parentRunId=immediate.identity.run_id, parentTurnId=immediate.identity.turn_id,
                            continuationSource=source_v2)
    hdr = dict(claimed_header)
    hdr.update({"status": status, "updatedAt": claimed_at + 5})
    if status == "failed":
        hdr["failureClass"] = "provider_error"
    if status == "cancelled":
        hdr["abortSource"] = "user"
    claim = {
        "protocol": "continuation_claim_v1",
        "claimId": claim_id,
        "boundaryDigest": manifest,
        "boundary": replay.boundary.to_json(),
        "providerProjectionVersion": 1,
        "providerReplayDigest": replay.provider_replay_digest,
        "target": target,
        "targetRunHeader": claimed_header,
        "claimedAt": claimed_at,
    }
    world.add(hdr, [start, *child_events])
    if record_claim:
        world.claims[manifest] = ClaimState(claim, start["id"], provenance)
    return claim, start, hdr
