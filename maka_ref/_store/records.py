"""Result and record values returned by the store (spec 30 §2, §3.3).

Frozen slotted dataclasses with snake_case attributes and a ``to_json()`` in the spec's
camelCase, omitting absent optional fields (the same convention as ``maka_ref._ledger.results``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AppendResult", "CommitResult", "RebuildReport", "ToolJournalRecord", "ToolOperationRecord"]


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Generic append: ``created`` is False for an exact retry; ``event_seq`` is None for a
    streamable partial chunk (partials never get an immutable position)."""

    created: bool
    event_seq: int | None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"created": self.created}
        if self.event_seq is not None:
            out["eventSeq"] = self.event_seq
        return out


@dataclass(frozen=True, slots=True)
class CommitResult:
    """T1/T2: ``runtime_event_seq`` is the dispatch's (T1) or the response's (T2) event_seq."""

    created: bool
    runtime_event_seq: int

    def to_json(self) -> dict[str, Any]:
        return {"created": self.created, "runtimeEventSeq": self.runtime_event_seq}


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """§3.2 step 6: how many operations and journal rows the rebuild wrote."""

    operations: int
    journal_events: int

    def to_json(self) -> dict[str, Any]:
        return {"operations": self.operations, "journalEvents": self.journal_events}


@dataclass(frozen=True, slots=True)
class ToolOperationRecord:
    """One ``tool_operations`` row: the 13 logical fields of §3.3."""

    operation_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    provider_tool_call_id: str
    tool_name: str
    canonical_args_hash: str
    recovery_mode: str
    current_state: str
    call_event_id: str
    dispatch_event_id: str | None
    result_event_id: str | None
    version: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operationId": self.operation_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "providerToolCallId": self.provider_tool_call_id,
            "toolName": self.tool_name,
            "canonicalArgsHash": self.canonical_args_hash,
            "recoveryMode": self.recovery_mode,
            "currentState": self.current_state,
            "callEventId": self.call_event_id,
        }
        if self.dispatch_event_id is not None:
            out["dispatchEventId"] = self.dispatch_event_id
        if self.result_event_id is not None:
            out["resultEventId"] = self.result_event_id
        out["version"] = self.version
        return out


@dataclass(frozen=True, slots=True)
class ToolJournalRecord:
    """One ``tool_journal_events`` row: the 12 contract fields of §3.3 (``journal_seq`` is
    deliberately not part of it: it changes across a rebuild)."""

    journal_event_id: str
    operation_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    state: str
    runtime_event_id: str | None
    canonical_args_hash: str | None
    recovery_mode: str | None
    external_handle: str | None
    metadata: Any
    committed_at: int | float

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "journalEventId": self.journal_event_id,
            "operationId": self.operation_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "state": self.state,
        }
        for key, value in (
            ("runtimeEventId", self.runtime_event_id),
            ("canonicalArgsHash", self.canonical_args_hash),
            ("recoveryMode", self.recovery_mode),
            ("externalHandle", self.external_handle),
            ("metadata", self.metadata),
        ):
            if value is not None:
                out[key] = value
        out["committedAt"] = self.committed_at
        return out
