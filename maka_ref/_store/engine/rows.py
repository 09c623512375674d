"""Stored rows <-> RuntimeEvents (spec 30 §1.2, §4).

Why: ``payload_json`` is the only canonical fact, but five identity columns are duplicated
next to it for indexing. Every read re-checks that the columns equal the payload, so a
raw edit of either side fails closed (``RuntimeEvent row/payload identity mismatch for
<event_id>``) instead of silently moving an event to another run.

A payload that is not JSON or not a RuntimeEvent raises the core's own
``InvalidJSONTextError`` / ``RuntimeEventSchemaError`` (both ``MakaRefError``), which the
health gate caches and re-throws like any other decode failure.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._events.fast import fast_decode_event
from maka_ref._events.schema import decode_runtime_event
from maka_ref._store.errors import row_payload_identity_mismatch

__all__ = [
    "EVENT_COLUMNS",
    "StoredEvent",
    "decode_event_row",
    "event_kind",
    "is_tool_bearing",
    "read_event_row",
    "read_stored_event",
]

#: Column list used by every ``runtime_events`` read (order matters for ``StoredEvent``).
EVENT_COLUMNS = "event_id, session_id, invocation_id, run_id, turn_id, event_seq, payload_json, committed_at"

_TERMINAL_STATUSES = ("completed", "failed", "aborted", "cancelled")


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One decoded ``runtime_events`` row: the canonical event plus its physical fields."""

    event: FrozenDict
    event_seq: int
    committed_at: int
    payload_json: str

    @property
    def event_id(self) -> str:
        return self.event["id"]


def decode_event_row(row: tuple[Any, ...]) -> StoredEvent:
    """Decode a row selected with :data:`EVENT_COLUMNS`, re-checking row/payload identity."""
    event_id, session_id, invocation_id, run_id, turn_id, event_seq, payload_json, committed_at = row
    # The msgspec fast path (same event, proven, or None: then the exact path and its error).
    event = fast_decode_event(payload_json) or decode_runtime_event(parse_json(payload_json))
    if (
        event.get("id") != event_id
        or event.get("sessionId") != session_id
        or event.get("invocationId") != invocation_id
        or event.get("runId") != run_id
        or event.get("turnId") != turn_id
    ):
        raise row_payload_identity_mismatch(event_id)
    return StoredEvent(event, event_seq, committed_at, payload_json)


def read_event_row(conn: sqlite3.Connection, event_id: str) -> StoredEvent | None:
    """The stored event with ``event_id`` (identity re-checked), or None."""
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE event_id = ?", (event_id,)).fetchone()
    return decode_event_row(row) if row is not None else None


def read_stored_event(conn: sqlite3.Connection, event_id: str) -> FrozenDict | None:
    """Shortcut for :func:`read_event_row` returning only the event."""
    stored = read_event_row(conn, event_id)
    return stored.event if stored is not None else None


def decode_rows(rows: Iterable[tuple[Any, ...]]) -> list[StoredEvent]:
    return [decode_event_row(row) for row in rows]


def event_kind(event: Mapping[str, Any]) -> str:
    """§1.2 ``event_kind``: content kind, else status, else workspace_fact, tool_dispatch,
    invocation_end, else runtime_fact (recovery facts and continuation starts)."""
    content = event.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("kind"), str):
        return content["kind"]
    status = event.get("status")
    if isinstance(status, str):
        return status
    actions = event.get("actions")
    if isinstance(actions, Mapping):
        if "workspaceFact" in actions:
            return "workspace_fact"
        if "toolDispatch" in actions:
            return "tool_dispatch"
        if actions.get("endInvocation") is True:
            return "invocation_end"
    return "runtime_fact"


def is_tool_bearing(event: Mapping[str, Any]) -> bool:
    """Function call/response content, a dispatch or a recovery fact (§2.1: gated writes)."""
    content = event.get("content")
    if isinstance(content, Mapping) and content.get("kind") in ("function_call", "function_response"):
        return True
    actions = event.get("actions")
    return isinstance(actions, Mapping) and ("toolDispatch" in actions or "toolRecovery" in actions)


def is_terminal_status(status: object) -> bool:
    return isinstance(status, str) and status in _TERMINAL_STATUSES
