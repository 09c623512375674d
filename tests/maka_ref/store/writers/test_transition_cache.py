"""The incremental transition check (``TransitionState``) and the store's per-connection
``TransitionCache`` (docs/performance.md, "Durable writes", optimisation 1).

Two guards:

* **Pure equivalence**: advancing one ``TransitionState`` chunk after chunk gives exactly the
  verdicts of ``validate_transition`` over the accumulated ledger (property test).
* **Store equivalence under foreign writes**: every scenario runs twice, once with the cache
  and once with it disabled (``CACHED_KINDS`` emptied, i.e. the old re-read-everything
  path), and must produce the same results, the same error types/codes and the same rows,
  when another connection, another process, raw SQL on the store's own connection or a
  rolled-back transaction changes the invocation between two T1/T2 writes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._ledger.transition import TransitionState, validate_transition
from maka_ref._store import RuntimeStore, T2Input
from maka_ref._store.insert import health
from maka_ref._store.engine.failpoints import FailpointTriggered, arm, disarm
from tests.maka_ref.store.support import loop_t1 as t1, loop_t2 as t2, loop_tool_events as tool_events
from tests.maka_ref.store.support import outcome_of as _outcome, raw, raw_insert

# =======================================================================================
# Pure: chained TransitionState.advance == validate_transition over the accumulated ledger
# =======================================================================================

_POOL = [e for call in range(3) for variant in ("", "-dup") for e in tool_events(call, variant=variant)]
_KINDS = ("t1_prepare", "t2_outcome", "generic_append")


@settings(max_examples=300, deadline=None)
@given(
    existing=st.lists(st.sampled_from(range(len(_POOL))), max_size=6),
    chunks=st.lists(
        st.tuples(st.lists(st.sampled_from(range(len(_POOL))), min_size=1, max_size=3), st.sampled_from(_KINDS)),
        max_size=6,
    ),
)
def test_chained_advance_equals_validate_transition(existing: list[int], chunks: list[tuple[list[int], str]]) -> None:
    ledger = [_POOL[i] for i in existing]
    state = TransitionState(ledger)
    for picks, kind in chunks:
        candidates = [_POOL[i] for i in picks]
        expected = validate_transition(ledger, candidates, kind)  # type: ignore[arg-type]
        actual = state.advance(candidates, kind)  # type: ignore[arg-type]
        assert actual == expected
        if not actual.ok:
            if not state.usable:
                return  # spent: a store never advances it again
            continue  # refused before touching the state (retry conflict, shape, corrupt existing)
        ledger = ledger + list(actual.remaining)
        assert state.count == len(ledger)


def test_spent_state_cannot_be_advanced() -> None:
    c, d, _ = tool_events(0)
    state = TransitionState([c, d])
    c2, d2, _ = tool_events(0, variant="-dup")
    assert not state.advance([c2, d2], "t1_prepare").ok  # duplicate_call while scanning
    assert not state.usable
    with pytest.raises(RuntimeError):
        state.advance([tool_events(0)[2]], "t2_outcome")


# =======================================================================================
# Store: cached == uncached under foreign writes
# =======================================================================================


def _rows(root: Path) -> list[tuple[Any, ...]]:
    conn = raw(root)
    try:
        events = conn.execute(
            "SELECT event_id, invocation_id, event_seq, payload_json FROM runtime_events ORDER BY event_id").fetchall()
        ops = conn.execute("SELECT * FROM tool_operations ORDER BY operation_id").fetchall()
        journal = conn.execute(
            "SELECT journal_event_id, operation_id, state FROM tool_journal_events ORDER BY journal_event_id").fetchall()
    finally:
        conn.close()
    return [events, ops, journal]


def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: Callable[[RuntimeStore, Path], list[Any]]) -> list[Any]:
    """Run ``scenario`` with and without the cache; both must agree on every result and row."""
    runs = []
    for cached in (True, False):
        root = tmp_path / ("cached" if cached else "uncached")
        with monkeypatch.context() as patch:
            if not cached:
                patch.setattr(health, "CACHED_KINDS", frozenset())
            store = RuntimeStore.open(root)
            try:
                results = scenario(store, root)
                entries = len(store.health_gate.transitions)
            finally:
                store.close()
                disarm()
        runs.append((results, _rows(root), entries))
    (cached_results, cached_rows, cached_entries), (plain_results, plain_rows, plain_entries) = runs
    assert cached_results == plain_results
    assert cached_rows == plain_rows
    assert plain_entries == 0  # the disabled run really took the old path
    return cached_results


def test_cache_is_used_and_exact_retries_still_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = []
        for call in range(3):
            out.append(_outcome(lambda: store.commit_tool_prepared(t1(call))))
            out.append(_outcome(lambda: store.commit_tool_outcome(t2(call))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))  # exact retries
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(2))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1, arg="changed"))))  # conflicting retry
        c, d, r = tool_events(1, variant="-dup")
        out.append(_outcome(lambda: store.commit_tool_outcome(T2Input("op-1-1", "op-1-1_outcome", r, 99))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(3))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[6][1] == {"created": False, "runtimeEventSeq": 5}
    assert results[-1][0] == "ok"


def test_other_connection_appends_between_two_t1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second store (its own connection) writes calls of the same invocation in between."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        other = RuntimeStore.open(root)
        try:
            out.append(_outcome(lambda: other.commit_tool_prepared(t1(1))))
            out.append(_outcome(lambda: other.commit_tool_outcome(t2(1))))
        finally:
            other.close()
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))  # exact retry of the other's write
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(2))))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[3] == ("ok", {"created": False, "runtimeEventSeq": 4})
    assert results[4] == ("ok", {"created": True, "runtimeEventSeq": 7})


def test_other_connection_corrupts_between_t1_and_t2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A raw foreign insert of a duplicate call must fail the next T2 closed, as without cache."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        conn = raw(root)
        raw_insert(conn, tool_events(0, variant="-dup")[0], 3)
        conn.close()
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][0] == "error" and results[1][2] == "duplicate_call"


def test_other_connection_reorders_rows_keeping_count_and_max(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Swapping two event_seq values keeps the invocation's row count and max(event_seq): only
    ``data_version`` can notice, and it must."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        conn = raw(root)
        conn.execute("UPDATE runtime_events SET event_seq = 100 WHERE event_id = 'c-1-0'")
        conn.execute("UPDATE runtime_events SET event_seq = 1 WHERE event_id = 'op-1-0_dispatch'")
        conn.execute("UPDATE runtime_events SET event_seq = 2 WHERE event_id = 'c-1-0'")
        conn.close()
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][0] == "error" and results[1][2] == "event_order_conflict"


def test_raw_sql_on_the_same_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``data_version`` does not move for the store's own connection; ``total_changes`` does."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        store.connection.execute(
            "UPDATE runtime_events SET event_seq = 100 WHERE event_id = 'c-1-0'")
        store.connection.execute(
            "UPDATE runtime_events SET event_seq = 1 WHERE event_id = 'op-1-0_dispatch'")
        store.connection.execute(
            "UPDATE runtime_events SET event_seq = 2 WHERE event_id = 'c-1-0'")
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][0] == "error" and results[1][2] == "event_order_conflict"


def test_rolled_back_write_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A T1 that passed the check, settled nothing and rolled back (failpoint), then the
    same and other writes again."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        arm("after_journal_event_insert")
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        disarm()
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))  # unknown operation
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][1] == FailpointTriggered.__name__
    assert results[3] == ("ok", {"created": True, "runtimeEventSeq": 4})


def test_settled_entry_of_a_rolled_back_outer_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """T1 joins an outer transaction that then rolls back: its settled entry describes rows
    that vanished, so a write that joined a caller's transaction is never confirmed."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]

        def rolled_back() -> None:
            with store.write():
                store.commit_tool_prepared(t1(1))
                raise KeyError("abort the outer transaction")

        out.append(_outcome(rolled_back))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(2))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[3] == ("ok", {"created": True, "runtimeEventSeq": 4})


_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from maka_ref._store import RuntimeStore
from tests.maka_ref.store.support import loop_t1 as t1, loop_t2 as t2
store = RuntimeStore.open({root!r})
store.commit_tool_prepared(t1(1))
store.commit_tool_outcome(t2(1))
store.close()
"""


def test_another_process_writes_between_two_t1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = str(Path(__file__).resolve().parents[4])

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        subprocess.run([sys.executable, "-c", _CHILD.format(repo=repo, root=str(root))], check=True, cwd=repo)
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))  # exact retry of the child's
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(0))))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(2))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1] == ("ok", {"created": False, "runtimeEventSeq": 4})
    assert results[2] == ("ok", {"created": True, "runtimeEventSeq": 6})
    assert results[3] == ("ok", {"created": True, "runtimeEventSeq": 8})


def test_consecutive_writes_reuse_the_scanned_invocation(tmp_path: Path) -> None:
    """With no foreign write in between, only the first write of the invocation reads it."""
    store = RuntimeStore.open(tmp_path)
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        for call in range(3):
            store.commit_tool_prepared(t1(call))
            store.commit_tool_outcome(t2(call))
    finally:
        store.connection.set_trace_callback(None)
        store.close()
    full_reads = [s for s in statements if s.startswith("SELECT event_id") and "WHERE invocation_id =" in s]
    assert len(full_reads) == 1


def test_commit_that_fails_after_settle_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry a T1 settled must not outlive a ``COMMIT`` that failed: the write rolled back,
    so the cached state (and the ``max(event_seq)`` it gives the next insert) would describe
    rows that never became durable. Entries are confirmed only after the store's own COMMIT."""
    from maka_ref._store import runtime_store

    real = runtime_store.write_transaction
    failing: list[bool] = [False]

    @contextmanager
    def commit_may_fail(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        if not failing[0]:
            with real(conn) as inner:
                yield inner
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")
        raise sqlite3.OperationalError("disk I/O error (simulated failing COMMIT)")

    monkeypatch.setattr(runtime_store, "write_transaction", commit_may_fail)

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0)))]
        failing[0] = True
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        failing[0] = False
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))  # the operation never existed
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert results[1][:2] == ("error", "OperationalError")
    assert results[2][0] == "error" and results[2][2] == "unknown_tool_operation"
    assert results[3] == ("ok", {"created": True, "runtimeEventSeq": 4})
    assert results[4] == ("ok", {"created": True, "runtimeEventSeq": 5})


def test_call_stored_before_t1_numbers_the_dispatch_right_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T1 whose function_call is already stored (an exact duplicate it may re-use): only the
    dispatch is new and must get ``max(event_seq) + 1``, with the cache as without."""

    def scenario(store: RuntimeStore, root: Path) -> list[Any]:
        out = [_outcome(lambda: store.commit_tool_prepared(t1(0))), _outcome(lambda: store.commit_tool_outcome(t2(0)))]
        out.append(_outcome(lambda: store.append(tool_events(1)[0])))
        out.append(_outcome(lambda: store.commit_tool_prepared(t1(1))))
        out.append(_outcome(lambda: store.commit_tool_outcome(t2(1))))
        return out

    results = _both(tmp_path, monkeypatch, scenario)
    assert [r[0] for r in results] == ["ok"] * 5
    assert results[3] == ("ok", {"created": True, "runtimeEventSeq": 5})
    assert results[4] == ("ok", {"created": True, "runtimeEventSeq": 6})


def test_steady_tool_loop_needs_no_max_query_and_one_data_version_per_write(tmp_path: Path) -> None:
    """After the first write of an invocation, T1/T2 number their rows from the transition
    check's verified ``max(event_seq)`` and read ``PRAGMA data_version`` once per transaction."""
    store = RuntimeStore.open(tmp_path)
    try:
        store.commit_tool_prepared(t1(0))
        store.commit_tool_outcome(t2(0))
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        for call in range(1, 4):
            store.commit_tool_prepared(t1(call))
            store.commit_tool_outcome(t2(call))
        store.connection.set_trace_callback(None)
        seqs = store.connection.execute(
            "SELECT event_seq FROM runtime_events WHERE invocation_id = 'inv-1' ORDER BY event_seq").fetchall()
    finally:
        store.close()
    assert [s for s in statements if "MAX(event_seq)" in s] == []
    assert sum(s == "PRAGMA data_version" for s in statements) == sum(s == "BEGIN IMMEDIATE" for s in statements) == 6
    assert [row[0] for row in seqs] == list(range(1, 13))
