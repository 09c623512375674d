"""The reader interface of spec 30 §5.2 rule 4 and its ``kind = "sqlite"`` implementation.

Why a module of its own: the SQLite reader never looks at the JSONL files, so it needs neither
the layout nor the decoder. The ``kind = "jsonl"`` reader stays in ``legacy.profile``, next to
the decoder entry points it shares with the imports.
"""

from __future__ import annotations

from typing import Literal, Protocol

from maka_ref._codec.frozen import FrozenDict
from maka_ref._store.runtime_store import RuntimeStore

__all__ = [
    "RuntimeEventReader",
    "SqliteRuntimeEventReader",
]


class RuntimeEventReader(Protocol):
    """What rule 4 hands out: read methods only (never an ``append``)."""

    @property
    def kind(self) -> Literal["jsonl", "sqlite"]: ...

    def list_sessions(self) -> list[str]: ...

    def list_runs(self, session_id: str) -> list[str]: ...

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]: ...

    def close(self) -> None: ...


class SqliteRuntimeEventReader:
    """``kind = "sqlite"``: a read-only view of ``runtime.sqlite`` (never the JSONL files)."""

    __slots__ = ("_store",)

    def __init__(self, store: RuntimeStore) -> None:
        self._store = store

    @property
    def kind(self) -> Literal["sqlite"]:
        return "sqlite"

    @property
    def store(self) -> RuntimeStore:
        return self._store

    def list_sessions(self) -> list[str]:
        with self._store.read() as conn:
            rows = conn.execute("SELECT DISTINCT session_id FROM runtime_events ORDER BY session_id").fetchall()
        return [row[0] for row in rows]

    def list_runs(self, session_id: str) -> list[str]:
        with self._store.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT run_id FROM runtime_events WHERE session_id = ? ORDER BY run_id", (session_id,)
            ).fetchall()
        return [row[0] for row in rows]

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]:
        return list(self._store.read_run_events(session_id, run_id))

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> SqliteRuntimeEventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
