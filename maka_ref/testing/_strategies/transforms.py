"""Ledger transformations: plain functions, usable outside Hypothesis.

Each returns a new :class:`Ledger` with its ground truth updated, so that a property can
derive one healthy ledger from another (marker on/off, settle an open operation).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from maka_ref.testing._strategies.builder import _spine_of
from maka_ref.testing._strategies.constants import T1
from maka_ref.testing._strategies.ledger_model import Ledger, OperationTruth


def strip_marker(ledger: Ledger) -> Ledger:
    """The same ledger without ``actions.runtimeProtocol`` on event 0 (``actions`` dropped
    when it becomes empty); ground truth is unchanged, the protocol becomes legacy."""
    events = ledger.event_list()
    if events:
        actions = events[0].get("actions")
        if isinstance(actions, dict) and "runtimeProtocol" in actions:
            del actions["runtimeProtocol"]
            if not actions:
                del events[0]["actions"]
    return replace(ledger, events=tuple(events), protocol="legacy")


def add_marker(ledger: Ledger) -> Ledger:
    """The same ledger with the valid T1 marker on event 0 (spec 10 §3)."""
    events = ledger.event_list()
    if events:
        events[0].setdefault("actions", {})["runtimeProtocol"] = {"toolBoundary": T1}
    return replace(ledger, events=tuple(events), protocol="t1")


def append_response(ledger: Ledger, op: OperationTruth, *, is_error: bool = False, result: Any = "ok") -> Ledger:
    """Append (at the end) the response that settles ``op``: a T2 response bound with
    ``refs {operationId, toolCallId}`` when the op was dispatched, else an unbound synthetic
    response. Ground truth is updated accordingly."""
    if op.bundle is not None or op.has_response:
        raise ValueError("operation already has a response or recovery facts")
    call = next(e for e in ledger.events if e["id"] == op.call_event_id)
    existing = {e["id"] for e in ledger.events}
    base_id = f"{op.operation_id}_response" if op.has_dispatch else f"{op.call_event_id}-response"
    event_id = base_id
    while event_id in existing:
        event_id += "'"
    ts = max((e["ts"] for e in ledger.events), default=1)
    e = _spine_of(call).envelope(event_id, ts, "tool", "tool")
    e["content"] = {"kind": "function_response", "id": op.tool_call_id, "name": op.tool_name, "result": copy.deepcopy(result)}
    if is_error:
        e["content"]["isError"] = True
    if op.has_dispatch:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    new_op = replace(op, response_event_id=event_id, response_is_error=is_error, response_bound=op.has_dispatch)
    ops = tuple(new_op if o is op else o for o in ledger.operations)
    return replace(ledger, events=tuple(ledger.event_list() + [e]), operations=ops)
