"""The trial drivers: bring an implementation to a crash point, then kill it (protocol §4.3).

Why one module: every driver does the same three things — write or run up to the point, wait
for the announcement, kill — and hands back the same record; reading them side by side shows
where the two modes differ and nothing else.

* **The common record and the kill.** "The kill was real" is one proof (killed by SIGKILL, not
  its own exit; its cleanup never ran, because the process was blocked at the announcement or
  idle; nothing of its tree survives) and is recorded the same way whether the process was
  idle after a prefix or blocked inside the tool loop.
* **Prefix mode** (the upstream harness, spec 30 §6.3, and §6.2 for the storage modes; needs
  only the ``store`` capability, so an implementation without a runtime loop still gets crash
  evidence): ``reference_ledger`` (P0–P11) creates the run header first, as production does,
  appends the point's committed prefix of the spec's 4-event reference ledger through the
  generic path and kills the idle process after every append returned; ``store_ops`` (the
  §6.2 modes and the recovery-bundle steps) commits T1, the side effect, T2 or the bundle
  steps up to the armed hook.
* **Live mode** (the catalogue's live points sit in three operations): ``turn`` (P0–P9 and the
  in-transaction store hooks of a turn) runs ``runtime.run_turn`` with the crash script and
  kills inside the real tool loop; ``repair`` (P10) crashes a run at the setup point first,
  then kills ``runtime.repair`` between repair's terminal fact and header; ``resume`` (P11,
  the continuation points of spec 20 §4.9 and the claim/start hooks) repairs the crashed run
  in a new process, then kills ``runtime.resume`` at the point.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from crashlab._lab.effects import FIRST, MORE

__all__ = [
    "Driven",
    "Unreached",
    "arm",
    "crash_script",
    "drive_live",
    "drive_prefix",
    "kill_and_prove",
]


class Unreached(Exception):
    """The armed point was never announced: the operation answered instead (must-hit)."""

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.reply = reply


class DriveError(Exception):
    """The implementation refused a step the drive needs (an ``ok: false`` the contract does
    not allow there); a failure of the implementation, not of the harness."""


@dataclass
class Driven:
    """The killed process: its pid (effect-log lines it wrote carry it) and its kill proof."""

    pid: int
    proof: Any
    source: tuple[str, str] | None = None  # (sessionId, runId) of the crashed run, when known
    stderr_tail: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


def ok(reply: Any, op: str) -> Mapping[str, Any]:
    if not reply.ok:
        error = reply.error or {}
        raise DriveError(f"{op} answered ok:false {error.get('code')}: {error.get('message')}")
    return reply.result or {}


def arm(client: Any, failpoint: str, hit: int) -> None:
    """``faults.arm`` (protocol §4.4); an unlisted or refused id is the implementation's failure."""
    if failpoint not in tuple(client.handshake.failpoints or ()):
        raise DriveError(f"failpoint {failpoint} is not listed in the handshake (protocol §3, §4.4: every catalogue "
                         "point of a claimed capability must be armable)")
    ok(client.call("faults.arm", {"failpoint": failpoint, "hit": hit}), "faults.arm")


def kill_and_prove(ctx: Any, client: Any, source: tuple[str, str] | None = None, what: str = "the kill") -> Driven:
    """SIGKILL the process group and record ``kill_was_real`` (protocol §2.3; spec 30 §6.1)."""
    tail = client.stderr_tail
    proof = client.kill()
    real = bool(proof.killed_by_sigkill) and not proof.survivors
    ctx.record("kill_was_real", real, f"{what}: pid {proof.pid} returncode {proof.returncode}"
               + (f", survivors {list(proof.survivors)}" if proof.survivors else ""))
    return Driven(pid=proof.pid, proof=proof, source=source, stderr_tail=tail)


FINAL_TEXT = "done"


def crash_script(protocol: str) -> dict[str, Any]:
    """Write ``notes.txt``, Append to it, then a text step (three provider steps)."""
    return {"userMessage": "write the notes", "protocol": protocol, "steps": [
        {"toolCalls": [{"id": "call-write", "name": "Write", "args": {"path": "notes.txt", "content": FIRST}}]},
        {"toolCalls": [{"id": "call-append", "name": "Append", "args": {"path": "notes.txt", "content": MORE}}]},
        {"text": FINAL_TEXT},
    ]}


def _until(ctx: Any, client: Any, op: str, params: Mapping[str, Any], failpoint: str, hit: int) -> Driven:
    arm(client, failpoint, hit)
    got = client.call_until_failpoint(op, dict(params), failpoint=failpoint, timeout=ctx.remaining())
    if not isinstance(got, str):
        raise Unreached(f"unreached: {failpoint}#{hit} is listed in the handshake but {op} answered without "
                        f"announcing it (ok={got.ok}, {str(got.result if got.ok else got.error)[:300]})",
                        reply={"ok": got.ok, "result": got.result, "error": got.error})
    return kill_and_prove(ctx, client, None, f"kill at {failpoint}#{hit} inside {op}")


def crash_turn(ctx: Any, failpoint: str, hit: int, protocol: str) -> Driven:
    client = ctx.spawn()
    params = {"workspace": str(ctx.workspace), "script": crash_script(protocol)}
    return _until(ctx, client, "runtime.run_turn", params, failpoint, hit)


def drive_live(ctx: Any, point: Any) -> Driven:
    info = point.mode_info("live")
    protocol = ctx.spec.protocol
    if info["drive"] == "turn":
        return crash_turn(ctx, point.failpoint, point.hit, protocol)
    setup = crash_turn(ctx, info.get("setup", "P7"), 1, protocol)  # the run repair / resume start from
    ctx.evidence["setupPid"] = setup.pid
    ws = {"workspace": str(ctx.workspace)}
    if info["drive"] == "repair":
        return _until(ctx, ctx.spawn(), "runtime.repair", ws, point.failpoint, point.hit)
    if info["drive"] != "resume":
        raise DriveError(f"catalogue: unknown live drive {info['drive']!r}")
    client = ctx.spawn()  # repairs, then (armed only afterwards) resumes
    ok(client.call("runtime.repair", ws, timeout=ctx.remaining()), "runtime.repair (setup)")
    return _until(ctx, client, "runtime.resume", ws, point.failpoint, point.hit)


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
