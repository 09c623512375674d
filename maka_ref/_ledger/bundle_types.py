"""Recovery-bundle value types (spec 10 §5.3, §5.4).

What: the §5.3 operation identity tuple, the §5.3 validation result, the §5.4
interpretation result and its shared ``absent`` instance.
Why separate: plain frozen dataclasses with their JSON forms, used by the bundle writer,
the resolver and projection rebuild; they hold no validation logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from maka_ref._ledger.bundle_values import _get


@dataclass(frozen=True, slots=True)
class OperationIdentity:
    """The §5.3 operation identity tuple."""

    operation_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    provider_tool_call_id: str
    tool_name: str
    canonical_args_hash: str
    recovery_mode: str
    call_event_id: str
    dispatch_event_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "operationId": self.operation_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "providerToolCallId": self.provider_tool_call_id,
            "toolName": self.tool_name,
            "canonicalArgsHash": self.canonical_args_hash,
            "recoveryMode": self.recovery_mode,
            "callEventId": self.call_event_id,
            "dispatchEventId": self.dispatch_event_id,
        }


@dataclass(frozen=True, slots=True)
class BundleValidation:
    """§5.3 result: ``ok`` with the decoded reconcile/decision payloads, or the failing ``code``."""

    ok: bool
    code: str | None = None
    reconcile: Mapping[str, Any] | None = None
    decision: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "reconcile": self.reconcile, "decision": self.decision}
        return {"ok": False, "code": self.code}


@dataclass(frozen=True, slots=True)
class Interpretation:
    """§5.4 result. ``kind`` is ``absent``, ``corruption`` (with ``code``) or ``valid``.

    For ``valid``: ``disposition`` (``completed``/``parked``), the decoded payloads and the
    events themselves (``outcome_event`` only when the operation has a response).
    """

    kind: Literal["absent", "corruption", "valid"]
    code: str | None = None
    disposition: str | None = None
    reconcile: Mapping[str, Any] | None = None
    decision: Mapping[str, Any] | None = None
    reconcile_event: Mapping[str, Any] | None = None
    decision_event: Mapping[str, Any] | None = None
    outcome_event: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "absent":
            return {"kind": "absent"}
        if self.kind == "corruption":
            return {"kind": "corruption", "code": self.code}
        out: dict[str, Any] = {
            "kind": "valid",
            "disposition": self.disposition,
            "reconcile": self.reconcile,
            "decision": self.decision,
            "reconcileEventId": _get(self.reconcile_event, "id"),
            "decisionEventId": _get(self.decision_event, "id"),
        }
        if self.outcome_event is not None:
            out["outcomeEventId"] = _get(self.outcome_event, "id")
        return out


ABSENT = Interpretation("absent")


__all__ = ["ABSENT", "BundleValidation", "Interpretation", "OperationIdentity"]
