"""Read-only opens create no file (spec 30 §1.1, §10 item 33) and still see a live writer's
un-checkpointed WAL (§10 item 8).

``connect(..., read_only=True)`` uses ``mode=ro&immutable=1`` when no ``-wal`` (and no
``-journal``) exists — a plain ``mode=ro`` open of a WAL database would create ``-wal`` and
``-shm`` — and ``mode=ro`` when a ``-wal`` exists, so committed frames that live only in the
WAL are read. Both stores' ``open_read_only`` go through it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._store import RuntimeStore
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.connection import connect, read_only_uri

from tests.maka_ref.store.support import ids, user_event

HEADER = {
    "runId": "run-1", "sessionId": "session-1", "turnId": "turn-1", "status": "created", "backendKind": "fake",
    "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace", "permissionMode": "ask",
    "createdAt": 1, "updatedAt": 1,
}


def names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_runtime(root: Path) -> Any:
    with RuntimeStore.open_read_only(root) as ro:
        return ids(ro.read_run_events("session-1", "run-1"))


def _read_agent(root: Path) -> Any:
    with AgentRunStore.open_read_only(root) as ro:
        return ro.read_run("session-1", "run-1")["status"]


def _build(root: Path) -> tuple[RuntimeStore, AgentRunStore]:
    runtime = RuntimeStore.open(root)
    runtime.append(user_event())
    agent = AgentRunStore.open(root)
    agent.create_run(HEADER)
    return runtime, agent


READERS: list[tuple[str, Callable[[Path], Any], Any]] = [
    ("runtime", _read_runtime, ["user-event-1"]),
    ("agent_runs", _read_agent, "created"),
]


@pytest.mark.parametrize(("name", "read", "expected"), READERS, ids=[r[0] for r in READERS])
def test_no_wal_open_is_immutable_and_creates_nothing(tmp_path: Path, name: str, read: Any, expected: Any) -> None:
    """Writers closed → SQLite checkpointed and deleted -wal/-shm; the reader creates neither
    and leaves the main file byte-identical."""
    runtime, agent = _build(tmp_path)
    runtime.close()
    agent.close()
    assert names(tmp_path) == ["runtime.sqlite"]
    before = digest(tmp_path / "runtime.sqlite")
    assert read_only_uri(tmp_path / "runtime.sqlite").endswith("?mode=ro&immutable=1")
    assert read(tmp_path) == expected
    assert names(tmp_path) == ["runtime.sqlite"]
    assert digest(tmp_path / "runtime.sqlite") == before


@pytest.mark.parametrize(("name", "read", "expected"), READERS, ids=[r[0] for r in READERS])
def test_live_writer_wal_is_visible_and_no_file_is_created(
    tmp_path: Path, name: str, read: Any, expected: Any
) -> None:
    """Writers still open, WAL not checkpointed: the reader (``mode=ro``) sees the committed
    frames that exist only in the -wal, and creates no file."""
    runtime, agent = _build(tmp_path)
    try:
        for conn in (runtime.connection, agent.connection):
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        runtime.append(user_event("user-event-2", ts=2))
        agent.update_run("session-1", "run-1", {"status": "running", "updatedAt": 2})
        assert names(tmp_path) == ["runtime.sqlite", "runtime.sqlite-shm", "runtime.sqlite-wal"]
        main_before, wal_before = digest(tmp_path / "runtime.sqlite"), digest(tmp_path / "runtime.sqlite-wal")
        assert read_only_uri(tmp_path / "runtime.sqlite").endswith("?mode=ro")
        want = ["user-event-1", "user-event-2"] if name == "runtime" else "running"
        assert read(tmp_path) == want
        assert names(tmp_path) == ["runtime.sqlite", "runtime.sqlite-shm", "runtime.sqlite-wal"]
        assert digest(tmp_path / "runtime.sqlite") == main_before
        assert digest(tmp_path / "runtime.sqlite-wal") == wal_before
    finally:
        runtime.close()
        agent.close()


def test_immutable_reader_refuses_writes_and_missing_files(tmp_path: Path) -> None:
    """The immutable URI keeps ``mode=ro``: a missing file is not created, writes fail."""
    with pytest.raises(sqlite3.OperationalError):
        connect(tmp_path / "runtime.sqlite", read_only=True)
    assert list(tmp_path.iterdir()) == []
    RuntimeStore.open(tmp_path).close()
    conn = connect(tmp_path / "runtime.sqlite", read_only=True)
    try:
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("CREATE TABLE nope (x)")
    finally:
        conn.close()
    assert names(tmp_path) == ["runtime.sqlite"]


def test_a_rollback_journal_forces_mode_ro(tmp_path: Path) -> None:
    """A ``-journal`` next to the file may be hot: never read around it with ``immutable``."""
    db = tmp_path / "runtime.sqlite"
    db.write_bytes(b"")
    assert read_only_uri(db).endswith("?mode=ro&immutable=1")
    (tmp_path / "runtime.sqlite-journal").write_bytes(b"")
    assert read_only_uri(db).endswith("?mode=ro")


@pytest.mark.parametrize("platform, expected", [("darwin", (1, 1)), ("linux", (0, 0))])
def test_writer_connections_use_full_fsync_on_darwin_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          platform: str, expected: tuple[int, int]) -> None:
    """Issue 15 item 4: on macOS SQLite must sync with ``F_FULLFSYNC`` (commits and checkpoints);
    the pragmas are read back from the very connection the store opens."""
    from maka_ref._store.engine import connection

    monkeypatch.setattr("sys.platform", platform)
    assert connection.durability_pragmas() == (
        ("PRAGMA fullfsync = ON", "PRAGMA checkpoint_fullfsync = ON") if platform == "darwin" else ())
    conn = connection.connect(tmp_path / "runtime.sqlite", read_only=False)
    try:
        got = (conn.execute("PRAGMA fullfsync").fetchone()[0], conn.execute("PRAGMA checkpoint_fullfsync").fetchone()[0])
        assert got == expected
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL, on every platform
    finally:
        conn.close()
