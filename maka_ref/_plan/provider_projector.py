"""The per-event projection rules behind :func:`~maka_ref._plan.provider_items.project_provider_items`.

Split out of :mod:`maka_ref._plan.provider_items` (which keeps the entry point and documents
the numbered rules) so the rule engine — the ``_Projector`` state machine plus the turn
pre-scan that rule 10 needs — is one module with one job: read events, apply the rules.
Pure: no I/O, clock, randomness or global state; never raises, never mutates its input.
"""

from __future__ import annotations

from typing import Any, Mapping

from maka_ref._codec.frozen import FrozenDict, freeze
from maka_ref._events.predicates import is_partial_event, is_terminal_event
from maka_ref._plan.provider_attachments import _text_with_attachments
from maka_ref._plan.provider_diagnostics import ProviderProjection, ReplayDiagnostic
from maka_ref._plan.provider_fields import _is_finite_number, _mapping, _refs_str, _str_or_none

__all__: list[str] = []  # private helpers of provider_items, imported by name

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

