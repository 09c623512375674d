"""The workspace baseline authority writer and its storage-root binding (spec 30 §1.2, §2.7).

Why it is a separate class over a :class:`RuntimeStore` (not more facade methods): the baseline
writer is an internal seam (upstream keeps it off the public store and reaches it only after a
verified Git receipt), and it needs per-instance state the facade does not have: the storage
root this process bound. ``WorkspaceAuthority(store)`` shares the store's connection, lock and
transactions, so a baseline commit is one ``BEGIN IMMEDIATE … COMMIT`` like every other writer.

Transaction of :meth:`WorkspaceAuthority.commit_workspace_baseline` (§2.7, in this order):

1. the stored root binding must equal the bound root;
2. canonical scan of the reserved stream (failpoint ``after_workspace_canonical_scan``);
3. epoch already present → projections must equal the scan, stored events must equal the new
   ones (else ``Workspace baseline authority conflict``) → ``created: False``;
4. otherwise the authority identity (and the version id) must be unused; insert the
   epoch-opened event (seq 1, ``after_workspace_epoch_event_insert``) and the
   baseline-accepted event (seq 2, ``after_workspace_version_event_insert``);
5. rescan (``after_workspace_canonical_scan`` again); insert the epoch, version and head
   projection rows, each followed by its failpoint; verify the projections equal the scan →
   ``created: True``.

Any failure (a failpoint armed with ``raise`` included) rolls the whole transaction back, so a
crash or an error can never leave a head without its two events or events without a head.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from maka_ref._events.encode import encode_runtime_event, json_strict_equal
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row, read_event_row
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.primitive import insert_event
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.facts import (
    WORKSPACE_AUTHORITY_SESSION_ID,
    WorkspaceBaselineInput,
    build_baseline_events,
)
from maka_ref._store.workspace.scan import ScannedBaseline, scan_authority

__all__ = ["WorkspaceAuthority", "WorkspaceBaselineCommitResult", "WorkspaceHeadRecord"]

_ROOT_ID = re.compile(r"[a-f0-9]{64}")
#: Tables whose rows are metadata, not logical state (§2.7 root binding).
_METADATA_TABLES = frozenset(("operational_schema_migrations", "runtime_capabilities", "runtime_storage_root_binding"))

_EPOCH_COLUMNS = (
    "workspace_id, workspace_epoch_id, repository_id, workspace_instance_id, mode, object_format, "
    "source_commit_oid, source_tree_oid, initial_workspace_version_id, materialization_profile_digest, "
    "materialization_semantics, policy_hash, authority_session_id, authority_invocation_id, authority_run_id, "
    "authority_turn_id, epoch_opened_event_id, protocol_version, committed_at"
)
_VERSION_COLUMNS = (
    "workspace_version_id, repository_id, workspace_id, workspace_epoch_id, object_format, origin_kind, "
    "origin_event_id, parents_json, commit_oid, tree_oid, policy_hash, tree_delta_digest, changed_file_count, "
    "deleted_file_count, accepted_event_id, protocol_version, committed_at"
)
_HEAD_COLUMNS = (
    "workspace_id, workspace_epoch_id, repository_id, workspace_version_id, accepted_event_id, commit_oid, "
    "tree_oid, revision"
)
# Rows of the reserved stream, rows whose payload carries a workspace fact or names the reserved
# session, and rows whose payload is not valid JSON (decoded, so they fail closed). SQLite's CASE
# is lazy, so json_extract never sees invalid JSON.
_SCAN_SQL = (
    f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? OR CASE WHEN json_valid(payload_json) "
    "THEN json_extract(payload_json, '$.sessionId') = ? OR json_type(payload_json, '$.actions.workspaceFact') "
    "IS NOT NULL ELSE 1 END ORDER BY invocation_id ASC, event_seq ASC, event_id ASC"
)


@dataclass(frozen=True, slots=True)
class WorkspaceHeadRecord:
    repository_id: str
    workspace_id: str
    workspace_epoch_id: str
    workspace_version_id: str
    accepted_event_id: str
    commit_oid: str
    tree_oid: str
    revision: int


@dataclass(frozen=True, slots=True)
class WorkspaceBaselineCommitResult:
    created: bool
    head: WorkspaceHeadRecord


def _fail(message: str, code: str) -> StoreError:
    return StoreError(message, code=code)


def _conflict() -> StoreError:
    return _fail("Workspace baseline authority conflict", "workspace_baseline_conflict")


def _head(item: ScannedBaseline) -> WorkspaceHeadRecord:
    b = item.baseline
    return WorkspaceHeadRecord(
        b["repositoryId"], b["workspaceId"], b["workspaceEpochId"], b["workspaceVersionId"],
        item.baseline_accepted_event_id, b["commitOid"], b["treeOid"], 1,
    )


def _epoch_row(item: ScannedBaseline) -> tuple[Any, ...]:
    e, a = item.epoch, item.authority
    return (
        e["workspaceId"], e["workspaceEpochId"], e["repositoryId"], e["workspaceInstanceId"], e["mode"],
        e["objectFormat"], e["sourceCommitOid"], e["sourceTreeOid"], e["initialWorkspaceVersionId"],
        e["materializationProfileDigest"], e["materializationSemantics"], e["policyHash"], a["sessionId"],
        a["invocationId"], a["runId"], a["turnId"], item.epoch_opened_event_id, 1, item.committed_at,
    )


def _version_row(item: ScannedBaseline) -> tuple[Any, ...]:
    b = item.baseline
    return (
        b["workspaceVersionId"], b["repositoryId"], b["workspaceId"], b["workspaceEpochId"], b["objectFormat"],
        "baseline", b["origin"]["epochOpenedEventId"], "[]", b["commitOid"], b["treeOid"], b["policyHash"],
        b["treeDeltaDigest"], b["changedFileCount"], b["deletedFileCount"], item.baseline_accepted_event_id, 1,
        item.committed_at,
    )


def _head_row(item: ScannedBaseline) -> tuple[Any, ...]:
    h = _head(item)
    return (h.workspace_id, h.workspace_epoch_id, h.repository_id, h.workspace_version_id, h.accepted_event_id,
            h.commit_oid, h.tree_oid, h.revision)


def _insert(conn: sqlite3.Connection, table: str, columns: str, row: tuple[Any, ...]) -> None:
    conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(row))})", row)


def canonical_scan(conn: sqlite3.Connection) -> list[ScannedBaseline]:
    """Scan the reserved stream (fail closed on the first issue); fires the scan failpoint."""
    partial = conn.execute(
        "SELECT stream_key FROM runtime_partial_snapshots WHERE session_id = ? ORDER BY stream_key LIMIT 1",
        (WORKSPACE_AUTHORITY_SESSION_ID,),
    ).fetchone()
    if partial is not None:
        raise _fail(f"Corrupt workspace RuntimeEvent authority: authority_stream_contamination at {partial[0]}",
                    "workspace_authority_corrupt")
    rows = [decode_event_row(row) for row in conn.execute(_SCAN_SQL, (WORKSPACE_AUTHORITY_SESSION_ID,) * 2)]
    baselines, issues = scan_authority(rows)
    if issues:
        raise _fail(f"Corrupt workspace RuntimeEvent authority: {issues[0].code} at {issues[0].event_id}",
                    "workspace_authority_corrupt")
    failpoint("after_workspace_canonical_scan")
    return baselines


def _projection_count(conn: sqlite3.Connection) -> int:
    return sum(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
               for table in ("runtime_workspace_epochs", "runtime_workspace_versions", "runtime_workspace_heads"))


def assert_projections_match(conn: sqlite3.Connection, baselines: list[ScannedBaseline]) -> None:
    """The three projection tables must equal, row for row and type-strictly, the scan."""
    for table, columns, build in (
        ("runtime_workspace_epochs", _EPOCH_COLUMNS, _epoch_row),
        ("runtime_workspace_versions", _VERSION_COLUMNS, _version_row),
        ("runtime_workspace_heads", _HEAD_COLUMNS, _head_row),
    ):
        stored = sorted(conn.execute(f"SELECT {columns} FROM {table}").fetchall())
        expected = sorted(build(item) for item in baselines)
        same = len(stored) == len(expected) and all(
            json_strict_equal(list(s), list(e)) for s, e in zip(stored, expected)
        )
        if not same:
            raise _fail("Workspace version projection is incomplete or inconsistent", "workspace_projection_mismatch")


def _find(baselines: list[ScannedBaseline], workspace_id: str, epoch_id: str) -> ScannedBaseline | None:
    for item in baselines:
        if item.epoch["workspaceId"] == workspace_id and item.epoch["workspaceEpochId"] == epoch_id:
            return item
    return None


def _read_binding(conn: sqlite3.Connection) -> tuple[Any, Any] | None:
    return conn.execute(
        "SELECT root_id, protocol_version FROM runtime_storage_root_binding WHERE singleton = 1"
    ).fetchone()


def _has_logical_state(conn: sqlite3.Connection) -> bool:
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    for (name,) in tables:
        if name in _METADATA_TABLES:
            continue
        quoted = '"' + name.replace('"', '""') + '"'
        if conn.execute(f"SELECT 1 FROM {quoted} LIMIT 1").fetchone() is not None:
            return True
    return False


class WorkspaceAuthority:
    """Baseline authority over one open :class:`RuntimeStore` (shares its connection)."""

    def __init__(self, store: RuntimeStore) -> None:
        self._store = store
        self._root_id: str | None = None

    @property
    def bound_root_id(self) -> str | None:
        return self._root_id

    def bind_storage_root(self, root_id: str) -> None:
        """Bind (or re-confirm) the durable storage root of this database (§2.7)."""
        if not isinstance(root_id, str) or _ROOT_ID.fullmatch(root_id) is None:
            raise _fail("Invalid durable storage-root identity", "invalid_storage_root_id")
        with self._store.write() as conn:
            existing = _read_binding(conn)
            if existing is not None:
                if existing[0] != root_id or type(existing[1]) is not int or existing[1] != 1:
                    raise _fail("Workspace authority database belongs to a different durable storage root",
                                "storage_root_mismatch")
            elif _has_logical_state(conn):
                raise _fail("Unbound operational data require explicit storage-root adoption",
                            "storage_root_adoption_required")
            else:
                conn.execute(
                    "INSERT INTO runtime_storage_root_binding (singleton, root_id, protocol_version) VALUES (1, ?, 1)",
                    (root_id,),
                )
        self._root_id = root_id

    def commit_workspace_baseline(self, data: WorkspaceBaselineInput) -> WorkspaceBaselineCommitResult:
        """Open an epoch with its baseline version in one transaction (§2.7)."""
        if self._root_id is None:
            raise _fail("Workspace baseline authority store has no durable storage-root binding",
                        "storage_root_unbound")
        try:
            raw_epoch, raw_baseline = build_baseline_events(data)
        except (ValueError, TypeError, AttributeError) as error:
            raise _fail("Invalid workspace baseline authority input", "invalid_workspace_baseline_input") from error
        epoch_event, baseline_event = encode_runtime_event(raw_epoch), encode_runtime_event(raw_baseline)
        with self._store.write() as conn:
            binding = _read_binding(conn)
            if binding is None or binding[0] != self._root_id or binding[1] != 1:
                raise _fail("Workspace authority database durable storage-root binding changed",
                            "storage_root_binding_changed")
            before = canonical_scan(conn)
            workspace_id, epoch_id = data.epoch.workspace_id, data.epoch.workspace_epoch_id
            existing = _find(before, workspace_id, epoch_id)
            if existing is not None:
                assert_projections_match(conn, before)
                stored = [read_event_row(conn, existing.epoch_opened_event_id),
                          read_event_row(conn, existing.baseline_accepted_event_id)]
                if any(row is None for row in stored) or not all(
                    json_strict_equal(row.event, new.event)
                    for row, new in zip(stored, (epoch_event, baseline_event))
                ):
                    raise _conflict()
                return WorkspaceBaselineCommitResult(False, _head(existing))
            if before or _projection_count(conn):
                assert_projections_match(conn, before)
            self._assert_unused(conn, before, epoch_event.event, data.baseline.workspace_version_id)
            seq, _ = insert_event(conn, epoch_event, data.committed_at, allow_exact_duplicate=False)
            if seq != 1:
                raise _fail("Workspace epoch-opened fact must be authority sequence one", "workspace_event_order")
            failpoint("after_workspace_epoch_event_insert")
            seq, _ = insert_event(conn, baseline_event, data.committed_at, allow_exact_duplicate=False)
            if seq != 2:
                raise _fail("Workspace baseline version fact must be authority sequence two", "workspace_event_order")
            failpoint("after_workspace_version_event_insert")
            after = canonical_scan(conn)
            accepted = _find(after, workspace_id, epoch_id)
            if accepted is None:
                raise _fail("Workspace baseline authority scan lost the committed epoch", "workspace_scan_lost_epoch")
            _insert(conn, "runtime_workspace_epochs", _EPOCH_COLUMNS, _epoch_row(accepted))
            failpoint("after_workspace_epoch_projection_insert")
            _insert(conn, "runtime_workspace_versions", _VERSION_COLUMNS, _version_row(accepted))
            failpoint("after_workspace_version_projection_insert")
            _insert(conn, "runtime_workspace_heads", _HEAD_COLUMNS, _head_row(accepted))
            failpoint("after_workspace_head_projection_insert")
            assert_projections_match(conn, after)
            return WorkspaceBaselineCommitResult(True, _head(accepted))

    @staticmethod
    def _assert_unused(
        conn: sqlite3.Connection, before: list[ScannedBaseline], event: Any, version_id: str
    ) -> None:
        """The epoch's reserved identity has no event on any axis, and the version id is new."""
        row = conn.execute(
            "SELECT 1 FROM runtime_events WHERE invocation_id = ? OR (session_id = ? AND run_id = ?) "
            "OR (session_id = ? AND turn_id = ?) LIMIT 1",
            (event["invocationId"], event["sessionId"], event["runId"], event["sessionId"], event["turnId"]),
        ).fetchone()
        if row is not None or any(item.baseline["workspaceVersionId"] == version_id for item in before):
            raise _conflict()

    def read_workspace_head(self, workspace_id: str, workspace_epoch_id: str) -> WorkspaceHeadRecord | None:
        """The head of an epoch from the canonical scan, after checking the projections equal it.

        Works on a read-only store too. Raises on a corrupt authority stream or projection."""
        with self._store.read() as conn:
            baselines = canonical_scan(conn)
            assert_projections_match(conn, baselines)
            found = _find(baselines, workspace_id, workspace_epoch_id)
            return _head(found) if found is not None else None
