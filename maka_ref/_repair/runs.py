"""Generic run repair (spec 20 §4.6) and the terminal-fact repair of §4.7, for one run.

Decision table (``classify_terminal`` of §4.3 × header status):

=====================  ==========================  =========================================
terminal events        header non-terminal          header terminal
=====================  ==========================  =========================================
≥2 (ambiguous)         skip, no writes              skip, no writes
1, a fact              A: header from the event     matches → nothing; disagrees → skip
                                                    (startup), §4.7 on the read path
1, incomplete          B: header from the event     §4.7 step 3: header from the event
                       (``app_restarted``/          (class → ``missing_terminal_event``,
                       ``unknown``)                 abort source → ``unknown``)
0                      C: append a failed terminal  §4.7 step 4: append a failed terminal
                       (``app_restarted``), header  (``missing_terminal_event``), header
=====================  ==========================  =========================================

A repair never appends a terminal next to an existing one (the store's barrier refuses it
anyway) and never touches a tool outcome: only the terminal event, the header and the
terminal operational event are written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from maka_ref._events.predicates import terminal_run_status
from maka_ref._repair.classify import (
    TerminalClassification,
    classify_terminal,
    derive_abort_source,
    derive_failure_class,
    header_matches_fact,
    matching_terminal_events,
)
from maka_ref._repair.diagnose import APP_RESTARTED, diagnose_interrupted_run
from maka_ref._repair.report import RunRepair, SkippedRun
from maka_ref._repair.terminal import commit_terminal, recovered_terminal_event, repair_id
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.errors import StoreError
from maka_ref._store.engine.faults import STORE_FAULT_CODES
from maka_ref._store.agent_runs.header import is_terminal_status
from maka_ref._store.runtime_store import RuntimeStore

__all__ = ["Clock", "RepairSkipped", "repair_run", "repair_terminal_header"]

Clock = Callable[[], int]
MISSING_TERMINAL_EVENT: Final = "missing_terminal_event"
MISSING_TERMINAL_MESSAGE: Final = "terminal run header had no terminal RuntimeEvent"
FACT_REASON: Final = "runtime_event_terminal_fact"
DEFAULT_RECOVERY_REASON: Final = "agent_run_recovery"


class RepairSkipped(StoreError):
    """A run that repair must not write (strict mode raises it; best-effort reports it)."""

    code = "repair_skipped"

    def __init__(self, reason: str, message: str, detail: str | None = None) -> None:
        super().__init__(message, code=reason, detail=detail)
        self.reason = reason


def wall_clock() -> int:
    return time.time_ns() // 1_000_000


def _repair_ts(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], clock: Clock) -> int:
    """Now, but never before the run's last known time (keeps ``ts`` monotone per run)."""
    floor = max([header.get("updatedAt", 0), *(e.get("ts", 0) for e in events if isinstance(e.get("ts"), (int, float)))])
    return max(int(clock()), math.ceil(floor))


def _error_message(event: Mapping[str, Any]) -> str | None:
    content = event.get("content")
    if isinstance(content, Mapping) and content.get("kind") == "error":
        message = content.get("message")
        if type(message) is str and message:
            return message
    return None


def _first_invocation(events: Sequence[Mapping[str, Any]]) -> str | None:
    for event in events:
        value = event.get("invocationId")
        if type(value) is str and value:
            return value
    return None


def _fact_data(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"recovered": True, "recoveryReason": FACT_REASON, "runtimeEventId": event["id"], "runtimeEventStatus": event.get("status")}


def _entry(header: Mapping[str, Any], action: str, updated: Mapping[str, Any], event_id: str, reason: str | None) -> RunRepair:
    return RunRepair(
        session_id=header["sessionId"],
        run_id=header["runId"],
        action=action,
        header_status=updated["status"],
        terminal_event_id=event_id,
        failure_class=updated.get("failureClass"),
        abort_source=updated.get("abortSource"),
        recovery_reason=reason,
    )


def _read(store: RuntimeStore, runs: AgentRunStore, header: Mapping[str, Any], strict: bool) -> tuple[list[Any], list[Any]]:
    session_id, run_id = header["sessionId"], header["runId"]
    try:
        events = store.read_run_events(session_id, run_id)
        op_events = runs.read_events(session_id, run_id, strict=strict)
    except StoreError as exc:
        raise RepairSkipped("ledger_unreadable", f"run {session_id}/{run_id} cannot be read: {exc.message}", exc.code) from exc
    return list(events), list(op_events)


def _require_status(header: Mapping[str, Any], event: Mapping[str, Any]) -> str:
    status = terminal_run_status(event)
    if status is None:  # endInvocation only: it is the run's terminal, but it names no end
        raise RepairSkipped(
            "terminal_event_without_status",
            f"run {header['sessionId']}/{header['runId']} ends with terminal RuntimeEvent {event.get('id')!r} "
            "that carries no terminal status; repair never appends a second terminal",
        )
    return status


def repair_run(
    store: RuntimeStore,
    runs: AgentRunStore,
    header: Mapping[str, Any],
    *,
    strict: bool = False,
    claim_owned: bool = False,
    clock: Clock = wall_clock,
) -> RunRepair | SkippedRun | None:
    """§4.6 for one run: a :class:`RunRepair` (written), a :class:`SkippedRun` or ``None``."""
    try:
        return _repair_run(store, runs, header, strict, claim_owned, clock)
    except RepairSkipped as exc:
        if strict:
            raise
        return SkippedRun(header["sessionId"], header["runId"], exc.reason, exc.message)
    except StoreError as exc:  # a failed write: best-effort skips the run (§4.4), strict raises
        if strict or exc.code in STORE_FAULT_CODES:  # a store-wide fault is no skip (faults.py)
            raise
        return SkippedRun(header["sessionId"], header["runId"], "repair_failed", f"{exc.code}: {exc.message}")


def _repair_run(
    store: RuntimeStore, runs: AgentRunStore, header: Mapping[str, Any], strict: bool, claim_owned: bool, clock: Clock
) -> RunRepair | SkippedRun | None:
    session_id, run_id = header["sessionId"], header["runId"]
    events, op_events = _read(store, runs, header, strict)
    fact = classify_terminal(header, events)
    if fact.kind == "ambiguous":
        raise RepairSkipped(
            "ambiguous_terminal_ledger", f"run {session_id}/{run_id} has {fact.count} terminal RuntimeEvents; no writes"
        )
    if claim_owned and fact.kind == "none":
        return SkippedRun(session_id, run_id, "continuation_claim_owned", "the claim saga (§4.5) owns this run")
    if is_terminal_status(header["status"]):
        if fact.kind == "fact":
            if header_matches_fact(header, fact):
                return None
            assert fact.event is not None
            if fact.event.get("id") == repair_id("terminal", session_id, run_id):
                # §4.8: our own recovered terminal is durable but its header commit was lost
                # (e.g. a §4.7 step-4 repair of a `completed` header): finish that commit.
                return _terminal_fact_repair(store, runs, header, events, op_events, fact, clock)
            raise RepairSkipped(
                "terminal_header_mismatch",
                "terminal run header does not match RuntimeEvent terminal fact; startup repair writes nothing "
                "(the read path repairs it: repair_terminal_header)",
            )
        return _terminal_fact_repair(store, runs, header, events, op_events, fact, clock)
    if fact.kind == "fact":  # case A: the header lags behind the fact
        assert fact.event is not None and fact.run_status is not None
        updated = commit_terminal(
            store, runs, header, fact.event, fact.run_status,
            failure_class=fact.failure_class, failure_message=_error_message(fact.event),
            abort_source=fact.abort_source, run_event_data=_fact_data(fact.event), run_events=op_events,
        )
        return _entry(header, "header_from_terminal_fact", updated, fact.event["id"], FACT_REASON)
    if fact.kind == "incomplete":  # case B: reuse the one incomplete terminal
        assert fact.event is not None
        status = _require_status(header, fact.event)
        updated = commit_terminal(
            store, runs, header, fact.event, status,
            failure_class=APP_RESTARTED, failure_message=_error_message(fact.event),
            abort_source="unknown", run_event_data=_fact_data(fact.event), run_events=op_events,
        )
        return _entry(header, "header_from_incomplete_terminal", updated, fact.event["id"], FACT_REASON)
    # case C: no terminal event at all
    diagnostic = diagnose_interrupted_run(header, op_events)
    reason = diagnostic.get("recoveryReason") or DEFAULT_RECOVERY_REASON
    message = f"run interrupted before its terminal RuntimeEvent ({reason})"
    event = recovered_terminal_event(
        header, _repair_ts(header, events, clock), "failed",
        failure_class=APP_RESTARTED, message=message, recovery_reason=reason,
        diagnostic=diagnostic, invocation_id=_first_invocation(events),
    )
    data = {"recovered": True, **diagnostic}
    updated = _commit_new(store, runs, header, event, APP_RESTARTED, message, data, op_events)
    return _entry(header, "failed_terminal_appended", updated, event["id"], reason)


def _commit_new(
    store: RuntimeStore, runs: AgentRunStore, header: Mapping[str, Any], event: Mapping[str, Any],
    failure_class: str, message: str, data: Mapping[str, Any], op_events: Sequence[Mapping[str, Any]],
) -> Mapping[str, Any]:
    try:
        return commit_terminal(
            store, runs, header, event, "failed", failure_class=failure_class, failure_message=message,
            run_event_data=data, run_events=op_events,
        )
    except StoreError as exc:
        if exc.code in ("terminal_exists", "terminal_not_tail", "terminal_mismatch"):
            raise RepairSkipped("terminal_barrier_refused", exc.message, exc.code) from exc
        raise


def _terminal_fact_repair(
    store: RuntimeStore,
    runs: AgentRunStore,
    header: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    op_events: Sequence[Mapping[str, Any]],
    fact: TerminalClassification,
    clock: Clock,
) -> RunRepair | None:
    """§4.7 on a terminal header. No stored session messages exist in this runtime, so the
    back-fill of steps 1–2 finds nothing to corroborate (docs/choices/repair.md)."""
    if not is_terminal_status(header["status"]):
        return None
    if fact.event is not None:  # step 3: a matching terminal exists (fact or incomplete)
        event = fact.event
        status = _require_status(header, event)
        failure = (derive_failure_class(event) or MISSING_TERMINAL_EVENT) if status == "failed" else None
        abort = (derive_abort_source(event) or "unknown") if status == "cancelled" else None
        updated = commit_terminal(
            store, runs, header, event, status, failure_class=failure, failure_message=_error_message(event),
            abort_source=abort, run_event_data=_fact_data(event), run_events=op_events,
        )
        return _entry(header, "header_repaired_from_terminal_event", updated, event["id"], FACT_REASON)
    # step 4: no terminal event at all → failed/missing_terminal_event, whatever the header said
    event = recovered_terminal_event(
        header, _repair_ts(header, events, clock), "failed",
        failure_class=MISSING_TERMINAL_EVENT, message=MISSING_TERMINAL_MESSAGE,
        recovery_reason=MISSING_TERMINAL_EVENT, invocation_id=_first_invocation(events),
    )
    data = {"recovered": True, "recoveryReason": MISSING_TERMINAL_EVENT, "previousStatus": header["status"]}
    updated = _commit_new(store, runs, header, event, MISSING_TERMINAL_EVENT, MISSING_TERMINAL_MESSAGE, data, op_events)
    return _entry(header, "missing_terminal_event_repaired", updated, event["id"], MISSING_TERMINAL_EVENT)


def repair_terminal_header(
    store: RuntimeStore,
    runs: AgentRunStore,
    session_id: str,
    run_id: str,
    *,
    clock: Clock = wall_clock,
) -> RunRepair | None:
    """§4.7 as triggered by the message-read path: also when a valid fact exists but the
    terminal header disagrees with it (spec 20 §8 item 108). Re-reads the header first;
    does nothing if it is no longer terminal, already matches, or the ledger is ambiguous."""
    header = runs.read_run(session_id, run_id)
    if not is_terminal_status(header["status"]):
        return None
    events, op_events = _read(store, runs, header, strict=True)
    fact = classify_terminal(header, events)
    if fact.kind == "ambiguous" or (fact.kind == "fact" and header_matches_fact(header, fact)):
        return None
    if fact.kind == "fact":  # disagreeing fact: rebuild the classification without header fallbacks
        fact = TerminalClassification("incomplete", matching_terminal_events(header, events)[0], fact.run_status, count=1)
    return _terminal_fact_repair(store, runs, header, events, op_events, fact, clock)
