"""Synthetic ledgers of realistic shape for the benchmarks.

One T1-protocol run: the marker-carrying user event, then repeated tool rounds
(assistant text, function_call, T1 dispatch, function_response) with unique ids, so the
scanner, the resolver and the Phase 0 planner all do their full per-event work (lanes,
identity checks, args-hash authentication of every dispatch, pairing, replay filtering).
The last round stops after its dispatch, so the plan is ``blocked`` with one
``pending_tool_result`` (the realistic crash-after-T1 shape).
"""

from __future__ import annotations

from typing import Any

from maka_ref._codec.argshash import canonical_args_hash

_IDENTITY = {"invocationId": "invocation-1", "runId": "run-1", "sessionId": "session-1", "turnId": "turn-1"}


def _base(event_id: str, ts: int, role: str, author: str) -> dict[str, Any]:
    return {"id": event_id, **_IDENTITY, "ts": ts, "partial": False, "role": role, "author": author}


def build_ledger(n_events: int) -> list[dict[str, Any]]:
    """A ledger of exactly ``n_events`` RuntimeEvents (plain JSON dicts)."""
    events: list[dict[str, Any]] = []
    first = _base("user-0", 1, "user", "user")
    first["content"] = {"kind": "text", "text": "please update the notes"}
    first["actions"] = {"runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}}
    events.append(first)
    round_no = 0
    while len(events) < n_events:
        round_no += 1
        ts = 1000 + round_no
        call_id = f"call-{round_no}"
        op = f"op-{round_no}"
        args = {"path": f"notes/{round_no % 97}.txt", "content": f"line {round_no}"}
        text = _base(f"text-{round_no}", ts, "model", "agent")
        text["content"] = {"kind": "text", "text": f"Writing note {round_no}."}
        call = _base(f"c-{round_no}", ts, "model", "agent")
        call["content"] = {"kind": "function_call", "id": call_id, "name": "Write", "args": args}
        call["refs"] = {"operationId": op, "toolCallId": call_id}
        dispatch = _base(f"{op}_dispatch", ts, "system", "system")
        dispatch["actions"] = {
            "toolDispatch": {
                "protocol": "t1_after_preflight_v1",
                "operationId": op,
                "providerToolCallId": call_id,
                "toolName": "Write",
                "canonicalArgsHash": canonical_args_hash("Write", args),
                "recoveryMode": "reconcile",
            }
        }
        dispatch["refs"] = {"operationId": op, "toolCallId": call_id}
        response = _base(f"{op}_response", ts, "tool", "tool")
        response["content"] = {"kind": "function_response", "id": call_id, "name": "Write", "result": {"ok": True}}
        response["refs"] = {"operationId": op, "toolCallId": call_id}
        for e in (text, call, dispatch, response):
            if len(events) < n_events:
                events.append(e)
    return events
