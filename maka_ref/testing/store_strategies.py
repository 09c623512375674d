"""Hypothesis strategies for sequences of *durable store writes*, with ground truth.

Why this module exists (and ships): :mod:`maka_ref.testing.strategies` draws *ledgers* (the
events a run ends up with). The durable store is not fed ledgers; it is fed *writes*, each
through one writer with its own atomicity and idempotency rules (spec 30 §2.2–§2.5): generic
appends, batch imports, the terminal barrier, T1 ``commit_tool_prepared``, T2
``commit_tool_outcome`` and the recovery bundle. The projection-equivalence requirement
(spec 30 §3.3) and the crash lab both need many realistic *write sequences* together with
what is true after each write, known by construction and not by asking the store.

Importing this module requires ``hypothesis`` (tests only; the store never imports it).

``store_write_plans(max_runs=3, max_operations=6, ...)``
    A :class:`StoreWritePlan`: 1–``max_runs`` runs (each its own session/run/invocation/turn;
    runs may share a session and may reuse provider call ids, spec 30 §0.1, §0.3), each
    opening with a user event (with or without the ``t1_after_preflight_v1`` marker) or with
    nothing, then operations, each taking one *path* (:data:`PATHS`):

    ``t1_only``            T1 only (a crash after T1: the tool may have run).
    ``t1_t2``              T1 then T2 (success, or ``isError: true``).
    ``t1_completed``       T1 then a completed recovery bundle (reconcile, outcome, decision).
    ``t1_parked``          T1 then a parked bundle (``diverged`` / ``matches_prior_state`` /
                           ``unreadable``).
    ``pre_t1_synthetic``   generic append of an unbound call and an unbound (synthetic
                           refusal) response, one by one or as one batch import.
    ``legacy_call_only``   generic append of an unbound call, nothing else.

    T1 paths sometimes append the call first through the generic path (a call durable
    during a permission wait, spec 30 §2.3 step 3). Operations and runs interleave freely
    (op-1 T1, op-2 T1, op-2 T2, op-1 T2, …), ordinary assistant texts sit in between, some
    runs end with a terminal event (plain append or the terminal barrier), the store may be
    closed and reopened between writes, and **exact retries** of earlier writes are inserted
    anywhere after their original (a retry is a deep copy, sometimes with removable
    presentation noise, other dict key order, or — for T1/T2 — another ``committedAt``, which
    is not part of identity, spec 30 §2.8). A retry must be a no-op: ``created`` false and
    nothing in the database changes.

Ground truth (:class:`StoreWritePlan`):

* every :class:`StoreWrite` knows the ``created`` flag(s) it must return and, for writes that
  touch a tool operation, the operation record and journal (``to_json()`` shape of
  :class:`~maka_ref._store.records.ToolOperationRecord` / ``ToolJournalRecord``) the store must
  hold right after it (spec 30 §2.3–§2.5, §3.1);
* :class:`StoreOperationTruth` per operation: its path, the final projection (``None`` and
  ``[]`` when it has no dispatch) and an :class:`~maka_ref.testing.strategies.OperationTruth`
  whose ``expected_decision()`` is the resolver's exact decision (spec 10 §6.3);
* :class:`RunTruth` per run: the immutable event ids in ledger order (what
  ``read_run_events`` returns), the protocol, and ``expected_resolution()``;
* ``expected_rebuild_report()`` and ``expected_unsettled()`` (spec 30 §3.1, §3.2).

:func:`apply_write` performs one write on a :class:`~maka_ref._store.runtime_store.RuntimeStore`
and returns what ``created`` means for that writer (``None`` for the bundle writer, which
returns nothing). ``reopen`` writes are for the caller to perform (close + open).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing.strategies import RECOVERY_MODES, T1, OperationTruth, texts, tool_calls, tool_results
from maka_ref.testing._strategies.builder import styled_event_id

__all__ = [
    "PATHS",
    "BundleInput",
    "RunTruth",
    "StoreOperationTruth",
    "StoreWrite",
    "StoreWritePlan",
    "WriteKind",
    "apply_write",
    "derive_operation_id",
    "store_write_plans",
]

PATHS = ("t1_only", "t1_t2", "t1_completed", "t1_parked", "pre_t1_synthetic", "legacy_call_only")
WriteKind = Literal["append", "import_batch", "terminal", "t1", "t2", "bundle", "reopen"]

_PARK_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}


def derive_operation_id(invocation_id: str, provider_tool_call_id: str) -> str:
    """Spec 30 §0.3: ``toolop_`` + 32 hex of SHA-256 of the JSON array text
    ``[invocationId, providerToolCallId]`` (JS ``JSON.stringify`` framing)."""
    text = json.dumps([invocation_id, provider_tool_call_id], ensure_ascii=False, separators=(",", ":"))
    return "toolop_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# =======================================================================================
# Values
# =======================================================================================


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
        decisions = [op.expected_decision(self.new_protocol) for op in self.operations]
        out: dict[str, Any] = {}
        if self.new_protocol:
            out["toolBoundaryProtocol"] = T1
        out["decisions"] = decisions
        out["issues"] = []
        out["hasCorruption"] = False
        out["requiresReconciliation"] = any(d["status"] == "indeterminate" for d in decisions)
        return out


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


# =======================================================================================
# Drawing
# =======================================================================================


@dataclass(frozen=True)
class _Spine:
    session_id: str
    run_id: str
    turn_id: str
    invocation_id: str

    def envelope(self, event_id: str, ts: float, role: str, author: str) -> dict[str, Any]:
        return {
            "id": event_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "ts": ts,
            "partial": False,
            "role": role,
            "author": author,
        }


@dataclass
class _Op:
    run_index: int
    spine: _Spine
    path: str
    call_id: str
    name: str
    args: Any
    operation_id: str
    recovery_mode: str
    call_first: bool = False
    batch: bool = False
    is_error: bool = False
    observation: str | None = None
    call: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    reconcile: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    journal: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Run:
    index: int
    spine: _Spine
    opening: str  # "marker" | "plain" | "none"
    terminal: str | None  # None | "append" | "barrier"
    event_ids: list[str] = field(default_factory=list)
    terminal_event_id: str | None = None


class _Draft:
    """Mutable state while one plan is drawn: ids, clock, stored events, projections."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw
        self.n_event = 0
        self.id_style = draw(st.sampled_from(("seq", "run", "uuid", "unicode")))
        self.seed = draw(st.integers(0, 2**32 - 1))
        self.ts: float = draw(st.one_of(st.just(1), st.integers(1_600_000_000_000, 1_900_000_000_000)))
        self.writes: list[StoreWrite] = []
        self.stored: set[str] = set()

    def tick(self) -> float:
        self.ts = self.ts + self.draw(st.sampled_from((0, 1, 1, 7, 250, 0.5)))
        return self.ts

    def committed_at(self) -> int | float:
        """A caller ``committedAt`` for T1/T2 (Unix ms): equal to or apart from the clock,
        now and then fractional (stored as REAL; rebuild must reproduce it exactly)."""
        base = int(self.ts)
        return base + self.draw(st.sampled_from((0, 0, 1, 3, 1000, 0.25)))

    def event_id(self, run: _Spine) -> str:
        self.n_event += 1
        return styled_event_id(self.id_style, self.n_event, run.run_id, self.seed)


def _operation_json(op: _Op, state: str, result_event_id: str | None, version: int) -> dict[str, Any]:
    assert op.call is not None and op.dispatch is not None
    out: dict[str, Any] = {
        "operationId": op.operation_id,
        "invocationId": op.spine.invocation_id,
        "runId": op.spine.run_id,
        "turnId": op.spine.turn_id,
        "providerToolCallId": op.call_id,
        "toolName": op.name,
        "canonicalArgsHash": canonical_args_hash(op.name, op.args),
        "recoveryMode": op.recovery_mode,
        "currentState": state,
        "callEventId": op.call["id"],
        "dispatchEventId": op.dispatch["id"],
    }
    if result_event_id is not None:
        out["resultEventId"] = result_event_id
    out["version"] = version
    return out


def _journal_json(
    op: _Op, journal_id: str, state: str, event_id: str, committed_at: Any, metadata: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "journalEventId": journal_id,
        "operationId": op.operation_id,
        "invocationId": op.spine.invocation_id,
        "runId": op.spine.run_id,
        "turnId": op.spine.turn_id,
        "state": state,
        "runtimeEventId": event_id,
        "canonicalArgsHash": canonical_args_hash(op.name, op.args),
        "recoveryMode": op.recovery_mode,
    }
    if metadata is not None:
        out["metadata"] = copy.deepcopy(metadata)
    out["committedAt"] = committed_at
    return out


# -- event builders (producer conventions, spec 10 §1.6; lanes, spec 30 §0.4) -------------


def _user_event(d: _Draft, run: _Run) -> dict[str, Any]:
    e = run.spine.envelope(d.event_id(run.spine), d.tick(), "user", "user")
    e["content"] = {"kind": "text", "text": d.draw(texts())}
    if run.opening == "marker":
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def _model_text(d: _Draft, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(d.event_id(spine), d.tick(), "model", "agent")
    e["content"] = {"kind": "text", "text": d.draw(texts())}
    return e


def _call_event(d: _Draft, op: _Op) -> dict[str, Any]:
    e = op.spine.envelope(d.event_id(op.spine), d.tick(), "model", "agent")
    if d.draw(st.booleans()):
        e["origin"] = "provider"
        e["modelVisibility"] = "visible"
    e["content"] = {"kind": "function_call", "id": op.call_id, "name": op.name, "args": copy.deepcopy(op.args)}
    refs: dict[str, Any] = {"toolCallId": op.call_id}
    if op.path.startswith("t1") and d.draw(st.booleans()):
        refs["operationId"] = op.operation_id
    if d.draw(st.integers(0, 3)) == 0:
        refs["stepId"] = f"step-{d.n_event}"
    if op.path.startswith("t1") or d.draw(st.booleans()):
        e["refs"] = refs
    if d.draw(st.integers(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"activityKind": "tool", "displayName": d.draw(texts(max_size=12))}}
    return e


def _dispatch_event(d: _Draft, op: _Op) -> dict[str, Any]:
    event_id = d.draw(st.sampled_from((f"{op.operation_id}_dispatch", d.event_id(op.spine))))
    e = op.spine.envelope(event_id, d.tick(), "system", "system")
    if d.draw(st.booleans()):
        e["modelVisibility"] = "visible"
    e["actions"] = {
        "toolDispatch": {
            "protocol": T1,
            "operationId": op.operation_id,
            "providerToolCallId": op.call_id,
            "toolName": op.name,
            "canonicalArgsHash": canonical_args_hash(op.name, op.args),
            "recoveryMode": op.recovery_mode,
        }
    }
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def _response_event(d: _Draft, op: _Op, event_id: str, *, bound: bool, is_error: bool) -> dict[str, Any]:
    e = op.spine.envelope(event_id, d.tick(), "tool", "tool")
    if d.draw(st.booleans()):
        e["origin"] = "provider"
    if is_error:
        result = d.draw(st.sampled_from(("permission denied", "Tool unavailable", "exit code 1")))
    else:
        result = d.draw(tool_results())
    content: dict[str, Any] = {"kind": "function_response", "id": op.call_id, "name": op.name, "result": result}
    if is_error:
        content["isError"] = True
    elif d.draw(st.booleans()):
        content["isError"] = False
    e["content"] = content
    if bound:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    elif d.draw(st.booleans()):
        e["refs"] = {"toolCallId": op.call_id}
    if d.draw(st.integers(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"durationMs": d.draw(st.one_of(st.integers(0, 60_000), st.just(12.5)))}}
    return e


def _recovery_fact(d: _Draft, op: _Op, event_id: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = op.spine.envelope(event_id, d.tick(), "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.call_id}
    return e


def _terminal_event(d: _Draft, run: _Run) -> dict[str, Any]:
    """Spec 20 §4.2 terminal shape (status + ``endInvocation``)."""
    e = run.spine.envelope(d.event_id(run.spine), d.tick(), "system", "system")
    status = d.draw(st.sampled_from(("completed", "failed", "aborted", "cancelled")))
    e["status"] = status
    state: dict[str, Any] = {}
    if status == "failed":
        state["failureClass"] = "runtime_crash"
        e["content"] = {
            "kind": "error", "code": "runtime_crash", "reason": "runtime_crash", "message": "runtime crashed"
        }
    if status == "aborted":
        state["abortSource"] = "unknown"
    e["actions"] = {"endInvocation": True, "stateDelta": state}
    return e


# -- materialising one queued step into a write (and updating the model) ---------------


def _add(d: _Draft, run: _Run, write: StoreWrite) -> None:
    d.writes.append(write)
    for event_id in write.new_event_ids:
        assert event_id not in d.stored
        d.stored.add(event_id)
        run.event_ids.append(event_id)


def _t1_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    from maka_ref._store.tool_writers import T1Input

    pre_stored = op.call is not None
    if op.call is None:
        op.call = _call_event(d, op)
    op.dispatch = _dispatch_event(d, op)
    committed_at = d.committed_at()
    data = T1Input(
        operation_id=op.operation_id,
        journal_event_id=f"{op.operation_id}_prepared",
        runtime_event=copy.deepcopy(op.call),
        dispatch_runtime_event=copy.deepcopy(op.dispatch),
        provider_tool_call_id=op.call_id,
        tool_name=op.name,
        canonical_args_hash=canonical_args_hash(op.name, op.args),
        recovery_mode=op.recovery_mode,
        committed_at=committed_at,
    )
    op.record = _operation_json(op, "prepared", None, 1)
    op.journal = [_journal_json(op, f"{op.operation_id}_prepared", "prepared", op.dispatch["id"], committed_at)]
    new = (op.dispatch["id"],) if pre_stored else (op.call["id"], op.dispatch["id"])
    pre = " (call pre-stored)" if pre_stored else ""
    label = f"t1 {op.operation_id} run{run.index} call={op.call['id']}{pre} at={committed_at}"
    return StoreWrite("t1", label, data, op.operation_id, None, True, new, dict(op.record), tuple(op.journal))


def _t2_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    from maka_ref._store.tool_writers import T2Input

    event_id = d.draw(st.sampled_from((f"{op.operation_id}_response", d.event_id(op.spine))))
    op.response = _response_event(d, op, event_id, bound=True, is_error=op.is_error)
    committed_at = d.committed_at()
    data = T2Input(
        operation_id=op.operation_id,
        journal_event_id=f"{op.operation_id}_outcome",
        runtime_event=copy.deepcopy(op.response),
        committed_at=committed_at,
    )
    op.record = _operation_json(op, "outcome_committed", event_id, 2)
    op.journal.append(_journal_json(op, f"{op.operation_id}_outcome", "outcome_committed", event_id, committed_at))
    label = f"t2 {op.operation_id} run{run.index} response={event_id} isError={op.is_error} at={committed_at}"
    return StoreWrite("t2", label, data, op.operation_id, None, True, (event_id,), dict(op.record), tuple(op.journal))


def _bundle_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    assert op.call is not None and op.dispatch is not None and op.observation is not None
    completed = op.observation == "matches_expected_state"
    digest = "sha256:" + d.draw(st.sampled_from(("a" * 64, "0123456789abcdef" * 4, "f" * 64)))
    op.reconcile = _recovery_fact(
        d, op, f"{op.operation_id}_reconcile", "maka.tool.reconcile_result",
        {
            "protocol": "tool_reconcile_v1",
            "operationId": op.operation_id,
            "observation": op.observation,
            "observationSchema": "state_identity_v1",
            "observationDigest": digest,
        },
    )
    evidence = [op.call["id"], op.dispatch["id"], op.reconcile["id"]]
    if completed:
        outcome_id = d.draw(st.sampled_from((f"{op.operation_id}_response", d.event_id(op.spine))))
        op.outcome = _response_event(d, op, outcome_id, bound=True, is_error=False)
        payload: dict[str, Any] = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "completed",
            "reasonCode": "reconcile_matches_expected_state",
            "outcomeEventId": outcome_id,
            "evidenceEventIds": evidence + [outcome_id],
        }
    else:
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "parked",
            "reasonCode": _PARK_REASON[op.observation],
            "evidenceEventIds": evidence,
        }
    op.decision = _recovery_fact(d, op, f"{op.operation_id}_decision", "maka.tool.recovery_decision", payload)
    # Journal (spec 30 §2.5 steps 6–8, §3.1): committed_at of recovery facts is the event ts.
    rec = op.reconcile
    op.journal.append(
        _journal_json(
            op, f"{rec['id']}_journal", "reconcile_observed", rec["id"], rec["ts"], rec["actions"]["toolRecovery"]
        )
    )
    new = [rec["id"]]
    if op.outcome is not None:
        out = op.outcome
        op.journal.append(_journal_json(op, f"{op.operation_id}_outcome", "outcome_committed", out["id"], out["ts"]))
        new.append(out["id"])
    dec = op.decision
    state = "recovery_completed" if completed else "recovery_parked"
    op.journal.append(
        _journal_json(op, f"{dec['id']}_journal", state, dec["id"], dec["ts"], dec["actions"]["toolRecovery"])
    )
    new.append(dec["id"])
    op.record = _operation_json(op, state, op.outcome["id"] if op.outcome else None, 4 if completed else 3)
    data = BundleInput(
        op.operation_id, copy.deepcopy(op.reconcile), copy.deepcopy(op.decision), copy.deepcopy(op.outcome)
    )
    label = f"bundle {op.operation_id} run{run.index} {'completed' if completed else 'parked/' + op.observation}"
    return StoreWrite(
        "bundle", label, data, op.operation_id, None, None, tuple(new), dict(op.record), tuple(op.journal)
    )


def _generic(kind: WriteKind, label: str, payload: Any, op: _Op | None, created: Any, *ids: str) -> StoreWrite:
    """A generic-path write (no projection change expected: ``expect_operation`` None)."""
    return StoreWrite(kind, label, payload, op.operation_id if op is not None else None, None, created, ids)


def _materialise(d: _Draft, runs: list[_Run], step: tuple[str, int, _Op | None]) -> None:
    what, run_index, op = step
    run = runs[run_index]
    if what == "open":
        e = _user_event(d, run)
        _add(d, run, _generic("append", f"append user {e['id']} run{run.index} ({run.opening})", e, None, True, e["id"]))
    elif what == "text":
        e = _model_text(d, run.spine)
        _add(d, run, _generic("append", f"append text {e['id']} run{run.index}", e, None, True, e["id"]))
    elif what == "terminal":
        e = _terminal_event(d, run)
        run.terminal_event_id = e["id"]
        kind: WriteKind = "terminal" if run.terminal == "barrier" else "append"
        label = f"{kind} terminal {e['id']} {e['status']} run{run.index}"
        _add(d, run, _generic(kind, label, e, None, True, e["id"]))
    else:
        assert op is not None
        if what == "call":  # generic append of an unbound call (pre-T1, legacy, permission wait)
            op.call = _call_event(d, op)
            label = f"append call {op.call['id']} ({op.path}) {op.operation_id} run{run.index}"
            _add(d, run, _generic("append", label, copy.deepcopy(op.call), op, True, op.call["id"]))
        elif what == "response":  # unbound synthetic refusal
            op.response = _response_event(d, op, d.event_id(op.spine), bound=False, is_error=op.is_error)
            label = f"append unbound response {op.response['id']} isError={op.is_error} {op.operation_id}"
            _add(d, run, _generic("append", label, copy.deepcopy(op.response), op, True, op.response["id"]))
        elif what == "batch":  # call + synthetic response in one import
            op.call = _call_event(d, op)
            op.response = _response_event(d, op, d.event_id(op.spine), bound=False, is_error=op.is_error)
            events = (copy.deepcopy(op.call), copy.deepcopy(op.response))
            label = f"import_batch [call {op.call['id']}, unbound response {op.response['id']}] {op.operation_id}"
            payload = (op.spine.session_id, op.spine.run_id, events)
            _add(d, run, _generic("import_batch", label, payload, op, (True, True), op.call["id"], op.response["id"]))
        elif what == "t1":
            _add(d, run, _t1_write(d, run, op))
        elif what == "t2":
            _add(d, run, _t2_write(d, run, op))
        elif what == "bundle":
            _add(d, run, _bundle_write(d, run, op))
        else:  # pragma: no cover
            raise AssertionError(what)


def _interleave(draw: Callable[[Any], Any], queues: list[list[Any]]) -> list[Any]:
    """A random merge of the queues that keeps each queue's own order."""
    queues = [list(q) for q in queues if q]
    out: list[Any] = []
    while queues:
        i = draw(st.integers(0, len(queues) - 1)) if len(queues) > 1 else 0
        out.append(queues[i].pop(0))
        if not queues[i]:
            queues.pop(i)
    return out


def _reorder_keys(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse insertion order."""
    if isinstance(value, dict):
        return {k: _reorder_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder_keys(v) for v in value]
    return value


def _noisy(draw: Callable[[Any], Any], event: dict[str, Any]) -> dict[str, Any]:
    """An exact-retry variant of ``event``: removable presentation noise on text content
    (spec 30 §0.2 step 1, §9 item 22) and/or another key order. Canonically identical."""
    event = copy.deepcopy(event)
    content = event.get("content")
    if isinstance(content, dict) and content.get("kind") == "text" and draw(st.booleans()):
        content.update(displayText=content["text"], attachments=[], quotes=[])
    if draw(st.booleans()):
        event = _reorder_keys(event)
    return event


def _retry_of(draw: Callable[[Any], Any], d: _Draft, index: int) -> StoreWrite:
    """An exact retry of ``d.writes[index]``: created False and nothing changes."""
    from dataclasses import replace as dc_replace

    original = d.writes[index]
    payload: Any
    note = ""
    if original.kind in ("append", "terminal"):
        payload = _noisy(draw, original.payload)
        expect: Any = False
    elif original.kind == "import_batch":
        session_id, run_id, events = original.payload
        payload = (session_id, run_id, tuple(_noisy(draw, e) for e in events))
        expect = tuple(False for _ in events)
    elif original.kind in ("t1", "t2"):
        data = original.payload
        changes: dict[str, Any] = {"runtime_event": _noisy(draw, data.runtime_event)}
        if original.kind == "t1":
            changes["dispatch_runtime_event"] = _noisy(draw, data.dispatch_runtime_event)
        if draw(st.booleans()):  # committedAt is not part of identity (spec 30 §2.8)
            changes["committed_at"] = data.committed_at + draw(st.integers(1, 10_000))
            note = f" at={changes['committed_at']}"
        payload = dc_replace(data, **changes)
        expect = False
    elif original.kind == "bundle":
        b: BundleInput = original.payload
        payload = BundleInput(
            b.operation_id, _noisy(draw, b.reconcile), _noisy(draw, b.decision),
            _noisy(draw, b.outcome) if b.outcome is not None else None,
        )
        expect = None
    else:  # pragma: no cover
        raise AssertionError(original.kind)
    label = f"RETRY of [{index}] {original.label}{note}"
    return StoreWrite(original.kind, label, payload, original.operation_id, index, expect)


@st.composite
def store_write_plans(
    draw: Callable[[Any], Any],
    *,
    max_runs: int = 3,
    max_operations: int = 6,
    paths: tuple[str, ...] = PATHS,
    max_retries: int = 4,
    max_reopens: int = 2,
    max_texts: int = 2,
    terminal: bool = True,
) -> StoreWritePlan:
    """Sequences of store writes with ground truth (see the module docstring).

    * ``max_runs``: runs (each its own invocation; 1..max_runs, sharing sessions at random).
    * ``max_operations``: tool operations over all runs (at least one).
    * ``paths``: the operation paths to draw from (:data:`PATHS`).
    * ``max_retries``: exact retries of earlier writes inserted after their original.
    * ``max_reopens``: store close + reopen steps inserted anywhere.
    * ``max_texts``: ordinary assistant texts per run.
    * ``terminal``: allow a terminal event at the end of a run.
    """
    for p in paths:
        if p not in PATHS:
            raise ValueError(f"unknown path {p!r}; expected one of {PATHS}")
    d = _Draft(draw)
    n_runs = draw(st.integers(1, max(1, max_runs)))
    sessions = draw(st.sampled_from((
        ("session-1", "session-2", "session-3"), ("sess_01HZX",) * 3, ("séance-😀", "session-2", "séance-😀")
    )))
    run_ids = draw(st.sampled_from((("run-1", "run-2", "run-3"), ("run_7f3a", "r", "run-😀"))))
    reuse_call_ids = draw(st.booleans())
    runs: list[_Run] = []
    for i in range(n_runs):
        session_id = sessions[i % 3]
        run_id = run_ids[i] if i < 3 else f"{run_ids[i % 3]}-{i + 1}"
        spine = _Spine(session_id, run_id, f"turn-{i + 1}", f"invocation-{i + 1}")
        opening = draw(st.sampled_from(("marker", "marker", "plain", "none")))
        end = draw(st.sampled_from((None, "append", "barrier"))) if terminal else None
        runs.append(_Run(i, spine, opening, end))

    n_ops = draw(st.integers(1, max(1, max_operations)))
    ops: list[_Op] = []
    call_counter: dict[int, int] = {}
    n_call = 0
    for _ in range(n_ops):
        run = runs[draw(st.integers(0, n_runs - 1))]
        path = draw(st.sampled_from(paths))
        name, args = draw(tool_calls())
        if reuse_call_ids:  # unique within an invocation, repeated across invocations
            call_counter[run.index] = call_counter.get(run.index, 0) + 1
            call_id = f"call_{call_counter[run.index]}"
        else:
            n_call += 1
            call_id = draw(st.sampled_from((f"toolu_01{n_call:04d}Xy", f"call_{n_call}", f"provider-call-{n_call}")))
        operation_id = derive_operation_id(run.spine.invocation_id, call_id)
        mode = "reconcile" if path in ("t1_completed", "t1_parked") else draw(st.sampled_from(RECOVERY_MODES))
        op = _Op(run.index, run.spine, path, call_id, name, args, operation_id, mode)
        if path.startswith("t1"):
            op.call_first = draw(st.integers(0, 3)) == 0
        if path == "t1_t2":
            op.is_error = draw(st.integers(0, 3)) == 0
        if path == "pre_t1_synthetic":
            op.is_error = draw(st.integers(0, 3)) > 0
            op.batch = draw(st.booleans())
        if path == "t1_completed":
            op.observation = "matches_expected_state"
        if path == "t1_parked":
            op.observation = draw(st.sampled_from(tuple(_PARK_REASON)))
        ops.append(op)

    # Per-operation step queues, interleaved within the run, then runs interleaved.
    run_queues: list[list[tuple[str, int, _Op | None]]] = []
    for run in runs:
        queues: list[list[tuple[str, int, _Op | None]]] = []
        for op in ops:
            if op.run_index != run.index:
                continue
            q: list[tuple[str, int, _Op | None]] = []
            if op.path == "legacy_call_only":
                q.append(("call", run.index, op))
            elif op.path == "pre_t1_synthetic":
                pair = [("call", run.index, op), ("response", run.index, op)]
                q.extend([("batch", run.index, op)] if op.batch else pair)
            else:
                if op.call_first:
                    q.append(("call", run.index, op))
                q.append(("t1", run.index, op))
                if op.path == "t1_t2":
                    q.append(("t2", run.index, op))
                elif op.path in ("t1_completed", "t1_parked"):
                    q.append(("bundle", run.index, op))
            queues.append(q)
        for _ in range(draw(st.integers(0, max(0, max_texts)))):
            queues.append([("text", run.index, None)])
        body = _interleave(draw, queues)
        head = [("open", run.index, None)] if run.opening != "none" else []
        tail = [("terminal", run.index, None)] if run.terminal is not None else []
        run_queues.append(head + body + tail)
    for step in _interleave(draw, run_queues):
        _materialise(d, runs, step)

    # Exact retries (anywhere after their original) and store reopen steps.
    for _ in range(draw(st.integers(0, max(0, max_retries)))):
        candidates = [i for i, w in enumerate(d.writes) if w.kind != "reopen" and not w.is_retry]
        original = draw(st.sampled_from(candidates))
        retry = _retry_of(draw, d, original)
        position = draw(st.integers(original + 1, len(d.writes)))
        _insert_write(d, position, retry)
    for _ in range(draw(st.integers(0, max(0, max_reopens)))):
        position = draw(st.integers(1, len(d.writes)))
        _insert_write(d, position, StoreWrite("reopen", "reopen the store (close + open)"))

    return _finish(d, runs, ops)


def _insert_write(d: _Draft, position: int, write: StoreWrite) -> None:
    """Insert at ``position`` and shift the ``retry_of`` indexes that point past it."""
    shifted = [
        w if w.retry_of is None or w.retry_of < position else _with_retry_of(w, w.retry_of + 1) for w in d.writes
    ]
    shifted.insert(position, write)
    d.writes = shifted


def _with_retry_of(write: StoreWrite, index: int) -> StoreWrite:
    from dataclasses import replace as dc_replace

    return dc_replace(write, retry_of=index, label=write.label.replace(f"[{write.retry_of}]", f"[{index}]", 1))


def _finish(d: _Draft, runs: list[_Run], ops: list[_Op]) -> StoreWritePlan:
    truths: list[StoreOperationTruth] = []
    per_run: dict[int, list[tuple[int, OperationTruth]]] = {run.index: [] for run in runs}
    for op in ops:
        run = runs[op.run_index]
        assert op.call is not None
        dispatched = op.dispatch is not None
        response = op.response
        truth = OperationTruth(
            invocation_id=op.spine.invocation_id,
            tool_call_id=op.call_id,
            tool_name=op.name,
            args=op.args,
            call_event_id=op.call["id"],
            operation_id=op.operation_id if dispatched else None,
            dispatch_event_id=op.dispatch["id"] if op.dispatch is not None else None,
            recovery_mode=op.recovery_mode if dispatched else None,
            response_event_id=response["id"] if response is not None else None,
            response_is_error=op.is_error if response is not None else False,
            response_bound=response is not None and dispatched,
            bundle=("completed" if op.outcome is not None else "parked") if op.decision is not None else None,
            observation=op.observation if op.decision is not None else None,
            reconcile_event_id=op.reconcile["id"] if op.reconcile is not None else None,
            outcome_event_id=op.outcome["id"] if op.outcome is not None else None,
            decision_event_id=op.decision["id"] if op.decision is not None else None,
        )
        truths.append(
            StoreOperationTruth(op.path, op.run_index, op.operation_id, truth, op.record, tuple(op.journal))
        )
        per_run[op.run_index].append((run.event_ids.index(op.call["id"]), truth))
    run_truths = []
    for run in runs:
        first_is_marker = run.opening == "marker"  # the opening is the run's first event
        run_truths.append(
            RunTruth(
                run.spine.session_id,
                run.spine.run_id,
                run.spine.invocation_id,
                run.spine.turn_id,
                first_is_marker,
                tuple(run.event_ids),
                run.terminal_event_id,
                tuple(t for _, t in sorted(per_run[run.index], key=lambda pair: pair[0])),
            )
        )
    return StoreWritePlan(tuple(d.writes), tuple(run_truths), tuple(truths))
