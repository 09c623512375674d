"""The Phase 0 ResumePlan result types and its model-facing directive (spec 20 §1.1).

Why a module of its own: ``ToolOperation``, ``PlanDiagnostic`` and ``ResumePlan`` are the
plan's public data (the v2 continuation gates reuse ``PlanDiagnostic``); kept apart from the
algorithm, they can be built by every step of the planner without importing the builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_ref._ledger.results import Resolution

__all__ = [
    "ABSENT_ARGS",
    "RESUME_DIRECTIVE",
    "Disposition",
    "OperationStatus",
    "PlanDiagnostic",
    "ResumePlan",
    "ToolOperation",
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
