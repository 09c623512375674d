"""Projection equivalence over many generated write sequences (spec 30 §3.3, issue 3 item 3).

For every write sequence drawn by :func:`maka_ref.testing.store_strategies.store_write_plans`
(1–3 runs; operations through T1 only, T1+T2 success/error, a completed or parked recovery
bundle, pre-T1 synthetic refusals, legacy unbound calls; interleavings; exact retries;
reopen steps; terminal events), on a fresh store:

* after every write: ``created`` is what the writer contract says (spec 30 §2.2–§2.5, §2.8);
  an exact retry changes nothing in the database (§2.8); a write that touches an operation
  leaves exactly the projection the contract prescribes (§2.3–§2.5, §3.1);
* at the end, the §3.3 equivalence: ``read_tool_operation`` (13 fields) and
  ``read_tool_journal`` (12 fields, ``journal_seq`` excluded) of every operation are
  identical, type-strictly, **online**, **after close + reopen**, **after
  ``rebuild_tool_projections()``** (whose report is {operations with a dispatch, their
  journal rows}, §3.2 step 6), after per-session rebuilds and after a second reopen;
* the resolver over each run's immutable events (``read_run_events``) is the exact
  resolution known by construction (spec 10 §6.1–§6.3), is identical before and after
  rebuild, and agrees with the projection state (spec 30 §9 items 56–57): ``prepared`` ↔
  ``indeterminate/dispatch_without_response``; ``outcome_committed`` ↔
  ``completed/matching_response/normal_t2`` (``responseIsError`` = the stored response's
  ``isError``); ``recovery_completed`` ↔ ``completed/recovery_bundle_completed``;
  ``recovery_parked`` ↔ ``parked/<reasonCode>``; operations without a dispatch have no
  projection row (§3.2 step 3) and resolve to ``completed/pre_t1_synthetic`` or
  ``indeterminate/legacy_dispatch_unknown`` (``definitely_not_dispatched`` under the T1
  marker, spec 10 §6.4).

Stores live in temporary directories on the real disk with the store's own pragmas
(``synchronous=FULL``, WAL): every write pays its fsync, so the example count is sized for
the 60 s budget of this file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, event, given, settings

from maka_ref._codec.frozen import thaw
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._store import RuntimeStore
from maka_ref.testing.store_strategies import (
    PATHS,
    StoreWrite,
    StoreWritePlan,
    apply_write,
    derive_operation_id,
    store_write_plans,
)

EQUIVALENCE = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def _strict(value: Any) -> Any:
    """A type-tagged copy, so that ``1 == 1.0 == True`` cannot hide a difference (spec 30
    §10 item 16): "identical field by field" includes the SQLite storage class."""
    if isinstance(value, Mapping):
        return {key: _strict(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(child) for child in value]
    if isinstance(value, (bool, int, float)):
        return (type(value).__name__, value)
    return value


def _diff(left: Any, right: Any, path: str = "$") -> list[str]:
    """The differing leaves of two ``_strict`` values, as ``path: left != right`` lines."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[str] = []
        for key in sorted(set(left) | set(right), key=str):
            if key not in left or key not in right:
                out.append(f"{path}.{key}: {'<absent>' if key not in left else left[key]!r} != "
                           f"{'<absent>' if key not in right else right[key]!r}")
            else:
                out.extend(_diff(left[key], right[key], f"{path}.{key}"))
        return out
    if isinstance(left, list) and isinstance(right, list) and not (
        len(left) == 2 and isinstance(left[0], str) and left[0] in ("bool", "int", "float")
    ):
        if len(left) != len(right):
            return [f"{path}: {len(left)} items != {len(right)} items: {left!r} != {right!r}"]
        out = []
        for i, (a, b) in enumerate(zip(left, right)):
            out.extend(_diff(a, b, f"{path}[{i}]"))
        return out
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def _assert_same(actual: dict[str, Any], expected: dict[str, Any], what: str) -> None:
    """Type-strict equality with the differing fields in the failure message."""
    a, e = _strict(actual), _strict(expected)
    if a != e:
        raise AssertionError(f"{what}:\n  " + "\n  ".join(_diff(a, e)[:20]))


def _projection(store: RuntimeStore, operation_id: str) -> tuple[Any, list[Any]]:
    """(``ToolOperationRecord.to_json()`` or None, journal ``to_json()`` list): all §3.3 fields."""
    record = store.read_tool_operation(operation_id)
    journal = [thaw(entry.to_json()) for entry in store.read_tool_journal(operation_id)]
    return (thaw(record.to_json()) if record is not None else None, journal)


def _state(store: RuntimeStore, plan: StoreWritePlan) -> dict[str, Any]:
    """Everything §3.3 compares, plus the ledger and the resolver's view of each run."""
    events = {
        run.run_id: [thaw(e) for e in store.read_run_events(run.session_id, run.run_id)] for run in plan.runs
    }
    sessions = sorted({run.session_id for run in plan.runs})
    return {
        "operations": {op.operation_id: _projection(store, op.operation_id) for op in plan.operations},
        "events": events,
        "resolutions": {run_id: thaw(resolve_recovery(evs).to_json()) for run_id, evs in events.items()},
        "unsettled": store.list_unsettled_operations(),
        "unsettledBySession": {s: store.list_unsettled_operations(s) for s in sessions},
    }


def _db_snapshot(store: RuntimeStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a retry could touch (journal_seq and rowids included: a retry must not
    consume or rewrite anything, spec 30 §2.8)."""
    queries = {
        "events": "SELECT rowid, * FROM runtime_events ORDER BY rowid",
        "ordinals": "SELECT * FROM runtime_session_event_ordinals ORDER BY session_id, ordinal",
        "journal": "SELECT * FROM tool_journal_events ORDER BY journal_seq",
        "operations": "SELECT rowid, * FROM tool_operations ORDER BY operation_id",
        "partials": "SELECT * FROM runtime_partial_snapshots ORDER BY stream_key",
    }
    with store.read() as conn:
        return {name: [tuple(row) for row in conn.execute(sql).fetchall()] for name, sql in queries.items()}


def _apply_all(store: RuntimeStore, root: str, plan: StoreWritePlan) -> RuntimeStore:
    """Run the plan; check each write's ``created`` and its immediate effect. Returns the
    (possibly reopened) store."""
    for index, write in enumerate(plan.writes):
        if write.kind == "reopen":
            store.close()
            store = RuntimeStore.open(root)
            continue
        before = _db_snapshot(store) if write.is_retry else None
        created = apply_write(store, write)
        assert created == write.expect_created, f"write [{index}] {write.label}: created={created!r}"
        if write.is_retry:
            assert _db_snapshot(store) == before, f"exact retry [{index}] {write.label} changed the database"
        elif write.operation_id is not None:
            assert _projection(store, write.operation_id) == (write.expect_operation, list(write.expect_journal)), (
                f"projection after write [{index}] {write.label}"
            )
    return store


def _check_truth(state: dict[str, Any], plan: StoreWritePlan) -> None:
    """The store's final state against the ground truth known by construction."""
    for run in plan.runs:
        assert [e["id"] for e in state["events"][run.run_id]] == list(run.event_ids), f"ledger of {run.run_id}"
        assert state["resolutions"][run.run_id] == run.expected_resolution(), f"resolution of {run.run_id}"
    for op in plan.operations:
        assert state["operations"][op.operation_id] == (op.expected_operation, list(op.expected_journal)), (
            f"final projection of {op.operation_id} ({op.path})"
        )
    assert state["unsettled"] == plan.expected_unsettled()


_REASON_BY_OBSERVATION = {
    "reconcile_matches_prior_state",
    "reconcile_diverged",
    "reconcile_unreadable",
}


def _check_agreement(state: dict[str, Any], plan: StoreWritePlan) -> None:
    """Projection state ↔ resolver decision, independently of the construction oracle
    (spec 30 §9 items 56–57, spec 10 §6.3)."""
    for op in plan.operations:
        run = plan.runs[op.run_index]
        resolution = state["resolutions"][run.run_id]
        events = {e["id"]: e for e in state["events"][run.run_id]}
        [decision] = [d for d in resolution["decisions"] if d.get("callRuntimeEventId") == op.truth.call_event_id]
        record, journal = state["operations"][op.operation_id]
        verdict = (decision["status"], decision["reason"], decision.get("settlementOrigin"))
        if record is None:
            assert journal == [], f"journal rows without an operation row for {op.operation_id}"
            assert "dispatchRuntimeEventId" not in decision and "operationId" not in decision
            allowed = {
                ("completed", "matching_response", "pre_t1_synthetic"),
                ("definitely_not_dispatched", "new_protocol_before_dispatch", None)
                if run.new_protocol
                else ("indeterminate", "legacy_dispatch_unknown", None),
            }
            assert verdict in allowed, f"{op.operation_id} without dispatch resolved {verdict}"
            continue
        assert decision["operationId"] == record["operationId"]
        assert decision["callRuntimeEventId"] == record["callEventId"]
        assert decision["dispatchRuntimeEventId"] == record["dispatchEventId"]
        state_name = record["currentState"]
        if state_name == "prepared":
            assert verdict == ("indeterminate", "dispatch_without_response", None)
            assert "resultEventId" not in record and "responseRuntimeEventId" not in decision
        elif state_name == "outcome_committed":
            assert verdict == ("completed", "matching_response", "normal_t2")
            assert decision["responseRuntimeEventId"] == record["resultEventId"]
            response = events[record["resultEventId"]]
            assert decision["responseIsError"] is (response["content"].get("isError") is True)
        elif state_name == "recovery_completed":
            assert verdict == ("completed", "recovery_bundle_completed", "recovery_bundle")
            assert decision["responseRuntimeEventId"] == record["resultEventId"]
            assert decision["responseIsError"] is False
        elif state_name == "recovery_parked":
            assert decision["status"] == "parked" and decision["settlementOrigin"] == "recovery_bundle"
            assert decision["reason"] in _REASON_BY_OBSERVATION
            parked = journal[-1]
            assert parked["state"] == "recovery_parked"
            assert decision["reason"] == parked["metadata"]["payload"]["reasonCode"]
            assert "resultEventId" not in record
        else:  # pragma: no cover - a state outside spec 30 §3.1
            raise AssertionError(f"unknown projection state {state_name!r}")
        assert record["version"] == len(journal), "version = 1 + tail = journal rows (spec 30 §3.1)"


def _label(plan: StoreWritePlan) -> None:
    """Coverage statistics (``pytest --hypothesis-show-statistics``)."""
    for op in plan.operations:
        event(f"path={op.path}")
    kinds = {w.kind for w in plan.writes if w.is_retry}
    for kind in sorted(kinds):
        event(f"retry={kind}")
    if any(w.kind == "reopen" for w in plan.writes):
        event("reopen mid-sequence")
    if any(run.terminal_event_id for run in plan.runs):
        event("terminal")
    event(f"runs={len(plan.runs)}")


# ---------------------------------------------------------------------------------------
# The property
# ---------------------------------------------------------------------------------------


@EQUIVALENCE
@given(store_write_plans())
def test_online_reopen_rebuild_and_resolver_agree(plan: StoreWritePlan) -> None:
    """Spec 30 §3.3 (MUST) over generated write sequences; §3.2 rebuild counts; §2.8 exact
    retries; spec 10 §6.3 decisions; spec 30 §9 items 51–57 generalised."""
    _label(plan)
    with tempfile.TemporaryDirectory(prefix="maka-equivalence-") as root:
        store = RuntimeStore.open(root)
        try:
            store = _apply_all(store, root, plan)

            online = _state(store, plan)
            _check_truth(online, plan)
            _check_agreement(online, plan)

            store.close()
            store = RuntimeStore.open(root)
            reopened = _state(store, plan)
            _assert_same(reopened, online, "state changed across close + reopen (reopened vs online)")

            report = store.rebuild_tool_projections()
            assert report.to_json() == plan.expected_rebuild_report()
            rebuilt = _state(store, plan)
            _assert_same(rebuilt, online, "rebuild_tool_projections() changed the state (rebuilt vs online)")

            for session_id in sorted({run.session_id for run in plan.runs}):
                in_session = [op for op in plan.dispatched if plan.runs[op.run_index].session_id == session_id]
                report = store.rebuild_tool_projections(session_id)
                assert report.to_json() == {
                    "operations": len(in_session),
                    "journalEvents": sum(len(op.expected_journal) for op in in_session),
                }, f"per-session rebuild of {session_id}"
            _assert_same(_state(store, plan), online, "per-session rebuild changed the state (vs online)")

            store.close()
            store = RuntimeStore.open(root)
            _assert_same(_state(store, plan), online, "state changed across rebuild + reopen (vs online)")
        finally:
            store.close()


def test_derive_operation_id_goldens() -> None:
    """Spec 30 §0.3 goldens for the operation ids the strategy derives."""
    assert derive_operation_id("invocation-1", "provider-call-1") == "toolop_fe9a5c5f885cdf2c401efb50d880f118"
    assert derive_operation_id("a\0b", "c") == "toolop_8650a3fb6992a1f5f5c56c3dbe70045b"
    assert derive_operation_id("a", "b\0c") == "toolop_2e86d6b99af49ae7497bb6f880931873"


def test_paths_constant_is_complete() -> None:
    """The strategy's documented paths (issue 3 item 3)."""
    assert set(PATHS) == {"t1_only", "t1_t2", "t1_completed", "t1_parked", "pre_t1_synthetic", "legacy_call_only"}
    assert StoreWrite("reopen", "x").is_retry is False
