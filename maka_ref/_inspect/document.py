"""The parts of the ``inspect`` document shared by the storage kinds (docs/inspect.md).

Why one place: a run read from ``runtime.sqlite`` and a run read from legacy JSONL files are
presented the same way, and their RecoveryResolver result and Phase 0 plan come from the same
pure-core calls (``resolve_recovery``, ``build_resume_plan``) over the same immutable events,
so ``inspect`` can never disagree with ``maka-ref resolve`` / ``maka-ref plan`` on the
exported ledger.

A run that cannot be read is *reported*, never guessed at (spec 20 §1.8: a torn or
undecodable row is storage corruption, not a committed prefix): its ``events``,
``resolution`` and ``plan`` are ``null`` and ``readErrors`` says why.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from maka_ref._codec.frozen import thaw
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._plan.phase0.plan import build_resume_plan
from maka_ref._store.errors import ToolLedgerCorruptionError

__all__ = ["FORMAT", "RunEntry", "error_json", "health_json", "health_of_events", "storage_json"]

#: The document's format tag (bump on an incompatible change of the shape).
FORMAT = "maka_ref_inspect_v1"


def error_json(error: BaseException, source: str | None = None) -> dict[str, Any]:
    """``{source?, code, message, line?, detail?}`` of a read failure (stable ``code``)."""
    out: dict[str, Any] = {}
    if source is not None:
        out["source"] = source
    out["code"] = getattr(error, "code", None) or type(error).__name__
    out["message"] = getattr(error, "message", None) or str(error)
    line = getattr(error, "line", None)
    if type(line) is int:
        out["line"] = line
    detail = getattr(error, "detail", None)
    if isinstance(detail, str) and detail:
        out["detail"] = detail
    return out


def health_json(failure: BaseException | None) -> dict[str, Any]:
    """The store-wide health scan (spec 30 §2.1): ``healthy``, ``corrupt`` (the first scanner
    issue: ``code`` + ``eventId``) or ``unreadable`` (a row or line that does not decode)."""
    if failure is None:
        return {"status": "healthy"}
    if isinstance(failure, ToolLedgerCorruptionError):
        return {"status": "corrupt", "code": failure.code, "eventId": failure.event_id, "message": failure.message}
    return {"status": "unreadable", **error_json(failure)}


def health_of_events(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The health scan over events that are not in a database (legacy JSONL): the same order
    as the store's scan, ``invocationId`` first (stable, so file order within one)."""
    ordered = sorted(events, key=lambda event: str(event.get("invocationId")))
    issues = scan_tool_ledger(ordered).issues
    if not issues:
        return health_json(None)
    return health_json(ToolLedgerCorruptionError(issues[0].code, issues[0].event_id))


def storage_json(
    kind: str,
    *,
    schema_version: int | None = None,
    agent_runs_schema_version: int | None = None,
    files: Iterable[str] = (),
    tables: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "schemaVersion": schema_version,
        "agentRunsSchemaVersion": agent_runs_schema_version,
        "files": sorted(files),
        "tables": dict(sorted((tables or {}).items())),
    }


class RunEntry:
    """One run of the document, filled by a storage view, rendered by :meth:`to_json`."""

    __slots__ = (
        "agent_run_events",
        "event_rows",
        "events",
        "header",
        "partial_events",
        "read_errors",
        "run_id",
        "session_id",
        "tool_journal_events",
        "tool_operations",
    )

    def __init__(self, session_id: str, run_id: str) -> None:
        self.session_id = session_id
        self.run_id = run_id
        self.header: Any = None
        self.agent_run_events: list[Any] = []
        self.events: list[Any] | None = []
        self.event_rows: list[dict[str, Any]] | None = None
        self.partial_events: list[dict[str, Any]] = []
        self.tool_operations: list[dict[str, Any]] = []
        self.tool_journal_events: list[dict[str, Any]] = []
        self.read_errors: list[dict[str, Any]] = []

    def fail(self, source: str, error: BaseException) -> None:
        self.read_errors.append(error_json(error, source))

    def to_json(self) -> dict[str, Any]:
        events = self.events
        return {
            "sessionId": self.session_id,
            "runId": self.run_id,
            "header": thaw(self.header),
            "agentRunEvents": thaw(self.agent_run_events),
            "events": thaw(events),
            "eventRows": self.event_rows,
            "partialEvents": thaw(self.partial_events),
            "resolution": None if events is None else thaw(resolve_recovery(events).to_json()),
            "plan": None if events is None else thaw(build_resume_plan(events).to_json()),
            "toolOperations": self.tool_operations,
            "toolJournalEvents": self.tool_journal_events,
            "readErrors": self.read_errors,
        }
