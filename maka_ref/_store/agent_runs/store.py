"""AgentRun operational store: run headers and operational events in ``runtime.sqlite`` (spec 20 §5.3).

Why: startup repair, candidate discovery and the continuation planner read run headers, and
repair writes the terminal header *after* the terminal RuntimeEvent (§4.1). The product keeps
these operational records in the same SQLite file as the runtime scope, so the header write
and its durability share the file's WAL and fsync discipline. They live in their own tables and
their own migration scope — never in ``PRAGMA user_version``, which belongs to the runtime scope
(:mod:`maka_ref._store.engine.schema`).

Layout (scope ``agent_runs``, version :data:`AGENT_RUNS_SCHEMA_VERSION`, recorded in
``operational_schema_migrations``):

* ``agent_runs(session_id, run_id, header_json, created_at, updated_at)``, PK
  ``(session_id, run_id)`` — ``header_json`` is the decoded (folded) header written with
  JavaScript ``JSON.stringify`` semantics; ``created_at``/``updated_at`` are projections of
  ``createdAt``/``updatedAt`` used for ordering only;
* ``agent_run_events(session_id, run_id, seq, event_json)``, PK ``(session_id, run_id, seq)``,
  ``seq`` = 0, 1, 2, … per run, assigned inside the appending transaction.

Rules: writes run in ``BEGIN IMMEDIATE`` (``connection.write_transaction``); reads never write
(multi-statement reads use one ``BEGIN … COMMIT`` snapshot); every row read is decoded again
and its identity must equal its key (fail closed otherwise). A newer scope version than
supported fails closed before anything is written.

Depends on: ``_codec.jsontext``, ``_store.engine``, ``_store.errors`` and its siblings
``header`` (the header codec), ``codec`` (id checks, JSON text, row decoding, errors) and
``schema`` (the ``agent_runs`` scope: DDL, version check, migration).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError, NotStrictJSONError
from maka_ref._store.agent_runs.codec import (
    RUN_ID_PATTERN,
    _check_id,
    _check_ids,
    _corrupt_placeholder,
    _decode_header_row,
    _error,
    _json_text,
    _not_found,
    _same_json,
)
from maka_ref._store.agent_runs.header import (
    MUTABLE_FIELDS,
    RunEventSchemaError,
    decode_run_event,
    decode_run_header,
)
from maka_ref._store.agent_runs.schema import (
    AGENT_RUNS_SCHEMA_VERSION,
    AGENT_RUNS_SCOPE,
    _migrate,
    _read_scope_version,
    _refuse_newer,
    _require_tables,
)
from maka_ref._store.engine.connection import (
    connect,
    read_transaction,
    write_transaction,
)
from maka_ref._store.engine.faults import store_faults_coded

__all__ = [
    "AGENT_RUNS_SCHEMA_VERSION",
    "AGENT_RUNS_SCOPE",
    "DB_FILE_NAME",
    "RUN_ID_PATTERN",
    "AgentRunStore",
]

DB_FILE_NAME: Final = "runtime.sqlite"


# --------------------------------------------------------------------------- the store


class AgentRunStore:
    """Run headers + operational events of spec 20 §5.3 over ``<root>/runtime.sqlite``."""

    def __init__(self, conn: sqlite3.Connection, db_path: Path, *, read_only: bool) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.db_path = db_path
        self.read_only = read_only

    # ----------------------------------------------------------------- lifecycle

    @classmethod
    def open(cls, root: str | Path) -> AgentRunStore:
        """Writer: create ``<root>/runtime.sqlite`` if needed and migrate the ``agent_runs`` scope."""
        db_path = Path(root) / DB_FILE_NAME
        conn = connect(db_path, read_only=False)
        try:
            with store_faults_coded(db_path.name):
                _migrate(conn)
        except BaseException:
            conn.close()
            raise
        return cls(conn, db_path, read_only=False)

    @classmethod
    def open_read_only(cls, root: str | Path) -> AgentRunStore:
        """Reader: never creates a file, never migrates; the scope must be exactly current."""
        db_path = Path(root) / DB_FILE_NAME
        conn = connect(db_path, read_only=True)
        try:
            version = _read_scope_version(conn)
            _refuse_newer(version)
            if version != AGENT_RUNS_SCHEMA_VERSION:
                raise _error(
                    "agent_runs_schema_unavailable",
                    f"Operational schema {AGENT_RUNS_SCOPE} {version} cannot be read without "
                    f"upgrading to {AGENT_RUNS_SCHEMA_VERSION}",
                )
            _require_tables(conn)
        except BaseException:
            conn.close()
            raise
        return cls(conn, db_path, read_only=True)

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    def __enter__(self) -> AgentRunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise _error("store_closed", "AgentRun store is closed")
        return self._conn

    def _writer(self) -> sqlite3.Connection:
        if self.read_only:
            raise _error("read_only_store", "AgentRun store was opened read-only")
        return self.connection

    # ----------------------------------------------------------------- headers

    def _select_header(self, conn: sqlite3.Connection, session_id: str, run_id: str) -> FrozenDict | None:
        row = conn.execute(
            "SELECT header_json FROM agent_runs WHERE session_id = ? AND run_id = ?", (session_id, run_id)
        ).fetchone()
        return None if row is None else _decode_header_row(session_id, run_id, row[0])

    def create_run(self, header: Any) -> FrozenDict:
        """Insert a new header (strictly decoded, folded); an existing key → ``run_already_exists``."""
        decoded = decode_run_header(header)
        session_id, run_id = decoded["sessionId"], decoded["runId"]
        _check_ids(session_id, run_id)
        text = _json_text(decoded)
        conn = self._writer()
        with store_faults_coded(self.db_path.name), write_transaction(conn):
            exists = conn.execute(
                "SELECT 1 FROM agent_runs WHERE session_id = ? AND run_id = ?", (session_id, run_id)
            ).fetchone()
            if exists is not None:
                raise _error("run_already_exists", f"AgentRun {session_id}/{run_id} already exists")
            conn.execute(
                "INSERT INTO agent_runs (session_id, run_id, header_json, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, run_id, text, float(decoded["createdAt"]), float(decoded["updatedAt"])),
            )
        return decoded

    def update_run(self, session_id: str, run_id: str, patch: Mapping[str, Any]) -> FrozenDict:
        """Patch mutable fields only (§5.3); ``None`` removes an optional field.

        Any other key → ``run_admission_identity_immutable``; ``runComposition`` may be set
        once (re-setting the identical value is a no-op) and never changed or cleared
        (``run_composition_immutable``). The merged header is decoded again before writing.
        """
        _check_ids(session_id, run_id)
        if not isinstance(patch, Mapping):
            raise _error("invalid_agent_run_patch", "AgentRun patch must be an object")
        for key in patch:
            if key not in MUTABLE_FIELDS:
                raise _error(
                    "run_admission_identity_immutable",
                    "AgentRun admission identity is immutable",
                    detail=f"field: {key!r}"[:200],
                )
        conn = self._writer()
        with store_faults_coded(self.db_path.name), write_transaction(conn):
            current = self._select_header(conn, session_id, run_id)
            if current is None:
                raise _not_found(session_id, run_id)
            merged = dict(current)
            for key, value in patch.items():
                if key == "runComposition" and "runComposition" in current:
                    if value is None or not _same_json(value, current["runComposition"]):
                        raise _error(
                            "run_composition_immutable",
                            "AgentRun runComposition can be set once and never changed or cleared",
                        )
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            decoded = decode_run_header(merged)
            conn.execute(
                "UPDATE agent_runs SET header_json = ?, updated_at = ? WHERE session_id = ? AND run_id = ?",
                (_json_text(decoded), float(decoded["updatedAt"]), session_id, run_id),
            )
        return decoded

    def read_run(self, session_id: str, run_id: str) -> FrozenDict:
        """The stored header; missing → code ``ENOENT`` ("not found")."""
        _check_ids(session_id, run_id)
        header = self._select_header(self.connection, session_id, run_id)
        if header is None:
            raise _not_found(session_id, run_id)
        return header

    def list_session_runs(self, session_id: str) -> list[FrozenDict]:
        """Every header of the session ordered by ``createdAt``, then ``runId``."""
        _check_id("sessionId", session_id)
        rows = self.connection.execute(
            "SELECT run_id, header_json FROM agent_runs WHERE session_id = ? ORDER BY created_at, run_id",
            (session_id,),
        ).fetchall()
        return [_decode_header_row(session_id, run_id, text) for run_id, text in rows]

    # ----------------------------------------------------------------- operational events

    def append_event(self, session_id: str, run_id: str, event: Any) -> int:
        """Append one operational event; returns its per-run ``seq`` (0, 1, 2, …).

        The run must exist and the event's ``sessionId``/``runId``/``turnId`` must equal the
        header's (``agent_run_event_identity_mismatch``). Unknown ``type`` values are accepted.
        """
        _check_ids(session_id, run_id)
        decoded = decode_run_event(event)
        try:
            text = _json_text(decoded)
        except NotStrictJSONError as exc:  # pragma: no cover - decode already checked strictness
            raise RunEventSchemaError(detail=str(exc)) from exc
        conn = self._writer()
        with store_faults_coded(self.db_path.name), write_transaction(conn):
            header = self._select_header(conn, session_id, run_id)
            if header is None:
                raise _not_found(session_id, run_id)
            for key in ("sessionId", "runId", "turnId"):
                if decoded[key] != header[key]:
                    raise _error(
                        "agent_run_event_identity_mismatch",
                        f"AgentRun event {key} does not match run {session_id}/{run_id}",
                        detail=f"{key}: {decoded[key]!r} != {header[key]!r}"[:300],
                    )
            row = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM agent_run_events WHERE session_id = ? AND run_id = ?",
                (session_id, run_id),
            ).fetchone()
            seq = int(row[0])
            conn.execute(
                "INSERT INTO agent_run_events (session_id, run_id, seq, event_json) VALUES (?, ?, ?, ?)",
                (session_id, run_id, seq, text),
            )
        return seq

    def read_events(self, session_id: str, run_id: str, *, strict: bool = False) -> list[FrozenDict]:
        """The run's operational events in ``seq`` order; missing run → ``ENOENT``.

        An undecodable record (or one whose identity differs from the header) becomes an
        ``event_corrupt`` placeholder (§5.2), or raises :class:`RunEventSchemaError` when
        ``strict`` (startup repair's strict mode, §4.4).
        """
        _check_ids(session_id, run_id)
        conn = self.connection
        with read_transaction(conn):
            header = self._select_header(conn, session_id, run_id)
            if header is None:
                raise _not_found(session_id, run_id)
            rows = conn.execute(
                "SELECT seq, event_json FROM agent_run_events WHERE session_id = ? AND run_id = ? ORDER BY seq",
                (session_id, run_id),
            ).fetchall()
        events: list[FrozenDict] = []
        for seq, text in rows:
            try:
                event = decode_run_event(parse_json(text))
                for key in ("sessionId", "runId", "turnId"):
                    if event[key] != header[key]:
                        raise RunEventSchemaError(detail=f"seq {seq}: {key} does not match the run header")
            except (InvalidJSONTextError, RunEventSchemaError) as exc:
                if strict:
                    if isinstance(exc, RunEventSchemaError):
                        raise
                    raise RunEventSchemaError(detail=f"seq {seq}: {exc.message}") from exc
                events.append(_corrupt_placeholder(header, seq, exc))
                continue
            events.append(event)
        return events
