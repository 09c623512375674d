"""Tool projections: reads, unsettled list, rebuild and the equivalence requirement
(spec 30 §3, §9 items 51–57, §10 items 19–22, 29)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._store import RuntimeStore, StoreError
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import (
    completed_bundle,
    ids,
    journal_states,
    open_store,
    parked_bundle,
    projection_snapshot,
    raw,
    raw_insert,
    t1_input,
    t2_input,
)


def test_item51_rebuild_after_t1_t2(tmp_path: Path) -> None:
    """§9 item 51."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input())
    online = projection_snapshot(store)
    assert store.rebuild_tool_projections().to_json() == {"operations": 1, "journalEvents": 2}
    assert [r.runtime_event_id for r in store.read_tool_journal("operation-1")] == [
        "dispatch-event-1", "outcome-event-1"
    ]
    assert projection_snapshot(store) == online
    store.close()


def _second_operation() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    call = fam.w_call(id="call-event-2")
    call["content"]["id"] = "provider-call-2"
    dispatch = fam.w_dispatch(id="dispatch-event-2")
    dispatch["actions"]["toolDispatch"].update(operationId="operation-2", providerToolCallId="provider-call-2")
    dispatch["refs"] = {"operationId": "operation-2", "toolCallId": "provider-call-2"}
    response = fam.w_outcome(id="outcome-event-2")
    response["content"]["id"] = "provider-call-2"
    response["refs"] = {"operationId": "operation-2", "toolCallId": "provider-call-2"}
    return call, dispatch, response


def test_item52_interleaved_operations_rebuild_identically(tmp_path: Path) -> None:
    """§9 item 52: op-1 T1, op-2 T1, op-2 T2, op-1 T2."""
    store = open_store(tmp_path)
    call2, dispatch2, response2 = _second_operation()
    store.commit_tool_prepared(t1_input())
    store.commit_tool_prepared(
        t1_input(call2, dispatch2, operation_id="operation-2", journal_event_id="operation-2_prepared",
                 provider_tool_call_id="provider-call-2", committed_at=11)
    )
    store.commit_tool_outcome(t2_input(response2, operation_id="operation-2", journal_event_id="operation-2_outcome",
                                       committed_at=12))
    store.commit_tool_outcome(t2_input())
    online = [projection_snapshot(store, op) for op in ("operation-1", "operation-2")]
    assert store.rebuild_tool_projections().to_json() == {"operations": 2, "journalEvents": 4}
    assert [projection_snapshot(store, op) for op in ("operation-1", "operation-2")] == online
    store.close()
    store = open_store(tmp_path)
    assert [projection_snapshot(store, op) for op in ("operation-1", "operation-2")] == online
    store.close()


def test_item53_rebuild_refuses_duplicate_call(tmp_path: Path) -> None:
    """§9 item 53: the rebuild fails and leaves the projections as they were."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    before = projection_snapshot(store)
    conn = raw(tmp_path)
    raw_insert(conn, fam.w_call(id="call-event-dup"), 3)
    conn.close()
    with pytest.raises(StoreError, match="^Corrupt tool RuntimeEvent ledger: duplicate_call at call-event-dup$"):
        store.rebuild_tool_projections()
    assert projection_snapshot(store) == before
    store.close()


def test_item54_rebuild_refuses_dispatch_before_call(tmp_path: Path) -> None:
    """§9 item 54: a raw seq swap puts the dispatch before the call."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET event_seq = 100 WHERE event_id = 'call-event-1'")
    conn.execute("UPDATE runtime_events SET event_seq = 1 WHERE event_id = 'dispatch-event-1'")
    conn.execute("UPDATE runtime_events SET event_seq = 2 WHERE event_id = 'call-event-1'")
    conn.close()
    with pytest.raises(StoreError, match="^Corrupt tool RuntimeEvent ledger: event_order_conflict at dispatch-event-1"):
        store.rebuild_tool_projections()
    store.close()


def test_rebuild_per_session_and_leaves_events(tmp_path: Path) -> None:
    """§3.2 per-session scope; §10 item 29: rebuild never deletes runtime_events rows."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    before_events = store.read_run_events("session-1", "run-1")
    assert store.rebuild_tool_projections("session-2").to_json() == {"operations": 0, "journalEvents": 0}
    assert store.read_tool_operation("operation-1") is not None
    assert store.rebuild_tool_projections("session-1").to_json() == {"operations": 1, "journalEvents": 1}
    assert store.read_run_events("session-1", "run-1") == before_events
    store.close()


def test_rebuild_refuses_corrupt_bundle(tmp_path: Path) -> None:
    """§3.2 step 5: an invalid recovery tail → Corrupt tool recovery bundle for <op>: <code>."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    parked_bundle(store)
    conn = raw(tmp_path)
    extra = fam.w_reconcile("diverged", id="reconcile-event-2")
    raw_insert(conn, extra, 5)
    conn.close()
    with pytest.raises(StoreError, match="^Corrupt tool recovery bundle for operation-1: recovery_fact_shape_conflict$"):
        store.rebuild_tool_projections()
    store.close()


def test_item55_conversation_copy_twice(tmp_path: Path) -> None:
    """§9 item 55 (§2.2 conversation copy): reserved tool facts copied verbatim; idempotent."""
    events = [fam.w_call(), fam.w_dispatch(), fam.w_outcome()]
    store = open_store(tmp_path)
    store.import_conversation_copy("session-1", [("run-1", events)])
    store.import_conversation_copy("session-1", [("run-1", events)])
    assert ids(store.read_run_events("session-1", "run-1")) == ["call-event-1", "dispatch-event-1", "outcome-event-1"]
    assert store.read_tool_operation("operation-1").current_state == "outcome_committed"
    assert journal_states(store) == ["prepared", "outcome_committed"]
    with pytest.raises(StoreError, match="^Conversation copy RuntimeEvent identity conflict for run run-1$"):
        store.import_conversation_copy("session-1", [("run-1", events[:2])])
    store.close()


def test_conversation_copy_refusals(tmp_path: Path) -> None:
    """§2.2: partial events, a corrupt copy and duplicate runs are refused before writing."""
    store = open_store(tmp_path)
    partial = fam.event("p-1", partial=True, role="model", author="agent", content={"kind": "text", "text": "x"},
                        refs={"providerEventId": "m-1"})
    with pytest.raises(StoreError, match="^Conversation copy cannot import partial RuntimeEvents$"):
        store.import_conversation_copy("session-1", [("run-1", [partial])])
    with pytest.raises(StoreError, match="^Conversation copy RuntimeEvent ledger is corrupt: orphan_response$"):
        store.import_conversation_copy("session-1", [("run-1", [fam.w_outcome()])])
    with pytest.raises(StoreError, match="more than once"):
        store.import_conversation_copy("session-1", [("run-1", []), ("run-1", [])])
    assert store.read_run_events("session-1", "run-1") == []
    store.close()


def _scenario_prepared(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())


def _scenario_success(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input())


def _scenario_error(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input(fam.w_outcome(err=True)))


def _scenario_parked(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())
    parked_bundle(store)


def _scenario_completed_bundle(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())
    completed_bundle(store)


@pytest.mark.parametrize(
    ("scenario", "state", "resolver_status", "reason"),
    [
        (_scenario_prepared, "prepared", "indeterminate", None),
        (_scenario_success, "outcome_committed", "completed", None),
        (_scenario_error, "outcome_committed", "completed", None),
        (_scenario_parked, "recovery_parked", "parked", None),
        (_scenario_completed_bundle, "recovery_completed", "completed", "recovery_bundle_completed"),
    ],
)
def test_items56_57_online_reopen_rebuild_and_resolver_agree(
    tmp_path: Path, scenario: Callable[[RuntimeStore], None], state: str, resolver_status: str, reason: str | None
) -> None:
    """§9 items 56–57, §3.3: online = reopened = rebuilt, and the resolver agrees before and after."""
    store = open_store(tmp_path)
    scenario(store)
    online = projection_snapshot(store)
    assert online[0]["currentState"] == state
    resolution = resolve_recovery(store.read_run_events("session-1", "run-1")).to_json()
    assert [d["status"] for d in resolution["decisions"]] == [resolver_status]
    if reason is not None:
        assert resolution["decisions"][0]["reason"] == reason
    store.close()
    store = open_store(tmp_path)
    assert projection_snapshot(store) == online
    store.rebuild_tool_projections()
    assert projection_snapshot(store) == online
    assert resolve_recovery(store.read_run_events("session-1", "run-1")).to_json() == resolution
    store.close()
