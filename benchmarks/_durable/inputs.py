"""Tool-call inputs of ``python -m benchmarks.durable``: realistic ``Write`` call events and the
T1/T2 inputs built from them. Separate because the throughput, write-set and rebuild
measurements all build the same calls, and they must be built before any clock starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._store import T1Input, T2Input

T1_PROTOCOL = "t1_after_preflight_v1"
SESSION = "bench-session"


def _envelope(event_id: str, run: int, ts: int, role: str, author: str, session: str = SESSION) -> dict[str, Any]:
    return {
        "id": event_id,
        "invocationId": f"{session}-inv-{run}",
        "runId": f"run-{run}",
        "sessionId": session,
        "turnId": f"turn-{run}",
        "ts": ts,
        "partial": False,
        "role": role,
        "author": author,
    }


def _tool_events(
    run: int, call: int, ts: int, session: str = SESSION, mode: str = "reconcile"
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(call, dispatch, response) of one realistic ``Write`` call (≈ 250-byte arguments)."""
    call_id = f"toolu_{run:06d}_{call:04d}"
    op = f"op-{session}-{run}-{call}"
    args = {"path": f"notes/{call % 97}.txt", "content": f"line {call}: " + "lorem ipsum dolor sit amet " * 8}
    c = _envelope(f"c-{session}-{run}-{call}", run, ts, "model", "agent", session)
    c["content"] = {"kind": "function_call", "id": call_id, "name": "Write", "args": args}
    c["refs"] = {"toolCallId": call_id}
    d = _envelope(f"{op}_dispatch", run, ts, "system", "system", session)
    d["actions"] = {
        "toolDispatch": {
            "protocol": T1_PROTOCOL,
            "operationId": op,
            "providerToolCallId": call_id,
            "toolName": "Write",
            "canonicalArgsHash": canonical_args_hash("Write", args),
            "recoveryMode": mode,
        }
    }
    d["refs"] = {"operationId": op, "toolCallId": call_id}
    r = _envelope(f"{op}_response", run, ts + 1, "tool", "tool", session)
    r["content"] = {"kind": "function_response", "id": call_id, "name": "Write", "result": {"ok": True, "bytes": 262}}
    r["refs"] = {"operationId": op, "toolCallId": call_id}
    r["actions"] = {"stateDelta": {"durationMs": 3}}
    return c, d, r


@dataclass
class _Call:
    t1: T1Input
    t2: T2Input


def _calls(first: int, count: int, calls_per_run: int, run_offset: int = 0) -> list[_Call]:
    out = []
    for n in range(first, first + count):
        run, call = run_offset + n // calls_per_run, n % calls_per_run
        ts = 1_700_000_000_000 + n * 10
        c, d, r = _tool_events(run, call, ts)
        fact = d["actions"]["toolDispatch"]
        op = fact["operationId"]
        t1 = T1Input(op, f"{op}_prepared", c, d, fact["providerToolCallId"], "Write", fact["canonicalArgsHash"],
                     fact["recoveryMode"], ts)
        out.append(_Call(t1, T2Input(op, f"{op}_outcome", r, ts + 1)))
    return out
