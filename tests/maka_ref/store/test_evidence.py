"""Phase 3 evidence carried by T1 (spec-phase3 §3): the scope, the row inside T1's transaction,
exact retry, refusal before anything is written, reads and the read-only rule.

Records are written by hand (``tests.maka_ref.reconcile.support``); the family W call is the
Write of ``after`` to ``notes.txt`` (spec 30 Appendix A).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from maka_ref._reconcile import Invalid
from maka_ref._store import RuntimeStore, StoreError
from maka_ref._store.engine.failpoints import FailpointTriggered, arm, disarm
from maka_ref.testing import families as fam
from tests.maka_ref.reconcile.support import WORKSPACE_IDENTITY, regular
from tests.maka_ref.store.support import db_file, raw, t1_input


def w_evidence(**changes: object) -> dict[str, object]:
    """The record of spec-phase3 §1.2 for family W's T1 (Write ``after`` to a new notes.txt)."""
    record: dict[str, object] = {
        "protocol": "file_evidence_v1",
        "operationId": "operation-1",
        "sessionId": "session-1",
        "invocationId": "invocation-1",
        "runId": "run-1",
        "turnId": "turn-1",
        "providerToolCallId": "provider-call-1",
        "callEventId": "call-event-1",
        "dispatchEventId": "dispatch-event-1",
        "toolName": "Write",
        "canonicalArgsHash": fam.WRITE_NOTES_HASH,
        "workspaceIdentity": WORKSPACE_IDENTITY,
        "targetPath": "notes.txt",
        "transform": "write_whole_file_v1",
        "before": {"type": "absent"},
        "expectedAfter": regular(b"after"),
        "result": {"path": "notes.txt", "bytesWritten": 5},
    }
    record.update(changes)
    return record


def rows(root: Path) -> list[tuple[str, str, str, str, str]]:
    conn = raw(root)
    try:
        return conn.execute(
            "SELECT operation_id, dispatch_event_id, protocol, evidence_digest, evidence_json FROM runtime_tool_evidence"
        ).fetchall()
    finally:
        conn.close()


def event_ids(root: Path) -> list[str]:
    conn = raw(root)
    try:
        return [row[0] for row in conn.execute("SELECT event_id FROM runtime_events ORDER BY event_seq")]
    finally:
        conn.close()


def test_writer_open_registers_the_scope_and_keeps_user_version(tmp_path: Path) -> None:
    RuntimeStore.open(tmp_path).close()
    conn = raw(tmp_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 12  # spec 30 §1.3, unchanged
        assert conn.execute(
            "SELECT version FROM operational_schema_migrations WHERE scope = 'tool_evidence'"
        ).fetchone() == (1,)
    finally:
        conn.close()


def test_t1_with_evidence_commits_the_row_in_the_same_transaction(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        assert store.commit_tool_prepared(t1_input(evidence=w_evidence())).created
        stored = store.read_tool_evidence("operation-1")
    [(op, dispatch, protocol, digest, text)] = rows(tmp_path)
    assert (op, dispatch, protocol) == ("operation-1", "dispatch-event-1", "file_evidence_v1")
    # canonical text: stable_json (sorted keys, no spaces), written by hand here
    assert text == json.dumps(w_evidence(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    lp = b"".join(len(part).to_bytes(8, "big") + part for part in (b"maka.file-evidence.v1", text.encode()))
    assert digest == "sha256:" + hashlib.sha256(lp).hexdigest()  # spec-phase3 §2.1
    assert stored.to_json() == w_evidence()


def test_t1_without_evidence_is_unchanged_and_reads_none(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        assert store.commit_tool_prepared(t1_input()).created
        assert store.read_tool_evidence("operation-1") is None
    assert rows(tmp_path) == []


@pytest.mark.parametrize(
    ("record", "code"),
    [
        (w_evidence(protocol="file_evidence_v2"), "evidence_protocol_unsupported"),
        (w_evidence(targetPath="../notes.txt"), "evidence_target_invalid"),
        (w_evidence(operationId="operation-2"), "evidence_operation_conflict"),
        (w_evidence(expectedAfter=regular(b"afteR")), "evidence_args_conflict"),
        (w_evidence(result={"path": "notes.txt", "bytesWritten": 6}), "evidence_result_conflict"),
    ],
)
def test_t1_refuses_bad_evidence_and_writes_nothing(tmp_path: Path, record: dict[str, object], code: str) -> None:
    with RuntimeStore.open(tmp_path) as store:
        with pytest.raises(StoreError) as caught:
            store.commit_tool_prepared(t1_input(evidence=record))
        assert caught.value.code == code
        assert store.read_tool_operation("operation-1") is None
    assert rows(tmp_path) == [] and event_ids(tmp_path) == []


def test_t1_refuses_evidence_on_a_non_reconcile_dispatch(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store, pytest.raises(StoreError) as caught:
        store.commit_tool_prepared(
            t1_input(dispatch=fam.w_dispatch(recovery_mode="never_auto_retry"), recovery_mode="never_auto_retry",
                     evidence=w_evidence())
        )
    assert caught.value.code == "evidence_recovery_mode_conflict"
    assert event_ids(tmp_path) == []


def test_exact_retry_needs_the_same_evidence(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        assert store.commit_tool_prepared(t1_input(evidence=w_evidence())).created
        assert not store.commit_tool_prepared(t1_input(evidence=w_evidence())).created  # spec-phase3 §3.3
        for other in (None, w_evidence(before={"type": "absent"}, expectedAfter=regular(b"after", 0o644))):
            with pytest.raises(StoreError) as caught:
                store.commit_tool_prepared(t1_input(evidence=other))
            assert caught.value.code == "evidence_conflict"
    assert len(rows(tmp_path)) == 1


def test_evidence_cannot_be_added_to_a_t1_that_committed_without_it(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        assert store.commit_tool_prepared(t1_input()).created
        with pytest.raises(StoreError) as caught:
            store.commit_tool_prepared(t1_input(evidence=w_evidence()))
        assert caught.value.code == "evidence_conflict"
    assert rows(tmp_path) == []


@pytest.mark.parametrize("point", ["after_runtime_event_insert", "after_journal_event_insert"])
def test_a_failure_inside_t1_rolls_the_evidence_back_with_the_events(tmp_path: Path, point: str) -> None:
    with RuntimeStore.open(tmp_path) as store:
        arm(point)
        try:
            with pytest.raises(FailpointTriggered):
                store.commit_tool_prepared(t1_input(evidence=w_evidence()))
        finally:
            disarm()
        assert store.read_tool_operation("operation-1") is None
    assert rows(tmp_path) == [] and event_ids(tmp_path) == []


def test_a_damaged_row_reads_as_its_code(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        store.commit_tool_prepared(t1_input(evidence=w_evidence()))
    conn = raw(tmp_path)
    try:
        conn.execute("UPDATE runtime_tool_evidence SET evidence_json = '{\"protocol\": 1}'")
    finally:
        conn.close()
    with RuntimeStore.open_read_only(tmp_path) as store:
        damaged = store.read_tool_evidence("operation-1")
    assert isinstance(damaged, Invalid) and damaged.code == "evidence_protocol_unsupported"


def test_read_only_open_of_a_pre_phase3_database_creates_nothing(tmp_path: Path) -> None:
    with RuntimeStore.open(tmp_path) as store:
        store.commit_tool_prepared(t1_input())
    conn = raw(tmp_path)
    try:  # a database written before Phase 3: no scope, no table
        conn.execute("DROP TABLE runtime_tool_evidence")
        conn.execute("DELETE FROM operational_schema_migrations WHERE scope = 'tool_evidence'")
    finally:
        conn.close()
    before = hashlib.sha256(db_file(tmp_path).read_bytes()).hexdigest()
    with RuntimeStore.open_read_only(tmp_path) as store:
        assert store.read_tool_evidence("operation-1") is None
    assert hashlib.sha256(db_file(tmp_path).read_bytes()).hexdigest() == before
    with sqlite3.connect(db_file(tmp_path)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'runtime_tool_evidence'").fetchone() is None


def test_a_newer_scope_version_is_refused_by_the_writer(tmp_path: Path) -> None:
    RuntimeStore.open(tmp_path).close()
    conn = raw(tmp_path)
    try:
        conn.execute("UPDATE operational_schema_migrations SET version = 2 WHERE scope = 'tool_evidence'")
    finally:
        conn.close()
    with pytest.raises(StoreError) as caught:
        RuntimeStore.open(tmp_path)
    assert caught.value.code == "operational_state_migration_blocked"
