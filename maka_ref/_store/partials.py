"""Partial events: their stream identity, mutable snapshots and text segments (spec 30 §2.2 "Partial events", §4).

Why they exist and why they are never authority: streaming chunks are presentation state.
They live in ``runtime_partial_snapshots`` / ``runtime_partial_segments``, are merged into
``read_runtime_events`` for display, and never enter immutable reads, prefixes or digests.
The immutable final of a stream deletes its snapshot (segments go by ``ON DELETE CASCADE``).

Stream identity (first part of the module): a partial is *streamable* only if it has no
``status``, no ``actions`` and either text/thinking content with refs exactly
``{providerEventId}`` (thinking without a ``signature``, text without attachments) or no
content with refs exactly ``{toolCallId}``. The stream key is the hex SHA-256 of the JSON
array ``[identity, sessionId, invocationId, runId, turnId, branch-or-null, role, author]``.
The insert primitive (an immutable final deletes the snapshot it completes), the partial
writer and the readers all derive the same key from here; this module imports nothing of the
insert primitive, so the primitive may import it.

Snapshots (second part): the first chunk inserts a snapshot whose payload is the chunk with
empty text, anchored after the run's latest immutable event; later chunks only bump
``updated_at``. Text is appended to segments, coalescing chunks while a segment stays within
64 KiB of UTF-8. A corrupt snapshot (bad JSON, schema failure, identity columns or stream key
that disagree with the payload) is skipped on read, silently — it must never hide immutable
events.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from maka_ref._codec.frozen import freeze, thaw
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._events.schema import decode_runtime_event
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row
from maka_ref._store.errors import StoreError

__all__ = [
    "PartialSnapshot",
    "PartialStream",
    "SAFE_ID",
    "SEGMENT_MAX_BYTES",
    "append_partial",
    "check_partial_batch",
    "completed_stream_key",
    "is_safe_id",
    "merge_partials",
    "partial_stream",
    "read_partials",
    "stream_key",
]


#: Ids that become storage keys (§2.1 "Safe ids").
SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def is_safe_id(value: object) -> bool:
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class PartialStream:
    """A streamable partial: its ``key``, the ``text`` chunk it carries, its ``kind``."""

    key: str
    text: str
    kind: str  # "text", "thinking" or "tool"


def stream_key(identity: str, event: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the stable JSON array that names one presentation stream."""
    branch = event.get("branch")
    parts = [
        identity,
        event.get("sessionId"),
        event.get("invocationId"),
        event.get("runId"),
        event.get("turnId"),
        branch if isinstance(branch, str) else None,
        event.get("role"),
        event.get("author"),
    ]
    return hashlib.sha256(_parts_json(parts).encode("utf-8")).hexdigest()


_escape = json.encoder.encode_basestring  # what ``stable_json`` writes a string with


def _parts_json(parts: list[Any]) -> str:
    """``stable_json(parts)``, written directly when every part is a string or None.

    Why: a stream key is computed for every immutable final the store inserts (one per tool
    call), and the general serialiser walks its value in Python. For a flat array of strings
    and nulls ``stable_json`` writes ``[``, the items escaped with ``encode_basestring`` (or
    ``null``) joined by ``,``, and ``]``; only a character ≥ U+D800 (a surrogate, which it
    re-joins or escapes) can differ, so such a text takes the general path.
    Guard: ``tests/maka_ref/store/test_partials_key.py``."""
    if all(type(part) is str or part is None for part in parts):
        text = "[" + ",".join("null" if part is None else _escape(part) for part in parts) + "]"
        if text.isascii() or max(text) < "\ud800":
            return text
    return stable_json(parts)


def _refs_exactly(event: Mapping[str, Any], key: str) -> str | None:
    refs = event.get("refs")
    if not isinstance(refs, Mapping) or len(refs) != 1:
        return None
    value = refs.get(key)
    return value if isinstance(value, str) and value else None


def partial_stream(event: Mapping[str, Any]) -> PartialStream | None:
    """The stream of a streamable partial event, else None (non-streamable partials are
    stored as ordinary immutable rows, like the reference implementation does)."""
    if event.get("partial") is not True or "status" in event or "actions" in event:
        return None
    content = event.get("content")
    if content is None:
        call_id = _refs_exactly(event, "toolCallId")
        if call_id is None:
            return None
        return PartialStream(stream_key(f"tool:call:{call_id}", event), "", "tool")
    if not isinstance(content, Mapping):
        return None
    kind = content.get("kind")
    if kind == "text" and "attachments" in content:
        return None
    if kind == "thinking" and "signature" in content:
        return None
    if kind not in ("text", "thinking"):
        return None
    provider_id = _refs_exactly(event, "providerEventId")
    if provider_id is None:
        return None
    text = content.get("text")
    return PartialStream(stream_key(f"{kind}:provider:{provider_id}", event), text if isinstance(text, str) else "", kind)


def completed_stream_key(event: Mapping[str, Any]) -> str | None:
    """The stream an immutable final completes: non-partial text/thinking with a provider
    event id, or a function_response with a ``toolCallId`` ref."""
    if event.get("partial") is True:
        return None
    content = event.get("content")
    if not isinstance(content, Mapping):
        return None
    refs = event.get("refs")
    refs = refs if isinstance(refs, Mapping) else {}
    kind = content.get("kind")
    if kind in ("text", "thinking"):
        provider_id = refs.get("providerEventId")
        if isinstance(provider_id, str) and provider_id:
            return stream_key(f"{kind}:provider:{provider_id}", event)
        return None
    if kind == "function_response":
        call_id = refs.get("toolCallId")
        if isinstance(call_id, str) and call_id:
            return stream_key(f"tool:call:{call_id}", event)
    return None


#: Segments coalesce chunks up to this many UTF-8 bytes (a single larger chunk stays whole).
SEGMENT_MAX_BYTES = 64 * 1024


class PartialSnapshot:
    """A decoded snapshot: the visible event (text merged) and its anchor."""

    __slots__ = ("after_event_id", "event")

    def __init__(self, event: Any, after_event_id: str | None) -> None:
        self.event = event
        self.after_event_id = after_event_id


def _stream_completed(conn: sqlite3.Connection, session_id: str, run_id: str, key: str) -> bool:
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ?", (session_id, run_id)
    ).fetchall()
    return any(completed_stream_key(decode_event_row(row).event) == key for row in rows)


def _append_text(conn: sqlite3.Connection, key: str, text: str, updated_at: Any) -> None:
    if not text:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    last = conn.execute(
        "SELECT segment_seq, length(CAST(text_content AS BLOB)) FROM runtime_partial_segments "
        "WHERE stream_key = ? ORDER BY segment_seq DESC LIMIT 1",
        (key,),
    ).fetchone()
    if last is not None and last[1] + size <= SEGMENT_MAX_BYTES:
        conn.execute(
            "UPDATE runtime_partial_segments SET text_content = text_content || ?, updated_at = ? "
            "WHERE stream_key = ? AND segment_seq = ?",
            (text, updated_at, key, last[0]),
        )
        return
    conn.execute(
        "INSERT INTO runtime_partial_segments (stream_key, segment_seq, text_content, updated_at) VALUES (?, ?, ?, ?)",
        (key, (last[0] if last is not None else 0) + 1, text, updated_at),
    )


def append_partial(conn: sqlite3.Connection, event: Mapping[str, Any], stream: PartialStream) -> bool:
    """Store one streamable chunk (identity already checked); True when it opened the stream.

    A stream already completed by an immutable event is ignored (returns False).
    """
    key = stream.key
    exists = conn.execute("SELECT 1 FROM runtime_partial_snapshots WHERE stream_key = ?", (key,)).fetchone()
    if exists is None:
        if _stream_completed(conn, event["sessionId"], event["runId"], key):
            return False
        anchor = conn.execute(
            "SELECT event_id FROM runtime_events WHERE session_id = ? AND run_id = ? ORDER BY event_seq DESC LIMIT 1",
            (event["sessionId"], event["runId"]),
        ).fetchone()
        snapshot = thaw(event)
        if stream.kind in ("text", "thinking"):
            snapshot["content"]["text"] = ""
        conn.execute(
            "INSERT INTO runtime_partial_snapshots (stream_key, session_id, invocation_id, run_id, turn_id, "
            "after_event_id, payload_json, text_content, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?)",
            (
                key,
                event["sessionId"],
                event["invocationId"],
                event["runId"],
                event["turnId"],
                anchor[0] if anchor is not None else None,
                stable_json(snapshot),
                event["ts"],
            ),
        )
    else:
        conn.execute("UPDATE runtime_partial_snapshots SET updated_at = ? WHERE stream_key = ?", (event["ts"], key))
    _append_text(conn, key, stream.text, event["ts"])
    return exists is None


def check_partial_batch(events: list[Any]) -> None:
    """A partial batch holds partial events of exactly one presentation stream."""
    if any(event.get("partial") is not True for event in events):
        raise StoreError("Runtime partial batch contains a non-partial event", code="partial_batch_non_partial")
    keys = set()
    for event in events:
        stream = partial_stream(event)
        keys.add(stream.key if stream is not None else None)
    if len(keys) != 1 or None in keys:
        raise StoreError(
            "Runtime partial batch must contain exactly one presentation stream", code="partial_batch_streams"
        )


def _decode_snapshot(conn: sqlite3.Connection, row: tuple[Any, ...]) -> PartialSnapshot | None:
    key, session_id, invocation_id, run_id, turn_id, after_event_id, payload_json, text_content = row
    try:
        event = decode_runtime_event(parse_json(payload_json))
        stream = partial_stream(event)
        if (
            event.get("sessionId") != session_id
            or event.get("invocationId") != invocation_id
            or event.get("runId") != run_id
            or event.get("turnId") != turn_id
            or stream is None
            or stream.key != key
        ):
            return None
        if stream.kind in ("text", "thinking"):
            segments = conn.execute(
                "SELECT text_content FROM runtime_partial_segments WHERE stream_key = ? ORDER BY segment_seq",
                (key,),
            ).fetchall()
            visible = thaw(event)
            visible["content"]["text"] = (text_content or "") + "".join(segment[0] for segment in segments)
            event = freeze(visible)
        return PartialSnapshot(event, after_event_id or None)
    except Exception:  # noqa: BLE001 - presentation state: a corrupt snapshot is skipped
        return None


def read_partials(conn: sqlite3.Connection, session_id: str, run_id: str) -> list[PartialSnapshot]:
    """Decodable snapshots of one run, ordered by ``updated_at`` then ``stream_key``."""
    rows = conn.execute(
        "SELECT stream_key, session_id, invocation_id, run_id, turn_id, after_event_id, payload_json, text_content "
        "FROM runtime_partial_snapshots WHERE session_id = ? AND run_id = ? ORDER BY updated_at ASC, stream_key ASC",
        (session_id, run_id),
    ).fetchall()
    out = []
    for row in rows:
        snapshot = _decode_snapshot(conn, row)
        if snapshot is not None:
            out.append(snapshot)
    return out


def _order(snapshot: PartialSnapshot) -> tuple[Any, str]:
    return (snapshot.event["ts"], snapshot.event["id"])


def merge_partials(immutable: Iterable[Any], snapshots: list[PartialSnapshot]) -> list[Any]:
    """§4: unanchored snapshots lead, anchored ones follow their event, orphans trail."""
    leading = sorted((s for s in snapshots if s.after_event_id is None), key=_order)
    anchored: dict[str, list[PartialSnapshot]] = {}
    for snapshot in snapshots:
        if snapshot.after_event_id is not None:
            anchored.setdefault(snapshot.after_event_id, []).append(snapshot)
    merged = [s.event for s in leading]
    for event in immutable:
        merged.append(event)
        group = anchored.pop(event["id"], None)
        if group:
            merged.extend(s.event for s in sorted(group, key=_order))
    for group in anchored.values():
        merged.extend(s.event for s in sorted(group, key=_order))
    return merged
