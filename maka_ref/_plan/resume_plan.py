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

Choices where the spec is silent are listed in ``docs/choices/plan.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_ref._ledger.resolver import resolution_of_scan, resolve_recovery
from maka_ref._ledger.results import Decision, Resolution
from maka_ref._ledger.scanner import LedgerScanner
from maka_ref._plan.replay import ReplayScanner

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

_object_setattr = object.__setattr__  # how a frozen dataclass sets its fields

Disposition = Literal["safe_replay", "blocked"]
OperationStatus = Literal["succeeded", "failed", "indeterminate", "not_dispatched", "parked", "corruption"]

#: The model-facing instruction present iff ``requiresVerification`` (spec 20 §1.1). Test
#: contract: matches ``/Do not retry/i`` and ``/read-only/i``. Part of our contract: changing
#: it changes every plan that carries it.
RESUME_DIRECTIVE = (
    "Tool execution was interrupted before a matching committed tool result was found, so the "
    "tool's side effects may or may not have happened. Do not retry the interrupted tool call "
    "immediately. First verify the current state with read-only inspection tools, then decide "
    "how to continue."
)

# Diagnostic codes (spec 20 §1.3) and rejection reasons (§1.4).
RUNTIME_OFFSET_MISMATCH = "runtime_offset_mismatch"
PENDING_TOOL_RESULT = "pending_tool_result"
TOOL_NOT_DISPATCHED = "tool_not_dispatched"
TOOL_RECOVERY_CORRUPTION = "tool_recovery_corruption"
TOOL_RECOVERY_PARKED = "tool_recovery_parked"
TOOL_LEDGER_CORRUPTION = "tool_ledger_corruption"
UNMATCHED_TOOL_RESULT = "unmatched_tool_result"
TOOL_NAME_MISMATCH = "tool_name_mismatch"
DANGLING_TOOL_STATE = "dangling_tool_state"

#: Resolver issue codes reported under their own name; every other one becomes
#: ``tool_ledger_corruption`` with ``detail = {issueCode}`` (§1.3 item 3).
_OWN_CODE_ISSUES = frozenset({"protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict"})

#: §1.4: the only diagnostics that produce a reason in Phase 0, and the reason each produces.
_REASON_OF_DIAGNOSTIC: Mapping[str, str] = {
    RUNTIME_OFFSET_MISMATCH: RUNTIME_OFFSET_MISMATCH,
    PENDING_TOOL_RESULT: DANGLING_TOOL_STATE,
    TOOL_NOT_DISPATCHED: DANGLING_TOOL_STATE,
    TOOL_RECOVERY_PARKED: DANGLING_TOOL_STATE,
    TOOL_RECOVERY_CORRUPTION: DANGLING_TOOL_STATE,
    TOOL_LEDGER_CORRUPTION: DANGLING_TOOL_STATE,
    "duplicate_event_id": DANGLING_TOOL_STATE,
    "semantic_lane_conflict": DANGLING_TOOL_STATE,
    "protocol_marker_invalid": DANGLING_TOOL_STATE,
    UNMATCHED_TOOL_RESULT: DANGLING_TOOL_STATE,
    TOOL_NAME_MISMATCH: DANGLING_TOOL_STATE,
}

#: §1.3 item 2: the diagnostic of an operation status (succeeded/failed produce none).
_DIAGNOSTIC_OF_STATUS: Mapping[str, str] = {
    "indeterminate": PENDING_TOOL_RESULT,
    "not_dispatched": TOOL_NOT_DISPATCHED,
    "corruption": TOOL_RECOVERY_CORRUPTION,
    "parked": TOOL_RECOVERY_PARKED,
}


# ---------------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, init=False)
class ToolOperation:
    """One visible tool call of the prefix and what became of it (spec 20 §1.1)."""

    tool_call_id: str
    tool_name: str
    #: The call event's own ``args`` value (not a copy; treat as read-only).
    args: Any
    status: OperationStatus
    call_runtime_event_id: str
    response_runtime_event_id: str | None = None
    #: Present iff ``response_runtime_event_id`` is; True only for ``isError === true``.
    response_is_error: bool | None = None

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        args: Any,
        status: OperationStatus,
        call_runtime_event_id: str,
        response_runtime_event_id: str | None = None,
        response_is_error: bool | None = None,
    ) -> None:
        # The dataclass-generated frozen __init__ with ``object.__setattr__`` looked up once
        # (one ToolOperation per operation; see ``Decision.__init__``).
        set_ = _object_setattr
        set_(self, "tool_call_id", tool_call_id)
        set_(self, "tool_name", tool_name)
        set_(self, "args", args)
        set_(self, "status", status)
        set_(self, "call_runtime_event_id", call_runtime_event_id)
        set_(self, "response_runtime_event_id", response_runtime_event_id)
        set_(self, "response_is_error", response_is_error)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "args": self.args,
            "status": self.status,
            "callRuntimeEventId": self.call_runtime_event_id,
        }
        if self.response_runtime_event_id is not None:
            out["responseRuntimeEventId"] = self.response_runtime_event_id
            out["responseIsError"] = self.response_is_error is True
        return out


@dataclass(frozen=True, slots=True)
class PlanDiagnostic:
    """One diagnostic ``{code, message, eventId?, toolCallId?, toolName?, detail?}`` (§1.3)."""

    code: str
    message: str
    event_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    #: A small JSON object (treat as read-only); ``to_json`` returns a fresh copy.
    detail: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.event_id is not None:
            out["eventId"] = self.event_id
        if self.tool_call_id is not None:
            out["toolCallId"] = self.tool_call_id
        if self.tool_name is not None:
            out["toolName"] = self.tool_name
        if self.detail is not None:
            out["detail"] = dict(self.detail)
        return out


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """The Phase 0 ResumePlan (spec 20 §1.1)."""

    disposition: Disposition
    operations: tuple[ToolOperation, ...]
    diagnostics: tuple[PlanDiagnostic, ...]
    rejection_reasons: tuple[str, ...]
    requires_verification: bool
    source_runtime_event_high_water: int
    #: ``RESUME_DIRECTIVE`` iff ``requires_verification``, else None (absent in JSON).
    directive: str | None
    #: The input events themselves (same objects, same order).
    runtime_events: tuple[Any, ...]
    #: The legal provider-replay subset (§1.7), same objects.
    replay_runtime_events: tuple[Any, ...]
    #: The RecoveryResolver result the plan was built from (``resolve_recovery`` of the same
    #: events), so one ``build_resume_plan`` call answers both questions a restart asks. Not
    #: part of the spec's plan: absent from ``to_json()``, ``repr`` and equality.
    resolution: Resolution = field(compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "disposition": self.disposition,
            "operations": [op.to_json() for op in self.operations],
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "rejectionReasons": list(self.rejection_reasons),
            "requiresVerification": self.requires_verification,
            "sourceRuntimeEventHighWater": self.source_runtime_event_high_water,
        }
        if self.requires_verification:
            out["directive"] = self.directive if self.directive is not None else RESUME_DIRECTIVE
        out["runtimeEvents"] = list(self.runtime_events)
        out["replayRuntimeEvents"] = list(self.replay_runtime_events)
        return out


# ---------------------------------------------------------------------------------------
# Messages (fixed English texts; only ids and names from the input are interpolated)
# ---------------------------------------------------------------------------------------


def _text(value: Any, fallback: str) -> str:
    return value if type(value) is str and value else fallback


def _call_phrase(tool_call_id: Any, tool_name: Any) -> str:
    return f"tool call {_text(tool_call_id, '(unknown id)')} ({_text(tool_name, 'unknown tool')})"


def _event_phrase(event_id: Any) -> str:
    return f"event {event_id}" if type(event_id) is str and event_id else "an event without a usable id"


def _message(code: str, *, event_id: Any = None, tool_call_id: Any = None, tool_name: Any = None,
             hidden: bool = False, reason: Any = None, issue_code: Any = None,
             call_tool_name: Any = None) -> str:
    """The fixed English message of a diagnostic (see ``docs/choices/plan.md``)."""
    event = _event_phrase(event_id)
    if code == RUNTIME_OFFSET_MISMATCH:
        return (
            "The expected runtime event high-water does not match the number of supplied "
            "runtime events; the prefix is not the one that was planned."
        )
    if code == PENDING_TOOL_RESULT:
        which = "Hidden nested " if hidden else "The "
        return (
            f"{which}{_call_phrase(tool_call_id, tool_name)} has no committed result; its side "
            "effects may or may not have happened."
        )
    if code == TOOL_NOT_DISPATCHED:
        return (
            f"The {_call_phrase(tool_call_id, tool_name)} was committed but never dispatched, so "
            "it has no result to replay."
        )
    if code == TOOL_RECOVERY_PARKED:
        return (
            f"The {_call_phrase(tool_call_id, tool_name)} is parked by a recovery decision "
            f"({_text(reason, 'unknown reason')}) and needs attention before replay."
        )
    if code == TOOL_RECOVERY_CORRUPTION:
        return (
            f"The recovery state of {_call_phrase(tool_call_id, tool_name)} is corrupt "
            f"({_text(reason, 'unknown reason')})."
        )
    if code == "protocol_marker_invalid":
        return f"The tool-boundary protocol marker on {event} is invalid."
    if code == "duplicate_event_id":
        return f"The id of {event} appears more than once in the ledger."
    if code == "semantic_lane_conflict":
        if type(event_id) is str and event_id:
            return f"Event {event_id} does not fit the envelope of exactly one tool-ledger lane."
        return "A ledger entry is not a JSON object with a usable id, or does not fit one lane."
    if code == TOOL_LEDGER_CORRUPTION:
        return f"The tool ledger is corrupt at {event} ({_text(issue_code, 'unknown issue')})."
    if code == UNMATCHED_TOOL_RESULT:
        return f"The tool result {event} does not match any visible tool call."
    if code == TOOL_NAME_MISMATCH:
        return (
            f"The tool result {event} names tool {_text(tool_name, '(none)')} but its call "
            f"names tool {_text(call_tool_name, '(none)')}."
        )
    return f"Diagnostic {code}."  # not reached: every emitted code is listed above


# ---------------------------------------------------------------------------------------
# Building the plan
# ---------------------------------------------------------------------------------------


def _as_event_tuple(events: Any) -> tuple[tuple[Any, ...], bool]:
    """The supplied ledger as a tuple of the very same objects, and whether it *is* a ledger.

    A tuple is used as is; any other iterable (list, generator, ...) is read once. A value that
    is not a ledger (``None``, a number, a string, a single mapping, a non-iterable, an
    iterator that fails) becomes ``(value,)`` and is reported ``False``: the plan then keeps it
    as its one runtime event, lets the resolver judge the original value (which it reports as
    uninterpretable corruption) and replays nothing.
    """
    if type(events) is tuple:
        return events, True
    if type(events) is list:
        return tuple(events), True
    if events is None or isinstance(events, (str, bytes, bytearray, Mapping)):
        return (events,), False
    try:
        return tuple(events), True
    except Exception:  # not iterable, or an iterator that fails: never raise (spec 20 §1)
        return (events,), False


_get = dict.get  # base-class reads: a dict subclass cannot make them raise


def _str_or_none(value: Any) -> str | None:
    """A non-empty ``str`` as is; anything else (absent, empty, wrong type) as None."""
    return value if type(value) is str and value else None


def _content_of(event: Any) -> dict[str, Any] | None:
    if not isinstance(event, dict):
        return None
    content = _get(event, "content")
    return content if isinstance(content, dict) else None


def _operation_status(decision: Decision) -> str:
    status = decision.status
    if status == "completed":
        return "failed" if decision.response_is_error is True else "succeeded"
    if status == "definitely_not_dispatched":
        return "not_dispatched"
    return status


def _high_water_mismatch(expected: Any, actual: int) -> bool:
    """``expected !== actual`` with JavaScript number semantics (a bool is not a number)."""
    if expected is None:
        return False
    if type(expected) is not int and type(expected) is not float:
        return True  # bool, str, None-like wrappers, subclasses: never equal to a JS number
    return expected != actual


#: Ledger entries per piece of the shared pass (see ``_scan``): a piece's events (about 1 KB
#: of objects each) then fit in a core's L2 cache between the two passes over it.
_PIECE = 256


def _scan(
    events: tuple[Any, ...],
) -> tuple[Resolution, tuple[tuple[Any, ...], dict[str, Any], list[Any]]]:
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


def build_resume_plan(events: Iterable[Any], expected_runtime_event_high_water: Any = None) -> ResumePlan:
    """Plan a Phase 0 resume of ``events`` (spec 20 §1.2). Never raises, never mutates."""
    runtime_events, is_ledger = _as_event_tuple(events)
    high_water = len(runtime_events)
    if is_ledger:
        recovery, (replay, call_events, responses) = _scan(runtime_events)
    else:
        recovery = resolve_recovery(events)
        replay, call_events, responses = (), {}, []
    decisions = recovery.decisions

    # §1.1 projection. A decision whose call event is not a visible function_call of the input
    # (a hidden nested call) is kept aside for §1.3 item 5 and §1.5.
    operations: list[ToolOperation] = []
    operation_reasons: list[str] = []  # the decision reason of each operation, for messages
    operation_calls: list[dict[str, Any]] = []  # the call event of each operation
    operation_by_call_id: dict[str, ToolOperation] = {}  # the first operation of each call id
    hidden_call_decisions: list[tuple[Decision, dict[str, Any] | None]] = []
    callless_decisions: list[Decision] = []
    for decision in decisions:
        call_id = decision.call_runtime_event_id
        if type(call_id) is not str or not call_id:
            callless_decisions.append(decision)
            continue
        # ``call_events`` only holds non-partial function_call events (see ``ReplayScanner``).
        found = call_events.get(call_id)
        if found is None or found[1]:
            hidden_call_decisions.append((decision, found[0] if found is not None else None))
            continue
        call, _, name, args = found
        response_id = decision.response_runtime_event_id
        if type(response_id) is not str or not response_id:
            response_id = None
        operation = ToolOperation(
            decision.tool_call_id,
            name if type(name) is str else (_str_or_none(decision.tool_name) or ""),
            args,
            _operation_status(decision),  # type: ignore[arg-type]
            call_id,
            response_id,
            (decision.response_is_error is True) if response_id is not None else None,
        )
        operations.append(operation)
        operation_reasons.append(decision.reason)
        operation_calls.append(call)
        operation_by_call_id.setdefault(operation.tool_call_id, operation)

    diagnostics: list[PlanDiagnostic] = []
    add = diagnostics.append

    # 1. runtime_offset_mismatch
    if _high_water_mismatch(expected_runtime_event_high_water, high_water):
        add(
            PlanDiagnostic(
                code=RUNTIME_OFFSET_MISMATCH,
                message=_message(RUNTIME_OFFSET_MISMATCH),
                detail={
                    "expectedRuntimeEventHighWater": expected_runtime_event_high_water,
                    "actualRuntimeEventHighWater": high_water,
                },
            )
        )

    # 2. one per operation, operation order
    for op, op_reason in zip(operations, operation_reasons):
        code = _DIAGNOSTIC_OF_STATUS.get(op.status)
        if code is None:
            continue
        add(
            PlanDiagnostic(
                code=code,
                message=_message(
                    code,
                    tool_call_id=op.tool_call_id,
                    tool_name=op.tool_name,
                    reason=op_reason,
                ),
                event_id=op.call_runtime_event_id,
                tool_call_id=op.tool_call_id,
                tool_name=op.tool_name or None,
            )
        )

    # 3. one per resolver issue
    for issue in recovery.issues:
        issue_code = issue.code
        event_id = _str_or_none(issue.event_id)  # "" = an entry without an id
        if issue_code in _OWN_CODE_ISSUES:
            add(PlanDiagnostic(code=issue_code, message=_message(issue_code, event_id=event_id), event_id=event_id))
        else:
            add(
                PlanDiagnostic(
                    code=TOOL_LEDGER_CORRUPTION,
                    message=_message(TOOL_LEDGER_CORRUPTION, event_id=event_id, issue_code=issue_code),
                    event_id=event_id,
                    detail={"issueCode": issue_code},
                )
            )

    # 4. corruption decisions without a call event (orphan responses are reported by item 6)
    for decision in callless_decisions:
        if decision.status != "corruption" or decision.reason == "orphan_response":
            continue
        event_id = _str_or_none(decision.dispatch_runtime_event_id) or _str_or_none(decision.response_runtime_event_id)
        add(
            PlanDiagnostic(
                code=TOOL_RECOVERY_CORRUPTION,
                message=_message(
                    TOOL_RECOVERY_CORRUPTION,
                    tool_call_id=decision.tool_call_id,
                    tool_name=decision.tool_name,
                    reason=decision.reason,
                ),
                event_id=event_id,
                tool_call_id=_str_or_none(decision.tool_call_id),
                tool_name=_str_or_none(decision.tool_name),
            )
        )

    # 5. indeterminate hidden (nested) calls: still unknown effects, still blocking
    hidden_pending = False
    for decision, call in hidden_call_decisions:
        if decision.status != "indeterminate":
            continue
        hidden_pending = True
        content = _content_of(call)
        tool_name = _str_or_none(_get(content, "name")) if content is not None else None
        tool_name = tool_name or _str_or_none(decision.tool_name)
        add(
            PlanDiagnostic(
                code=PENDING_TOOL_RESULT,
                message=_message(PENDING_TOOL_RESULT, tool_call_id=decision.tool_call_id, tool_name=tool_name, hidden=True),
                event_id=_str_or_none(decision.call_runtime_event_id),
                tool_call_id=_str_or_none(decision.tool_call_id),
                tool_name=tool_name,
            )
        )

    # 6. visible committed responses without an operation, or naming another tool. "The"
    # operation of a response is the one with its toolCallId; when a provider reused a call id
    # across invocations (several operations share it) the one whose call is in the response's
    # invocation is preferred, as tool calls are keyed by (invocationId, call id) — spec 10 §4.3.
    if responses:
        # Only a reused call id needs the (invocationId, call id) map; otherwise both lookups
        # find the same operation.
        operation_by_key: dict[tuple[str, str], ToolOperation] | None = None
        if len(operation_by_call_id) != len(operations):
            operation_by_key = {}
            for op, call in zip(operations, operation_calls):
                invocation_id = _get(call, "invocationId")
                if type(invocation_id) is str:
                    operation_by_key.setdefault((invocation_id, op.tool_call_id), op)
        for event, response_call_id, response_name in responses:
            op = None
            if type(response_call_id) is str:
                if operation_by_key is not None:
                    invocation_id = _get(event, "invocationId")
                    if type(invocation_id) is str:
                        op = operation_by_key.get((invocation_id, response_call_id))
                if op is None:
                    op = operation_by_call_id.get(response_call_id)
            if op is not None and type(response_name) is str and response_name == op.tool_name:
                continue  # the response matches its operation
            event_id = _str_or_none(_get(event, "id"))
            if op is None:
                add(
                    PlanDiagnostic(
                        code=UNMATCHED_TOOL_RESULT,
                        message=_message(UNMATCHED_TOOL_RESULT, event_id=event_id),
                        event_id=event_id,
                        tool_call_id=_str_or_none(response_call_id),
                        tool_name=_str_or_none(response_name),
                    )
                )
            else:
                add(
                    PlanDiagnostic(
                        code=TOOL_NAME_MISMATCH,
                        message=_message(
                            TOOL_NAME_MISMATCH,
                            event_id=event_id,
                            tool_name=response_name,
                            call_tool_name=op.tool_name,
                        ),
                        event_id=event_id,
                        tool_call_id=op.tool_call_id,
                        tool_name=_str_or_none(response_name),
                        detail={"callToolName": op.tool_name, "responseToolName": response_name},
                    )
                )

    # §1.4 reasons: first-seen order, de-duplicated
    reasons: list[str] = []
    for diagnostic in diagnostics:
        reason = _REASON_OF_DIAGNOSTIC.get(diagnostic.code)
        if reason is not None and reason not in reasons:
            reasons.append(reason)

    # §1.5 verification
    requires_verification = hidden_pending or any(op.status == "indeterminate" for op in operations)

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
