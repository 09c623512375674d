"""The RecoveryResolver (spec 10 §6.1–§6.4).

What: ``resolve_recovery(events)`` turns the immutable events of one run (physical order)
into one ``Decision`` per scanned tool operation — ``completed``, ``parked``,
``definitely_not_dispatched``, ``indeterminate`` or ``corruption`` — plus the ledger-level
issues, ``hasCorruption`` and ``requiresReconciliation``.

Why: it is the one place that says what a crash left behind. Phase 0 (the resume plan) and
continuation replay consume it; they gate on ``has_corruption`` first (§6.3 notes).

Rules kept exactly: only ``events[0]`` can carry a valid protocol marker (§3, §6.2); issues
are marker issues first, then scanner issues reduced to ``{code, eventId}``; the event-order
map is last-index-wins (§6.2 step 3, §8.19); the decision table of §6.3 with its fixed
priority list; recovery facts are consulted only after rows 1–3 pass.

Robustness: accepts any value, never raises, never mutates its input (see the scanner for how
uninterpretable entries are reported).

Depends on: ``_ledger.scanner``, ``_ledger.bundle``, ``_ledger.results``,
``_events.constants``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from maka_ref._events.constants import T1_PROTOCOL
from maka_ref._ledger.bundle import interpret_operation
from maka_ref._ledger.results import (
    Decision,
    Resolution,
    ResolverIssue,
    ScannedOperation,
)
from maka_ref._ledger.scanner import LedgerScanner, as_event_sequence

PROTOCOL_MARKER_INVALID = "protocol_marker_invalid"

#: §6.3 row 3: the first code of this list found on the operation is its reason.
PRIORITY_CODES: tuple[str, ...] = (
    "duplicate_call",
    "duplicate_operation",
    "duplicate_dispatch",
    "duplicate_response",
    "orphan_response",
    "canonical_args_hash_conflict",
    "identity_conflict",
    "event_order_conflict",
)

CORRUPTION = "corruption"
INDETERMINATE = "indeterminate"


def _event_id(event: Any) -> str | None:
    value = event.get("id") if isinstance(event, dict) else None
    return value if isinstance(value, str) else None


def _has_marker(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    actions = event.get("actions")
    return isinstance(actions, dict) and "runtimeProtocol" in actions


def _build_event_order(events: Sequence[Any]) -> dict[str | None, int]:
    """§6.2 step 3: id → index, the *last* index wins for a repeated id. Events without an
    id share the key ``None`` (upstream's ``Map`` keys them all by ``undefined``)."""
    order: dict[str | None, int] = {}
    for index, event in enumerate(events):
        if isinstance(event, dict):
            event_id = event.get("id")
            if event_id is None or isinstance(event_id, str):
                order[event_id] = index
    return order


def resolve_recovery(events: Iterable[Any]) -> Resolution:
    """Resolve every tool operation of ``events`` (§6.2). Never raises."""
    events = as_event_sequence(events)
    scanner = LedgerScanner(markers=[])
    scanner.feed(events)
    return resolution_of_scan(events, scanner)


def resolution_of_scan(events: Sequence[Any], scanner: LedgerScanner) -> Resolution:
    """``resolve_recovery(events)`` given a scanner created with ``markers=[]`` and fed exactly
    ``events`` (internal: lets the ResumePlan builder drive the scan; see ``LedgerScanner``)."""
    issues: list[ResolverIssue] = []
    scan = scanner.result()
    # Steps 1–2: the marker rule. Only events[0] counts; any later marker is an issue. The
    # scanner reported every marker-carrying entry in order.
    markers = list(scanner.markers or ())
    new_protocol = False
    if events:
        first = events[0]
        if _has_marker(first):
            del markers[:1]  # the scan's first marker is events[0]'s
            marker = first["actions"]["runtimeProtocol"]
            if isinstance(marker, dict) and marker.get("toolBoundary") == T1_PROTOCOL:
                new_protocol = True
            else:
                issues.append(ResolverIssue(PROTOCOL_MARKER_INVALID, _event_id(first)))
    for marker_event_id in markers:
        issues.append(ResolverIssue(PROTOCOL_MARKER_INVALID, marker_event_id))

    for issue in scan.issues:
        issues.append(ResolverIssue(issue.code, issue.event_id))

    if new_protocol:
        default_status, default_reason = "definitely_not_dispatched", "new_protocol_before_dispatch"
    else:
        default_status, default_reason = INDETERMINATE, "legacy_dispatch_unknown"

    decisions: list[Decision] = []
    any_corruption = False
    any_indeterminate = False
    event_order: dict[str, int] | None = None
    for op in scan.operations:
        if op.reconcile_events or op.decision_events:
            if event_order is None:
                event_order = _build_event_order(events)
            decision = _decide(op, default_status, default_reason, event_order)
        else:
            decision = _decide(op, default_status, default_reason, None)
        status = decision.status
        if status == CORRUPTION:
            any_corruption = True
        elif status == INDETERMINATE:
            any_indeterminate = True
        decisions.append(decision)

    has_corruption = bool(issues) or any_corruption
    return Resolution(
        decisions=tuple(decisions),
        issues=tuple(issues),
        has_corruption=has_corruption,
        requires_reconciliation=(not has_corruption) and any_indeterminate,
        tool_boundary_protocol=T1_PROTOCOL if new_protocol else None,
    )


def _decide(
    op: ScannedOperation,
    default_status: str,
    default_reason: str,
    event_order: dict[str, int] | None,
) -> Decision:
    """§6.3 decision table for one scanned operation (first matching row wins)."""
    call = op.call_event
    dispatch = op.dispatch_event
    response = op.response_event
    call_id = call.get("id") if call is not None else None
    dispatch_id = dispatch.get("id") if dispatch is not None else None
    if response is not None:
        response_id = response.get("id")
        content = response.get("content")
        response_is_error = isinstance(content, dict) and content.get("isError") is True
    else:
        response_id = None
        response_is_error = None

    status = default_status
    reason = default_reason
    origin = None
    if call is None and dispatch is not None:  # row 1 beats any issue
        status, reason = CORRUPTION, "orphan_dispatch"
    elif call is None and response is not None:  # row 2
        status, reason = CORRUPTION, "orphan_response"
    else:
        priority = _priority_reason(op.issues) if op.issues else None
        if priority is not None:  # row 3
            status, reason = CORRUPTION, priority
        else:
            if response is not None:  # row 4a
                status, reason = "completed", "matching_response"
                origin = "normal_t2" if dispatch is not None else "pre_t1_synthetic"
            elif dispatch is not None:  # row 4b
                status, reason = INDETERMINATE, "dispatch_without_response"
            # row 4c keeps the default; row 5: no facts → keep row 4
            if event_order is not None:
                interpretation = interpret_operation(op, event_order)
                if interpretation.kind != "valid":  # row 6
                    status, reason, origin = CORRUPTION, "recovery_fact_corruption", None
                else:
                    origin = "recovery_bundle"
                    if interpretation.disposition == "completed":  # row 7
                        status, reason = "completed", "recovery_bundle_completed"
                    else:  # row 8
                        status = "parked"
                        reason = (interpretation.decision or {}).get("reasonCode")
    return Decision(
        op.tool_call_id,
        status,
        reason,
        op.tool_name,
        op.operation_id,
        origin,
        call_id,
        dispatch_id,
        response_id,
        response_is_error,
    )


def _priority_reason(op_issues: list[Any]) -> str | None:
    codes = {issue.code for issue in op_issues}
    for code in PRIORITY_CODES:
        if code in codes:
            return code
    return None


__all__ = ["PRIORITY_CODES", "resolve_recovery"]
