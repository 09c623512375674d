"""Exact retries of earlier writes, and inserting writes into a drawn sequence.

A retry is a deep copy of its original, sometimes with removable presentation noise,
another key order or (for T1/T2) another ``committedAt`` (spec 30 §2.8); it must be a
no-op. Kept apart because inserting writes after the fact must also renumber ``retry_of``.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._store_plan.draft import _Draft
from maka_ref.testing._store_plan.model import BundleInput, StoreWrite

def _reorder_keys(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse insertion order."""
    if isinstance(value, dict):
        return {k: _reorder_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder_keys(v) for v in value]
    return value


def _noisy(draw: Callable[[Any], Any], event: dict[str, Any]) -> dict[str, Any]:
    """An exact-retry variant of ``event``: removable presentation noise on text content
    (spec 30 §0.2 step 1, §9 item 22) and/or another key order. Canonically identical."""
    event = copy.deepcopy(event)
    content = event.get("content")
    if isinstance(content, dict) and content.get("kind") == "text" and draw(st.booleans()):
        content.update(displayText=content["text"], attachments=[], quotes=[])
    if draw(st.booleans()):
        event = _reorder_keys(event)
    return event


def _retry_of(draw: Callable[[Any], Any], d: _Draft, index: int) -> StoreWrite:
    """An exact retry of ``d.writes[index]``: created False and nothing changes."""
    from dataclasses import replace as dc_replace

    original = d.writes[index]
    payload: Any
    note = ""
    if original.kind in ("append", "terminal"):
        payload = _noisy(draw, original.payload)
        expect: Any = False
    elif original.kind == "import_batch":
        session_id, run_id, events = original.payload
        payload = (session_id, run_id, tuple(_noisy(draw, e) for e in events))
        expect = tuple(False for _ in events)
    elif original.kind in ("t1", "t2"):
        data = original.payload
        changes: dict[str, Any] = {"runtime_event": _noisy(draw, data.runtime_event)}
        if original.kind == "t1":
            changes["dispatch_runtime_event"] = _noisy(draw, data.dispatch_runtime_event)
        if draw(st.booleans()):  # committedAt is not part of identity (spec 30 §2.8)
            changes["committed_at"] = data.committed_at + draw(st.integers(1, 10_000))
            note = f" at={changes['committed_at']}"
        payload = dc_replace(data, **changes)
        expect = False
    elif original.kind == "bundle":
        b: BundleInput = original.payload
        payload = BundleInput(
            b.operation_id, _noisy(draw, b.reconcile), _noisy(draw, b.decision),
            _noisy(draw, b.outcome) if b.outcome is not None else None,
        )
        expect = None
    else:  # pragma: no cover
        raise AssertionError(original.kind)
    label = f"RETRY of [{index}] {original.label}{note}"
    return StoreWrite(original.kind, label, payload, original.operation_id, index, expect)


def _insert_write(d: _Draft, position: int, write: StoreWrite) -> None:
    """Insert at ``position`` and shift the ``retry_of`` indexes that point past it."""
    shifted = [
        w if w.retry_of is None or w.retry_of < position else _with_retry_of(w, w.retry_of + 1) for w in d.writes
    ]
    shifted.insert(position, write)
    d.writes = shifted


def _with_retry_of(write: StoreWrite, index: int) -> StoreWrite:
    from dataclasses import replace as dc_replace

    return dc_replace(write, retry_of=index, label=write.label.replace(f"[{write.retry_of}]", f"[{index}]", 1))
