"""``repair_workspace`` / ``repair_session``: startup repair over a workspace (spec 20 §4.4).

Per session (sessions ordered by their first run's ``createdAt``, then id):

1. (steering transcript repair — no session transcript store exists here: nothing to do);
2. skip the session if one of its runs is active in this process (``active_runs``);
3. (sandbox-boundary requests, plan execution, Shell runs — not part of this runtime);
4. the continuation claim saga (§4.5) through the :mod:`maka_ref._repair.claims` extension
   point; an unreadable claim authority quarantines the whole session (best-effort) or raises
   (strict);
5. generic run repair (§4.6) for every run, ordered by ``createdAt``, ``runId``; each run's
   unsettled operations with Phase 3 file evidence are reconciled first
   (:mod:`maka_ref._repair.reconcile`), because the run's terminal fact seals it against the
   recovery bundle (spec-phase3 §5.5: reconcile → terminal event → terminal header);
6. the session is reported recovered when the saga or run repair wrote something.

Repair opens the writer stores (as the live runtime does) only when the workspace holds a
``runtime.sqlite`` with the AgentRun tables; otherwise there is nothing to repair and no file
is created or migrated.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection
from pathlib import Path

from maka_ref._repair.claim_saga import CLAIM_SAGA
from maka_ref._repair.claims import ClaimAuthorityUnavailable, ClaimSaga, ClaimSagaContext
from maka_ref._repair.reconcile import ReconcileResult, reconcile_store
from maka_ref._repair.report import RepairReport, RunRepair, SkippedRun
from maka_ref._repair.runs import Clock, repair_run, wall_clock
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.connection import connect
from maka_ref._store.workspace.directory import check_workspace_dir
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import DB_FILE_NAME, RuntimeStore

__all__ = ["check_workspace", "repair_session", "repair_workspace"]


def check_workspace(path: str | os.PathLike[str]) -> Path:
    """The workspace directory, or :class:`StoreError` ``workspace_not_found`` /
    ``workspace_not_a_directory`` / ``workspace_unreadable`` (same codes as ``inspect``)."""
    return check_workspace_dir(path)


def _has_agent_runs(db_path: Path) -> bool:
    if not os.path.lexists(db_path):  # anything else there (a link, a directory) is refused by connect
        return False
    conn = connect(db_path, read_only=True)
    try:
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_runs'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"runtime.sqlite cannot be read: {exc}", code="database_corrupt") from None
    finally:
        conn.close()
    return row is not None


def _session_ids(runs: AgentRunStore) -> list[str]:
    rows = runs.connection.execute(
        "SELECT session_id FROM agent_runs GROUP BY session_id ORDER BY MIN(created_at), session_id"
    ).fetchall()
    return [str(row[0]) for row in rows]


def repair_session(
    store: RuntimeStore,
    runs: AgentRunStore,
    session_id: str,
    *,
    strict: bool = False,
    active_runs: Collection[tuple[str, str]] = (),
    claim_saga: ClaimSaga = CLAIM_SAGA,
    clock: Clock = wall_clock,
    reconcile: bool = True,
) -> RepairReport:
    """§4.4 steps 2–6 for one session (see the module docstring); ``reconcile``: run the
    Phase 3 reconciler on each run before sealing it (spec-phase3 §5.5)."""
    report = RepairReport()
    headers = runs.list_session_runs(session_id)
    if any((session_id, header["runId"]) in active_runs for header in headers):
        report.skipped.append(SkippedRun(session_id, None, "session_has_active_run"))
        return report
    try:
        outcome = claim_saga.repair_claims(ClaimSagaContext(session_id, store, runs, strict))
    except ClaimAuthorityUnavailable as exc:
        if strict:
            raise
        report.skipped.append(SkippedRun(session_id, None, exc.skip_reason, exc.message))
        return report
    report.repairs.extend(outcome.repairs)
    report.skipped.extend(outcome.skipped)
    saga_skipped = {item.run_id for item in outcome.skipped}
    for header in runs.list_session_runs(session_id):  # re-read: the saga may have created/changed runs
        if header["runId"] in saga_skipped:
            continue
        if reconcile:  # spec-phase3 §5.5: before the run is sealed
            report.reconciled.extend(
                reconcile_store(store, store.db_path.parent, clock=clock, session_id=session_id, run_id=header["runId"])
            )
        result = repair_run(
            store, runs, header, strict=strict, claim_owned=header["runId"] in outcome.owned_run_ids, clock=clock
        )
        if isinstance(result, RunRepair):
            report.repairs.append(result)
        elif isinstance(result, SkippedRun):
            report.skipped.append(result)
    if report.repairs:
        report.recovered_sessions.append(session_id)
    return report


def repair_workspace(
    root: str | os.PathLike[str],
    *,
    strict: bool = False,
    active_runs: Collection[tuple[str, str]] = (),
    claim_saga: ClaimSaga = CLAIM_SAGA,
    clock: Clock = wall_clock,
    reconcile: bool = True,
) -> RepairReport:
    """Startup repair of every session of the workspace at ``root`` (spec 20 §4), reconciling
    Phase 3 file operations before each run is sealed unless ``reconcile`` is False (the
    protocol adapter's ``runtime.repair`` until it claims ``runtime.reconcile``)."""
    workspace = check_workspace(root)
    report = RepairReport()
    if not _has_agent_runs(workspace / DB_FILE_NAME):
        return report
    store = RuntimeStore.open(workspace)
    try:
        runs = AgentRunStore.open(workspace)
        try:
            for session_id in _session_ids(runs):
                report.extend(
                    repair_session(
                        store, runs, session_id, strict=strict, active_runs=active_runs, claim_saga=claim_saga, clock=clock,
                        reconcile=reconcile,
                    )
                )
        finally:
            runs.close()
    finally:
        store.close()
    return report


def reconcile_workspace(
    root: str | os.PathLike[str], *, operation_id: str | None = None, clock: Clock = wall_clock
) -> list[ReconcileResult]:
    """``maka-ref reconcile``: the Phase 3 reconciler over every unsettled operation of the
    workspace at ``root`` (or just ``operation_id``), without repairing or sealing any run
    (spec-phase3 §5.1). A workspace without a store has nothing to reconcile: no file is created.
    Raises ``RepairError``-family errors for a bad workspace and ``StoreError`` for a store that
    cannot be opened; per-operation stops are results, never exceptions."""
    workspace = check_workspace(root)
    if not (workspace / DB_FILE_NAME).is_file():
        return []
    with RuntimeStore.open(workspace) as store:
        return reconcile_store(store, workspace, clock=clock, operation_id=operation_id)
