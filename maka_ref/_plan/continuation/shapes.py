"""The plan shape of safe-boundary continuation (spec 20 §3.7).

``SafeBoundaryContinuationPlan = {disposition, rejectionReasons, diagnostics,
continuation?}`` — ``continuation`` is present iff ``disposition == "continue"``.

A :class:`RuntimeContinuation` is the proposed continuation envelope: fresh target ids,
the immediate source identity and high-water, the provider history (``runtimeContext``),
the composite boundary and digests (v2), the proposed claim id and the trusted safety
snapshot. It is a *proposal*, not an execution lease (§3.1): only execution acquires the
claim.

All classes are frozen slotted dataclasses with snake_case attributes and ``to_json()``
producing the spec's camelCase form, omitting absent optional fields (never ``null``).
Diagnostics reuse Phase 0's :class:`~maka_ref._plan.phase0.plan.PlanDiagnostic`
(``{code, message, eventId?, toolCallId?, toolName?, detail?}``) so Phase 0 and Phase 1
diagnostics concatenate into one list. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from maka_ref._codec.frozen import thaw
from maka_ref._plan.phase0.plan import PlanDiagnostic
from maka_ref._plan.prefix.immutable import RuntimeBoundaryCursor

__all__ = [
    "ContinuationDisposition",
    "ContinuationIdentity",
    "PlanDiagnostic",
    "RuntimeContinuation",
    "SafeBoundaryContinuationPlan",
    "SafetySnapshot",
    "WorkspaceCheckpoint",
    "continuation_envelope_problem",
    "park",
    "utf16_sorted_unique",
]

ContinuationDisposition = Literal["continue", "park"]


def utf16_sorted_unique(names: Any) -> tuple[str, ...]:
    """Sorted (JavaScript default sort: UTF-16 code units), de-duplicated strings."""
    unique = {name for name in (names or ()) if type(name) is str}
    return tuple(sorted(unique, key=lambda s: s.encode("utf-16-be", "surrogatepass")))


@dataclass(frozen=True, slots=True)
class ContinuationIdentity:
    """``{invocationId, runId, turnId}`` of the continuation target (fresh ids)."""

    invocation_id: str
    run_id: str
    turn_id: str

    def to_json(self) -> dict[str, Any]:
        return {"invocationId": self.invocation_id, "runId": self.run_id, "turnId": self.turn_id}


@dataclass(frozen=True, slots=True)
class WorkspaceCheckpoint:
    """``{ref?, restored, runtimeEventHighWater}`` (§3.6 facts)."""

    restored: bool
    runtime_event_high_water: Any
    ref: str | None = None

    @classmethod
    def of(cls, value: Any) -> WorkspaceCheckpoint | None:
        """From itself, a camelCase mapping, or None."""
        if value is None or isinstance(value, WorkspaceCheckpoint):
            return value
        if isinstance(value, Mapping):
            ref = value.get("ref")
            return cls(
                value.get("restored") is True,
                value.get("runtimeEventHighWater"),
                ref if type(ref) is str else None,
            )
        raise TypeError("workspace checkpoint must be a mapping")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.ref is not None:
            out["ref"] = self.ref
        out["restored"] = self.restored
        out["runtimeEventHighWater"] = self.runtime_event_high_water
        return out


@dataclass(frozen=True, slots=True)
class SafetySnapshot:
    """``{workspaceIdentity, backgroundOperationsSettled: true, availableToolNames, workspaceCheckpoint?}``."""

    workspace_identity: Any
    available_tool_names: tuple[str, ...]
    #: ``{ref, runtimeEventHighWater}`` — only when the checkpoint has a ref.
    workspace_checkpoint: tuple[str, Any] | None = None
    background_operations_settled: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "workspaceIdentity": self.workspace_identity,
            "backgroundOperationsSettled": self.background_operations_settled,
            "availableToolNames": list(self.available_tool_names),
        }
        if self.workspace_checkpoint is not None:
            ref, high_water = self.workspace_checkpoint
            out["workspaceCheckpoint"] = {"ref": ref, "runtimeEventHighWater": high_water}
        return out


@dataclass(frozen=True, slots=True)
class RuntimeContinuation:
    """The proposed continuation (§3.7 table)."""

    session_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    source_invocation_id: str
    source_run_id: str
    source_turn_id: str
    source_runtime_event_high_water: int
    runtime_context: tuple[Any, ...]
    safety_snapshot: SafetySnapshot
    #: Present only for a composite plan with > 1 segment, or legacy prior context.
    source_runtime_context: tuple[Any, ...] | None = None
    claim_id: str | None = None
    #: Composite (v2) mode only.
    boundary: RuntimeBoundaryCursor | None = None
    provider_replay_digest: str | None = None
    provider_projection_version: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "sourceInvocationId": self.source_invocation_id,
            "sourceRunId": self.source_run_id,
            "sourceTurnId": self.source_turn_id,
            "sourceRuntimeEventHighWater": self.source_runtime_event_high_water,
        }
        if self.source_runtime_context is not None:
            out["sourceRuntimeContext"] = [thaw(e) for e in self.source_runtime_context]
        out["runtimeContext"] = [thaw(e) for e in self.runtime_context]
        if self.claim_id is not None:
            out["claimId"] = self.claim_id
        if self.boundary is not None:
            out["boundary"] = self.boundary.to_json()
        if self.provider_replay_digest is not None:
            out["providerReplayDigest"] = self.provider_replay_digest
        if self.provider_projection_version is not None:
            out["providerProjectionVersion"] = self.provider_projection_version
        out["safetySnapshot"] = self.safety_snapshot.to_json()
        return out


@dataclass(frozen=True, slots=True)
class SafeBoundaryContinuationPlan:
    """``{disposition, rejectionReasons, diagnostics, continuation?}`` (§3.7)."""

    disposition: ContinuationDisposition
    rejection_reasons: tuple[str, ...]
    diagnostics: tuple[PlanDiagnostic, ...]
    continuation: RuntimeContinuation | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "disposition": self.disposition,
            "rejectionReasons": list(self.rejection_reasons),
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }
        if self.continuation is not None:
            out["continuation"] = self.continuation.to_json()
        return out


def park(code: str, message: str, detail: Mapping[str, Any] | None = None) -> SafeBoundaryContinuationPlan:
    """An early park: exactly one reason and one diagnostic of the same code (§3.2, §3.3)."""
    return SafeBoundaryContinuationPlan("park", (code,), (PlanDiagnostic(code, message, detail=detail),))


def _identity(event: Any) -> tuple[Any, Any, Any, Any]:
    get = event.get if isinstance(event, Mapping) else (lambda _k: None)
    return (get("sessionId"), get("invocationId"), get("runId"), get("turnId"))


def continuation_envelope_problem(continuation: RuntimeContinuation) -> str | None:
    """The first §3.7 envelope invariant ``continuation`` breaks, as a message; else None.

    Invariants: high-water ≥ length of the source replay context; ``runtimeContext``
    non-empty; every source-context event carries the source identity; the source context is
    exactly the tail of ``runtimeContext``; target ids differ from source ids.
    """
    source_context = (
        continuation.source_runtime_context
        if continuation.source_runtime_context is not None
        else continuation.runtime_context
    )
    high_water = continuation.source_runtime_event_high_water
    if type(high_water) is not int or high_water < len(source_context):
        return "continuation source high-water is smaller than its source replay context"
    if not continuation.runtime_context:
        return "continuation runtime context is empty"
    source = (
        continuation.session_id,
        continuation.source_invocation_id,
        continuation.source_run_id,
        continuation.source_turn_id,
    )
    if any(_identity(event) != source for event in source_context):
        return "continuation source context carries another identity"
    context = continuation.runtime_context
    tail = context[len(context) - len(source_context) :] if source_context else ()
    if len(source_context) > len(context) or any(a is not b and a != b for a, b in zip(tail, source_context)):
        return "continuation source context is not the tail of its runtime context"
    if (
        continuation.invocation_id == continuation.source_invocation_id
        or continuation.run_id == continuation.source_run_id
        or continuation.turn_id == continuation.source_turn_id
    ):
        return "continuation target ids reuse the source identity"
    return None
