"""The insert primitive's per-connection cache of passing identity / run-seal / claim verdicts
(``maka_ref._store.insert.facts``; docs/performance.md, "Durable writes", items 3 and 4).

Every scenario runs twice, with the cache and with it disabled (``insert_facts.ENABLED``
False: every check queries, as before), and must give the same results, the same error
types/codes/messages and the same rows — when another connection, another process, raw SQL
on the store's own connection, or a rolled-back transaction changes the run between two
T1/T2 writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._store import RuntimeStore

from maka_ref._store.insert import facts as insert_facts
from maka_ref._store.engine.failpoints import FailpointTriggered, arm, disarm
from tests.maka_ref.store.support import outcome_of as _outcome, raw, raw_insert
from tests.maka_ref.store.support import loop_envelope as _envelope, loop_t1 as t1, loop_t2 as t2, loop_tool_events as tool_events

SEAL_SQL = "json_extract(payload_json, '$.status')"
IDENTITY_SQL = "SELECT DISTINCT"
CLAIMS_SQL = "FROM runtime_continuation_claims"


def _rows(root: Path) -> list[Any]:
    conn = raw(root)
    try:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("runtime_events", "runtime_session_event_ordinals", "tool_operations", "tool_journal_events",
                          "runtime_partial_snapshots")
        ]
    finally:
        conn.close()


def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: Callable[[RuntimeStore, Path], list[Any]]) -> list[Any]:
    runs = []
    for cached in (True, False):
        root = tmp_path / ("cached" if cached else "uncached")
        statements: list[str] = []
        with monkeypatch.context() as patch:
            patch.setattr(insert_facts, "ENABLED", cached)
            store = RuntimeStore.open(root)
            store.connection.set_trace_callback(statements.append)
            try:
                results = scenario(store, root)
                facts = len(store.health_gate.facts)
            finally:
                store.connection.set_trace_callback(None)
                store.close()
                disarm()
        runs.append((results, _rows(root), facts, statements))
    (cached_results, cached_rows, _, cached_sql), (plain_results, plain_rows, plain_facts, plain_sql) = runs
    assert cached_results == plain_results
    assert cached_rows == plain_rows
    assert plain_facts == 0  # the disabled run really took the uncached path
    assert sum(SEAL_SQL in s for s in cached_sql) <= sum(SEAL_SQL in s for s in plain_sql)
    return cached_results


#: A partial snapshot of another turn under invocation inv-1 (the health scan reads events
#: only, so only the insert primitive's identity check can see it).
INTRUDER_SQL = (
    "INSERT INTO runtime_partial_snapshots (stream_key, session_id, invocation_id, run_id, turn_id, after_event_id, "
    "payload_json, text_content, updated_at) VALUES ('intruder', 'cache-session', 'inv-1', 'run-1', 'turn-other', "
    "NULL, '{}', '', 1)"
)


def _terminal(event_id: str, ts: int, run: int = 1, **fields: Any) -> dict[str, Any]:
    event = _envelope(event_id, ts, "model", "agent", run)
    event["status"] = "completed"
    event.update(fields)
    return event


def test_queries_run_once_per_run_and_retries_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = []
        for call in range(4):
            out.append(_outcome(lambda: store.commit_tool_prepared(t1(call))))
            out.append(_outcome(lambda: store.commit_tool_outcome(t2(call))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))  # exact retries
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(2))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1, arg="changed"))))  # conflicting retry
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))  # second run, same session
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0, run=2))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(5))))  # back to run 1
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert all(r[0] == "ok" for i, r in enumerate(results) if i != 10)
    assert results[10][0] == "error"


def test_cached_writes_skip_the_queries(tmp_path: Path) -> None:
    store = RuntimeStore.open(tmp_path)
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        for call in range(5):
            store.commit_tool_prepared(t1(call))
            store.commit_tool_outcome(t2(call))
    finally:
        store.connection.set_trace_callback(None)
        store.close()
    assert sum(SEAL_SQL in s for s in statements) == 1
    assert sum(IDENTITY_SQL in s for s in statements) == 4  # one check_identity
    assert sum(CLAIMS_SQL in s for s in statements) == 1


def test_terminal_by_another_connection_seals_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        other = RuntimeStore.open(root)
        try:
            out.append(_outcome(lambda: other.commit_tool_outcome(t2(0))))
            out.append(_outcome(lambda: other.append(_terminal("terminal-1", 5000))))
        finally:
            other.close()
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[3][1] == "RunSealedError"
    assert results[4][0] == "ok"


def test_raw_terminal_on_the_same_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``data_version`` does not move for the store's own connection; ``total_changes`` does."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        raw_insert(store.connection, _terminal("terminal-raw", 5000, actions={"endInvocation": True}), 50)
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][1] == "RunSealedError" and results[2][1] == "RunSealedError"


def test_terminal_inserted_through_the_cache_seals_the_run(tmp_path: Path) -> None:
    """T1/T2 events cannot carry a terminal status (their lanes refuse it), so drive the insert
    primitive directly: a terminal written with the cache on must seal the run for the next
    insert of the same transaction, exactly as the query would."""
    from maka_ref._events.encode import encode_runtime_event
    from maka_ref._store.errors import RunSealedError
    from maka_ref._store.insert.primitive import insert_event

    store = RuntimeStore.open(tmp_path)
    try:
        gate = store.health_gate
        for terminal in (_terminal("t-status", 2), _terminal("t-end", 2, status=None, actions={"endInvocation": True})):
            if terminal.get("status") is None:
                del terminal["status"]
            with pytest.raises(RunSealedError), store.write() as conn:
                gate.check()
                gate.facts.begin(conn, gate.data_version, gate.fresh_changes)
                first = _envelope("first", 1, "user", "user")
                first["content"] = {"kind": "text", "text": "hi"}
                insert_event(conn, encode_runtime_event(first), 1, allow_exact_duplicate=False, facts=gate.facts)
                assert ("cache-session", "run-1") in gate.facts.unsealed
                insert_event(conn, encode_runtime_event(terminal), 2, allow_exact_duplicate=False, facts=gate.facts)
                later = _envelope("later", 3, "user", "user")
                later["content"] = {"kind": "text", "text": "late"}
                insert_event(conn, encode_runtime_event(later), 3, allow_exact_duplicate=False, facts=gate.facts)
    finally:
        store.close()


def test_identity_conflict_from_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = str(Path(__file__).resolve().parents[4])
    child = (
        "import sys, sqlite3\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        f"conn.execute({INTRUDER_SQL!r})\n"
        "conn.close()\n"
    )

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        subprocess.run([sys.executable, "-c", child, str(root / "runtime.sqlite")], check=True, cwd=repo)
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][2] == "invocation_identity_conflict"


def test_rolled_back_run_then_conflicting_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A T1 of run 2 (invocation inv-X) checks its identity, then rolls back (failpoint); a T1
    reusing inv-X for run 3 succeeds; run 2's identity must then conflict again."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        arm("after_journal_event_insert")
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))
        disarm()
        c, d, _ = tool_events(0, run=3)
        for event in (c, d):
            event["invocationId"] = "inv-2"
        fact = d["actions"]["toolDispatch"]
        from maka_ref._store import T1Input

        out.append(_outcome(lambda: store.commit_tool_prepared(T1Input(
            fact["operationId"], f"{fact['operationId']}_prepared", c, d, fact["providerToolCallId"], "Write",
            fact["canonicalArgsHash"], "reconcile", 30))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][1] == FailpointTriggered.__name__
    assert results[2][0] == "ok"
    assert results[3][2] == "invocation_identity_conflict"


def test_joined_transaction_rolled_back_after_settle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outer transaction deletes a conflicting row, T1 joins it and succeeds, then the outer
    transaction rolls back (the row is back): the next write must see the conflict."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        conn = raw(root)
        conn.execute(INTRUDER_SQL)
        conn.close()
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))

        def rolled_back() -> None:
            with store.write() as conn:
                conn.execute("DELETE FROM runtime_partial_snapshots WHERE stream_key = 'intruder'")
                store.commit_tool_outcome(t2(0))
                store.commit_tool_prepared(t1(1))
                raise KeyError("abort the outer transaction")

        out.append(_outcome(rolled_back))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[3][2] == "invocation_identity_conflict"


def test_claim_row_by_another_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A (tampered) claim row of the session appears: the guard must run again and fail closed."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        conn = raw(root)
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(
            "INSERT INTO runtime_continuation_claims (claim_id, source_session_id, source_invocation_id, "
            "source_run_id, source_turn_id, source_event_high_water, source_prefix_digest, boundary_digest, "
            "boundary_json, provider_projection_version, provider_replay_digest, target_session_id, "
            "target_invocation_id, target_run_id, target_turn_id, target_run_header_json, claimed_at, "
            "protocol_version) VALUES ('claim-x', 'cache-session', 'inv-9', 'run-9', 'turn-9', 1, 'bad', 'bad', "
            "'{}', 1, 'bad', 'cache-session', 'inv-10', 'run-10', 'turn-10', '{}', 1, 1)"
        )
        conn.close()
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][0] == "error"


def test_partial_snapshot_identity_by_raw_sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partial stream of another turn under the same invocation, written through the store's
    generic path on the same connection (moves ``total_changes``)."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        chunk = _envelope("chunk-1", 3000, "model", "agent", 2)
        chunk.update(partial=True, invocationId="inv-1", content={"kind": "text", "text": "par"})
        chunk["refs"] = {"providerEventId": "stream-1"}
        out.append(_outcome(lambda: store.append(chunk)))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        return out

    _both(tmp_path, monkeypatch, scenario)


def test_rollback_after_the_facts_were_settled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transaction that learnt run 2's identity settles, then rolls back instead of
    committing (as when COMMIT fails); another invocation then takes run 2, so run 2's
    first identity must conflict again (the new tuple evicts the overlapping one). (Conflicts
    inside one invocation are also caught by the transition scan; across invocations only
    the insert primitive's run rule sees them.)"""
    from contextlib import contextmanager

    from maka_ref._store import T1Input, runtime_store
    from maka_ref._store.engine.connection import write_transaction

    @contextmanager
    def rolled_back_commit(conn: Any) -> Any:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")
        raise OSError("simulated COMMIT failure")

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        with monkeypatch.context() as patch:
            patch.setattr(runtime_store, "write_transaction", rolled_back_commit)
            out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))
        assert runtime_store.write_transaction is write_transaction
        c, d, _ = tool_events(7, run=2)  # run 2 under another invocation (the run rule)
        for event in (c, d):
            event["invocationId"] = "inv-9"
        fact = d["actions"]["toolDispatch"]
        out.append(_outcome(lambda: store.commit_tool_prepared(T1Input(
            fact["operationId"], f"{fact['operationId']}_prepared", c, d, fact["providerToolCallId"], "Write",
            fact["canonicalArgsHash"], "reconcile", 30))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(0, run=2))))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0, run=2))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][1] == "OSError"
    assert results[2][0] == "ok"
    assert results[3][2] == "run_identity_conflict"
