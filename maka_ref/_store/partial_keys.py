"""Presentation-stream identity of partial events (spec 30 §2.2 "Partial events").

Why a tiny module of its own: the insert primitive (an immutable final deletes the snapshot
it completes), the partial writer and the readers all derive the same stream key, and the
insert primitive must not import the partial *writer*.

A partial is *streamable* only if it has no ``status``, no ``actions`` and either
text/thinking content with refs exactly ``{providerEventId}`` (thinking without a
``signature``, text without attachments) or no content with refs exactly ``{toolCallId}``.
The stream key is the hex SHA-256 of the JSON array
``[identity, sessionId, invocationId, runId, turnId, branch-or-null, role, author]``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from maka_ref._codec.jsontext import stable_json

__all__ = ["SAFE_ID", "PartialStream", "completed_stream_key", "is_safe_id", "partial_stream", "stream_key"]

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
    return hashlib.sha256(stable_json(parts).encode("utf-8")).hexdigest()


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
