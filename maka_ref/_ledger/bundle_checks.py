"""Per-event predicates of the §5.3 recovery-bundle checks (spec 10 §5.3).

What: execution identity, ``refs`` matching and decoding of an event's ``toolRecovery`` fact.
Why separate: each reads one event against the operation identity and never raises; the
ordered checks in ``bundle.validate_recovery_bundle`` combine them.
"""

from __future__ import annotations

from typing import Any, Mapping

from maka_ref._events.recovery_facts import decode_tool_recovery
from maka_ref._ledger.bundle_types import OperationIdentity
from maka_ref._ledger.bundle_values import _MISSING, _obj, _truthy


def _has_execution_identity(event: Mapping[str, Any], identity: OperationIdentity) -> bool:
    return (
        not _truthy(event.get("partial"))
        and event.get("invocationId", _MISSING) == identity.invocation_id
        and event.get("runId", _MISSING) == identity.run_id
        and event.get("turnId", _MISSING) == identity.turn_id
    )


def _refs_match(event: Mapping[str, Any], identity: OperationIdentity) -> bool:
    refs = _obj(event.get("refs"))
    return (
        refs.get("operationId", _MISSING) == identity.operation_id
        and refs.get("toolCallId", _MISSING) == identity.provider_tool_call_id
    )


def _decode_fact(event: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The decoded payload of ``event``'s ``actions.toolRecovery`` when valid and of ``kind``."""
    envelope = _obj(event.get("actions")).get("toolRecovery", _MISSING)
    if envelope is _MISSING:
        return None
    try:
        decoded = decode_tool_recovery(envelope)
    except Exception:  # §5.3 checks 5/6: an invalid envelope is a code, never a crash
        return None
    if not isinstance(decoded, dict) or decoded.get("kind") != kind:
        return None
    payload = decoded.get("payload")
    return payload if isinstance(payload, dict) else None


__all__: list[str] = []  # private helpers of bundle.py only (imported by name)
