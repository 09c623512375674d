"""The repair report (camelCase JSON): one entry per repaired run, plus what was left alone.

``repairs`` lists runs that were *written* (so a second pass over a repaired workspace has
``repairs == []``); ``skipped`` lists runs (or quarantined sessions) that need attention but
got no writes — ambiguous ledgers, unreadable ledgers, a terminal header that disagrees with
a valid fact — and is stable from pass to pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RepairReport", "RunRepair", "SkippedRun"]

#: ``action`` values of :class:`RunRepair` (docs/choices/repair.md).
ACTIONS = (
    "header_from_terminal_fact",  # §4.6 case A
    "header_from_incomplete_terminal",  # §4.6 case B
    "failed_terminal_appended",  # §4.6 case C
    "header_repaired_from_terminal_event",  # §4.7 step 3
    "missing_terminal_event_repaired",  # §4.7 step 4
)


@dataclass(frozen=True, slots=True)
class RunRepair:
    session_id: str
    run_id: str
    action: str
    header_status: str
    terminal_event_id: str | None = None
    failure_class: str | None = None
    abort_source: str | None = None
    recovery_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionId": self.session_id, "runId": self.run_id, "action": self.action}
        if self.terminal_event_id is not None:
            out["terminalEventId"] = self.terminal_event_id
        out["headerStatus"] = self.header_status
        for key, value in (
            ("failureClass", self.failure_class),
            ("abortSource", self.abort_source),
            ("recoveryReason", self.recovery_reason),
        ):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class SkippedRun:
    session_id: str
    run_id: str | None  # None: the whole session was quarantined
    reason: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionId": self.session_id}
        if self.run_id is not None:
            out["runId"] = self.run_id
        out["reason"] = self.reason
        if self.detail is not None:
            out["detail"] = self.detail
        return out


@dataclass(slots=True)
class RepairReport:
    repairs: list[RunRepair] = field(default_factory=list)
    skipped: list[SkippedRun] = field(default_factory=list)
    recovered_sessions: list[str] = field(default_factory=list)
    #: Phase 3 reconciler results (``ReconcileResult``), run before each run is sealed
    #: (spec-phase3 §5.5); reported only when there is one, so pre-Phase-3 reports are unchanged.
    reconciled: list[Any] = field(default_factory=list)

    def extend(self, other: "RepairReport") -> None:
        self.repairs.extend(other.repairs)
        self.skipped.extend(other.skipped)
        self.recovered_sessions.extend(other.recovered_sessions)
        self.reconciled.extend(other.reconciled)

    def to_json(self) -> dict[str, Any]:
        return {
            "repairs": [item.to_json() for item in self.repairs],
            "skipped": [item.to_json() for item in self.skipped],
            "recoveredSessions": list(self.recovered_sessions),
            **({"reconciled": [item.to_json() for item in self.reconciled]} if self.reconciled else {}),
        }
