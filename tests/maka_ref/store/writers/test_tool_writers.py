"""T1 commitToolPrepared, T2 commitToolOutcome and the recovery bundle writer
(spec 30 §2.3–§2.5, §2.8, §9 items 26, 28–30, 32–34, 36–41, 43–50)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._errors import RuntimeEventNotSerializableError, RuntimeEventSchemaError
from maka_ref._store import (
    RuntimeStore,
    StoreError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolRecoveryBundleValidationError,
)
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import (
    REFS,
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
    user_event,
)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = open_store(tmp_path)
    yield s
    s.close()


def _events(store: RuntimeStore) -> list[str]:
    return ids(store.read_run_events("session-1", "run-1"))


def _nothing_stored(store: RuntimeStore) -> None:
    assert _events(store) == []
    assert store.read_tool_operation("operation-1") is None
    assert store.read_tool_journal("operation-1") == []


def test_item28_t1_created(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 28, §2.3 steps 3–8."""
    result = store.commit_tool_prepared(t1_input())
    assert result.to_json() == {"created": True, "runtimeEventSeq": 2}
    assert _events(store) == ["call-event-1", "dispatch-event-1"]
    operation = store.read_tool_operation("operation-1")
    assert operation is not None and operation.to_json() == {
        "operationId": "operation-1",
        "invocationId": "invocation-1",
        "runId": "run-1",
        "turnId": "turn-1",
        "providerToolCallId": "provider-call-1",
        "toolName": "Write",
        "canonicalArgsHash": fam.WRITE_NOTES_HASH,
        "recoveryMode": "reconcile",
        "currentState": "prepared",
        "callEventId": "call-event-1",
        "dispatchEventId": "dispatch-event-1",
        "version": 1,
    }
    journal = [record.to_json() for record in store.read_tool_journal("operation-1")]
    assert journal == [
        {
            "journalEventId": "operation-1_prepared",
            "operationId": "operation-1",
            "invocationId": "invocation-1",
            "runId": "run-1",
            "turnId": "turn-1",
            "state": "prepared",
            "runtimeEventId": "dispatch-event-1",
            "canonicalArgsHash": fam.WRITE_NOTES_HASH,
            "recoveryMode": "reconcile",
            "committedAt": 10,
        }
    ]
    assert store.list_unsettled_operations() == ["operation-1"]
    assert store.list_unsettled_operations("session-1") == ["operation-1"]
    assert store.list_unsettled_operations("session-2") == []
    conn = raw(tmp_path)
    assert conn.execute("SELECT committed_at FROM runtime_events ORDER BY event_seq").fetchall() == [(10,), (10,)]
    assert conn.execute("SELECT metadata_json, external_handle FROM tool_journal_events").fetchall() == [(None, None)]
    conn.close()


def test_item29_nested_t1_with_parent_refs(store: RuntimeStore) -> None:
    """§9 item 29: dispatch refs with exactly four keys."""
    parents = {"parentToolCallId": "parent-call", "parentOperationId": "parent-operation"}
    call = fam.w_call()
    call["refs"] = dict(parents)
    dispatch = fam.w_dispatch()
    dispatch["refs"] = {**REFS, **parents}
    assert store.commit_tool_prepared(t1_input(call, dispatch)).created is True
    single = fam.w_dispatch(id="dispatch-3")
    single["refs"] = {**REFS, "parentToolCallId": "parent-call"}
    with pytest.raises(StoreError, match="matching tool-dispatch"):  # §10 item 27: 3 keys is a lane conflict
        store.commit_tool_prepared(t1_input(dispatch=single))


def test_item30_call_already_durable_from_permission_wait(store: RuntimeStore) -> None:
    """§9 item 30: an identical stored call is filtered out; only the dispatch is new."""
    store.append(fam.w_call())
    assert store.commit_tool_prepared(t1_input()).to_json() == {"created": True, "runtimeEventSeq": 2}
    assert _events(store) == ["call-event-1", "dispatch-event-1"]


def test_item32_wrong_hash_on_input_and_dispatch(store: RuntimeStore) -> None:
    """§9 item 32, §10 item 20: the hash is recomputed from the call."""
    wrong = "sha256:" + "0" * 64
    dispatch = fam.w_dispatch()
    dispatch["actions"]["toolDispatch"]["canonicalArgsHash"] = wrong
    with pytest.raises(StoreError, match="^T1 argument hash does not match its canonical function call$") as info:
        store.commit_tool_prepared(t1_input(dispatch=dispatch, canonical_args_hash=wrong))
    assert info.value.code == "t1_args_hash_mismatch"
    _nothing_stored(store)


def test_item33_caller_selected_journal_id(store: RuntimeStore) -> None:
    """§9 item 33, §10 item 19."""
    with pytest.raises(StoreError, match="^T1 journal identity must be derived from the tool operation$"):
        store.commit_tool_prepared(t1_input(journal_event_id="caller-selected-id"))
    _nothing_stored(store)


def test_t1_prevalidation_messages_in_order(store: RuntimeStore) -> None:
    """§2.3 pre-transaction steps 1, 3–8; nothing written for any of them."""
    with pytest.raises(StoreError, match="reserved workspace authority stream"):
        store.commit_tool_prepared(t1_input(call=fam.w_call() | {"sessionId": "maka_workspace_authority"}))
    with pytest.raises(StoreError, match="^Tool recovery facts require the atomic recovery bundle writer$"):
        store.commit_tool_prepared(t1_input(dispatch=fam.w_reconcile()))
    with pytest.raises(StoreError, match="^T1 requires a function_call RuntimeEvent$"):
        store.commit_tool_prepared(t1_input(call=user_event()))
    with pytest.raises(StoreError, match="^T1 RuntimeEvent identity does not match the tool operation$"):
        store.commit_tool_prepared(t1_input(tool_name="Read"))
    lane = fam.w_call()
    lane["role"] = "user"
    with pytest.raises(StoreError, match="^T1 argument hash does not match its canonical function call$"):
        store.commit_tool_prepared(t1_input(call=lane))
    with pytest.raises(StoreError, match="^T1 requires a matching tool-dispatch RuntimeEvent$"):
        store.commit_tool_prepared(t1_input(recovery_mode="idempotent"))
    with pytest.raises(StoreError, match="^T1 requires a matching tool-dispatch RuntimeEvent$"):
        store.commit_tool_prepared(t1_input(dispatch=user_event("d")))
    other_turn = fam.w_dispatch()
    other_turn["turnId"] = "turn-2"
    with pytest.raises(StoreError, match="^T1 RuntimeEvents do not share one execution identity$") as info:
        store.commit_tool_prepared(t1_input(dispatch=other_turn))
    assert info.value.code == "t1_execution_identity_mismatch"
    _nothing_stored(store)


def test_item34_t2_created(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 34, §2.4."""
    store.commit_tool_prepared(t1_input())
    assert store.commit_tool_outcome(t2_input()).to_json() == {"created": True, "runtimeEventSeq": 3}
    operation = store.read_tool_operation("operation-1")
    assert (operation.current_state, operation.version, operation.result_event_id) == (
        "outcome_committed", 2, "outcome-event-1"
    )
    assert journal_states(store) == ["prepared", "outcome_committed"]
    last = store.read_tool_journal("operation-1")[-1]
    assert (last.journal_event_id, last.runtime_event_id, last.committed_at) == (
        "operation-1_outcome", "outcome-event-1", 20
    )
    assert store.list_unsettled_operations() == []
    conn = raw(tmp_path)
    assert conn.execute("SELECT committed_at FROM runtime_events WHERE event_id = 'outcome-event-1'").fetchone() == (20,)
    conn.close()


def test_item34_error_outcome_is_a_legal_t2(store: RuntimeStore) -> None:
    store.commit_tool_prepared(t1_input())
    assert store.commit_tool_outcome(t2_input(fam.w_outcome(err=True))).created is True


def test_item36_idempotent_retries(store: RuntimeStore) -> None:
    """§9 item 36, §2.8."""
    store.commit_tool_prepared(t1_input())
    assert store.commit_tool_prepared(t1_input()).to_json() == {"created": False, "runtimeEventSeq": 2}
    store.commit_tool_outcome(t2_input())
    assert store.commit_tool_outcome(t2_input()).to_json() == {"created": False, "runtimeEventSeq": 3}
    assert len(store.read_tool_journal("operation-1")) == 2
    assert len(_events(store)) == 3
    call = fam.w_call()
    call["content"]["args"] = {"path": "notes.txt", "content": "other"}
    other_hash = canonical_args_hash("Write", call["content"]["args"])
    dispatch = fam.w_dispatch()
    dispatch["actions"]["toolDispatch"]["canonicalArgsHash"] = other_hash
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.commit_tool_prepared(t1_input(call, dispatch, canonical_args_hash=other_hash))
    assert info.value.code == "duplicate_event_id"


def test_t1_conflicting_retries(store: RuntimeStore) -> None:
    """§2.8: fresh ids for the same call → duplicate_call; other operation fields → identity conflict."""
    store.commit_tool_prepared(t1_input())
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.commit_tool_prepared(t1_input(fam.w_call(id="call-2"), fam.w_dispatch(id="dispatch-2")))
    assert info.value.code == "duplicate_call"
    from maka_ref._store.writers.tool import commit_t1, prepare_t1

    prepared = prepare_t1(t1_input())
    with store.write() as conn:
        conn.execute("UPDATE tool_operations SET recovery_mode = 'idempotent'")
        with pytest.raises(StoreError, match="^Tool operation identity conflict for operation-1$"):
            commit_t1(conn, store.health_gate, prepared)
        conn.execute("UPDATE tool_operations SET recovery_mode = 'reconcile'")


def test_t2_conflicting_retries(store: RuntimeStore) -> None:
    """§2.4/§2.8: other response id → duplicate_response; same id other bytes → duplicate_event_id."""
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input())
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.commit_tool_outcome(t2_input(fam.w_outcome(id="outcome-event-2")))
    assert info.value.code == "duplicate_response"
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.commit_tool_outcome(t2_input(fam.w_outcome(err=True)))
    assert info.value.code == "duplicate_event_id"


def test_t2_prevalidation_and_identity(store: RuntimeStore) -> None:
    """§2.4 pre-transaction messages and in-transaction steps 1–2."""
    with pytest.raises(StoreError, match="^T2 journal identity must be derived from the tool operation$"):
        store.commit_tool_outcome(t2_input(journal_event_id="x"))
    with pytest.raises(StoreError, match="^T2 requires a function_response RuntimeEvent$"):
        store.commit_tool_outcome(t2_input(user_event()))
    with pytest.raises(StoreError, match="^T2 requires operation and tool-call refs on the function_response"):
        store.commit_tool_outcome(t2_input(fam.w_outcome_unbound()))
    with pytest.raises(StoreError, match="^Unknown tool operation operation-1$") as info:
        store.commit_tool_outcome(t2_input())
    assert info.value.code == "unknown_tool_operation"
    store.commit_tool_prepared(t1_input())
    renamed = fam.w_outcome()
    renamed["content"]["name"] = "Read"
    with pytest.raises(StoreError, match="^Tool operation outcome identity conflict for operation-1$"):
        store.commit_tool_outcome(t2_input(renamed))
    assert journal_states(store) == ["prepared"]


def test_item37_t2_lane_smuggling(store: RuntimeStore) -> None:
    """§9 item 37."""
    store.commit_tool_prepared(t1_input())
    response = fam.w_outcome()
    response["actions"] = {"endInvocation": True}
    with pytest.raises(StoreError, match="semantic lane") as info:
        store.commit_tool_outcome(t2_input(response))
    assert str(info.value) == "T2 requires one canonical function-response semantic lane"
    assert store.read_tool_operation("operation-1").current_state == "prepared"
    assert _events(store) == ["call-event-1", "dispatch-event-1"]


def test_item38_unrelated_session_history(store: RuntimeStore) -> None:
    """§9 item 38."""
    other = user_event(sessionId="session-2", invocationId="invocation-2", runId="run-2", turnId="turn-2")
    store.append(other)
    call = fam.w_call(id="call-s2")
    call.update(sessionId="session-2", invocationId="invocation-2", runId="run-2", turnId="turn-2")
    store.append(call)
    assert store.commit_tool_prepared(t1_input()).created is True


def _inject_duplicate_call(tmp_path: Path, seq: int) -> None:
    conn = raw(tmp_path)
    raw_insert(conn, fam.w_call(id="call-event-dup"), seq)
    conn.close()


def test_item39_exact_t1_retry_on_corrupt_ledger(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 39, §10 item 25: exact retries still pass the health gate."""
    store.commit_tool_prepared(t1_input())
    _inject_duplicate_call(tmp_path, 3)
    with pytest.raises(ToolLedgerCorruptionError) as info:
        store.commit_tool_prepared(t1_input())
    assert info.value.code == "duplicate_call"


def test_item40_exact_t2_retry_on_corrupt_ledger(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 40."""
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input())
    _inject_duplicate_call(tmp_path, 4)
    with pytest.raises(ToolLedgerCorruptionError) as info:
        store.commit_tool_outcome(t2_input())
    assert info.value.code == "duplicate_call"


def test_item41_completed_bundle(tmp_path: Path) -> None:
    """§9 item 41, §3.1 versions, §10 item 22 committed_at = ts for recovery facts."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    completed_bundle(store)
    operation = store.read_tool_operation("operation-1")
    assert (operation.current_state, operation.result_event_id, operation.version) == (
        "recovery_completed", "outcome-event-1", 4
    )
    assert journal_states(store) == ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"]
    journal = store.read_tool_journal("operation-1")
    assert [r.journal_event_id for r in journal] == [
        "operation-1_prepared", "reconcile-event-1_journal", "operation-1_outcome", "decision-event-1_journal"
    ]
    assert [r.committed_at for r in journal] == [10, 2, 3, 4]
    assert journal[1].metadata == fam.w_reconcile()["actions"]["toolRecovery"]
    assert journal[2].metadata is None
    assert journal[3].metadata == fam.w_decision_completed()["actions"]["toolRecovery"]
    assert _events(store) == [
        "call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "decision-event-1"
    ]
    online = projection_snapshot(store)
    store.close()
    store = open_store(tmp_path)
    assert projection_snapshot(store) == online
    assert store.rebuild_tool_projections().to_json() == {"operations": 1, "journalEvents": 4}
    assert projection_snapshot(store) == online
    completed_bundle(store)  # exact retry: no-op
    assert projection_snapshot(store) == online
    store.close()


def test_bundle_metadata_json_is_sorted_canonical_text(store: RuntimeStore, tmp_path: Path) -> None:
    """§2.5 step 6 / §3.3: metadata_json is serialised from the canonical (sorted-key) event."""
    store.commit_tool_prepared(t1_input())
    parked_bundle(store)
    conn = raw(tmp_path)
    text = conn.execute(
        "SELECT metadata_json FROM tool_journal_events WHERE journal_event_id = 'reconcile-event-1_journal'"
    ).fetchone()[0]
    conn.close()
    assert text == (
        '{"kind":"maka.tool.reconcile_result","payload":{"observation":"diverged","observationDigest":"sha256:'
        + "a" * 64
        + '","observationSchema":"state_identity_v1","operationId":"operation-1","protocol":"tool_reconcile_v1"},'
        '"version":1}'
    )


def test_item43_parked_is_final(store: RuntimeStore) -> None:
    """§9 item 43, §10 item 30."""
    store.commit_tool_prepared(t1_input())
    parked_bundle(store)
    parked_bundle(store)
    operation = store.read_tool_operation("operation-1")
    assert (operation.current_state, operation.version, operation.result_event_id) == ("recovery_parked", 3, None)
    assert journal_states(store) == ["prepared", "reconcile_observed", "recovery_parked"]
    with pytest.raises(ToolLedgerRejectionError) as info:
        completed_bundle(store)
    assert info.value.code == "duplicate_event_id"
    assert journal_states(store) == ["prepared", "reconcile_observed", "recovery_parked"]


def test_already_settled(store: RuntimeStore) -> None:
    """§2.5 step 5: a different bundle for a settled operation (fresh ids) is refused."""
    store.commit_tool_prepared(t1_input())
    store.commit_tool_outcome(t2_input())
    with pytest.raises(StoreError, match="^Tool operation operation-1 is already settled$") as info:
        parked_bundle(store)
    assert info.value.code == "already_settled"


def test_item44_row_payload_mismatch_blocks_bundle(tmp_path: Path) -> None:
    """§9 item 44."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    store.close()
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET run_id = 'run-x' WHERE event_id = 'call-event-1'")
    conn.close()
    store = open_store(tmp_path)
    with pytest.raises(StoreError, match="^RuntimeEvent row/payload identity mismatch for call-event-1$"):
        completed_bundle(store)
    assert store.read_tool_operation("operation-1").current_state == "prepared"
    store.close()


def test_item45_exact_bundle_retry_on_corrupt_ledger(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 45."""
    store.commit_tool_prepared(t1_input())
    completed_bundle(store)
    _inject_duplicate_call(tmp_path, 6)
    with pytest.raises(ToolLedgerCorruptionError) as info:
        completed_bundle(store)
    assert info.value.code == "duplicate_call"


def _bundle_code(store: RuntimeStore, reconcile: Any, decision: Any, outcome: Any = None) -> str:
    with pytest.raises(ToolRecoveryBundleValidationError) as info:
        store.commit_tool_recovery_bundle("operation-1", reconcile, decision, outcome)
    return info.value.code


def test_item46_replay_safe_operation(store: RuntimeStore) -> None:
    """§9 item 46."""
    store.commit_tool_prepared(t1_input(dispatch=fam.w_dispatch(recovery_mode="replay_safe"),
                                        recovery_mode="replay_safe"))
    code = _bundle_code(store, fam.w_reconcile(), fam.w_decision_completed(), fam.w_outcome())
    assert code == "recovery_mode_unsupported"


def test_items47_to_49_bundle_validation_codes(store: RuntimeStore) -> None:
    """§9 items 47–49 (and nothing written for any of them)."""
    store.commit_tool_prepared(t1_input())
    assert _bundle_code(store, fam.w_reconcile(), fam.w_decision_completed(), fam.w_outcome(err=True)) == (
        "outcome_not_successful"
    )
    decision = fam.w_decision_completed()
    decision["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = [
        "call-event-1", "dispatch-event-1", "reconcile-event-1"
    ]
    assert _bundle_code(store, fam.w_reconcile(), decision, fam.w_outcome()) == "evidence_order_conflict"
    assert _bundle_code(store, fam.w_reconcile("matches_prior_state"), fam.w_decision_parked("reconcile_diverged")) == (
        "reconcile_decision_conflict"
    )
    assert _bundle_code(store, fam.w_reconcile(), fam.w_decision_completed()) == "outcome_required"
    assert _bundle_code(store, fam.w_reconcile("diverged"), fam.w_decision_parked(), fam.w_outcome()) == (
        "outcome_for_parked"
    )
    assert _events(store) == ["call-event-1", "dispatch-event-1"]
    assert journal_states(store) == ["prepared"]


def test_item50_t2_after_parked(store: RuntimeStore) -> None:
    """§9 item 50: the compare-and-set guard refuses; nothing written."""
    store.commit_tool_prepared(t1_input())
    parked_bundle(store)
    before = projection_snapshot(store)
    with pytest.raises(StoreError, match="^Tool operation compare-and-set failed for operation-1$") as info:
        store.commit_tool_outcome(t2_input())
    assert info.value.code == "compare_and_set_failed"
    assert projection_snapshot(store) == before
    assert "outcome-event-1" not in _events(store)


def test_item26_forged_evidence_refused(store: RuntimeStore) -> None:
    """§9 item 26: a decision whose evidence cannot be stored losslessly; operation stays prepared."""

    class Forged(str):
        def __str__(self) -> str:
            return "outcome-event-1"

    store.commit_tool_prepared(t1_input())
    decision = fam.w_decision_parked()
    decision["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = [
        "call-event-1", "dispatch-event-1", Forged("reconcile-event-1")
    ]
    with pytest.raises((RuntimeEventSchemaError, RuntimeEventNotSerializableError)):
        store.commit_tool_recovery_bundle("operation-1", fam.w_reconcile("diverged"), decision)
    assert store.read_tool_operation("operation-1").current_state == "prepared"
    assert journal_states(store) == ["prepared"]


def test_bundle_requires_operation_and_dispatch(store: RuntimeStore) -> None:
    """§2.5 step 1."""
    with pytest.raises(StoreError, match="^Unknown tool operation operation-1$"):
        completed_bundle(store)
    store.append(fam.w_call())
    with store.write() as conn:  # a legacy, dispatch-less projection row
        conn.execute(
            "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, "
            "tool_name, canonical_args_hash, recovery_mode, current_state, call_event_id, version) VALUES "
            "('operation-1', 'invocation-1', 'run-1', 'turn-1', 'provider-call-1', 'Write', ?, 'reconcile', "
            "'prepared', 'call-event-1', 1)",
            (fam.WRITE_NOTES_HASH,),
        )
    with pytest.raises(StoreError, match="^Recovery bundle requires a durable dispatch RuntimeEvent$"):
        completed_bundle(store)


def test_bundle_outcome_must_not_carry_recovery_fact(store: RuntimeStore) -> None:
    with pytest.raises(StoreError, match="atomic recovery bundle writer"):
        store.commit_tool_recovery_bundle("operation-1", fam.w_reconcile(), fam.w_decision_completed(),
                                          fam.w_reconcile(id="x"))
