"""Builders of single RuntimeEvents (producer conventions, spec 10 §1.6) and of recovery
bundles (spec 10 §5.1, §5.2).

Each builder draws its optional fields through the run's ``_Builder`` and returns a new
plain dict; none of them decides *which* events a run contains (that is
:mod:`maka_ref.testing._strategies.ledgers`).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing._strategies.builder import _Builder, _Op, _Spine
from maka_ref.testing._strategies.constants import _PARK_REASON, T1
from maka_ref.testing._strategies.values import _BOOL, _ints, _pick, texts, tool_results

_ERROR_RESULTS = st.sampled_from(("permission denied", "Tool unavailable", {"error": "boom"})).map(copy.deepcopy)
_DURATIONS = st.one_of(st.integers(0, 60_000), st.just(12.5))
_STATE_DELTA_KEYS = st.lists(st.sampled_from(("activityKind", "displayName", "intent")), min_size=1, max_size=3, unique=True)


def _user_text(b: _Builder, spine: _Spine, text: str, marker: bool) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "user", "user")
    e["content"] = {"kind": "text", "text": text}
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def _model_text(b: _Builder, spine: _Spine, text: str, partial: bool = False) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent", partial=partial)
    e["content"] = {"kind": "text", "text": text}
    return e


def _thinking(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent")
    e["content"] = {"kind": "thinking", "text": b.draw(texts())}
    if b.draw(_BOOL):
        e["content"]["signature"] = "sig_" + str(b.draw(_ints(0, 10**6)))
    return e


def _token_usage(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "system", "system")
    e["actions"] = {"tokenUsage": {"input": b.draw(_ints(0, 200_000)), "output": b.draw(_ints(0, 8_000))}}
    return e


def _error_event(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent")
    e["content"] = {"kind": "error", "message": "provider stream interrupted", "code": "stream_error"}
    return e


def _call_event(b: _Builder, op: _Op) -> dict[str, Any]:
    e = op.spine.envelope(b.event_id(), b.tick(), "model", "agent")
    if b.draw(_BOOL):
        e["origin"] = "provider"
        e["modelVisibility"] = "visible"
    e["content"] = {"kind": "function_call", "id": op.tool_call_id, "name": op.name, "args": op.args}
    refs: dict[str, Any] = {"toolCallId": op.tool_call_id}
    if op.fate == "t2":
        refs["operationId"] = op.operation_id
    if b.draw(_ints(0, 3)) == 0:
        refs["stepId"] = f"step-{b.n_event}"
    style = b.draw(_ints(0, 3))
    if style == 0 and op.fate == "unbound":
        pass  # no refs at all (legacy / generic lane)
    else:
        e["refs"] = refs
    if b.draw(_ints(0, 3)) == 0:
        keys = b.draw(_STATE_DELTA_KEYS)
        e["actions"] = {"stateDelta": {k: b.draw(texts(max_size=12)) for k in keys}}
    return e


def _dispatch_event(b: _Builder, op: _Op) -> dict[str, Any]:
    assert op.call is not None
    e = op.spine.envelope(f"{op.operation_id}_dispatch", op.call["ts"], "system", "system")
    if b.draw(_BOOL):
        e["modelVisibility"] = "visible"
    e["actions"] = {
        "toolDispatch": {
            "protocol": T1,
            "operationId": op.operation_id,
            "providerToolCallId": op.tool_call_id,
            "toolName": op.name,
            "canonicalArgsHash": canonical_args_hash(op.name, op.args),
            "recoveryMode": op.recovery_mode,
        }
    }
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    return e


def _response_event(b: _Builder, op: _Op, *, event_id: str, bound: bool, is_error: bool, error_key: bool) -> dict[str, Any]:
    e = op.spine.envelope(event_id, b.tick(), "tool", "tool")
    if b.draw(_BOOL):
        e["origin"] = "provider"
    result = b.draw(tool_results()) if not is_error else b.draw(_ERROR_RESULTS)
    content: dict[str, Any] = {"kind": "function_response", "id": op.tool_call_id, "name": op.name, "result": result}
    if is_error:
        content["isError"] = True
    elif error_key:
        content["isError"] = False
    e["content"] = content
    if bound:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    elif b.draw(_BOOL):
        e["refs"] = {"toolCallId": op.tool_call_id}
    if b.draw(_ints(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"durationMs": b.draw(_DURATIONS)}}
    return e


def _recovery_fact(spine: _Spine, event_id: str, ts: float, op: _Op, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = spine.envelope(event_id, ts, "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    return e


def _terminal_event(b: _Builder, spine: _Spine, status: str, recovered: bool) -> dict[str, Any]:
    """Spec 20 §4.2 terminal shape."""
    e = spine.envelope(b.event_id(), b.tick(), "system", "system")
    e["status"] = status
    state: dict[str, Any] = {}
    if recovered:
        state.update(recovered=True, recoveryReason="process_restart")
    if status == "failed":
        state["failureClass"] = "runtime_crash"
        e["content"] = {"kind": "error", "code": "runtime_crash", "reason": "runtime_crash", "message": "runtime crashed"}
    if status == "aborted":
        state["abortSource"] = "unknown"
    e["actions"] = {"endInvocation": True, "stateDelta": state}
    return e


def _bundle(draw: Callable[[Any], Any], b: _Builder, op: _Op, choice: str) -> list[dict[str, Any]]:
    """An atomic recovery bundle for ``op`` (spec 10 §5.1, §5.2)."""
    assert op.call is not None and op.dispatch is not None
    observation = "matches_expected_state" if choice == "completed" else choice
    digest = "sha256:" + draw(_pick(("a" * 64, "0123456789abcdef" * 4, "f" * 64)))
    reconcile = _recovery_fact(
        op.spine,
        f"{op.operation_id}_reconcile",
        b.tick(),
        op,
        "maka.tool.reconcile_result",
        {
            "protocol": "tool_reconcile_v1",
            "operationId": op.operation_id,
            "observation": observation,
            "observationSchema": "state_identity_v1",
            "observationDigest": digest,
        },
    )
    out = [reconcile]
    evidence = [op.call["id"], op.dispatch["id"], reconcile["id"]]
    if choice == "completed":
        outcome = _response_event(b, op, event_id=f"{op.operation_id}_response", bound=True, is_error=False, error_key=draw(_BOOL))
        out.append(outcome)
        op.outcome = outcome
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "completed",
            "reasonCode": "reconcile_matches_expected_state",
            "outcomeEventId": outcome["id"],
            "evidenceEventIds": evidence + [outcome["id"]],
        }
    else:
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "parked",
            "reasonCode": _PARK_REASON[choice],
            "evidenceEventIds": evidence,
        }
    decision = _recovery_fact(op.spine, f"{op.operation_id}_decision", b.tick(), op, "maka.tool.recovery_decision", payload)
    out.append(decision)
    op.reconcile, op.decision = reconcile, decision
    op.bundle = "completed" if choice == "completed" else "parked"
    op.observation = observation
    return out
