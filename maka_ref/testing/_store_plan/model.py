"""The values a store write plan is made of, with their ground truth, and how to apply one.

Kept apart from the drawing machinery because these are what callers hold: the frozen
dataclasses re-exported by :mod:`maka_ref.testing.store_strategies`, the operation-id
derivation (spec 30 §0.3) and :func:`apply_write`. Nothing here draws.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from maka_ref.testing._strategies.ledger_model import healthy_resolution
from maka_ref.testing.strategies import OperationTruth

PATHS = ("t1_only", "t1_t2", "t1_completed", "t1_parked", "pre_t1_synthetic", "legacy_call_only")
WriteKind = Literal["append", "import_batch", "terminal", "t1", "t2", "bundle", "reopen"]



def derive_operation_id(invocation_id: str, provider_tool_call_id: str) -> str:
    """Spec 30 §0.3: ``toolop_`` + 32 hex of SHA-256 of the JSON array text
    ``[invocationId, providerToolCallId]`` (JS ``JSON.stringify`` framing)."""
    text = json.dumps([invocation_id, provider_tool_call_id], ensure_ascii=False, separators=(",", ":"))
    return "toolop_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class BundleInput:
    """Arguments of ``commit_tool_recovery_bundle``."""

    operation_id: str
    reconcile: dict[str, Any]
    decision: dict[str, Any]
    outcome: dict[str, Any] | None = None


@dataclass(frozen=True)
class StoreWrite:
    """One write (or a ``reopen`` of the store) and what must be true right after it.

    ``payload`` by kind: ``append``/``terminal`` an event dict; ``import_batch`` a tuple
    ``(session_id, run_id, events)``; ``t1`` a ``T1Input``; ``t2`` a ``T2Input``; ``bundle``
    a :class:`BundleInput`; ``reopen`` None. ``terminal`` goes through the terminal
    durability barrier (``ensure_terminal_durable``); a terminal event may also arrive as a
    plain ``append``.
    """

    kind: WriteKind
    label: str
    payload: Any = None
    #: The tool operation this write touches (None for ordinary events and reopen).
    operation_id: str | None = None
    #: Index (in ``StoreWritePlan.writes``) of the write this one exactly repeats.
    retry_of: int | None = None
    #: ``created`` as :func:`apply_write` returns it (a tuple for batches, None for bundles).
    expect_created: bool | tuple[bool, ...] | None = None
    #: Event ids this write makes durable, in insertion order (empty for retries).
    new_event_ids: tuple[str, ...] = ()
    #: For a non-retry write with ``operation_id``: the projection right after it.
    expect_operation: dict[str, Any] | None = None
    expect_journal: tuple[dict[str, Any], ...] = ()

    @property
    def is_retry(self) -> bool:
        return self.retry_of is not None

    def __repr__(self) -> str:  # Hypothesis prints plans; keep them readable
        return f"<{self.label}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass(frozen=True)
class StoreOperationTruth:
    """Ground truth of one operation at the end of the plan."""

    path: str
    run_index: int
    #: The T1 operation id (a would-be id for paths without dispatch: it must have no row).
    operation_id: str
    truth: OperationTruth
    #: Final ``ToolOperationRecord.to_json()`` / journal ``to_json()`` list; None / () when
    #: the operation has no dispatch (spec 30 §3.2 step 3: no projection row).
    expected_operation: dict[str, Any] | None
    expected_journal: tuple[dict[str, Any], ...]

    @property
    def has_dispatch(self) -> bool:
        return self.expected_operation is not None


@dataclass(frozen=True)
class RunTruth:
    session_id: str
    run_id: str
    invocation_id: str
    turn_id: str
    #: The run's first immutable event carries the ``t1_after_preflight_v1`` marker.
    new_protocol: bool
    #: Immutable event ids in ledger order (``read_run_events``: event_seq order).
    event_ids: tuple[str, ...]
    terminal_event_id: str | None
    #: Operations of this run in scanner order (order of their call events).
    operations: tuple[OperationTruth, ...]

    def expected_resolution(self) -> dict[str, Any]:
        """The exact ``resolve_recovery(read_run_events(...)).to_json()`` (spec 10 §6.1–§6.3)."""
        return healthy_resolution([op.expected_decision(self.new_protocol) for op in self.operations],
                                  self.new_protocol)


@dataclass(frozen=True)
class StoreWritePlan:
    writes: tuple[StoreWrite, ...]
    runs: tuple[RunTruth, ...]
    operations: tuple[StoreOperationTruth, ...]

    @property
    def dispatched(self) -> tuple[StoreOperationTruth, ...]:
        return tuple(op for op in self.operations if op.has_dispatch)

    def expected_rebuild_report(self) -> dict[str, int]:
        """Spec 30 §3.2 step 6: operations with a dispatch and their journal rows."""
        return {
            "operations": len(self.dispatched),
            "journalEvents": sum(len(op.expected_journal) for op in self.dispatched),
        }

    def expected_unsettled(self) -> list[str]:
        """Spec 30 §3.1: dispatched, ``prepared``, no result; by (invocation, operation)."""
        rows = [
            (op.truth.invocation_id, op.operation_id)
            for op in self.dispatched
            if op.expected_operation is not None and op.expected_operation["currentState"] == "prepared"
        ]
        return [operation_id for _, operation_id in sorted(rows)]

    def describe(self) -> str:
        """A readable listing of the writes and the operations (for failure reports)."""
        lines = ["writes:"]
        for i, w in enumerate(self.writes):
            lines.append(f"  [{i}] {w.label}")
        lines.append("operations:")
        for op in self.operations:
            lines.append(f"  run {op.run_index} {op.path} {op.operation_id} call={op.truth.call_event_id}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return "StoreWritePlan(\n" + self.describe() + "\n)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # Hypothesis' printer
        p.text(repr(self))


def apply_write(store: Any, write: StoreWrite) -> bool | tuple[bool, ...] | None:
    """Perform ``write`` on ``store``; return ``created`` (None for bundles). ``reopen`` is
    the caller's job (it replaces the store object)."""
    kind = write.kind
    if kind == "append":
        return store.append(write.payload).created
    if kind == "terminal":
        return store.ensure_terminal_durable(write.payload).created
    if kind == "import_batch":
        session_id, run_id, events = write.payload
        return tuple(store.import_batch(session_id, run_id, events))
    if kind == "t1":
        return store.commit_tool_prepared(write.payload).created
    if kind == "t2":
        return store.commit_tool_outcome(write.payload).created
    if kind == "bundle":
        b: BundleInput = write.payload
        store.commit_tool_recovery_bundle(b.operation_id, b.reconcile, b.decision, outcome=b.outcome)
        return None
    raise ValueError(f"apply_write cannot perform {kind!r}")
