"""The events and store requests a generated write schedule is made of.

Why plain builders: a schedule must read like a story when it is shrunk ("append user, T1,
T2, retry T1 with another committedAt"), so every request is built here from a handful of
values in the producer conventions of spec 10 §1.6 and spec 30 Appendix A (the same shapes as
:mod:`maka_ref.testing.store_strategies`), and nothing depends on the store that will receive
it. The ``canonicalArgsHash`` is computed with the reference codec: it is an *input* the
caller must supply (spec 30 §2.3), not an answer under test.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Operation", "Run", "bundle_params", "call_event", "dispatch_event", "response_event", "t1_params",
           "t2_params", "terminal_event", "text_event"]

T1 = "t1_after_preflight_v1"


@dataclass
class Run:
    session_id: str
    run_id: str
    invocation_id: str
    turn_id: str
    sealed: bool = False

    def envelope(self, event_id: str, ts: int, role: str, author: str) -> dict[str, Any]:
        return {"id": event_id, "invocationId": self.invocation_id, "runId": self.run_id,
                "sessionId": self.session_id, "turnId": self.turn_id, "ts": ts, "partial": False,
                "role": role, "author": author}


@dataclass
class Operation:
    run: Run
    operation_id: str
    call_id: str
    name: str
    args: Any
    mode: str
    call: dict[str, Any] = field(default_factory=dict)
    dispatch: dict[str, Any] = field(default_factory=dict)
    state: str = "prepared"  # prepared | outcome | bundled

    @property
    def args_hash(self) -> str:
        from maka_ref import canonical_args_hash

        return canonical_args_hash(self.name, self.args)


def text_event(run: Run, event_id: str, ts: int, text: str, *, user: bool, marker: bool = False) -> dict[str, Any]:
    e = run.envelope(event_id, ts, "user" if user else "model", "user" if user else "agent")
    e["content"] = {"kind": "text", "text": text}
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def terminal_event(run: Run, event_id: str, ts: int, status: str) -> dict[str, Any]:
    e = run.envelope(event_id, ts, "system", "system")
    e["status"] = status
    e["actions"] = {"endInvocation": True}
    return e


def call_event(op: Operation, event_id: str, ts: int) -> dict[str, Any]:
    e = op.run.envelope(event_id, ts, "model", "agent")
    e["content"] = {"kind": "function_call", "id": op.call_id, "name": op.name, "args": copy.deepcopy(op.args)}
    e["refs"] = {"toolCallId": op.call_id}
    return e


def dispatch_event(op: Operation, event_id: str, ts: int, args_hash: str | None = None) -> dict[str, Any]:
    e = op.run.envelope(event_id, ts, "system", "system")
    e["actions"] = {"toolDispatch": {"protocol": T1, "operationId": op.operation_id, "providerToolCallId": op.call_id,
                                     "toolName": op.name, "canonicalArgsHash": args_hash or op.args_hash,
                                     "recoveryMode": op.mode}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def response_event(op: Operation, event_id: str, ts: int, result: Any, is_error: bool) -> dict[str, Any]:
    e = op.run.envelope(event_id, ts, "tool", "tool")
    e["content"] = {"kind": "function_response", "id": op.call_id, "name": op.name, "result": result,
                    "isError": is_error}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def _recovery(op: Operation, event_id: str, ts: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = op.run.envelope(event_id, ts, "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def t1_params(op: Operation, committed_at: int, args_hash: str | None = None) -> dict[str, Any]:
    return {"operationId": op.operation_id, "journalEventId": f"{op.operation_id}_prepared",
            "callEvent": copy.deepcopy(op.call), "dispatchEvent": copy.deepcopy(op.dispatch),
            "providerToolCallId": op.call_id, "toolName": op.name,
            "canonicalArgsHash": args_hash or op.args_hash, "recoveryMode": op.mode, "committedAt": committed_at}


def t2_params(op: Operation, response: dict[str, Any], committed_at: int) -> dict[str, Any]:
    return {"operationId": op.operation_id, "journalEventId": f"{op.operation_id}_outcome",
            "responseEvent": response, "committedAt": committed_at}


def bundle_params(op: Operation, ts: int, observation: str) -> dict[str, Any]:
    """A recovery bundle (spec 30 §2.5): completed when the observation matches, else parked."""
    reconcile = _recovery(op, f"{op.operation_id}_reconcile", ts, "maka.tool.reconcile_result", {
        "protocol": "tool_reconcile_v1", "operationId": op.operation_id, "observation": observation,
        "observationSchema": "state_identity_v1", "observationDigest": "sha256:" + "a" * 64})
    evidence = [op.call["id"], op.dispatch["id"], reconcile["id"]]
    params: dict[str, Any] = {"operationId": op.operation_id, "reconcileEvent": reconcile}
    if observation == "matches_expected_state":
        outcome = response_event(op, f"{op.operation_id}_response", ts + 1, "recovered", False)
        payload = {"protocol": "tool_recovery_v1", "operationId": op.operation_id, "disposition": "completed",
                   "reasonCode": "reconcile_matches_expected_state", "outcomeEventId": outcome["id"],
                   "evidenceEventIds": evidence + [outcome["id"]]}
        params["outcomeEvent"] = outcome
    else:
        reason = {"diverged": "reconcile_diverged", "matches_prior_state": "reconcile_matches_prior_state"}
        payload = {"protocol": "tool_recovery_v1", "operationId": op.operation_id, "disposition": "parked",
                   "reasonCode": reason.get(observation, "reconcile_unreadable"), "evidenceEventIds": evidence}
    params["decisionEvent"] = _recovery(op, f"{op.operation_id}_decision", ts + 2, "maka.tool.recovery_decision",
                                        payload)
    return params
