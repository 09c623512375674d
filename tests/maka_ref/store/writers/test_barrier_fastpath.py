"""The terminal barrier's inserted-row memory (``_store/insert/run_rows.py``): same verdicts as a
full decode of the run, and every way a remembered row can change behind the store drops it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from maka_ref._store.insert import run_rows
from maka_ref.testing import families as fam
from tests.maka_ref.store.support import open_store, raw, raw_insert, user_event


def _terminal(event_id: str = "terminal-1", **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"ts": 5, "status": "aborted", "actions": {"endInvocation": True}}
    values.update(fields)
    return fam.event(event_id, **values)


def _break_row(conn: Any, event_id: str) -> None:
    """Move the payload's id away from its row (a raw edit the decoder must catch)."""
    payload = json.loads(conn.execute("SELECT payload_json FROM runtime_events WHERE event_id = ?", (event_id,)).fetchone()[0])
    payload["turnId"] = "other-turn"
    conn.execute("UPDATE runtime_events SET payload_json = ? WHERE event_id = ?", (json.dumps(payload), event_id))


@pytest.fixture(params=[True, False], ids=["cached", "uncached"])
def enabled(request: Any, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(run_rows, "ENABLED", request.param)
    return request.param


def test_remembers_own_inserts(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    store.append(user_event("user-event-2"))
    known = store.health_gate.rows.runs.get(("session-1", "run-1"), {})
    assert known == ({"user-event-1": False, "user-event-2": False} if enabled else {})
    assert store.ensure_terminal_durable(_terminal()).created is True
    assert store.ensure_terminal_durable(_terminal()).created is False
    with pytest.raises(Exception, match="^Run run-1 already has terminal RuntimeEvent terminal-1$"):
        store.ensure_terminal_durable(_terminal("terminal-2"))
    store.close()


def test_raw_edit_on_same_connection_is_still_decoded(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    _break_row(store.connection, "user-event-1")  # autocommit raw SQL on the store's connection
    with pytest.raises(Exception, match="identity mismatch"):
        store.ensure_terminal_durable(_terminal())
    store.close()


def test_raw_edit_by_other_connection_is_still_decoded(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    conn = raw(tmp_path)
    _break_row(conn, "user-event-1")
    conn.close()
    with pytest.raises(Exception, match="identity mismatch"):
        store.ensure_terminal_durable(_terminal())
    store.close()


def test_edit_in_joined_transaction_is_still_decoded(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    conn = store.connection
    conn.execute("BEGIN IMMEDIATE")
    _break_row(conn, "user-event-1")
    with pytest.raises(Exception, match="identity mismatch"):
        store.ensure_terminal_durable(_terminal())
    conn.execute("ROLLBACK")
    assert store.ensure_terminal_durable(_terminal()).created is True
    store.close()


def test_foreign_terminal_and_tail_are_seen(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    conn = raw(tmp_path)
    raw_insert(conn, _terminal("terminal-0"), 2)
    conn.close()
    with pytest.raises(Exception, match="^Run run-1 already has terminal RuntimeEvent terminal-0$"):
        store.ensure_terminal_durable(_terminal())
    store.close()


def test_rolled_back_insert_leaves_no_wrong_verdict(tmp_path: Path, enabled: bool) -> None:
    store = open_store(tmp_path)
    store.append(user_event())
    with pytest.raises(RuntimeError):
        with store.write() as conn:
            from maka_ref._store.writers import generic

            generic.append_encoded(conn, store.health_gate, generic.pre_validate_generic(user_event("user-event-2")))
            raise RuntimeError("rollback")
    assert store.ensure_terminal_durable(_terminal()).created is True
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["user-event-1", "terminal-1"]
    store.close()
