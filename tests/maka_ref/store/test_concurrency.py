"""Multi-process safety of ``runtime.sqlite``: several REAL processes race on one file
(spec 30 §7 concurrency harness C1–C3, C7, C8, C12; §2.3–§2.5 and §2.8 idempotency under
races; §10 items 1–6 and 34–36).

Each race runs through :mod:`maka_ref.testing.process_race` (workers are
``python -m maka_ref.testing.race_worker``). Every race is repeated for a few rounds, with the
spawn order reversed on odd rounds, to shake out orderings; outcomes are matched by the store's
stable error ``code`` (never by message text). After every scenario the database is reopened
and must be healthy: ``PRAGMA integrity_check`` = ok, no foreign-key violations, WAL +
``synchronous=FULL`` on a writer, dense ``event_seq`` per invocation, dense session ordinals,
a clean tool-ledger scan, rebuilt projections equal to the online rows (§3.3), and the
resolver's interpretation agreeing with the projection state. After every test no process of
ours survives (``psutil``, children of the test process, recursively, zombies included).

Set ``MAKA_STORAGE_STRESS=1`` to multiply the rounds (spec 30 §7.3 stress gate).
"""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from maka_ref import resolve_recovery, scan_tool_ledger
from maka_ref._store import CURRENT_SCHEMA_VERSION, RuntimeStore
from maka_ref._store.agent_runs.store import AGENT_RUNS_SCHEMA_VERSION, AGENT_RUNS_SCOPE
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row
from maka_ref.testing import race_worker as rw
from maka_ref.testing.process_race import (
    RaceError,
    RaceOutcome,
    WorkerResult,
    WorkerSpec,
    descendant_pids,
    run_race,
)

psutil = pytest.importorskip("psutil")

STRESS = os.environ.get("MAKA_STORAGE_STRESS") == "1"


def rounds(normal: int, stress: int | None = None) -> Any:
    count = (stress if stress is not None else normal * 3) if STRESS else normal
    return pytest.mark.parametrize("round_", range(count), ids=[f"round{i}" for i in range(count)])


# ------------------------------------------------------------------ fixtures


@pytest.fixture(autouse=True)
def no_surviving_processes() -> Iterator[None]:
    """§10 item 34: every child is reaped; nothing of ours outlives a test."""
    before = descendant_pids()
    yield
    leftover = descendant_pids() - before
    details = []
    for pid in sorted(leftover):
        try:
            proc = psutil.Process(pid)
            details.append(f"{pid} {proc.status()} {proc.cmdline()}")
        except psutil.NoSuchProcess:  # pragma: no cover - vanished between the two calls
            continue
    assert not details, "processes survived the test:\n" + "\n".join(details)


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    """§7.2 (adapted): T1 committed for ``operation-1``; the store is closed."""
    return rw.prepare_database(tmp_path)


@pytest.fixture
def initialised(tmp_path: Path) -> Path:
    """A migrated, empty WAL database (no T1): the T1 races start from here."""
    return rw.prepare_database(tmp_path, with_t1=False)


def race(modes: Sequence[str | WorkerSpec], db: Path, round_: int, **kwargs: Any) -> RaceOutcome:
    """One race; odd rounds spawn in reverse order (ordering shake-out)."""
    specs = list(modes)
    if round_ % 2:
        specs.reverse()
    return run_race(specs, db, work_dir=db.parent, **kwargs)


def by_mode(outcome: RaceOutcome, mode: str) -> list[WorkerResult]:
    return [worker for worker in outcome.workers if worker.mode == mode]


# ------------------------------------------------------------------ post-state checks


def _raw(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def _all_events(conn: sqlite3.Connection) -> list[Any]:
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events ORDER BY invocation_id, event_seq, event_id"
    ).fetchall()
    return [decode_event_row(row).event for row in rows]


_RESOLVER_VIEW = {
    "prepared": ("indeterminate", None),
    "outcome_committed": ("completed", "normal_t2"),
    "recovery_completed": ("completed", "recovery_bundle"),
    "recovery_parked": ("parked", "recovery_bundle"),
}


def assert_healthy(db: Path, operation_ids: Sequence[str] = ("operation-1",)) -> None:
    """Reopen and check everything a race must never break (§1.1, §1.2, §3.3, §10 items 1–6)."""
    conn = _raw(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_SCHEMA_VERSION
        # event_seq dense from 1 per invocation (§1.2), no duplicates (UNIQUE would refuse them).
        for invocation, count, low, high in conn.execute(
            "SELECT invocation_id, COUNT(*), MIN(event_seq), MAX(event_seq) FROM runtime_events GROUP BY invocation_id"
        ):
            assert (low, high) == (1, count), f"event_seq gap in {invocation}"
        # Session ordinals: one per event, dense from 1 per session.
        assert conn.execute("SELECT COUNT(*) FROM runtime_events").fetchone() == conn.execute(
            "SELECT COUNT(*) FROM runtime_session_event_ordinals"
        ).fetchone()
        for session, count, low, high in conn.execute(
            "SELECT session_id, COUNT(*), MIN(ordinal), MAX(ordinal) FROM runtime_session_event_ordinals "
            "GROUP BY session_id"
        ):
            assert (low, high) == (1, count), f"ordinal gap in {session}"
        events = _all_events(conn)
    finally:
        conn.close()
    scan = scan_tool_ledger(events)
    assert list(scan.issues) == [], "tool ledger does not scan clean"

    with RuntimeStore.open(db.parent) as store:
        pragmas = store.connection
        assert pragmas.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL (§10 item 7)
        online = {op: _projection(store, op) for op in operation_ids}
        store.rebuild_tool_projections()
        rebuilt = {op: _projection(store, op) for op in operation_ids}
        assert rebuilt == online, "rebuild disagrees with the online projection rows (§3.3)"
        for op, (operation, _journal) in online.items():
            if operation is None:
                continue
            decisions = [
                d for d in resolve_recovery(store.read_run_events("session-1", operation["runId"])).decisions
                if d.operation_id == op
            ]
            assert len(decisions) == 1, decisions
            status, origin = _RESOLVER_VIEW[operation["currentState"]]
            decision = decisions[0]
            assert (decision.status, decision.settlement_origin) == (status, origin), (decision, operation)
            if status == "completed":
                assert decision.response_runtime_event_id == operation["resultEventId"]
            assert decision.call_runtime_event_id == operation["callEventId"]
            assert decision.dispatch_runtime_event_id == operation["dispatchEventId"]


def _projection(store: RuntimeStore, operation_id: str) -> tuple[Any, Any]:
    operation = store.read_tool_operation(operation_id)
    journal = [record.to_json() for record in store.read_tool_journal(operation_id)]
    return (operation.to_json() if operation is not None else None, journal)


def _read(db: Path) -> tuple[Any, list[str], list[str]]:
    """(operation JSON, journal states, run-1 event ids) after the race."""
    with RuntimeStore.open(db.parent) as store:
        operation = store.read_tool_operation("operation-1")
        states = [record.state for record in store.read_tool_journal("operation-1")]
        events = [event["id"] for event in store.read_run_events("session-1", "run-1")]
    return (operation.to_json() if operation is not None else None, states, events)


# ------------------------------------------------------------------ spec 30 §7.3 scenarios


@rounds(3)
def test_c1_completed_vs_completed(prepared: Path, round_: int) -> None:
    """§7.3 C1 (§2.5 step 5, §2.8): two identical completed bundles race; the loser takes the
    exact-retry path. Both exit 0; ``recovery_completed``; exactly 5 immutable events."""
    outcome = race(["completed", "completed"], prepared, round_)
    assert outcome.exit_codes == [0, 0], outcome.describe()
    operation, states, events = _read(prepared)
    assert operation["currentState"] == "recovery_completed" and operation["version"] == 4
    assert operation["resultEventId"] == "completed-outcome"
    assert states == ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"]
    assert events == ["call-event-1", "dispatch-event-1", "completed-reconcile", "completed-outcome",
                      "completed-decision"]
    assert_healthy(prepared)


#: §7.3 "why the losers lose": the second bundle passes validation and hits "already settled".
#: (``duplicate_event_id`` would need a re-used reconcile id, §2.8, which §7.2's ids never do.)
C2_LOSER_CODES = {"already_settled"}


@rounds(4)
def test_c2_completed_vs_parked(prepared: Path, round_: int) -> None:
    """§7.3 C2: completed + parked → sorted exits [0, 2]; exactly one winner whose state is
    stored; the loser fails with the "already settled" code (§2.5 step 5); ledger scans clean."""
    outcome = race(["completed", "parked"], prepared, round_)
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    (winner,), (loser,) = outcome.winners, outcome.losers
    assert loser.error_code in C2_LOSER_CODES, outcome.describe()
    assert loser.error_line is not None and loser.error_class == "StoreError"
    operation, states, events = _read(prepared)
    if winner.mode == "completed":
        assert operation["currentState"] == "recovery_completed"
        assert states == ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"]
        assert events[2:] == ["completed-reconcile", "completed-outcome", "completed-decision"]
    else:
        assert operation["currentState"] == "recovery_parked" and "resultEventId" not in operation
        assert states == ["prepared", "reconcile_observed", "recovery_parked"]
        assert events[2:] == ["parked-reconcile", "parked-decision"]
    assert_healthy(prepared)


@rounds(3)
def test_c3_completed_vs_rebuild(prepared: Path, round_: int) -> None:
    """§7.3 C3 (§3.2): a projection rebuild racing a completed bundle → [0, 0]; the bundle
    is never lost; ``recovery_completed``; clean. The rebuild saw either side of the bundle."""
    outcome = race(["completed", "rebuild"], prepared, round_)
    assert outcome.exit_codes == [0, 0], outcome.describe()
    (rebuild,) = by_mode(outcome, "rebuild")
    assert rebuild.detail in ({"operations": 1, "journalEvents": 1}, {"operations": 1, "journalEvents": 4})
    operation, states, events = _read(prepared)
    assert operation["currentState"] == "recovery_completed" and operation["version"] == 4
    assert states == ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"]
    assert len(events) == 5
    assert_healthy(prepared)


@rounds(2)
def test_c7_open_only_concurrently(prepared: Path, round_: int) -> None:
    """§7.3 C7 (§10 item 5): two workers open an initialised WAL database and hold it open at
    the same time (the parent holds a third connection) → [0, 0]."""
    with RuntimeStore.open(prepared.parent) as held:
        outcome = race(["open_only", "open_only"], prepared, round_)
        assert held.read_tool_operation("operation-1") is not None
    assert outcome.exit_codes == [0, 0], outcome.describe()
    assert [w.detail for w in outcome.workers] == [{"userVersion": CURRENT_SCHEMA_VERSION}] * 2
    assert all("OPENED" in w.stdout for w in outcome.workers)
    assert_healthy(prepared)


@rounds(6, stress=12)
def test_c8_first_openers_on_fresh_dir(tmp_path: Path, round_: int) -> None:
    """§7.3 C8 (§1.3, §10 items 4–5): two first openers (runtime + operational scope) on a
    FRESH directory → [0, 0]; ``journal_mode`` = wal; ``user_version`` = 12. The directory and
    the file do not exist before the race; the migration's re-read under the lock is what
    keeps the second opener from re-running ``CREATE TABLE``."""
    db = tmp_path / "fresh" / "runtime.sqlite"
    assert not db.parent.exists()
    outcome = run_race(
        ["operational_open_only", "operational_open_only"], db, work_dir=tmp_path
    )
    assert outcome.exit_codes == [0, 0], outcome.describe()
    conn = _raw(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_SCHEMA_VERSION
        assert conn.execute(
            "SELECT version FROM operational_schema_migrations WHERE scope = ?", (AGENT_RUNS_SCOPE,)
        ).fetchone() == (AGENT_RUNS_SCHEMA_VERSION,)
    finally:
        conn.close()
    assert_healthy(db, operation_ids=())


@rounds(3)
def test_c11_two_openers_on_a_database_rewound_to_v10(prepared: Path, round_: int) -> None:
    """§7.3 C11 (§1.3 algorithm, §1.2 migration 11): a database rewound to runtime v10 (the
    session-ordinals table dropped, ``user_version`` 10) opened by two processes at once →
    [0, 0]; exactly one migrates (the re-read under the lock stops the other), the schema is
    12 again and the ordinals are backfilled densely in rowid order."""
    conn = _raw(prepared)
    try:
        events_before = conn.execute("SELECT event_id FROM runtime_events ORDER BY rowid").fetchall()
        conn.execute("DROP TABLE runtime_session_event_ordinals")
        conn.execute("PRAGMA user_version = 10")
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 10
    finally:
        conn.close()
    outcome = race(["operational_open_only", "operational_open_only"], prepared, round_)
    assert outcome.exit_codes == [0, 0], outcome.describe()
    conn = _raw(prepared)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_SCHEMA_VERSION
        ordinals = conn.execute(
            "SELECT o.event_id, o.ordinal FROM runtime_session_event_ordinals o "
            "JOIN runtime_events e ON e.event_id = o.event_id ORDER BY e.rowid"
        ).fetchall()
    finally:
        conn.close()
    assert [event_id for event_id, _ in ordinals] == [row[0] for row in events_before]
    assert [ordinal for _, ordinal in ordinals] == list(range(1, len(events_before) + 1))
    assert_healthy(prepared)


def test_c12_db_path_is_a_directory(tmp_path: Path) -> None:
    """§7.3 C12 (§10 item 34): the DB path names a directory → the worker fails the open
    cleanly (exit 2, ``RESULT error`` on stderr) and the failure is reported, not hung on.
    The code is the store's own (issue 13: the store's files are checked before SQLite opens
    them), where SQLite alone would say ``SQLITE_CANTOPEN``."""
    db = tmp_path / "runtime.sqlite"
    db.mkdir()
    outcome = run_race(["completed"], db, work_dir=tmp_path)
    (worker,) = outcome.workers
    assert worker.returncode == 2, outcome.describe()
    assert "RESULT error" in worker.stderr and worker.error_code == "store_file_not_regular"
    assert "OPENED" not in worker.stdout
    assert db.is_dir() and list(db.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("race-start-")) == ["runtime.sqlite"]


# ------------------------------------------------------------------ T2 races (§2.4, §2.8)


@rounds(3)
def test_competing_exact_t2(prepared: Path, round_: int) -> None:
    """§2.4 step 4, §2.8: two processes commit the SAME T2 → both ok, one ``created:true`` and
    one ``created:false`` with the same event_seq; 3 events, 2 journal rows."""
    outcome = race(["t2", "t2"], prepared, round_)
    assert outcome.exit_codes == [0, 0], outcome.describe()
    assert sorted(w.detail["created"] for w in outcome.workers) == [False, True]
    assert {w.detail["runtimeEventSeq"] for w in outcome.workers} == {3}
    operation, states, events = _read(prepared)
    assert (operation["currentState"], operation["resultEventId"], operation["version"]) == (
        "outcome_committed", "outcome-event-1", 2
    )
    assert states == ["prepared", "outcome_committed"]
    assert events == ["call-event-1", "dispatch-event-1", "outcome-event-1"]
    assert_healthy(prepared)


@rounds(3)
def test_conflicting_t2(prepared: Path, round_: int) -> None:
    """§2.4 (step 3), §2.8: two T2s with different response ids → one wins; the other is a
    ``ToolLedgerRejectionError`` ``duplicate_response`` (a bad candidate, store healthy)."""
    outcome = race(["t2", "t2_conflict"], prepared, round_)
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    (winner,), (loser,) = outcome.winners, outcome.losers
    assert (loser.error_code, loser.error_class) == ("duplicate_response", "ToolLedgerRejectionError")
    assert winner.detail == {"created": True, "runtimeEventSeq": 3}
    expected = "outcome-event-1" if winner.mode == "t2" else "outcome-event-2"
    operation, states, events = _read(prepared)
    assert (operation["currentState"], operation["resultEventId"]) == ("outcome_committed", expected)
    assert states == ["prepared", "outcome_committed"]
    assert events == ["call-event-1", "dispatch-event-1", expected]
    assert_healthy(prepared)


#: (winner mode, loser mode) → loser code, state. §2.4 step 3/7, §2.5 steps 4–5, §3.1.
T2_VS_BUNDLE = {
    ("t2", "parked"): ("already_settled", "outcome_committed"),
    ("parked", "t2"): ("compare_and_set_failed", "recovery_parked"),
    ("t2", "completed"): ("duplicate_response", "outcome_committed"),
    ("completed", "t2"): ("duplicate_response", "recovery_completed"),
}


@pytest.mark.parametrize("bundle", ["parked", "completed"])
@rounds(2)
def test_t2_vs_recovery_bundle(prepared: Path, bundle: str, round_: int) -> None:
    """§2.4 vs §2.5, §3.1 "terminal for writers": the runtime's own T2 races recovery's bundle
    for the same operation → exactly one settles it. Loser codes by winner: T2 first → the
    parked bundle is ``already_settled`` / the completed bundle's outcome ``duplicate_response``;
    bundle first → T2 fails the compare-and-set after park / ``duplicate_response``."""
    outcome = race(["t2", bundle], prepared, round_)
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    (winner,), (loser,) = outcome.winners, outcome.losers
    code, state = T2_VS_BUNDLE[(winner.mode, loser.mode)]
    assert loser.error_code == code, outcome.describe()
    operation, _states, _events = _read(prepared)
    assert operation["currentState"] == state
    assert_healthy(prepared)


# ------------------------------------------------------------------ T1 races (§2.3, §2.8)


@rounds(2)
def test_competing_exact_t1(initialised: Path, round_: int) -> None:
    """§2.3 step 2, §2.8, §10 item 26: the same T1 from two processes → one ``created:true``,
    one ``created:false`` ("someone already owns this operation"); same dispatch seq."""
    outcome = race(["t1", "t1"], initialised, round_)
    assert outcome.exit_codes == [0, 0], outcome.describe()
    assert sorted(w.detail["created"] for w in outcome.workers) == [False, True]
    assert {w.detail["runtimeEventSeq"] for w in outcome.workers} == {2}
    operation, states, events = _read(initialised)
    assert (operation["currentState"], operation["version"]) == ("prepared", 1)
    assert states == ["prepared"]
    assert events == ["call-event-1", "dispatch-event-1"]
    assert_healthy(initialised)


#: conflicting T1 mode → (loser code, which field tells who won). §2.8 T1 row.
T1_CONFLICTS = {
    "t1_other_args": "duplicate_event_id",  # same event ids, other args/hash
    "t1_fresh_ids": "duplicate_call",  # fresh event ids for the same provider call
}


@pytest.mark.parametrize("conflict", sorted(T1_CONFLICTS))
@rounds(3)
def test_conflicting_t1(initialised: Path, conflict: str, round_: int) -> None:
    """§2.3 step 1, §2.8: an exact T1 and a conflicting T1 for the same operation race; the
    winner's T1 is durable, the loser is a ``ToolLedgerRejectionError`` with the matrix's code
    (``duplicate_event_id`` for other args on the same ids, ``duplicate_call`` for fresh ids)."""
    outcome = race(["t1", conflict], initialised, round_)
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    (winner,), (loser,) = outcome.winners, outcome.losers
    assert (loser.error_code, loser.error_class) == (T1_CONFLICTS[conflict], "ToolLedgerRejectionError")
    assert winner.detail == {"created": True, "runtimeEventSeq": 2}
    won = rw.t1_input("exact" if winner.mode == "t1" else conflict.removeprefix("t1_"))
    operation, states, events = _read(initialised)
    assert operation["canonicalArgsHash"] == won.canonical_args_hash
    assert (operation["callEventId"], operation["dispatchEventId"]) == (
        won.runtime_event["id"], won.dispatch_runtime_event["id"]
    )
    assert states == ["prepared"]
    assert events == [won.runtime_event["id"], won.dispatch_runtime_event["id"]]
    assert_healthy(initialised)


# ------------------------------------------------------------------ generic appends (§2.1, §10 item 1)

APPENDERS = 4
EVENTS_PER_APPENDER = 5


@rounds(3)
def test_racing_appends_keep_event_seq_and_ordinals_dense(prepared: Path, round_: int) -> None:
    """§2.1 step 4, §10 item 1: N=4 processes append distinct ordinary events (5 each) into the
    SAME invocation; max+1 allocation under ``BEGIN IMMEDIATE`` gives event_seq dense 1..20
    with no duplicates, each worker's own events in order, and session ordinals dense and in
    the same order as event_seq within the invocation."""
    workers = [
        WorkerSpec("append", {rw.ENV_WORKER: str(i), rw.ENV_COUNT: str(EVENTS_PER_APPENDER)})
        for i in range(APPENDERS)
    ]
    outcome = race(workers, prepared, round_)
    assert outcome.exit_codes == [0] * APPENDERS, outcome.describe()
    total = APPENDERS * EVENTS_PER_APPENDER
    seqs = [seq for w in outcome.workers for seq in w.detail["eventSeqs"]]
    assert sorted(seqs) == list(range(1, total + 1))
    for w in outcome.workers:
        assert w.detail["eventSeqs"] == sorted(w.detail["eventSeqs"])
    with RuntimeStore.open(prepared.parent) as store:
        events = store.read_run_events(rw.APPEND_SESSION, rw.APPEND_RUN)
        ordinals = store.session_ordinals(rw.APPEND_SESSION)
    assert len(events) == total
    assert {e["id"] for e in events} == {
        rw.append_event(i, k)["id"] for i in range(APPENDERS) for k in range(EVENTS_PER_APPENDER)
    }
    assert sorted(ordinals.values()) == list(range(1, total + 3))  # + the T1 call and dispatch
    in_seq_order = [ordinals[e["id"]] for e in events]
    assert in_seq_order == sorted(in_seq_order)
    assert_healthy(prepared)


# ------------------------------------------------------------------ the harness itself


def test_harness_reports_workers_that_never_get_ready(tmp_path: Path) -> None:
    """§7.1, §10 items 34–36: a worker that dies before READY is a diagnostic listing mode,
    pid, exit status, stdout and stderr — raised fast, never a 15 s hang."""
    with pytest.raises(RaceError) as info:
        run_race(["no_such_mode", "open_only"], tmp_path / "runtime.sqlite", work_dir=tmp_path)
    text = str(info.value)
    assert "exited before READY" in text
    assert "mode=no_such_mode" in text and "mode=open_only" in text
    assert "unknown race worker mode" in text
    assert {w.mode for w in info.value.workers} == {"no_such_mode", "open_only"}
    assert all(w.returncode is not None for w in info.value.workers)  # reaped, killed or not


def test_harness_kills_and_reports_on_timeout(prepared: Path) -> None:
    """§7.1: on a timeout every remaining worker is SIGKILLed, reaped and described (open-only
    workers, run as if they were ordinary modes, never see a stop file, so the 1 s result wait
    times out; a signal death is reported as such, §10 item 36)."""
    with pytest.raises(RaceError) as info:
        run_race(["open_only", "open_only"], prepared, work_dir=prepared.parent, open_only=False,
                 result_timeout=1.0)
    error = info.value
    assert "timed out" in error.reason
    for worker in error.workers:
        assert worker.returncode not in (None, 0), worker.describe()  # reaped, and not a success
        assert worker.pid > 0 and "READY" in worker.stdout and worker.result_line is None
        if os.name == "posix":
            assert worker.signal == signal.SIGKILL and "killed by SIGKILL" in worker.describe()
    assert_healthy(prepared)  # a SIGKILLed open connection never damages the file
