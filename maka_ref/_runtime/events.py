"""RuntimeEvent builders of the live loop (producer conventions of spec 10 §1.6, spec 30 §6.5,
terminal shapes of spec 20 §4.2).

Why one module: every event the runtime commits is built here, so the exact shapes (which
refs, which ids, where the protocol marker may appear) are reviewed in one place. Builders
return plain dicts; the store encodes and validates them.

Shapes:

* user: ``role=user, author=user``, text; ``actions.runtimeProtocol`` **only** under the T1
  protocol (spec 10 §3: the marker records that the durable T1/T2 boundary is wired);
* model text: ``role=model, author=agent, origin=provider, modelVisibility=visible``,
  ``refs.stepId``;
* call: same envelope, ``content.function_call``; refs ``{operationId, toolCallId, stepId}``
  on the T1 lane, ``{toolCallId, stepId}`` when unbound (legacy, pre-T1 refusal);
* dispatch (T1 only): id ``<op>_dispatch``, same ids and ``ts`` as the call,
  ``role=system, author=system``, ``actions.toolDispatch``, refs ``{operationId, toolCallId}``;
* response: id ``<op>_response``, ``role=tool, author=tool``, ``content.function_response``
  (``isError: true`` only on errors); refs ``{operationId, toolCallId}`` on the T2 lane,
  ``{toolCallId}`` when unbound;
* terminal: ``role=system, author=system``, ``status`` ``completed``/``failed``,
  ``actions = {endInvocation: true, stateDelta: {...}}``; failed adds
  ``content {kind: error, code, reason, message}`` and ``stateDelta.failureClass``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._codec.frozen import FrozenDict, freeze
from maka_ref._runtime.ids import RunIds
from maka_ref._runtime.provider import T1_PROTOCOL

__all__ = [
    "call_event",
    "dispatch_event",
    "frozen_event",
    "model_text_event",
    "response_event",
    "terminal_event",
    "user_event",
]


def _envelope(ids: RunIds, event_id: str, ts: int, role: str, author: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "invocationId": ids.invocation_id,
        "runId": ids.run_id,
        "sessionId": ids.session_id,
        "turnId": ids.turn_id,
        "ts": ts,
        "partial": False,
        "role": role,
        "author": author,
    }


def user_event(ids: RunIds, ts: int, text: str, protocol: str) -> dict[str, Any]:
    event = _envelope(ids, ids.user_event_id, ts, "user", "user")
    event["content"] = {"kind": "text", "text": text}
    if protocol == T1_PROTOCOL:
        event["actions"] = {"runtimeProtocol": {"toolBoundary": T1_PROTOCOL}}
    return event


def model_text_event(ids: RunIds, ts: int, step_index: int, text: str) -> dict[str, Any]:
    event = _envelope(ids, ids.text_event_id(step_index), ts, "model", "agent")
    event.update(origin="provider", modelVisibility="visible")
    event["content"] = {"kind": "text", "text": text}
    event["refs"] = {"stepId": ids.step_id(step_index)}
    return event


def call_event(
    ids: RunIds, ts: int, step_index: int, operation_id: str, call_id: str, name: str, args: Any, *, bound: bool
) -> dict[str, Any]:
    event = _envelope(ids, f"{operation_id}_call", ts, "model", "agent")
    event.update(origin="provider", modelVisibility="visible")
    event["content"] = {"kind": "function_call", "id": call_id, "name": name, "args": args}
    refs: dict[str, Any] = {"operationId": operation_id} if bound else {}
    refs["toolCallId"] = call_id
    refs["stepId"] = ids.step_id(step_index)
    event["refs"] = refs
    return event


def dispatch_event(
    ids: RunIds, ts: int, operation_id: str, call_id: str, name: str, args_hash: str, recovery_mode: str
) -> dict[str, Any]:
    event = _envelope(ids, f"{operation_id}_dispatch", ts, "system", "system")
    event["actions"] = {
        "toolDispatch": {
            "protocol": T1_PROTOCOL,
            "operationId": operation_id,
            "providerToolCallId": call_id,
            "toolName": name,
            "canonicalArgsHash": args_hash,
            "recoveryMode": recovery_mode,
        }
    }
    event["refs"] = {"operationId": operation_id, "toolCallId": call_id}
    return event


def response_event(
    ids: RunIds, ts: int, operation_id: str, call_id: str, name: str, result: Any, is_error: bool, *, bound: bool
) -> dict[str, Any]:
    event = _envelope(ids, f"{operation_id}_response", ts, "tool", "tool")
    content: dict[str, Any] = {"kind": "function_response", "id": call_id, "name": name, "result": result}
    if is_error:
        content["isError"] = True
    event["content"] = content
    event["refs"] = {"operationId": operation_id, "toolCallId": call_id} if bound else {"toolCallId": call_id}
    return event


def terminal_event(
    ids: RunIds, ts: int, status: str, *, failure_class: str | None = None, message: str | None = None
) -> dict[str, Any]:
    """``status`` is ``completed`` or ``failed`` (spec 20 §4.2)."""
    event = _envelope(ids, ids.terminal_event_id, ts, "system", "system")
    event["status"] = status
    state: dict[str, Any] = {}
    if status == "failed":
        failure = failure_class or "unknown"
        event["content"] = {"kind": "error", "code": failure, "reason": failure, "message": message or failure}
        state["failureClass"] = failure
    event["actions"] = {"endInvocation": True, "stateDelta": state}
    return event


def _wrap(items: dict[str, Any]) -> FrozenDict:
    result = dict.__new__(FrozenDict)
    dict.__init__(result, items)  # values already frozen: no second deep copy
    return result


def frozen_event(event: dict[str, Any]) -> FrozenDict:
    """``FrozenDict(event)`` for an event built here, without its per-value ``freeze`` calls on
    strings and numbers (the same result: top-level and nested plain dicts become FrozenDicts,
    any other container goes through :func:`~maka_ref._codec.frozen.freeze`). Hot in the loop:
    three events per tool call (issue 4)."""
    out: dict[str, Any] = {}
    for key, value in event.items():
        kind = type(value)
        if kind is dict:
            value = _wrap({k: (v if type(v) is str else freeze(v)) for k, v in value.items()})
        elif kind is not str and kind is not int and kind is not bool:
            value = freeze(value)
        out[key] = value
    return _wrap(out)
