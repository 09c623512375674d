"""``RuntimeStore``: the facade over the SQLite canonical store (docs/storage.md).

Why a facade: the runtime loop, adapter and crash lab need one object that owns one
connection, its health-gate cache and its transactions; the modules below it stay plain
functions over ``(connection, gate)`` so each rule lives in exactly one place.

Opening (spec 30 §1.1): the writer creates ``<root>/runtime.sqlite`` (and ``root``), applies
the pragmas, migrates (§1.3), checks capabilities (§1.4) and runs the full health scan
(§2.1) whose result is cached (a corrupt ledger does not fail the open; it fails tool-bearing
writes). Before any of that, the writer refuses a damaged store: its files are checked
(no links, regular files, no empty main file beside a WAL) and ``PRAGMA integrity_check``
must answer ``ok`` (:mod:`maka_ref._store.engine.faults`, ``database_corrupt``); busy, read-only and
full stores are ``store_busy`` / ``store_read_only`` / ``storage_full``. The read-only open
never creates or migrates anything.

Every write runs in ``BEGIN IMMEDIATE … COMMIT`` under a process-local lock (the connection
is shared by threads); every failure rolls back fully and keeps the original error.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from maka_ref._codec.frozen import FrozenDict
from maka_ref._plan.prefix.immutable import ImmutableRuntimePrefix
from maka_ref._store import projections, reads
from maka_ref._store.writers import continuation as continuation_claims
from maka_ref._store.engine.connection import (
    connect,
    is_busy_error,
    read_transaction,
    write_transaction,
)
from maka_ref._store.engine.faults import check_integrity, store_faults_coded
from maka_ref._store.engine.schema import (
    check_capabilities,
    check_read_only_version,
    migrate,
    read_user_version,
)
from maka_ref._store.errors import RunSealedError, StoreError
from maka_ref._store.engine.rows import read_event_row
from maka_ref._store.insert.primitive import check_run_sealed
from maka_ref._store import evidence as tool_evidence
from maka_ref._store.insert.health import HealthGate
from maka_ref._store.partials import check_partial_batch
from maka_ref._store.records import (
    AppendResult,
    CommitResult,
    RebuildReport,
    ToolJournalRecord,
    ToolOperationRecord,
)
from maka_ref._store.writers import conversation_copy, generic
from maka_ref._store.writers import bundle as bundle_writer
from maka_ref._store.writers import tool as tool_writers
from maka_ref._store.writers.tool import T1Input, T2Input

__all__ = [
    "DB_FILE_NAME",
    "AppendResult",
    "CommitResult",
    "RebuildReport",
    "RuntimeStore",
    "T1Input",
    "T2Input",
    "ToolJournalRecord",
    "ToolOperationRecord",
]

DB_FILE_NAME = "runtime.sqlite"


@contextmanager
def _corrupt_as_store_error(active: bool = True) -> Iterator[None]:
    """The read path's promise (docs/inspect.md codes): a damaged file is ``StoreError``
    ``database_corrupt``, never a bare ``sqlite3.DatabaseError`` ("file is not a database",
    "database disk image is malformed"). Busy errors pass through unchanged (callers retry
    them). Found by ``maka-conformance fuzz --self`` (target ``store``)."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        if not active or is_busy_error(error):
            raise
        raise StoreError(f"runtime.sqlite is not a readable SQLite database: {error}", code="database_corrupt") from None


def _refuse_damaged(db_path: Path) -> None:
    """``database_corrupt`` unless an existing store passes ``PRAGMA integrity_check``, read
    through a *read-only* handle: a writer handle that found the damage would, on close,
    checkpoint the WAL into the main file — a write into a store it refused."""
    try:
        size = db_path.stat().st_size  # links, non-files, hard links: refused by connect below
    except OSError:
        return  # missing: the writer creates it (or reports why it cannot)
    if size == 0 and not os.path.lexists(f"{db_path}-wal"):
        return  # an empty file the writer initialises, as SQLite does
    with store_faults_coded(db_path.name):
        conn = connect(db_path, read_only=True)
        try:
            check_integrity(conn, db_path.name)
        finally:
            conn.close()


class RuntimeStore:
    """One open ``runtime.sqlite`` (writer or read-only)."""

    #: Store-level capability constants (§1.4).
    durability = "canonical"
    tool_boundary_protocol = "t1_after_preflight_v1"
    recovery_bundle_capability = "tool_recovery_bundle_v1"
    continuation_authority = "runtime_continuation_authority_v1"
    workspace_version_authority = "runtime_workspace_version_authority_v1"

    def __init__(self, conn: sqlite3.Connection, db_path: Path, *, read_only: bool) -> None:
        self._conn = conn
        self._db_path = db_path
        self._read_only = read_only
        self._gate = HealthGate(conn)
        self._lock = threading.RLock()
        self._closed = False

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, root: str | Path) -> "RuntimeStore":
        """Writer: create/migrate ``<root>/runtime.sqlite``, check capabilities, health scan."""
        db_path = Path(root) / DB_FILE_NAME
        _refuse_damaged(db_path)
        conn = connect(db_path, read_only=False)
        try:
            with store_faults_coded(db_path.name):
                migrate(conn)
                check_capabilities(conn)
                tool_evidence.migrate_tool_evidence(conn)  # spec-phase3 §3.2: writer opens only
                store = cls(conn, db_path, read_only=False)
                store._gate.refresh()
        except BaseException:
            conn.close()
            raise
        return store

    @classmethod
    def open_read_only(cls, root: str | Path) -> "RuntimeStore":
        """Reader: never creates a file or directory, never migrates (§1.1)."""
        db_path = Path(root) / DB_FILE_NAME
        if not db_path.is_file():
            raise StoreError(f"SQLite runtime database {db_path} does not exist", code="store_missing")
        with _corrupt_as_store_error():
            conn = connect(db_path, read_only=True)
            try:
                check_read_only_version(conn)
                check_capabilities(conn)
            except BaseException:
                conn.close()
                raise
        return cls(conn, db_path, read_only=True)

    # -- plumbing shared with the other stores on the same file ------------------------------

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (for stores that share ``runtime.sqlite``)."""
        return self._conn

    @property
    def db_path(self) -> Path:
        return self._db_path

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def health_gate(self) -> HealthGate:
        return self._gate

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` on this store's connection (joins an open one)."""
        if self._read_only:
            raise StoreError("RuntimeStore was opened read-only", code="read_only")
        with self._lock, store_faults_coded(self._db_path.name):
            owned = not self._conn.in_transaction
            gate = self._gate
            committed = False
            try:
                with write_transaction(self._conn) as conn:
                    outer = gate.fresh_changes
                    gate.fresh_changes = conn.total_changes if owned else None
                    gate.rows.begin(conn, owned)
                    try:
                        yield conn
                    finally:
                        gate.fresh_changes = outer if not owned else None
                committed = owned
            finally:
                gate.transitions.end_write(committed)
                gate.rows.end(self._conn, owned)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent multi-statement read (plain ``BEGIN``)."""
        with _corrupt_as_store_error(self._read_only), self._lock, read_transaction(self._conn) as conn:
            yield conn

    def schema_version(self) -> int:
        with _corrupt_as_store_error(self._read_only), self._lock:
            return read_user_version(self._conn)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> "RuntimeStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- generic writers (§2.2) -------------------------------------------------------------

    def append(self, event: Any) -> AppendResult:
        """Single append (partial chunks included); ``created`` False for an exact retry."""
        encoded = generic.pre_validate_generic(event)
        with self.write() as conn:
            return generic.append_encoded(conn, self._gate, encoded)

    def import_event(self, session_id: str, run_id: str, event: Any) -> bool:
        """Single import into a named (session, run); returns ``created``."""
        encoded = generic.pre_validate_generic(event, session_id, run_id)
        with self.write() as conn:
            return generic.append_encoded(conn, self._gate, encoded).created

    def import_batch(self, session_id: str, run_id: str, events: Iterable[Any]) -> tuple[bool, ...]:
        """All-or-nothing batch import for one (session, run); per-event ``created`` flags."""
        events = list(events)
        for event in events:  # pre-validate everything before taking the write lock
            generic.pre_validate_generic(event, session_id, run_id)
        with self.write() as conn:
            return generic.import_batch(conn, self._gate, session_id, run_id, events)

    def append_partial_batch(self, session_id: str, run_id: str, events: Iterable[Any]) -> tuple[bool, ...]:
        """Chunks of exactly one presentation stream, in one transaction."""
        encoded = [generic.pre_validate_generic(event, session_id, run_id) for event in events]
        check_partial_batch([item.event for item in encoded])
        with self.write() as conn:
            return tuple(generic.append_encoded(conn, self._gate, item).created for item in encoded)

    def ensure_terminal_durable(self, event: Any) -> AppendResult:
        """Terminal durability barrier: the run's only terminal, at its ledger tail."""
        encoded = generic.pre_validate_generic(event)
        with self.write() as conn:
            return generic.ensure_terminal_durable(conn, self._gate, encoded)

    def import_conversation_copy(self, session_id: str, runs: Iterable[tuple[str, Iterable[Any]]]) -> None:
        """Copy several runs of one session verbatim (tool facts included), then rebuild
        that session's tool projections in the same transaction (§2.2)."""
        batches = conversation_copy.prepare(session_id, runs)
        with self.write() as conn:
            conversation_copy.import_copy(conn, self._gate, session_id, batches)

    # -- tool writers (§2.3–§2.5) -----------------------------------------------------------

    def commit_tool_prepared(self, data: T1Input) -> CommitResult:
        prepared = tool_writers.prepare_t1(data)
        with self.write() as conn:
            return tool_writers.commit_t1(conn, self._gate, prepared)

    def commit_tool_outcome(self, data: T2Input) -> CommitResult:
        prepared = tool_writers.prepare_t2(data)
        with self.write() as conn:
            return tool_writers.commit_t2(conn, self._gate, prepared)

    def commit_tool_recovery_bundle(
        self, operation_id: str, reconcile: Any, decision: Any, outcome: Any = None
    ) -> None:
        bundle = bundle_writer.prepare_bundle(operation_id, reconcile, decision, outcome)
        with self.write() as conn:
            bundle_writer.commit_bundle(conn, self._gate, bundle)

    def read_tool_evidence(self, operation_id: str) -> Any:
        """spec-phase3 §3.4: the operation's ``FileEvidence``, None, or the ``Invalid`` code of a
        damaged row (a signal about that operation only)."""
        with self.read() as conn:
            return tool_evidence.read_tool_evidence(conn, operation_id)

    def read_tool_t1_events(self, operation_id: str) -> tuple[FrozenDict, FrozenDict] | None:
        """The committed call and dispatch events of ``operation_id`` (decoded, identity
        re-checked), or None when the operation or its dispatch is unknown: what a reconciler
        binds the evidence to (spec-phase3 §5.1 step 3)."""
        with self.read() as conn:
            operation = projections.read_tool_operation(conn, operation_id)
            if operation is None or operation.dispatch_event_id is None:
                return None
            call = read_event_row(conn, operation.call_event_id)
            dispatch = read_event_row(conn, operation.dispatch_event_id)
        if call is None or dispatch is None:
            return None
        return call.event, dispatch.event

    def is_run_sealed(self, session_id: str, run_id: str) -> bool:
        """Whether the run holds its terminal fact (spec 30 §2.1 step 4): such a run refuses a
        recovery bundle (spec-phase3 §5.1 step 1)."""
        with self.read() as conn:
            try:
                check_run_sealed(conn, session_id, run_id)
            except RunSealedError:
                return True
        return False

    # -- projections (§3) -------------------------------------------------------------------

    def read_tool_operation(self, operation_id: str) -> ToolOperationRecord | None:
        with self.read() as conn:
            return projections.read_tool_operation(conn, operation_id)

    def read_tool_journal(self, operation_id: str) -> list[ToolJournalRecord]:
        with self.read() as conn:
            return projections.read_tool_journal(conn, operation_id)

    def list_unsettled_operations(self, session_id: str | None = None) -> list[str]:
        with self.read() as conn:
            return projections.list_unsettled(conn, session_id)

    def rebuild_tool_projections(self, session_id: str | None = None) -> RebuildReport:
        with self.write() as conn:
            return projections.rebuild(conn, session_id)

    # -- reads (§4) -------------------------------------------------------------------------

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]:
        """Immutable events of a run in (event_seq, event_id) order, identity re-checked."""
        with self.read() as conn:
            return reads.read_run_events(conn, session_id, run_id)

    def read_runtime_events(self, session_id: str, run_id: str) -> list[FrozenDict]:
        """Immutable events with the run's partial snapshots merged in (presentation)."""
        with self.read() as conn:
            return reads.read_runtime_events(conn, session_id, run_id)

    def read_session_events(self, session_id: str) -> list[FrozenDict]:
        with self.read() as conn:
            return reads.read_session_events(conn, session_id)

    def read_session_events_by_ordinal(self, session_id: str) -> list[FrozenDict]:
        with self.read() as conn:
            return reads.read_session_events_by_ordinal(conn, session_id)

    def session_ordinals(self, session_id: str) -> dict[str, int]:
        with self.read() as conn:
            return reads.session_ordinals(conn, session_id)

    def read_immutable_prefix(
        self, session_id: str, run_id: str, up_to_event_seq: int | None = None
    ) -> ImmutableRuntimePrefix:
        with self.read() as conn:
            return reads.read_immutable_prefix(conn, session_id, run_id, up_to_event_seq)

    def scan_runtime_events(self, session_id: str, run_id: str, budget: reads.ScanBudget, visit: Any) -> str:
        """Bounded scan: ``"complete"`` or ``"limit_exceeded"`` (nothing visited then)."""
        with self.read() as conn:
            return reads.scan_runtime_events(conn, session_id, run_id, budget, visit)

    def read_steering_message_proof(self, session_id: str, message_id: str) -> FrozenDict | None:
        """The one immutable steering event carrying ``message_id`` in the session, or None."""
        with self.read() as conn:
            return reads.read_steering_message(conn, session_id, message_id)

    # -- continuation authority (§2.6) ------------------------------------------------------

    def claim_continuation(self, claim: Any) -> continuation_claims.ClaimResult:
        """``acquired`` / ``existing`` (same boundary) / ``conflict`` (spec 30 §2.6)."""
        prepared = continuation_claims.prepare_claim(claim)
        with self.write() as conn:
            return continuation_claims.claim_continuation(conn, prepared)

    def commit_continuation_start(
        self, claim: Any, event: Any, provenance: str = "runtime_admission"
    ) -> continuation_claims.StartResult:
        """Live (``runtime_admission``) or repair (``claim_repair``) start; ``claim`` is the
        claim id or the full claim (then it must equal the stored one)."""
        encoded = continuation_claims.prepare_start(event, provenance)
        if not isinstance(claim, str):
            claim = continuation_claims.decode_claim(claim)
        with self.write() as conn:
            return continuation_claims.commit_continuation_start(conn, claim, encoded, provenance)

    def commit_continuation_repair_start(self, claim: Any, event: Any) -> continuation_claims.StartResult:
        return self.commit_continuation_start(claim, event, "claim_repair")

    def read_claim(self, claim_id: str) -> continuation_claims.ClaimRecord | None:
        with self.read() as conn:
            return continuation_claims.read_claim(conn, claim_id)

    def read_claim_by_boundary(self, boundary_digest: str) -> continuation_claims.ClaimRecord | None:
        with self.read() as conn:
            return continuation_claims.read_claim_by_boundary(conn, boundary_digest)

    def read_claim_for_target(self, session_id: str, run_id: str) -> continuation_claims.ClaimRecord | None:
        with self.read() as conn:
            return continuation_claims.read_claim_for_target(conn, session_id, run_id)

    def list_claims(self, session_id: str) -> list[continuation_claims.ClaimRecord]:
        with self.read() as conn:
            return continuation_claims.list_claims(conn, session_id)
