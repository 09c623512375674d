"""Read-path guarantees: identity re-checks, prefixes, bounded scans, session reads
(spec 30 §4, §9 items 58, 62, 63, 67, 69)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_ref._store import RuntimeStore, ScanBudget, StoreError
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import ids, open_store, raw, user_event


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = open_store(tmp_path)
    yield s
    s.close()


def test_item58_payload_rewrite_fails_closed(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 58: payload run ≠ row run → read fails."""
    store.append(user_event())
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET payload_json = replace(payload_json, '\"run-1\"', '\"run-9\"')")
    conn.close()
    with pytest.raises(StoreError, match="^RuntimeEvent row/payload identity mismatch for user-event-1$") as info:
        store.read_run_events("session-1", "run-1")
    assert info.value.code == "row_payload_identity_mismatch"
    with pytest.raises(StoreError, match="row/payload identity mismatch"):
        store.read_immutable_prefix("session-1", "run-1")


def test_row_payload_mismatch_poisons_the_health_gate(store: RuntimeStore, tmp_path: Path) -> None:
    """§2.1: a decode failure is cached and re-thrown for tool-bearing writes only."""
    store.append(user_event())
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET turn_id = 'turn-x'")
    conn.close()
    call = fam.w_call(id="c")
    call.update(invocationId="invocation-2", runId="run-2")
    with pytest.raises(StoreError, match="row/payload identity mismatch"):
        store.append(call)
    assert store.append(user_event("ordinary", invocationId="invocation-3", runId="run-3")).created


def test_reads_order_by_event_seq(store: RuntimeStore) -> None:
    for index in range(3):
        store.append(user_event(f"event-{index}", ts=10 - index))
    assert ids(store.read_run_events("session-1", "run-1")) == ["event-0", "event-1", "event-2"]


def test_item62_oversized_record(store: RuntimeStore) -> None:
    """§9 item 62: stored bytes measured before decoding; zero visits."""
    store.append(user_event(text="x" * 2000))
    visits: list[Any] = []
    budget = ScanBudget(4096, 1024, 10, 4096, 10, 4096)
    assert store.scan_runtime_events("session-1", "run-1", budget, visits.append) == "limit_exceeded"
    assert visits == []


def test_item63_record_count_budget(store: RuntimeStore) -> None:
    """§9 item 63: two events vs maxImmutableRecords = 1."""
    store.append(user_event())
    store.append(user_event("user-event-2"))
    visits: list[Any] = []
    budget = ScanBudget(4096, 4096, 1, 4096, 10, 4096)
    assert store.scan_runtime_events("session-1", "run-1", budget, visits.append) == "limit_exceeded"
    assert visits == []


def test_scan_partial_budgets_and_batches(store: RuntimeStore) -> None:
    """§4: the partial budget applies before any visit; batches stay within max_batch_bytes."""
    for index in range(4):
        store.append(user_event(f"event-{index}"))
    store.append(fam.event("p", ts=2, partial=True, role="model", author="agent",
                           content={"kind": "text", "text": "x" * 500}, refs={"providerEventId": "m"}))
    visits: list[Any] = []
    tight_partial = ScanBudget(4096, 4096, 10, 4096, 10, 100)
    assert store.scan_runtime_events("session-1", "run-1", tight_partial, visits.append) == "limit_exceeded"
    assert visits == []
    one_per_batch = ScanBudget(1, 4096, 10, 4096, 10, 4096)
    assert store.scan_runtime_events("session-1", "run-1", one_per_batch, visits.append) == "complete"
    assert [len(batch) for batch in visits] == [1, 1, 1, 1, 1]
    assert [e for batch in visits for e in batch] == store.read_runtime_events("session-1", "run-1")
    with pytest.raises(ValueError):
        ScanBudget(0, 1, 1, 1, 1, 1)


def test_item67_prefix_gap(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 67: raw delete of seq 2 of 3."""
    for index in range(3):
        store.append(user_event(f"event-{index}"))
    conn = raw(tmp_path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM runtime_events WHERE event_seq = 2")
    conn.close()
    with pytest.raises(StoreError, match="^immutable RuntimeEvent event_seq gap: expected 2, received 3$") as info:
        store.read_immutable_prefix("session-1", "run-1")
    assert info.value.code == "prefix_seq_gap"


def test_prefix_empty_and_high_water(store: RuntimeStore) -> None:
    """§4: empty prefix; requested high-water missing; invalid high-water."""
    with pytest.raises(StoreError, match="^immutable RuntimeEvent prefix is empty$"):
        store.read_immutable_prefix("session-1", "run-1")
    store.append(user_event())
    with pytest.raises(StoreError, match="^immutable RuntimeEvent prefix high-water 2 is unavailable$"):
        store.read_immutable_prefix("session-1", "run-1", 2)
    for bad in (0, -1, True, 1.5, 2**53):
        with pytest.raises(StoreError, match="high-water"):
            store.read_immutable_prefix("session-1", "run-1", bad)  # type: ignore[arg-type]


def test_item69_partials_never_change_a_prefix(store: RuntimeStore) -> None:
    """§9 item 69."""
    store.append(user_event())
    before = store.read_immutable_prefix("session-1", "run-1")
    store.append(fam.event("p", ts=2, partial=True, role="model", author="agent",
                           content={"kind": "text", "text": "streaming"}, refs={"providerEventId": "m"}))
    after = store.read_immutable_prefix("session-1", "run-1")
    assert (after.position, after.prefix_digest) == (before.position, before.prefix_digest)
    assert after.position.to_json() == {"lastEventSeq": 1, "eventCount": 1, "lastEventId": "user-event-1"}
    store.append(user_event("user-event-2", ts=3))
    pinned = store.read_immutable_prefix("session-1", "run-1", 1)
    assert pinned.prefix_digest == before.prefix_digest
    full = store.read_immutable_prefix("session-1", "run-1")
    assert full.position.last_event_seq == 2 and full.prefix_digest != before.prefix_digest


def test_prefix_golden_digest(store: RuntimeStore) -> None:
    """§2.6 golden (the concurrency fixture's source run), read back through the store."""
    identity = {"sessionId": "session-1", "invocationId": "continuation-source-invocation",
                "runId": "continuation-source-run", "turnId": "continuation-source-turn"}
    store.append({"id": "continuation-source-user", **identity, "ts": 10, "partial": False, "role": "user",
                  "author": "user", "content": {"kind": "text", "text": "continue after this completed boundary"}})
    store.ensure_terminal_durable({
        "id": "continuation-source-terminal", **identity, "ts": 11, "partial": False, "role": "system",
        "author": "system", "status": "failed",
        "actions": {"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}},
    })
    prefix = store.read_immutable_prefix("session-1", "continuation-source-run")
    assert prefix.prefix_digest == "sha256:316557ba0aa070940fd890417e2777d4c5149974110a013e67d3e9c581124eec"
    assert prefix.position.to_json() == {
        "lastEventSeq": 2, "eventCount": 2, "lastEventId": "continuation-source-terminal"
    }


def test_session_reads(store: RuntimeStore) -> None:
    """§4: by-run merge sorted by ts, run id, in-run index, event id."""
    store.append(user_event("a-1", ts=5))
    store.append(user_event("b-1", ts=5, invocationId="invocation-2", runId="run-0", turnId="turn-2"))
    store.append(user_event("a-2", ts=1))
    assert ids(store.read_session_events("session-1")) == ["a-2", "b-1", "a-1"]
    assert ids(store.read_session_events_by_ordinal("session-1")) == ["a-1", "b-1", "a-2"]
