"""Mutable partial snapshots and segments (spec 30 §2.2 "Partial events", §4, §9 items 59–61,
64–66, 68)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_ref._store import RuntimeStore, ScanBudget, StoreError
from maka_ref._store.partials import partial_stream, stream_key
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import ids, open_store, raw, user_event

BIG = ScanBudget(10**6, 10**6, 100, 10**7, 100, 10**7)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = open_store(tmp_path)
    yield s
    s.close()


def _chunk(event_id: str, text: str, ts: int, provider_id: str = "message-1") -> dict[str, Any]:
    return fam.event(event_id, ts=ts, partial=True, role="model", author="agent",
                     content={"kind": "text", "text": text}, refs={"providerEventId": provider_id})


def _counts(tmp_path: Path) -> tuple[int, int]:
    conn = raw(tmp_path)
    snapshots = conn.execute("SELECT COUNT(*) FROM runtime_partial_snapshots").fetchone()[0]
    segments = conn.execute("SELECT COUNT(*) FROM runtime_partial_segments").fetchone()[0]
    conn.close()
    return snapshots, segments


def test_item61_three_chunks_one_visible_event(store: RuntimeStore) -> None:
    """§9 item 61: chunks hel + lo + ! → one visible event "hello!"; immutable read empty; scan = read."""
    results = [store.append(_chunk(f"partial-{i}", text, i + 1)) for i, text in enumerate(["hel", "lo", "!"])]
    assert [r.to_json() for r in results] == [{"created": True}, {"created": False}, {"created": False}]
    visible = store.read_runtime_events("session-1", "run-1")
    assert len(visible) == 1
    assert visible[0]["content"] == {"kind": "text", "text": "hello!"}
    assert visible[0]["id"] == "partial-0"
    assert store.read_run_events("session-1", "run-1") == []
    scanned: list[Any] = []
    budget = ScanBudget(1024, 1024, 10, 1024, 10, 1024)
    assert store.scan_runtime_events("session-1", "run-1", budget, scanned.extend) == "complete"
    assert scanned == visible


def test_stream_key_is_sha256_of_the_identity_array() -> None:
    """§2.2: hex SHA-256 of [identity, session, invocation, run, turn, branch-or-null, role, author]."""
    import hashlib

    chunk = _chunk("p", "x", 1)
    expected = hashlib.sha256(
        b'["text:provider:message-1","session-1","invocation-1","run-1","turn-1",null,"model","agent"]'
    ).hexdigest()
    assert stream_key("text:provider:message-1", chunk) == expected
    assert partial_stream(chunk).key == expected
    tool = fam.event("t", partial=True, role="tool", author="tool", refs={"toolCallId": "provider-call-1"})
    assert partial_stream(tool).kind == "tool"
    assert partial_stream(_chunk("p", "x", 1) | {"status": "streaming"}) is None
    assert partial_stream(_chunk("p", "x", 1) | {"refs": {"providerEventId": "m", "toolCallId": "c"}}) is None
    thinking = fam.event("th", partial=True, role="model", author="agent",
                         content={"kind": "thinking", "text": "hm", "signature": "s"},
                         refs={"providerEventId": "m"})
    assert partial_stream(thinking) is None


def test_item65_partial_batch_and_segment_coalescing(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 65: a batch a+b+c is one segment "abc"; 40 KiB + 40 KiB + 1 → 40960 and 40961 bytes."""
    store.append_partial_batch("session-1", "run-1", [_chunk("a", "a", 1), _chunk("b", "b", 2), _chunk("c", "c", 3)])
    conn = raw(tmp_path)
    assert conn.execute("SELECT segment_seq, text_content FROM runtime_partial_segments").fetchall() == [(1, "abc")]
    conn.close()
    kib40 = "x" * 40960
    for index, text in enumerate([kib40, kib40, "y"]):
        store.append(_chunk(f"big-{index}", text, 10 + index, provider_id="message-2"))
    conn = raw(tmp_path)
    key = partial_stream(_chunk("big-0", "", 10, provider_id="message-2")).key
    segments = conn.execute(
        "SELECT segment_seq, length(CAST(text_content AS BLOB)) FROM runtime_partial_segments WHERE stream_key = ? "
        "ORDER BY segment_seq",
        (key,),
    ).fetchall()
    snapshot_text = conn.execute(
        "SELECT text_content FROM runtime_partial_snapshots WHERE stream_key = ?", (key,)
    ).fetchone()[0]
    conn.close()
    assert segments == [(1, 40960), (2, 40961)]
    assert snapshot_text == ""
    visible = [e for e in store.read_runtime_events("session-1", "run-1") if e["id"] == "big-0"]
    assert visible[0]["content"]["text"] == kib40 + kib40 + "y"


def test_item66_batch_spanning_two_streams(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 66: nothing stored."""
    batch = [_chunk("a", "a", 1), _chunk("b", "b", 2, provider_id="message-2")]
    with pytest.raises(StoreError, match="^Runtime partial batch must contain exactly one presentation stream$"):
        store.append_partial_batch("session-1", "run-1", batch)
    with pytest.raises(StoreError, match="^Runtime partial batch contains a non-partial event$"):
        store.append_partial_batch("session-1", "run-1", [_chunk("a", "a", 1), user_event()])
    assert _counts(tmp_path) == (0, 0)
    assert store.read_runtime_events("session-1", "run-1") == []


def test_item68_finals_complete_their_streams(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 68: text and tool partials, then their finals → [text-final, call, response], no segments."""
    store.append(_chunk("text-partial", "draft", 1))
    store.append(fam.event("text-final", ts=2, role="model", author="agent",
                           content={"kind": "text", "text": "final"}, refs={"providerEventId": "message-1"}))
    store.append(fam.w_call())
    store.append(fam.event("tool-partial", ts=3, partial=True, role="tool", author="tool",
                           refs={"toolCallId": "provider-call-1"}))
    assert _counts(tmp_path) == (1, 0)
    assert ids(store.read_runtime_events("session-1", "run-1")) == ["text-final", "call-event-1", "tool-partial"]
    store.append(fam.w_outcome_unbound())
    assert ids(store.read_runtime_events("session-1", "run-1")) == ["text-final", "call-event-1", "outcome-event-1"]
    assert _counts(tmp_path) == (0, 0)
    assert store.append(_chunk("late", "ignored", 9)).created is False  # completed stream: ignored
    assert _counts(tmp_path) == (0, 0)


def test_partials_are_anchored_after_the_latest_immutable_event(store: RuntimeStore) -> None:
    """§4: anchored after after_event_id; leading when the run had no event yet."""
    store.append(_chunk("lead", "a", 1, provider_id="m-lead"))
    store.append(user_event(ts=2))
    store.append(_chunk("mid", "b", 3, provider_id="m-mid"))
    store.append(user_event("user-event-2", ts=4))
    assert ids(store.read_runtime_events("session-1", "run-1")) == ["lead", "user-event-1", "mid", "user-event-2"]
    assert ids(store.read_run_events("session-1", "run-1")) == ["user-event-1", "user-event-2"]
    assert ids(store.read_session_events("session-1")) == ["lead", "user-event-1", "mid", "user-event-2"]


def test_item59_corrupt_snapshot_json_is_skipped(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 59."""
    store.append(user_event())
    store.append(_chunk("p", "x", 2))
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_partial_snapshots SET payload_json = '{not json'")
    conn.close()
    assert ids(store.read_runtime_events("session-1", "run-1")) == ["user-event-1"]


def test_item60_snapshot_identity_mismatch_is_skipped(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 60: the SQL identity disagrees with the payload."""
    store.append(user_event())
    store.append(_chunk("p", "x", 2))
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_partial_snapshots SET turn_id = 'turn-x'")
    conn.close()
    assert ids(store.read_runtime_events("session-1", "run-1")) == ["user-event-1"]


def test_item64_nine_thousand_raw_segments(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 64."""
    store.append(_chunk("p", "", 1))
    key = partial_stream(_chunk("p", "", 1)).key
    conn = raw(tmp_path)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO runtime_partial_segments (stream_key, segment_seq, text_content, updated_at) VALUES (?, ?, 'z', 1)",
        [(key, seq) for seq in range(1, 9001)],
    )
    conn.execute("COMMIT")
    conn.close()
    visited: list[Any] = []
    assert store.scan_runtime_events("session-1", "run-1", BIG, visited.extend) == "complete"
    assert len(visited) == 1 and visited[0]["content"]["text"] == "z" * 9000


def test_partial_identity_rules_apply(store: RuntimeStore) -> None:
    """§2.1 step 1 covers partial snapshots: a snapshot claims its invocation."""
    store.append(_chunk("p", "x", 1))
    with pytest.raises(StoreError, match="invocation identity conflict"):
        store.append(user_event(runId="run-2"))
