"""Diagnostic codes and the value types the provider-item projector returns.

Split out of :mod:`maka_ref._plan.provider_items` so the plain output data (codes,
:class:`ReplayDiagnostic`, :class:`ProviderProjection`) sits apart from the per-event rules
that produce it; the projector and the entry point import from here, never the reverse.
Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from maka_ref._codec.frozen import FrozenDict

__all__ = [
    "BLOCKING_DIAGNOSTIC_CODES",
    "DIAGNOSTIC_CODES",
    "ProviderProjection",
    "ReplayDiagnostic",
]

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
