"""Result types of the scanner and the RecoveryResolver (spec 10 §4.3, §6.1).

Why plain frozen dataclasses: results are values. Python attributes are snake_case; the
``to_json()`` form uses the spec's exact camelCase names and *omits* absent optional fields
(the spec compares with exact dict equality, and absent is never ``null``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

DecisionStatus = Literal["completed", "parked", "definitely_not_dispatched", "indeterminate", "corruption"]
SettlementOrigin = Literal["normal_t2", "pre_t1_synthetic", "recovery_bundle"]


_object_setattr = object.__setattr__  # how a frozen dataclass sets its fields


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True, slots=True)
class ToolLedgerIssue:
    """One scanner issue: ``{code, eventId, operationId?, toolCallId?}`` (spec 10 §4.3)."""

    code: str
    #: None when the event has no string id (the JSON form then has no ``eventId``).
    event_id: str | None
    operation_id: str | None = None
    tool_call_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code}
        _put(out, "eventId", self.event_id)  # None: the event has no id (absent, as upstream)
        _put(out, "operationId", self.operation_id)
        _put(out, "toolCallId", self.tool_call_id)
        return out


@dataclass(frozen=True, slots=True)
class ResolverIssue:
    """A resolver issue is reduced to ``{code, eventId}`` (spec 10 §6.1)."""

    code: str
    event_id: str | None  # None: no string id (absent in JSON)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code}
        _put(out, "eventId", self.event_id)  # None: the event has no id (absent, as upstream)
        return out


@dataclass(frozen=True, slots=True, init=False)
class Decision:
    """One per scanned operation, in scan order (spec 10 §6.1, §6.3)."""

    tool_call_id: str
    status: DecisionStatus
    reason: str
    tool_name: str | None = None
    operation_id: str | None = None
    settlement_origin: SettlementOrigin | None = None
    call_runtime_event_id: str | None = None
    dispatch_runtime_event_id: str | None = None
    response_runtime_event_id: str | None = None
    #: Present iff ``response_runtime_event_id`` is; True only for ``isError === true``.
    response_is_error: bool | None = None

    def __init__(
        self,
        tool_call_id: str,
        status: DecisionStatus,
        reason: str,
        tool_name: str | None = None,
        operation_id: str | None = None,
        settlement_origin: SettlementOrigin | None = None,
        call_runtime_event_id: str | None = None,
        dispatch_runtime_event_id: str | None = None,
        response_runtime_event_id: str | None = None,
        response_is_error: bool | None = None,
    ) -> None:
        # The dataclass-generated frozen __init__, with ``object.__setattr__`` looked up once
        # instead of once per field: one Decision per operation, so this halves its cost.
        # tests/maka_ref/ledger/test_results.py checks the signature against the generated one.
        set_ = _object_setattr
        set_(self, "tool_call_id", tool_call_id)
        set_(self, "status", status)
        set_(self, "reason", reason)
        set_(self, "tool_name", tool_name)
        set_(self, "operation_id", operation_id)
        set_(self, "settlement_origin", settlement_origin)
        set_(self, "call_runtime_event_id", call_runtime_event_id)
        set_(self, "dispatch_runtime_event_id", dispatch_runtime_event_id)
        set_(self, "response_runtime_event_id", response_runtime_event_id)
        set_(self, "response_is_error", response_is_error)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "toolCallId", self.tool_call_id)  # None: the call has no id (absent, as upstream)
        if self.tool_name:
            out["toolName"] = self.tool_name
        if self.operation_id:
            out["operationId"] = self.operation_id
        out["status"] = self.status
        out["reason"] = self.reason
        _put(out, "settlementOrigin", self.settlement_origin)
        _put(out, "callRuntimeEventId", self.call_runtime_event_id)
        _put(out, "dispatchRuntimeEventId", self.dispatch_runtime_event_id)
        _put(out, "responseRuntimeEventId", self.response_runtime_event_id)
        _put(out, "responseIsError", self.response_is_error)
        return out


@dataclass(frozen=True, slots=True)
class Resolution:
    """The RecoveryResolver result (spec 10 §6.1)."""

    decisions: tuple[Decision, ...]
    issues: tuple[ResolverIssue, ...]
    has_corruption: bool
    requires_reconciliation: bool
    #: ``"t1_after_preflight_v1"`` for new-protocol runs, else None (absent in JSON).
    tool_boundary_protocol: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "toolBoundaryProtocol", self.tool_boundary_protocol)
        out["decisions"] = [d.to_json() for d in self.decisions]
        out["issues"] = [i.to_json() for i in self.issues]
        out["hasCorruption"] = self.has_corruption
        out["requiresReconciliation"] = self.requires_reconciliation
        return out


@dataclass(slots=True)
class ScannedOperation:
    """One operation record built by the scanner (spec 10 §4.3).

    Mutable only while the scanner builds it; consumers must treat it as read-only.
    Event fields hold the event mappings themselves (not copies).
    """

    tool_call_id: str
    tool_name: str | None = None
    operation_id: str | None = None
    call_event: Mapping[str, Any] | None = None
    dispatch_event: Mapping[str, Any] | None = None
    response_event: Mapping[str, Any] | None = None
    reconcile_events: list[Mapping[str, Any]] = field(default_factory=list)
    decision_events: list[Mapping[str, Any]] = field(default_factory=list)
    issues: list[ToolLedgerIssue] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolLedgerScan:
    """Scanner output: operations in creation order, issues in emission order."""

    operations: tuple[ScannedOperation, ...]
    issues: tuple[ToolLedgerIssue, ...]

    @property
    def has_corruption(self) -> bool:
        return bool(self.issues)

    def to_json(self) -> dict[str, Any]:
        return {
            "operations": [
                {
                    k: v
                    for k, v in {
                        "toolCallId": op.tool_call_id,
                        "toolName": op.tool_name,
                        "operationId": op.operation_id,
                        "callEventId": _event_id(op.call_event),
                        "dispatchEventId": _event_id(op.dispatch_event),
                        "responseEventId": _event_id(op.response_event),
                        "reconcileEventIds": [_event_id(e) for e in op.reconcile_events],
                        "decisionEventIds": [_event_id(e) for e in op.decision_events],
                        "issues": [i.to_json() for i in op.issues],
                    }.items()
                    if v is not None
                }
                for op in self.operations
            ],
            "issues": [i.to_json() for i in self.issues],
            "hasCorruption": self.has_corruption,
        }


def _event_id(event: Mapping[str, Any] | None) -> str | None:
    if event is None:
        return None
    value = event.get("id") if isinstance(event, Mapping) else None
    return value if isinstance(value, str) else None
