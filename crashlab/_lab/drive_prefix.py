"""Prefix mode: write the committed prefix through the store operations, then kill.

Why this mode exists beside the live one: it is the upstream harness (spec 30 §6.3, and §6.2
for the storage modes) and needs only the ``store`` capability, so an implementation that has
no runtime loop yet still gets crash evidence. Two drives:

* ``reference_ledger`` (P0–P11): create the run header first, as production does (spec 30
  §6.3 step 1), append the point's committed prefix of the spec's 4-event reference ledger
  through the generic path, and kill the idle process after every append returned;
* ``store_ops`` (spec 30 §6.2 modes and the recovery-bundle steps): commit T1, the side
  effect, T2 or the recovery bundle of the §6.2 fixture in order, with the mode's store hook
  armed; an inside mode is killed blocked in the open transaction at the announcement, an
  after-commit mode idle after its last write returned. A mode that never announces its armed
  hook is *unreached*.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from crashlab._lab.drive_common import Driven, Unreached, arm, kill_and_prove, ok

__all__ = ["drive_prefix"]

IDENT = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
READ_ARGS = {"path": "/workspace/README.md"}
READ_HASH = "sha256:ca1c32b2363423dbe2d9b7d7a8e2afdd335bb7e7cbb7c95975e8dbbf32e4d134"  # spec 30 §0.3 golden
OP = "operation-1"
REFS = {"operationId": OP, "toolCallId": "provider-call-1"}


def header(ident: Mapping[str, str], cwd: str) -> dict[str, Any]:
    """The run header of spec 30 §6.3 step 1 (created before any RuntimeEvent)."""
    return {"sessionId": ident["sessionId"], "runId": ident["runId"], "invocationId": ident["invocationId"],
            "turnId": ident["turnId"], "status": "running", "backendKind": "fake", "llmConnectionSlug": "fake",
            "modelId": "fake-model", "cwd": cwd, "permissionMode": "ask", "createdAt": 1, "updatedAt": 1}


def _event(eid: str, ts: int, role: str, author: str, **rest: Any) -> dict[str, Any]:
    return {"id": eid, **IDENT, "ts": ts, "partial": False, "role": role, "author": author, **rest}


def fixture_params(ws: str) -> dict[str, dict[str, Any]]:
    """The spec 30 §6.2 fixture, as the params of each store operation."""
    call = _event("call-event-1", 1, "model", "agent", refs=dict(REFS),
                  content={"kind": "function_call", "id": "provider-call-1", "name": "Read", "args": dict(READ_ARGS)})
    dispatch = _event("dispatch-event-1", 1, "system", "system", refs=dict(REFS), actions={"toolDispatch": {
        "protocol": "t1_after_preflight_v1", "operationId": OP, "providerToolCallId": "provider-call-1",
        "toolName": "Read", "canonicalArgsHash": READ_HASH, "recoveryMode": "reconcile"}})
    response = _event("response-event-1", 2, "tool", "tool", refs=dict(REFS),
                      content={"kind": "function_response", "id": "provider-call-1", "name": "Read", "result": "contents"})
    reconcile = _event("reconcile-event-1", 2, "system", "system", refs=dict(REFS), actions={"toolRecovery": {
        "kind": "maka.tool.reconcile_result", "version": 1, "payload": {
            "protocol": "tool_reconcile_v1", "operationId": OP, "observation": "matches_expected_state",
            "observationSchema": "state_identity_v1", "observationDigest": "sha256:" + "a" * 64}}})
    decision = _event("decision-event-1", 3, "system", "system", refs=dict(REFS), actions={"toolRecovery": {
        "kind": "maka.tool.recovery_decision", "version": 1, "payload": {
            "protocol": "tool_recovery_v1", "operationId": OP, "disposition": "completed",
            "reasonCode": "reconcile_matches_expected_state", "outcomeEventId": "response-event-1",
            "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1", "response-event-1"]}}})
    return {
        "t1": {"workspace": ws, "operationId": OP, "journalEventId": f"{OP}_prepared", "callEvent": call,
               "dispatchEvent": dispatch, "providerToolCallId": "provider-call-1", "toolName": "Read",
               "canonicalArgsHash": READ_HASH, "recoveryMode": "reconcile", "committedAt": 1},
        "t2": {"workspace": ws, "operationId": OP, "journalEventId": f"{OP}_outcome", "responseEvent": response,
               "committedAt": 2},
        "bundle": {"workspace": ws, "operationId": OP, "reconcileEvent": reconcile, "decisionEvent": decision,
                   "outcomeEvent": response},
    }


def _write_durably(path: Path, data: bytes) -> None:
    """The harness's own side effect (the marker) is real and durable — file and directory
    fsynced — so a power-loss fault takes from the world only what the implementation wrote."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_OPS = {"t1": "store.commit_tool_prepared", "t2": "store.commit_tool_outcome", "bundle": "store.commit_recovery_bundle"}


def drive_prefix(ctx: Any, point: Any) -> Driven:
    info = point.mode_info("prefix")
    ws = str(ctx.workspace)
    client = ctx.spawn()
    ok(client.call("store.open", {"workspace": ws}), "store.open")
    if info["drive"] == "reference_ledger":
        from maka_ref import reference_crash_ledger

        events = [dict(e) for e in reference_crash_ledger(point.id)]
        ident = {k: events[0][k] for k in ("sessionId", "invocationId", "runId", "turnId")}
        ok(client.call("store.create_run", {"workspace": ws, "header": header(ident, ws)}), "store.create_run")
        for seq, event in enumerate(events, 1):
            result = ok(client.call("store.append", {"workspace": ws, "event": event}), "store.append")
            if result.get("created") is not True:
                raise Unreached(f"store.append of {event['id']} answered created={result.get('created')!r}")
        ctx.evidence["prefixEventIds"] = [e["id"] for e in events]
        return kill_and_prove(ctx, client, (ident["sessionId"], ident["runId"]), "kill of the idle writer")
    ok(client.call("store.create_run", {"workspace": ws, "header": header(IDENT, ws)}), "store.create_run")
    params = fixture_params(ws)
    if point.failpoint:
        arm(client, point.failpoint, point.hit)
    source = (IDENT["sessionId"], IDENT["runId"])
    for step in info["steps"]:
        if step == "effect":  # spec 30 §6.2: after_effect writes the marker, then blocks
            _write_durably(Path(ws) / "effect.marker", b"effect-happened")
            continue
        if point.failpoint:
            got = client.call_until_failpoint(_OPS[step], params[step], failpoint=point.failpoint, timeout=ctx.remaining())
            if isinstance(got, str):
                return kill_and_prove(ctx, client, source, f"kill at {point.failpoint}#{point.hit} inside {_OPS[step]}")
            ok(got, _OPS[step])
        else:
            ok(client.call(_OPS[step], params[step]), _OPS[step])
    if point.failpoint:
        raise Unreached(f"unreached: {point.failpoint}#{point.hit} was armed but {info['steps']} completed without "
                        "announcing it")
    return kill_and_prove(ctx, client, source, "kill of the idle writer after its last commit")
