"""Phase 0 ResumePlan: is this committed prefix safe to replay to a provider? (spec 20 §1).

Why this module exists: before anything resumes, a pure function looks only at the
RuntimeEvents that were fully committed and answers "safe_replay" or "blocked", listing every
tool operation, every reason it blocks, and the legal provider-replay subset. It runs no tool,
creates no run, touches no workspace and writes nothing.

The algorithm (spec 20 §1.2), with the exact rules of §1.1 and §1.3–§1.6:

```
recovery    = resolve_recovery(events)                        # spec 10 §6
operations  = project(events, recovery)                       # §1.1
diagnostics = runtime_offset_mismatch?                        # §1.3 item 1
              + one per operation                             #        item 2
              + one per resolver issue                        #        item 3
              + call-less corruption decisions                #        item 4
              + hidden indeterminate calls                    #        item 5
              + unmatched / misnamed visible responses        #        item 6
reasons     = first-seen, de-duplicated reasons of the diagnostics   # §1.4
requiresVerification = an operation or a hidden call is indeterminate # §1.5
disposition = safe_replay iff no reasons, no verification, no corruption
```

Rules every reader must know:

* ``build_resume_plan`` never raises, whatever the input: it reads fields defensively and
  leaves judging the events to the resolver (which reports corruption, never raises).
* It never mutates or copies the events: ``runtime_events`` holds the input objects
  themselves, in a tuple; ``ToolOperation.args`` is the call event's own ``args`` value.
* Same input, same plan: messages are fixed English texts built only from ids and names in the
  input, so two builds compare equal (§1.8).
* Performance: the resolver's scan and one replay pass (``replay.ReplayScanner``, which also
  finds the call events the decisions name and the visible responses) walk the ledger piece
  by piece together (``_scan``); the rest is per operation. Nothing is copied. See
  ``docs/performance.md``.

Layout: the result types live in :mod:`~maka_ref._plan.resume_types`, the diagnostic codes
and their tables in :mod:`~maka_ref._plan.resume_codes`, the message texts in
:mod:`~maka_ref._plan.resume_messages`, the defensive input readers in
:mod:`~maka_ref._plan.resume_inputs` and the §1.3 diagnostics step (items 1-6) in
:mod:`~maka_ref._plan.resume_diagnostics`. This module holds the shared scan, the §1.1
projection and the plan itself, and re-exports the public names: callers import from here.

Choices where the spec is silent are listed in ``docs/choices/plan.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from maka_ref._ledger.resolver import resolution_of_scan, resolve_recovery
from maka_ref._ledger.results import Decision, Resolution  # noqa: F401 (Decision: re-export for callers)
from maka_ref._ledger.scanner import LedgerScanner
from maka_ref._plan.replay import ReplayScanner
from maka_ref._plan.resume_codes import _REASON_OF_DIAGNOSTIC, DANGLING_TOOL_STATE
from maka_ref._plan.resume_diagnostics import _collect_diagnostics
from maka_ref._plan.resume_inputs import _as_event_tuple, _get
from maka_ref._plan.resume_types import (
    ABSENT_ARGS,
    RESUME_DIRECTIVE,
    Disposition,
    OperationStatus,
    PlanDiagnostic,
    ResumePlan,
    ToolOperation,
)

__all__ = [
    "DANGLING_TOOL_STATE",
    "RESUME_DIRECTIVE",
    "Disposition",
    "OperationStatus",
    "PlanDiagnostic",
    "ResumePlan",
    "ToolOperation",
    "build_resume_plan",
]


def _operation_status(decision: Decision) -> str:
    status = decision.status
    if status == "completed":
        return "failed" if decision.response_is_error is True else "succeeded"
    if status == "definitely_not_dispatched":
        return "not_dispatched"
    return status


#: Ledger entries per piece of the shared pass (see ``_scan``): a piece's events (about 1 KB
#: of objects each) then fit in a core's L2 cache between the two passes over it.
_PIECE = 256


def _scan(
    events: tuple[Any, ...],
) -> tuple[Resolution, tuple[tuple[Any, ...], dict[Any, Any], list[Any]]]:
    """The resolver's scan and the replay pass (§1.7, §1.3 item 6) over ``events``, piece by piece.

    Both passes read the same fields of every event. Run one after the other over a large
    ledger, the second would fetch every event from main memory again; fed the same piece
    back to back, it finds them in the CPU cache. The result is exactly
    ``resolve_recovery(events)`` and ``ReplayScanner`` over the whole ledger (each is
    piece-independent by construction).
    """
    scanner = LedgerScanner(markers=[])
    replay = ReplayScanner(collect_plan_facts=True)
    for start in range(0, len(events), _PIECE):
        piece = events[start : start + _PIECE]
        scanner.feed(piece)
        replay.feed(piece)
    return resolution_of_scan(events, scanner), replay.result()


def _hidden_by_last_event(events: tuple[Any, ...], event_ids: set[Any]) -> dict[Any, bool]:
    """For each id of ``event_ids``: is the *last* event carrying it hidden? (Upstream's
    ``eventsById`` map, ``runtime-resume.ts:1356`` and ``:1408``, keeps the last event of an
    id.) One backward pass, only over the ids asked for."""
    out: dict[Any, bool] = {}
    wanted = set(event_ids)
    for event in reversed(events):
        if not wanted:
            break
        if isinstance(event, dict):
            event_id = _get(event, "id")
            if (event_id is None or type(event_id) is str) and event_id in wanted:
                wanted.discard(event_id)
                out[event_id] = _get(event, "modelVisibility") == "hidden"
    return out


def build_resume_plan(events: Iterable[Any], expected_runtime_event_high_water: Any = None) -> ResumePlan:
    """Plan a Phase 0 resume of ``events`` (spec 20 §1.2). Never raises, never mutates.

    On well-typed ledgers this is upstream's ``buildResumePlanFromRuntimeEvents``
    (``packages/runtime/src/runtime-resume.ts:888``) step for step: the operations come from
    the *last* visible ``function_call`` event of each call event id (``:847``), the response
    checks look an operation up by its provider call id alone, the last operation of an id
    winning (``:1260``), and hidden calls are judged by the last event of their id.
    """
    runtime_events, is_ledger = _as_event_tuple(events)
    high_water = len(runtime_events)
    if is_ledger:
        recovery, (replay, visible_calls, responses) = _scan(runtime_events)
    else:
        recovery = resolve_recovery(events)
        replay, visible_calls, responses = (), {}, []
    decisions = recovery.decisions

    # §1.1 projection: a decision becomes an operation when its call event id is non-empty and
    # names a visible function_call event of the input.
    operations: list[ToolOperation] = []
    operation_reasons: list[str] = []  # the decision reason of each operation, for messages
    for decision in decisions:
        call_id = decision.call_runtime_event_id
        if not call_id or (call_id is not None and type(call_id) is not str):
            continue
        found = visible_calls.get(call_id)
        if found is None:
            continue
        _, content = found
        response_id = decision.response_runtime_event_id
        name = _get(content, "name")
        operations.append(ToolOperation(
            decision.tool_call_id,
            name if type(name) is str else None,
            _get(content, "args", ABSENT_ARGS),
            _operation_status(decision),  # type: ignore[arg-type]
            call_id,
            response_id if type(response_id) is str and response_id else None,
            decision.response_is_error,
        ))
        operation_reasons.append(decision.reason)

    # Hidden (nested) calls: an indeterminate decision whose call event id's last event is
    # hidden still blocks (§1.3 item 5, §1.5).
    asked = {d.call_runtime_event_id for d in decisions
             if d.status == "indeterminate" and d.call_runtime_event_id is not None}
    hidden = _hidden_by_last_event(runtime_events, asked) if asked and is_ledger else {}

    diagnostics = _collect_diagnostics(
        expected_runtime_event_high_water,
        high_water,
        recovery,
        operations,
        operation_reasons,
        hidden,
        responses,
    )

    # §1.4 reasons: first-seen order, de-duplicated
    reasons: list[str] = []
    for diagnostic in diagnostics:
        reason = _REASON_OF_DIAGNOSTIC.get(diagnostic.code)
        if reason is not None and reason not in reasons:
            reasons.append(reason)

    # §1.5 verification (upstream's hasHiddenIndeterminateOperation, :1404: any call event id,
    # the empty one included)
    requires_verification = any(op.status == "indeterminate" for op in operations) or any(hidden.values())

    disposition: Disposition = (
        "safe_replay"
        if not reasons and not requires_verification and recovery.has_corruption is False
        else "blocked"
    )

    return ResumePlan(
        disposition=disposition,
        operations=tuple(operations),
        diagnostics=tuple(diagnostics),
        rejection_reasons=tuple(reasons),
        requires_verification=requires_verification,
        source_runtime_event_high_water=high_water,
        directive=RESUME_DIRECTIVE if requires_verification else None,
        runtime_events=runtime_events,
        replay_runtime_events=replay,
        resolution=recovery,
    )
