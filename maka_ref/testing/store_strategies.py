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

This module is a flat facade (as in Hypothesis): the machinery lives in the private package
:mod:`maka_ref.testing._store_plan`, one job per module; import from here only.
"""

from __future__ import annotations

from maka_ref.testing._store_plan.model import (
    PATHS,
    BundleInput,
    RunTruth,
    StoreOperationTruth,
    StoreWrite,
    StoreWritePlan,
    WriteKind,
    apply_write,
    derive_operation_id,
)
from maka_ref.testing._store_plan.plans import store_write_plans

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
