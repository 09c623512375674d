"""The value objects the strategies return, and the ground truth they carry.

:class:`Ledger` and :class:`OperationTruth` compute the spec's expected answers from what was
built (never from the reference runtime), which is what lets a property use them as an
oracle; :class:`CorruptLedger` and :class:`TornJsonl` wrap a ledger for the corrupt and
torn strategies. Plain dataclasses: no Hypothesis needed to use them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

from maka_ref.testing._strategies.constants import _PARK_REASON, T1, Protocol


def healthy_resolution(decisions: list[dict[str, Any]], new_protocol: bool) -> dict[str, Any]:
    """The exact ``Resolution.to_json()`` of a healthy run with these decisions (spec 10
    §6.1–§6.3): no issues, no corruption, reconciliation required iff a decision is
    indeterminate. Shared by the ledger and the store-plan ground truths."""
    out: dict[str, Any] = {}
    if new_protocol:
        out["toolBoundaryProtocol"] = T1
    out["decisions"] = decisions
    out["issues"] = []
    out["hasCorruption"] = False
    out["requiresReconciliation"] = any(d["status"] == "indeterminate" for d in decisions)
    return out


@dataclass(frozen=True)
class OperationTruth:
    """What is true about one tool operation of a healthy ledger, by construction.

    An operation is keyed by ``(invocation_id, tool_call_id)`` (spec 10 §4.3). Every field
    describes the events *present in the ledger* (after the crash cut and the epilogue).
    """

    invocation_id: str
    tool_call_id: str
    tool_name: str
    args: Any
    call_event_id: str
    #: The T1 operation id, only when the ledger holds the dispatch.
    operation_id: str | None = None
    dispatch_event_id: str | None = None
    recovery_mode: str | None = None
    #: The response of the normal path (T2 bound, or unbound pre-T1/legacy), if present.
    response_event_id: str | None = None
    response_is_error: bool = False
    #: True for a T2 response (refs carry operationId + toolCallId).
    response_bound: bool = False
    #: ``"completed"`` / ``"parked"`` when a recovery bundle settled the operation.
    bundle: Literal["completed", "parked"] | None = None
    observation: str | None = None
    reconcile_event_id: str | None = None
    outcome_event_id: str | None = None
    decision_event_id: str | None = None

    @property
    def has_dispatch(self) -> bool:
        return self.dispatch_event_id is not None

    @property
    def has_response(self) -> bool:
        return self.response_event_id is not None

    @property
    def call_only(self) -> bool:
        """Call, no dispatch, no response, no recovery facts: the cell the marker decides."""
        return not self.has_dispatch and not self.has_response and self.bundle is None

    @property
    def resolved(self) -> bool:
        """A committed result exists (normal response or completed bundle's outcome)."""
        return self.has_response or self.bundle == "completed"

    def expected_status(self, new_protocol: bool) -> str:
        """Spec 10 §6.3 rows 4–8 applied to what was built."""
        return self.expected_decision(new_protocol)["status"]

    def expected_decision(self, new_protocol: bool) -> dict[str, Any]:
        """The exact ``Decision.to_json()`` the spec requires for this operation (§6.1, §6.3)."""
        d: dict[str, Any] = {"toolCallId": self.tool_call_id, "toolName": self.tool_name}
        if self.operation_id is not None:
            d["operationId"] = self.operation_id
        d["callRuntimeEventId"] = self.call_event_id
        if self.dispatch_event_id is not None:
            d["dispatchRuntimeEventId"] = self.dispatch_event_id
        if self.bundle == "completed":
            d.update(status="completed", reason="recovery_bundle_completed", settlementOrigin="recovery_bundle")
            d["responseRuntimeEventId"] = self.outcome_event_id
            d["responseIsError"] = False
        elif self.bundle == "parked":
            assert self.observation is not None
            d.update(status="parked", reason=_PARK_REASON[self.observation], settlementOrigin="recovery_bundle")
        elif self.has_response:
            d.update(
                status="completed",
                reason="matching_response",
                settlementOrigin="normal_t2" if self.has_dispatch else "pre_t1_synthetic",
            )
            d["responseRuntimeEventId"] = self.response_event_id
            d["responseIsError"] = self.response_is_error
        elif self.has_dispatch:
            d.update(status="indeterminate", reason="dispatch_without_response")
        elif new_protocol:
            d.update(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")
        else:
            d.update(status="indeterminate", reason="legacy_dispatch_unknown")
        return d

    def expected_plan_status(self, new_protocol: bool) -> str:
        """Spec 20 §1.1 status mapping of the expected decision."""
        d = self.expected_decision(new_protocol)
        status = d["status"]
        if status == "completed":
            return "failed" if d.get("responseIsError") else "succeeded"
        if status == "definitely_not_dispatched":
            return "not_dispatched"
        return status


@dataclass(frozen=True)
class Ledger:
    """A healthy ledger of one run plus its ground truth.

    ``events`` are plain dicts, in physical order. Treat them as read-only (or use
    :meth:`event_list` for a private deep copy); every example gets freshly built dicts.
    """

    events: tuple[dict[str, Any], ...]
    #: The protocol the run was built with. ``new_protocol`` says whether the resolver must
    #: see the marker (an empty ledger has no first event, hence no marker).
    protocol: Protocol
    #: Ground truth per operation, in scanner creation order (order of the call events).
    operations: tuple[OperationTruth, ...]
    #: Events of the uncut run, and how many of them the crash cut kept.
    full_run_length: int = 0
    cut: int = 0
    #: Ids of events appended after the cut (recovery bundles, repair terminal event).
    epilogue_event_ids: tuple[str, ...] = ()
    terminal_event_id: str | None = None
    #: True when provider call ids may repeat across invocations (never within one).
    call_ids_reused: bool = False

    @property
    def new_protocol(self) -> bool:
        return self.protocol == "t1" and len(self.events) > 0

    @property
    def crashed(self) -> bool:
        return self.cut < self.full_run_length

    def event_list(self) -> list[dict[str, Any]]:
        """A deep copy of the events (safe to modify)."""
        return copy.deepcopy(list(self.events))

    def event_index(self) -> dict[str, int]:
        return {e["id"]: i for i, e in enumerate(self.events)}

    def expected_decisions(self) -> list[dict[str, Any]]:
        return [op.expected_decision(self.new_protocol) for op in self.operations]

    def expected_resolution(self) -> dict[str, Any]:
        """The exact ``Resolution.to_json()`` the spec requires (spec 10 §6.1–§6.3)."""
        return healthy_resolution(self.expected_decisions(), self.new_protocol)

    def expected_replay_ids(self) -> list[str]:
        """Spec 20 §1.7 on a healthy ledger: drop partial events and the call/response
        events of operations without a committed result; keep everything else in order.

        With ``call_ids_reused`` this assumes call ids are paired per invocation (calls are
        keyed by ``(invocationId, call id)``, spec 20 §0.2); §1.7's literal "pairing by call
        id" would let an unanswered call ride on another invocation's pair."""
        unresolved: set[str] = set()
        for op in self.operations:
            if not op.resolved:
                unresolved.add(op.call_event_id)
        out = []
        for e in self.events:
            if e.get("partial"):
                continue
            if e.get("modelVisibility") == "hidden":
                continue
            if e["id"] in unresolved:
                continue
            out.append(e["id"])
        return out

    def to_jsonl(self) -> str:
        return "".join(_jsonl_line(e) + "\n" for e in self.events)


@dataclass(frozen=True)
class CorruptLedger:
    """A healthy ledger with one corruption applied.

    ``witness`` is what the spec guarantees to appear: ``("issue", code, eventId)`` in the
    resolver's issues, or ``("decision", reason, callRuntimeEventId)`` for a decision.
    """

    events: tuple[dict[str, Any], ...]
    corruption: str
    detail: str
    witness: tuple[str, str, str]
    base: Ledger

    def event_list(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self.events))


@dataclass(frozen=True)
class TornJsonl:
    """JSON-lines bytes whose last line is torn (a strict, non-empty prefix of its bytes)."""

    data: bytes
    ledger: Ledger
    #: Number of complete lines before the torn one; the torn line is number ``intact + 1``.
    intact_lines: int
    #: How many bytes of the last line were kept (1 ≤ kept < its full length).
    kept_bytes: int

    @property
    def torn_line_number(self) -> int:
        return self.intact_lines + 1


def _jsonl_line(event: Any) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
