"""Opening a store and the fail-closed schema rule through the wire protocol (spec 30 §1.1,
§1.3; protocol §4.2): STORE-OPEN-*, STORE-SCHEMA-*.

Why a module of its own: these clauses check the store *before* any write path (spec 30 §1,
not §2), and the schema clauses cannot use the shared protocol session — they need fresh
processes, because the files are edited between them. Every other clause runs in its own
workspace (pytest's ``tmp_path``) on the shared session.

Schema clauses (STORE-SCHEMA-*): a newer/older schema can only be produced through the files
when the store is SQLite (spec 30 §1.3 keeps the version in ``PRAGMA user_version``). When
``ledgerFiles`` has no ``runtime.sqlite`` the clause is *skipped* with "not applicable: …",
which the report shows as **not run** — deliberately not a vacuous pass: a user certifying a
non-SQLite store must see that the fail-closed schema rule was not checked for it.

Rejections: the answer is ``ok: false`` with the expected code (protocol §4.2
``store_not_found``, spec 30 §1.3 ``schema_too_new`` / ``schema_not_current``) *and* nothing was
written (the workspace files are byte-identical, or the workspace stays empty).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal
from conformance.suite._store_support import (
    Store, expect_rejected, expect_same_bytes, new_workspace, user_event, workspace_snapshot,
)

# =============================================================================================
# Open and schema (spec 30 §1.1, §1.3)
# =============================================================================================


@clause("STORE-OPEN-001", spec="30 §1.1; 30 §9 #1", capability="store",
        title="store.open creates the store in an empty workspace; a reopen keeps the version and reads empty")
def test_open_creates(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 (a writer open creates the store), §9 #1 (fresh open → version 12; reopen →
    same version, empty reads). Proves: the reported ledger files exist after the open, the
    schema version (when reported for a SQLite store) is 12 and stays 12, and a new store
    projects as healthy with no runs."""
    store = Store(maka, new_workspace(tmp_path))
    first = store.open()
    if not store.ledger_files:
        raise ClauseMismatch("store.open reported no ledgerFiles for a created store", evidence={"result": dict(first)})
    missing = [name for name in store.ledger_files if not os.path.isfile(os.path.join(store.ws, name))]
    if missing:
        raise ClauseMismatch(f"ledgerFiles names files that do not exist: {missing}", evidence={"result": dict(first)})
    if "runtime.sqlite" in store.ledger_files and "schemaVersion" in first:
        expect_equal(12, first["schemaVersion"], what="schemaVersion of a fresh SQLite store (spec 30 §1.3)")
    projection = store.project()
    expect_equal({"status": "healthy"}, projection.get("health"), what="health of a fresh store")
    expect_equal([], projection.get("runs"), what="runs of a fresh store")
    expect_equal([], projection.get("unsettledOperations"), what="unsettled operations of a fresh store")
    store.close()
    second = store.open()
    if "schemaVersion" in first:
        expect_equal(first["schemaVersion"], second.get("schemaVersion"), what="schemaVersion after a reopen")
    expect_equal([], store.events(), what="events of a reopened empty store")
    store.close()


@clause("STORE-OPEN-002", spec="30 §1.1; 30 §10 #33; protocol §4.2", capability="store",
        title="a read-only open of an empty workspace answers store_not_found and creates nothing")
def test_read_only_open_of_empty_workspace(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 ("a read-only open never creates the file or the parent directory"), §10 #33,
    protocol §4.2 (``store_not_found``). Proves: the refusal code, and that the workspace
    directory is still empty afterwards (no database, no WAL, no lock file)."""
    ws = new_workspace(tmp_path)
    reply = maka.call("store.open", {"workspace": ws, "readOnly": True})
    expect_rejected(reply, "store.open", "store_not_found", "read-only open of an empty workspace")
    maka.call("store.close", {"workspace": ws})
    expect_equal([], sorted(os.listdir(ws)), what="files in the workspace after a refused read-only open")


def _sqlite_workspace(maka: Any, tmp_path: Path) -> tuple[str, list[str]]:
    """A workspace with one committed event, written and closed by a process of its own."""
    ws = new_workspace(tmp_path)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        store.append(user_event())
        store.close()
    if "runtime.sqlite" not in store.ledger_files:
        pytest.skip("not applicable: ledgerFiles has no runtime.sqlite, so the schema version cannot be set "
                    "through the files (spec 30 §1.3 is SQLite's user_version)")
    return ws, store.ledger_files


def _set_user_version(ws: str, version: int) -> None:
    conn = sqlite3.connect(os.path.join(ws, "runtime.sqlite"), isolation_level=None)
    try:
        conn.execute(f"PRAGMA user_version = {int(version)}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _workspace_bytes(ws: str) -> dict[str, bytes | None]:
    return workspace_snapshot(ws)


@clause("STORE-SCHEMA-001", spec="30 §1.3; 30 §9 #5", capability="store",
        title="a store whose schema is newer than supported is refused (schema_too_new or the product-level operational_state_migration_blocked) and left byte-identical")
def test_newer_schema_refused(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.3 step 2 (``user_version`` > 12 → fail closed, nothing written), §9 #5 (DB bytes
    unchanged). The harness sets ``PRAGMA user_version = 13`` on the closed ``runtime.sqlite``;
    a fresh process must refuse both a writer open and a read-only open, and every durable file
    must be byte-identical afterwards, and no file may appear (spec 30 §10 #33: read-only openers
    create no files). Writer: ``schema_too_new``, or ``operational_state_migration_blocked``,
    the product-level fail-closed code spec 30 §1.3 documents (upstream's product open answers
    it). Read-only: ``schema_too_new`` or ``schema_not_current`` (spec §1.1 words the read-only
    refusal as "cannot be read without upgrading")."""
    ws, _ = _sqlite_workspace(maka, tmp_path)
    _set_user_version(ws, 13)
    before = _workspace_bytes(ws)
    with maka.fresh() as client:
        expect_rejected(client.call("store.open", {"workspace": ws}), "store.open",
                        {"schema_too_new", "operational_state_migration_blocked"}, "writer open of a schema-13 store")
        expect_rejected(client.call("store.open", {"workspace": ws, "readOnly": True}), "store.open",
                        {"schema_too_new", "schema_not_current"}, "read-only open of a schema-13 store")
        client.call("store.close", {"workspace": ws})
    expect_same_bytes(before, _workspace_bytes(ws), "refusing a newer schema")


@clause("STORE-SCHEMA-002", spec="30 §1.1; 30 §9 #6", capability="store",
        title="a read-only open of an older schema is refused without migrating it")
def test_read_only_older_schema_not_migrated(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 (a read-only connection MUST NOT migrate; ``user_version`` ≠ current → "cannot
    be read without upgrading to 12"), §9 #6. The harness rewinds ``user_version`` to 11; a fresh
    process's read-only open must answer ``schema_not_current`` and leave the files
    byte-identical; a writer open afterwards migrates back to 12 and still reads the event."""
    ws, _ = _sqlite_workspace(maka, tmp_path)
    _set_user_version(ws, 11)
    before = _workspace_bytes(ws)
    with maka.fresh() as client:
        expect_rejected(client.call("store.open", {"workspace": ws, "readOnly": True}), "store.open",
                        "schema_not_current", "read-only open of a schema-11 store")
        client.call("store.close", {"workspace": ws})
    expect_same_bytes(before, _workspace_bytes(ws), "a refused read-only open of an older schema")
    with maka.fresh() as client:
        store = Store(client, ws)
        result = store.open()
        if "schemaVersion" in result:
            expect_equal(12, result["schemaVersion"], what="schemaVersion after a writer open migrated the store")
        expect_equal(["user-event-1"], store.event_ids(), what="events after the migration")
        store.close()
