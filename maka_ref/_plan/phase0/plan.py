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

* ``build_resume_plan`` never raises, whatever the input: every read of the supplied ledger,
  its events and the expected high-water goes through the defensive readers at the top of
  this module, and judging the events is left to the resolver (which reports corruption,
  never raises).
* It never mutates or copies the events: ``runtime_events`` holds the input objects
  themselves, in a tuple; ``ToolOperation.args`` is the call event's own ``args`` value.
* Same input, same plan: messages are fixed English texts built only from ids and names in the
  input, so two builds compare equal (§1.8).
* Performance: the resolver's scan and one replay pass (``phase0.replay.ReplayScanner``, which
  also finds the call events the decisions name and the visible responses) walk the ledger
  piece by piece together (``_scan``); the rest is per operation. Nothing is copied. See
  ``docs/performance.md``.

Reading order, top to bottom: the defensive input readers; the result types
(``ToolOperation``, ``PlanDiagnostic``, ``ResumePlan`` and the model-facing directive; the v2
continuation gates reuse ``PlanDiagnostic``); the spec's vocabulary (diagnostic codes, the
status → diagnostic and diagnostic → reason tables, which a mutant reads here); the fixed
English message texts; the §1.3 diagnostics step (items 1-6, in the order the first-seen
reasons of §1.4 follow); then the shared scan, the §1.1 projection and the plan itself.

Choices where the spec is silent are listed in ``docs/choices/plan.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_ref._ledger.resolver import resolution_of_scan, resolve_recovery
from maka_ref._ledger.results import Decision, Resolution
from maka_ref._ledger.scanner import LedgerScanner
from maka_ref._plan.phase0.replay import ReplayScanner

__all__ = [
    "ABSENT_ARGS",
    "DANGLING_TOOL_STATE",
    "Disposition",
    "OperationStatus",
    "PENDING_TOOL_RESULT",
    "PlanDiagnostic",
    "RESUME_DIRECTIVE",
    "RUNTIME_OFFSET_MISMATCH",
    "ResumePlan",
    "TOOL_LEDGER_CORRUPTION",
    "TOOL_NAME_MISMATCH",
    "TOOL_NOT_DISPATCHED",
    "TOOL_RECOVERY_CORRUPTION",
    "TOOL_RECOVERY_PARKED",
    "ToolOperation",
    "UNMATCHED_TOOL_RESULT",
    "build_resume_plan",
]


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


def _high_water_mismatch(expected: Any, actual: int) -> bool:
    """``expected !== actual`` with JavaScript number semantics (a bool is not a number)."""
    if expected is None:
        return False
    if type(expected) is not int and type(expected) is not float:
        return True  # bool, str, None-like wrappers, subclasses: never equal to a JS number
    return expected != actual


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


class _AbsentArgs:
    """The call event had no ``args`` key: the operation's JSON form has no ``args`` either
    (upstream copies ``call.args``, which is then ``undefined``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT_ARGS"


ABSENT_ARGS: Any = _AbsentArgs()


@dataclass(frozen=True, slots=True, init=False)
class ToolOperation:
    """One visible tool call of the prefix and what became of it (spec 20 §1.1)."""

    #: None: the call has no ``content.id`` (then absent in JSON, as upstream).
    tool_call_id: str | None
    #: The call content's ``name``; None when it has none (absent in JSON).
    tool_name: str | None
    #: The call event's own ``args`` value (not a copy; treat as read-only); ``ABSENT_ARGS``
    #: when the call has no ``args`` key.
    args: Any
    status: OperationStatus
    call_runtime_event_id: str
    response_runtime_event_id: str | None = None
    #: Present iff the decision had a response (even one without an id); True only for
    #: ``isError === true``.
    response_is_error: bool | None = None

    def __init__(
        self,
        tool_call_id: str | None,
        tool_name: str | None,
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
        out: dict[str, Any] = {}
        if self.tool_call_id is not None:
            out["toolCallId"] = self.tool_call_id
        if self.tool_name is not None:
            out["toolName"] = self.tool_name
        if self.args is not ABSENT_ARGS:
            out["args"] = self.args
        out["status"] = self.status
        out["callRuntimeEventId"] = self.call_runtime_event_id
        if self.response_runtime_event_id is not None:
            out["responseRuntimeEventId"] = self.response_runtime_event_id
        if self.response_is_error is not None:
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


def _collect_diagnostics(
    expected_runtime_event_high_water: Any,
    high_water: int,
    recovery: Resolution,
    operations: list[ToolOperation],
    operation_reasons: list[str],
    hidden: dict[Any, bool],
    responses: list[tuple[dict[str, Any], dict[str, Any]]],
) -> list[PlanDiagnostic]:
    """The §1.3 diagnostics of a projected prefix, in the spec's order.

    Step for step upstream's ``collectResumeDiagnostics`` (``runtime-resume.ts:1253``): the
    fields it copies are copied as they are (an empty tool name stays ``""``, an absent one is
    absent); ``hidden`` says, for the call event id of each indeterminate decision, whether the
    last event carrying it is hidden; ``responses`` are the non-partial, non-hidden
    function_response events as ``(event, content)``.
    """
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
                message=_message(code, tool_call_id=op.tool_call_id, tool_name=op.tool_name, reason=op_reason),
                event_id=op.call_runtime_event_id,
                tool_call_id=op.tool_call_id,
                tool_name=op.tool_name,
            )
        )

    # 3. one per resolver issue
    for issue in recovery.issues:
        issue_code = issue.code
        event_id = issue.event_id
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

    # 4. corruption decisions without a (non-empty) call event id; orphan responses are
    # reported by item 6. eventId: the dispatch id, else the response id.
    for decision in recovery.decisions:
        if decision.status != "corruption" or decision.call_runtime_event_id or decision.reason == "orphan_response":
            continue
        event_id = decision.dispatch_runtime_event_id
        if event_id is None:
            event_id = decision.response_runtime_event_id
        add(
            PlanDiagnostic(
                code=TOOL_RECOVERY_CORRUPTION,
                message=_message(TOOL_RECOVERY_CORRUPTION, tool_call_id=decision.tool_call_id,
                                 tool_name=decision.tool_name, reason=decision.reason),
                event_id=event_id,
                tool_call_id=decision.tool_call_id,
                tool_name=decision.tool_name or None,
            )
        )

    # 5. indeterminate decisions whose (non-empty) call event id's last event is hidden
    for decision in recovery.decisions:
        call_id = decision.call_runtime_event_id
        if decision.status != "indeterminate" or not call_id or not hidden.get(call_id):
            continue
        add(
            PlanDiagnostic(
                code=PENDING_TOOL_RESULT,
                message=_message(PENDING_TOOL_RESULT, tool_call_id=decision.tool_call_id,
                                 tool_name=decision.tool_name, hidden=True),
                event_id=call_id,
                tool_call_id=decision.tool_call_id,
                tool_name=decision.tool_name or None,
            )
        )

    # 6. visible committed responses: "the" operation of a response is the *last* operation
    # with its provider call id (whatever the invocation), as in upstream's operationsById.
    if responses:
        by_call_id: dict[Any, ToolOperation] = {}
        for op in operations:
            by_call_id[op.tool_call_id] = op
        for event, content in responses:
            call_id = _get(content, "id")
            name = _get(content, "name")
            op = by_call_id.get(call_id) if call_id is None or type(call_id) is str else None
            event_id = _get(event, "id")
            event_id = event_id if type(event_id) is str else None
            if op is None:
                add(
                    PlanDiagnostic(
                        code=UNMATCHED_TOOL_RESULT,
                        message=_message(UNMATCHED_TOOL_RESULT, event_id=event_id),
                        event_id=event_id,
                        tool_call_id=call_id if type(call_id) is str else None,
                        tool_name=name if type(name) is str else None,
                    )
                )
            elif not (type(name) is str and name == op.tool_name or name is None and op.tool_name is None
                      and "name" not in content):
                add(
                    PlanDiagnostic(
                        code=TOOL_NAME_MISMATCH,
                        message=_message(TOOL_NAME_MISMATCH, event_id=event_id, tool_name=name,
                                         call_tool_name=op.tool_name),
                        event_id=event_id,
                        tool_call_id=call_id if type(call_id) is str else None,
                        tool_name=name if type(name) is str else None,
                        detail=_name_detail(op.tool_name, content),
                    )
                )

    return diagnostics


def _name_detail(call_tool_name: str | None, content: dict[str, Any]) -> dict[str, Any]:
    """``{callToolName, responseToolName}``, each absent when the name is (upstream builds the
    object literally, so an ``undefined`` name drops its key)."""
    detail: dict[str, Any] = {}
    if call_tool_name is not None:
        detail["callToolName"] = call_tool_name
    if "name" in content:
        detail["responseToolName"] = content["name"]
    return detail


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
