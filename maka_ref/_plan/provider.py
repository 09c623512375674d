"""The provider-item projection: committed RuntimeEvents → model history (spec 20 §1.10 step 3).

Why this exists: a continuation must hand the provider exactly the committed history —
never a streaming snapshot, never a hidden nested Code Mode event, never a terminal or
error fact dressed up as a message, never a ``tool_use`` without its ``tool_result``.
This module turns immutable RuntimeEvents into neutral *provider items* plus diagnostics;
the segment planner (:mod:`maka_ref._plan.prefix.immutable.replay`) decides from the diagnostics
whether the segment is replayable, and hashes the items into the provider replay digest.

Provider items (JSON objects, every one with ``eventId`` and ``ts`` of its source event;
optional keys are absent, never ``null``)::

    {"kind": "text", "role": "user"|"assistant"|"system", "content": str,
     "attachments"?: [...], "stepId"?: str, "eventId", "ts"}
    {"kind": "thinking", "text": str, "signature": str, "stepId"?: str, "eventId", "ts"}
    {"kind": "tool_call", "toolCallId": str, "toolName": str, "input": <args>,
     "stepId"?: str, "eventId", "ts"}
    {"kind": "tool_result", "toolCallId": str, "toolName": str, "output": <result>,
     "isError": bool, "eventId", "ts"}

(``role: "system"`` is part of the item vocabulary but never produced: system replay is
disabled.) Field names follow the anchor's replay items so the digest has a chance of
byte parity; see ``docs/choices/v2-replay.md`` for every choice made where the spec only
sketches the projector.

Per event, in ledger order (first matching rule wins; "→ code" names the diagnostic,
**bold** codes are *blocking*):

1. not an object, or ``id`` not a non-empty string, or ``ts`` not a finite number →
   **unsupported_content**;
2. ``partial === true`` → **partial_skipped**;
3. ``modelVisibility === "hidden"`` → ``hidden_skipped`` (skipped, not blocking);
4. terminal event → ``terminal_fact_diagnostic_only`` (then continue with rule 5);
5. no ``content`` → ``system_runtime_fact_diagnostic_only`` if it has ``actions`` and is
   not terminal; skipped;
6. ``content`` not an object, unknown ``kind``, or a ``text``/``thinking`` whose text is
   not a string → **unsupported_content**;
7. ``error`` content → ``error_content_diagnostic_only``; empty ``text`` with role
   ``model`` → ``empty_text_skipped``; empty ``text`` with any other role →
   **unsupported_content**;
8. role ``system`` → ``system_runtime_fact_diagnostic_only`` (system replay disabled);
9. ``text``: role ``user`` → user item, ``model`` → assistant item, else
   **unsupported_role**;
10. ``thinking``: role must be ``model`` (**unsupported_role**); no signature →
    ``unsigned_thinking_skipped``; signed but its turn has a visible ``function_call``
    without ``refs.stepId`` → ``signed_thinking_in_tool_turn_skipped``; else an item;
11. ``function_call``: role must be ``model`` (**unsupported_role**); ``id``/``name`` must
    be strings (**unsupported_content**); becomes a *pending* ``tool_call`` item;
12. ``function_response``: role must be ``tool`` (**unsupported_role**); ``id``/``name``
    must be strings (**unsupported_content**); no pending call with that id →
    **unmatched_tool_result**; pending call with another name → **tool_id_mismatch**;
    the ``tool_result`` item is emitted either way and the call stops being pending.

Finally every call still pending is removed from the items and reported as
``unmatched_tool_call`` (not blocking here; the segment planner trims it or blocks with
``provider_replay_non_suffix_gap``).

Reading order: the defensive field readers (the projector accepts garbage events without
raising), the ``String(value)`` rendering of text with attachment refs (byte parity with
the anchor's digest), the diagnostic codes and output values, the ``_Projector`` rule engine
with the turn pre-scan rule 10 needs, and last the entry point
:func:`project_provider_items`.

Never raises, never mutates its input. Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from maka_ref._codec.frozen import FrozenDict, freeze
from maka_ref._codec.numbers import format_number
from maka_ref._events.predicates import is_partial_event, is_terminal_event

__all__ = [
    "BLOCKING_DIAGNOSTIC_CODES",
    "DIAGNOSTIC_CODES",
    "ProviderProjection",
    "ReplayDiagnostic",
    "project_provider_items",
]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _is_finite_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _refs_str(event: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string ref (JS truthiness: an empty string counts as absent)."""
    refs = _mapping(event.get("refs"))
    value = refs.get(key) if refs is not None else None
    return value if isinstance(value, str) and value else None


_MISSING = object()


def _js_string(value: object) -> str:
    """JavaScript ``String(value)`` for the values an attachment field can hold."""
    if value is _MISSING:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            return format_number(value)
        except Exception:  # noqa: BLE001 - NaN/Infinity and friends
            return str(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else _js_string(v) for v in value)
    return "[object Object]"


def _text_with_attachments(text: str, attachments: object) -> str:
    """The text plus one ``[attachment: name (mimeType)]`` ref per attachment."""
    if not isinstance(attachments, (list, tuple)) or not attachments:
        return text
    refs = []
    for attachment in attachments:
        fields = attachment if isinstance(attachment, Mapping) else {}
        refs.append(
            f"[attachment: {_js_string(fields.get('name', _MISSING))} "
            f"({_js_string(fields.get('mimeType', _MISSING))})]"
        )
    return f"{text}\n\n{' '.join(refs)}"


#: Diagnostics that make a segment unreplayable (spec 20 §1.10 step 3).
BLOCKING_DIAGNOSTIC_CODES = frozenset(
    {"partial_skipped", "unmatched_tool_result", "tool_id_mismatch", "unsupported_role", "unsupported_content"}
)

#: Every diagnostic code this projector emits.
DIAGNOSTIC_CODES = frozenset(
    BLOCKING_DIAGNOSTIC_CODES
    | {
        "hidden_skipped",
        "terminal_fact_diagnostic_only",
        "system_runtime_fact_diagnostic_only",
        "error_content_diagnostic_only",
        "empty_text_skipped",
        "unsigned_thinking_skipped",
        "signed_thinking_in_tool_turn_skipped",
        "unmatched_tool_call",
    }
)

@dataclass(frozen=True, slots=True)
class ReplayDiagnostic:
    """``{code, message, eventId?, turnId?, detail?}``."""

    code: str
    message: str
    event_id: str | None = None
    turn_id: str | None = None
    detail: Mapping[str, Any] | None = None

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING_DIAGNOSTIC_CODES

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.event_id is not None:
            out["eventId"] = self.event_id
        if self.turn_id is not None:
            out["turnId"] = self.turn_id
        if self.detail is not None:
            out["detail"] = dict(self.detail)
        return out


@dataclass(frozen=True, slots=True)
class ProviderProjection:
    """Projector output: items in ledger order and diagnostics in emission order."""

    items: tuple[FrozenDict, ...]
    diagnostics: tuple[ReplayDiagnostic, ...]

    @property
    def blocking_diagnostics(self) -> tuple[ReplayDiagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.blocking)

    @property
    def unmatched_calls(self) -> tuple[ReplayDiagnostic, ...]:
        """The ``unmatched_tool_call`` diagnostics (their ``event_id`` is the call event)."""
        return tuple(d for d in self.diagnostics if d.code == "unmatched_tool_call")

    def to_json(self) -> dict[str, Any]:
        return {"items": list(self.items), "diagnostics": [d.to_json() for d in self.diagnostics]}


_CONTENT_KINDS = frozenset({"text", "thinking", "function_call", "function_response", "error"})


def _unpaired_tool_turns(events: list[Any]) -> set[str]:
    """Turns with a visible, non-partial ``function_call`` that has no ``refs.stepId``."""
    unpaired: set[str] = set()
    for event in events:
        if not isinstance(event, dict) or is_partial_event(event):
            continue
        if event.get("modelVisibility") == "hidden":
            continue
        content = _mapping(event.get("content"))
        turn_id = event.get("turnId")
        if content is None or content.get("kind") != "function_call" or not isinstance(turn_id, str) or not turn_id:
            continue
        if _refs_str(event, "stepId") is None:
            unpaired.add(turn_id)
    return unpaired


class _Projector:
    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.items: list[FrozenDict] = []
        self.diagnostics: list[ReplayDiagnostic] = []
        #: provider call id → (name, call event id, item); insertion-ordered like a JS Map.
        self.pending: dict[str, tuple[str, str, FrozenDict]] = {}
        self.unpaired_turns = _unpaired_tool_turns(events)

    def diag(
        self, event: Mapping[str, Any] | None, code: str, message: str, detail: Mapping[str, Any] | None = None
    ) -> None:
        event_id = _str_or_none(event.get("id")) if event is not None else None
        turn_id = _str_or_none(event.get("turnId")) if event is not None else None
        self.diagnostics.append(ReplayDiagnostic(code, message, event_id, turn_id, detail))

    def emit(self, event: Mapping[str, Any], item: dict[str, Any]) -> FrozenDict | None:
        """Append the deep-frozen item; a value that cannot be frozen is unsupported."""
        try:
            frozen = freeze(item)
        except Exception:  # noqa: BLE001 - garbage payloads must never escape as exceptions
            self.diag(event, "unsupported_content", "RuntimeEvent payload is not a JSON value", {"kind": item["kind"]})
            return None
        self.items.append(frozen)
        return frozen

    def run(self) -> ProviderProjection:
        for event in self.events:
            self.project(event)
        for call_id, (_name, call_event_id, item) in self.pending.items():
            self.items = [i for i in self.items if i is not item]
            self.diagnostics.append(
                ReplayDiagnostic(
                    "unmatched_tool_call",
                    "function_call has no matching function_response; dropped from model replay",
                    call_event_id,
                    None,
                    {"toolCallId": call_id},
                )
            )
        return ProviderProjection(items=tuple(self.items), diagnostics=tuple(self.diagnostics))

    def project(self, event: Any) -> None:
        if not isinstance(event, dict):
            self.diag(None, "unsupported_content", "RuntimeEvent is not an object", {"type": type(event).__name__})
            return
        event_id = event.get("id")
        if not isinstance(event_id, str) or not event_id or not _is_finite_number(event.get("ts")):
            self.diag(event, "unsupported_content", "RuntimeEvent has no usable id or ts")
            return
        if is_partial_event(event):
            self.diag(event, "partial_skipped", "partial RuntimeEvent skipped for model replay")
            return
        if event.get("modelVisibility") == "hidden":
            self.diag(event, "hidden_skipped", "hidden RuntimeEvent skipped for model replay")
            return
        terminal = is_terminal_event(event)
        if terminal:
            self.diag(
                event,
                "terminal_fact_diagnostic_only",
                "terminal RuntimeEvent status is diagnostic-only for model replay",
                {"status": event.get("status")} if "status" in event else {},
            )
        content = event.get("content")
        if content is None:
            actions = _mapping(event.get("actions"))
            if actions is not None and not terminal:
                self.diag(
                    event,
                    "system_runtime_fact_diagnostic_only",
                    "RuntimeEvent actions are diagnostic-only for model replay",
                    {"actionKeys": list(actions.keys())},
                )
            return
        content = _mapping(content)
        kind = content.get("kind") if content is not None else None
        if content is None or not isinstance(kind, str) or kind not in _CONTENT_KINDS:
            self.diag(
                event,
                "unsupported_content",
                "RuntimeEvent content kind is not model-replayable",
                {"kind": kind} if isinstance(kind, str) else {},
            )
            return
        if kind in ("text", "thinking") and not isinstance(content.get("text"), str):
            self.diag(event, "unsupported_content", "RuntimeEvent text is not a string", {"kind": kind})
            return
        role = event.get("role")
        if kind == "error":
            self.diag(
                event, "error_content_diagnostic_only", "error RuntimeEvent content is diagnostic-only for model replay"
            )
            return
        if kind == "text" and content["text"] == "":
            if role == "model":
                self.diag(
                    event,
                    "empty_text_skipped",
                    "empty model text RuntimeEvent (thinking/tool-only step closer) skipped for model replay",
                )
            else:
                self.diag(
                    event, "unsupported_content", "empty text RuntimeEvent is not model-replayable", {"kind": kind}
                )
            return
        if role == "system":
            self.diag(
                event,
                "system_runtime_fact_diagnostic_only",
                "system RuntimeEvent content is diagnostic-only unless system replay is enabled",
            )
            return
        if kind == "text":
            self.text(event, content, role)
        elif kind == "thinking":
            self.thinking(event, content, role)
        elif kind == "function_call":
            self.call(event, content, role)
        else:
            self.response(event, content, role)

    def text(self, event: Mapping[str, Any], content: Mapping[str, Any], role: Any) -> None:
        item_role = {"user": "user", "model": "assistant"}.get(role) if isinstance(role, str) else None
        if item_role is None:
            self.diag(event, "unsupported_role", "text RuntimeEvent role is not model-replayable", {"role": role})
            return
        item: dict[str, Any] = {
            "kind": "text",
            "role": item_role,
            "content": _text_with_attachments(content["text"], content.get("attachments")),
        }
        if "attachments" in content and content["attachments"] is not None:
            item["attachments"] = content["attachments"]
        step_id = _refs_str(event, "providerEventId")
        if item_role == "assistant" and step_id is not None:
            item["stepId"] = step_id
        item["eventId"] = event["id"]
        item["ts"] = event["ts"]
        self.emit(event, item)

    def thinking(self, event: Mapping[str, Any], content: Mapping[str, Any], role: Any) -> None:
        if role != "model":
            self.diag(event, "unsupported_role", "thinking RuntimeEvent must use model role", {"role": role})
            return
        signature = content.get("signature")
        if not isinstance(signature, str) or not signature:
            self.diag(event, "unsigned_thinking_skipped", "unsigned thinking RuntimeEvent skipped for model replay")
            return
        turn_id = event.get("turnId")
        if isinstance(turn_id, str) and turn_id in self.unpaired_turns:
            self.diag(
                event,
                "signed_thinking_in_tool_turn_skipped",
                "signed thinking RuntimeEvent skipped for model replay: its turn calls tools "
                "with no step id to pair the reasoning to a tool-use assistant message",
            )
            return
        item: dict[str, Any] = {"kind": "thinking", "text": content["text"], "signature": signature}
        step_id = _refs_str(event, "providerEventId")
        if step_id is not None:
            item["stepId"] = step_id
        item["eventId"] = event["id"]
        item["ts"] = event["ts"]
        self.emit(event, item)

    def call(self, event: Mapping[str, Any], content: Mapping[str, Any], role: Any) -> None:
        if role != "model":
            self.diag(event, "unsupported_role", "function_call RuntimeEvent must use model role", {"role": role})
            return
        call_id, name = content.get("id"), content.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            self.diag(
                event, "unsupported_content", "function_call id and name must be strings", {"kind": "function_call"}
            )
            return
        item: dict[str, Any] = {
            "kind": "tool_call",
            "toolCallId": call_id,
            "toolName": name,
            "input": content.get("args"),
        }
        step_id = _refs_str(event, "stepId")
        if step_id is not None:
            item["stepId"] = step_id
        item["eventId"] = event["id"]
        item["ts"] = event["ts"]
        frozen = self.emit(event, item)
        if frozen is not None:
            # A reused provider call id replaces the pending entry (keeping its map
            # position); the resolver reports the reuse as corruption first.
            self.pending[call_id] = (name, event["id"], frozen)

    def response(self, event: Mapping[str, Any], content: Mapping[str, Any], role: Any) -> None:
        if role != "tool":
            self.diag(event, "unsupported_role", "function_response RuntimeEvent must use tool role", {"role": role})
            return
        call_id, name = content.get("id"), content.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            self.diag(
                event,
                "unsupported_content",
                "function_response id and name must be strings",
                {"kind": "function_response"},
            )
            return
        pending = self.pending.pop(call_id, None)
        if pending is None:
            self.diag(
                event,
                "unmatched_tool_result",
                "function_response has no prior matching function_call",
                {"toolCallId": call_id},
            )
        elif pending[0] != name:
            self.diag(
                event,
                "tool_id_mismatch",
                "function_response name differs from matching function_call",
                {"toolCallId": call_id, "callName": pending[0], "resultName": name, "callEventId": pending[1]},
            )
        self.emit(
            event,
            {
                "kind": "tool_result",
                "toolCallId": call_id,
                "toolName": name,
                "output": content.get("result"),
                "isError": content.get("isError") is True,
                "eventId": event["id"],
                "ts": event["ts"],
            },
        )


def project_provider_items(events: Iterable[Any]) -> ProviderProjection:
    """Project RuntimeEvents to provider items and diagnostics (spec 20 §1.10 step 3).

    Accepts any iterable of values (garbage included); never raises; never mutates input.
    """
    try:
        event_list = list(events)
    except TypeError:
        return ProviderProjection(
            items=(), diagnostics=(ReplayDiagnostic("unsupported_content", "RuntimeEvent list is not iterable"),)
        )
    return _Projector(event_list).run()
