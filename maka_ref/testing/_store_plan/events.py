"""Builders of the single RuntimeEvents that store writes carry.

Producer conventions (spec 10 §1.6) and lanes (spec 30 §0.4): user openings, assistant
texts, unbound or bound calls and responses, T1 dispatches, recovery facts and terminals.
Kept apart from the writes so that an event's shape is decided in one place.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing._store_plan.draft import _Draft, _Op, _Run, _Spine
from maka_ref.testing.strategies import T1, texts, tool_results

def _user_event(d: _Draft, run: _Run) -> dict[str, Any]:
    e = run.spine.envelope(d.event_id(run.spine), d.tick(), "user", "user")
    e["content"] = {"kind": "text", "text": d.draw(texts())}
    if run.opening == "marker":
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def _model_text(d: _Draft, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(d.event_id(spine), d.tick(), "model", "agent")
    e["content"] = {"kind": "text", "text": d.draw(texts())}
    return e


def _call_event(d: _Draft, op: _Op) -> dict[str, Any]:
    e = op.spine.envelope(d.event_id(op.spine), d.tick(), "model", "agent")
    if d.draw(st.booleans()):
        e["origin"] = "provider"
        e["modelVisibility"] = "visible"
    e["content"] = {"kind": "function_call", "id": op.call_id, "name": op.name, "args": copy.deepcopy(op.args)}
    refs: dict[str, Any] = {"toolCallId": op.call_id}
    if op.path.startswith("t1") and d.draw(st.booleans()):
        refs["operationId"] = op.operation_id
    if d.draw(st.integers(0, 3)) == 0:
        refs["stepId"] = f"step-{d.n_event}"
    if op.path.startswith("t1") or d.draw(st.booleans()):
        e["refs"] = refs
    if d.draw(st.integers(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"activityKind": "tool", "displayName": d.draw(texts(max_size=12))}}
    return e


def _dispatch_event(d: _Draft, op: _Op) -> dict[str, Any]:
    event_id = d.draw(st.sampled_from((f"{op.operation_id}_dispatch", d.event_id(op.spine))))
    e = op.spine.envelope(event_id, d.tick(), "system", "system")
    if d.draw(st.booleans()):
        e["modelVisibility"] = "visible"
    e["actions"] = {
        "toolDispatch": {
            "protocol": T1,
            "operationId": op.operation_id,
            "providerToolCallId": op.call_id,
            "toolName": op.name,
            "canonicalArgsHash": canonical_args_hash(op.name, op.args),
            "recoveryMode": op.recovery_mode,
        }
    }
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def _response_event(d: _Draft, op: _Op, event_id: str, *, bound: bool, is_error: bool) -> dict[str, Any]:
    e = op.spine.envelope(event_id, d.tick(), "tool", "tool")
    if d.draw(st.booleans()):
        e["origin"] = "provider"
    if is_error:
        result = d.draw(st.sampled_from(("permission denied", "Tool unavailable", "exit code 1")))
    else:
        result = d.draw(tool_results())
    content: dict[str, Any] = {"kind": "function_response", "id": op.call_id, "name": op.name, "result": result}
    if is_error:
        content["isError"] = True
    elif d.draw(st.booleans()):
        content["isError"] = False
    e["content"] = content
    if bound:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    elif d.draw(st.booleans()):
        e["refs"] = {"toolCallId": op.call_id}
    if d.draw(st.integers(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"durationMs": d.draw(st.one_of(st.integers(0, 60_000), st.just(12.5)))}}
    return e


def _recovery_fact(d: _Draft, op: _Op, event_id: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = op.spine.envelope(event_id, d.tick(), "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def _terminal_event(d: _Draft, run: _Run) -> dict[str, Any]:
    """Spec 20 §4.2 terminal shape (status + ``endInvocation``)."""
    e = run.spine.envelope(d.event_id(run.spine), d.tick(), "system", "system")
    status = d.draw(st.sampled_from(("completed", "failed", "aborted", "cancelled")))
    e["status"] = status
    state: dict[str, Any] = {}
    if status == "failed":
        state["failureClass"] = "runtime_crash"
        e["content"] = {
            "kind": "error", "code": "runtime_crash", "reason": "runtime_crash", "message": "runtime crashed"
        }
    if status == "aborted":
        state["abortSource"] = "unknown"
    e["actions"] = {"endInvocation": True, "stateDelta": state}
    return e
