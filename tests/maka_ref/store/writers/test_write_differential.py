"""Differential test of every T1/T2 fast path against the plain re-read-everything store.

Why: T1 and T2 answer from per-connection memories instead of re-reading durable rows (the
incremental transition state, ``insert.transitions``; the insert verdicts and the "no partial
snapshot" fact, ``insert.facts``; the inserted-row memory of the terminal barrier,
``insert.run_rows``; the row-first insert of ``insert.primitive``; the encoder's fast path).
Each is argued exact in its module; this test checks the argument on seeded random sequences
of writes across several invocations, with exact retries, conflicting retries (reused ids),
duplicate tool facts, identity conflicts, streamed tool partials, terminal facts, raw SQL on
the store's own connection, writes by a second connection (drift) and reopening.

Every sequence runs twice: once as shipped, once with every memory and fast path switched
off. Both runs must give the same answer for every call — the result, or the error class,
stable code and message — and leave the same rows in every table the writers touch.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._events import encode as event_encode
from maka_ref._store import RuntimeStore, T1Input, T2Input
from maka_ref._store.insert import facts as insert_facts
from maka_ref._store.insert import health
from maka_ref._store.insert import primitive
from maka_ref._store.insert import run_rows
from tests.maka_ref.store.support import loop_envelope, loop_tool_events, outcome_of, raw, raw_insert

RUNS = (1, 2, 3)
CALLS = 4


def _t1(call: int, run: int, variant: str = "", arg: str = "x", id_run: int | None = None) -> T1Input:
    """T1 of call ``call`` in ``run``; ``id_run``: its function_call takes the event id the same
    call has in that other run (an id reused across invocations)."""
    c, d, _ = loop_tool_events(call, run=run, variant=variant, arg=arg)
    if id_run is not None:
        c["id"] = f"c-{id_run}-{call}{variant}"
    fact = d["actions"]["toolDispatch"]
    op = fact["operationId"]
    return T1Input(op, f"{op}_prepared", c, d, fact["providerToolCallId"], "Write", fact["canonicalArgsHash"],
                   "reconcile", 10 + call)


def _t2(call: int, run: int, variant: str = "", id_run: int | None = None) -> T2Input:
    _, d, r = loop_tool_events(call, run=run, variant=variant)
    if id_run is not None:
        r["id"] = f"op-{id_run}-{call}_response{variant}"
    op = d["actions"]["toolDispatch"]["operationId"]
    return T2Input(op, f"{op}_outcome", r, 20 + call)


def _text(event_id: str, run: int, text: str, ts: int = 500) -> dict[str, Any]:
    event = loop_envelope(event_id, ts, "user", "user", run)
    event["content"] = {"kind": "text", "text": text}
    return event


def _tool_partial(event_id: str, run: int, call: int) -> dict[str, Any]:
    event = loop_envelope(event_id, 600, "tool", "tool", run)  # the response's stream: same role and author
    event["partial"] = True
    event["refs"] = {"toolCallId": f"toolu_{call}"}
    return event


def _terminal(run: int) -> dict[str, Any]:
    event = loop_envelope(f"terminal-{run}", 900, "system", "system", run)
    event["status"] = "completed"
    return event


class _World:
    """The store under test, a second connection's store, and the seeded choice of writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = RuntimeStore.open(root)
        self.other: RuntimeStore | None = None
        self.counter = 0

    def close(self) -> None:
        self.store.close()
        if self.other is not None:
            self.other.close()

    def _fresh(self) -> int:
        self.counter += 1
        return self.counter

    def step(self, rng: random.Random) -> Any:
        run, call = rng.choice(RUNS), rng.randrange(CALLS)
        action = rng.choices(
            ["t1", "t2", "t1_dup", "t2_dup", "t1_conflict", "t1_cross", "t2_cross", "text", "text_retry", "text_conflict", "identity",
             "partial", "foreign", "foreign_tool", "raw_event", "raw_delete_partial", "terminal", "reopen"],
            weights=[14, 12, 2, 2, 2, 2, 2, 4, 2, 2, 1, 4, 3, 1, 1, 1, 1, 1],
        )[0]
        store = self.store
        if action == "t1":
            return action, outcome_of(lambda: store.commit_tool_prepared(_t1(call, run)))
        if action == "t2":
            return action, outcome_of(lambda: store.commit_tool_outcome(_t2(call, run)))
        if action == "t1_dup":  # same operation, other event ids: a reused operation / duplicate facts
            return action, outcome_of(lambda: store.commit_tool_prepared(_t1(call, run, variant="-dup")))
        if action == "t2_dup":
            return action, outcome_of(lambda: store.commit_tool_outcome(_t2(call, run, variant="-dup")))
        if action == "t1_conflict":  # reused ids, other arguments
            return action, outcome_of(lambda: store.commit_tool_prepared(_t1(call, run, arg="changed")))
        if action in ("t1_cross", "t2_cross"):  # an event id another invocation may already hold
            other_run = RUNS[(RUNS.index(run) + 1) % len(RUNS)]
            if action == "t1_cross":
                return action, outcome_of(lambda: store.commit_tool_prepared(_t1(call, run, id_run=other_run)))
            return action, outcome_of(lambda: store.commit_tool_outcome(_t2(call, run, id_run=other_run)))
        if action == "text":
            return action, outcome_of(lambda: store.append(_text(f"text-{self._fresh()}", run, "hello")))
        if action == "text_retry":  # reused id, same event: an exact retry (or new if never written)
            return action, outcome_of(lambda: store.append(_text(f"text-{rng.randrange(1, 4)}", run, "hello")))
        if action == "text_conflict":  # reused id, different event
            return action, outcome_of(lambda: store.append(_text(f"text-{rng.randrange(1, 4)}", run, "other")))
        if action == "identity":  # invocation of one run under another run's id: identity conflict
            event = _text(f"ident-{self._fresh()}", run, "x")
            event["runId"] = f"run-{RUNS[(RUNS.index(run) + 1) % len(RUNS)]}"
            return action, outcome_of(lambda: store.append(event))
        if action == "partial":  # a streamed tool partial the call's response will complete
            return action, outcome_of(lambda: store.append(_tool_partial(f"partial-{self._fresh()}", run, call)))
        if action in ("foreign", "foreign_tool"):  # another connection commits: data_version moves
            if self.other is None:
                self.other = RuntimeStore.open(self.root)
            other = self.other
            if action == "foreign":
                return action, outcome_of(lambda: other.append(_text(f"foreign-{self._fresh()}", run, "drift")))
            return action, outcome_of(lambda: other.commit_tool_prepared(_t1(call, run)))
        if action == "raw_event":  # raw SQL on the store's own connection (no store write)
            conn = store.connection
            event = _text(f"raw-{self._fresh()}", run, "raw")

            def write_raw() -> None:
                seq = conn.execute("SELECT COALESCE(MAX(event_seq), 0) + 1 FROM runtime_events WHERE invocation_id = ?",
                                   (f"inv-{run}",)).fetchone()[0]
                raw_insert(conn, event, seq)

            return action, outcome_of(write_raw)
        if action == "raw_delete_partial":
            return action, outcome_of(lambda: store.connection.execute("DELETE FROM runtime_partial_snapshots").rowcount)
        if action == "terminal":
            return action, outcome_of(lambda: store.append(_terminal(run)))
        store.close()  # reopen: every memory starts empty
        self.store = RuntimeStore.open(self.root)
        return action, ("ok", None)


def _rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn: sqlite3.Connection = raw(root)
    try:
        queries = {
            "events": "SELECT event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, payload_json, "
                      "committed_at FROM runtime_events ORDER BY event_id",
            "ordinals": "SELECT session_id, ordinal, event_id FROM runtime_session_event_ordinals ORDER BY session_id, ordinal",
            "operations": "SELECT * FROM tool_operations ORDER BY operation_id",
            "journal": "SELECT journal_event_id, operation_id, invocation_id, run_id, turn_id, state, runtime_event_id, "
                       "canonical_args_hash, recovery_mode, metadata_json, committed_at FROM tool_journal_events "
                       "ORDER BY journal_event_id",
            "partials": "SELECT stream_key, session_id, run_id, payload_json FROM runtime_partial_snapshots ORDER BY stream_key",
        }
        return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        conn.close()


def _plain(patch: pytest.MonkeyPatch) -> None:
    """Every memory and fast path off: the store re-reads and re-checks everything."""
    patch.setattr(health, "CACHED_KINDS", frozenset())
    patch.setattr(insert_facts, "ENABLED", False)
    patch.setattr(run_rows, "ENABLED", False)
    patch.setattr(primitive, "INSERT_FIRST", False)
    patch.setattr(event_encode, "FAST_PATH_ENABLED", False)


def _run(root: Path, seed: int, steps: int) -> tuple[list[Any], dict[str, Any]]:
    rng = random.Random(seed)
    world = _World(root)
    try:
        answers = [world.step(rng) for _ in range(steps)]
    finally:
        world.close()
    return answers, _rows(root)


def _differential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, steps: int,
                  shipped: Callable[[pytest.MonkeyPatch], None] = lambda patch: None) -> list[Any]:
    with monkeypatch.context() as patch:
        shipped(patch)
        fast = _run(tmp_path / f"fast-{seed}", seed, steps)
    with monkeypatch.context() as patch:
        _plain(patch)
        plain = _run(tmp_path / f"plain-{seed}", seed, steps)
    for index, (got, expected) in enumerate(zip(fast[0], plain[0])):
        assert got == expected, f"seed {seed}, step {index}"
    assert fast[1] == plain[1], f"seed {seed}: rows differ"
    return fast[0]


@pytest.mark.parametrize("seed", range(12))
def test_fast_paths_answer_like_the_plain_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    answers = _differential(tmp_path, monkeypatch, seed, 60)
    assert any(action == "t2" and result[0] == "ok" for action, result in answers)


def test_sequences_reach_refusals_and_created_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator is not vacuous: across the seeds it creates T1/T2 rows, refuses with the
    transition codes and the insert codes, and meets every kind of drift."""
    seen_codes: set[Any] = set()
    created = 0
    for seed in range(12):
        answers, _ = _run(tmp_path / f"probe-{seed}", seed, 60)
        for action, result in answers:
            if result[0] == "error":
                seen_codes.add(result[2])
            elif action in ("t1", "t2") and isinstance(result[1], dict) and result[1].get("created"):
                created += 1
    assert created >= 20
    assert {"duplicate_event_id", "run_sealed", "event_identity_conflict"} <= seen_codes


def test_streamed_partial_between_t1_and_t2_is_deleted_by_the_response(tmp_path: Path) -> None:
    """The "no partial snapshot" fact is learnt on T1 and must not survive a partial written
    in between (same connection, then another connection)."""
    for other_connection in (False, True):
        root = tmp_path / f"partial-{other_connection}"
        store = RuntimeStore.open(root)
        writer = RuntimeStore.open(root) if other_connection else store
        try:
            assert store.commit_tool_prepared(_t1(0, 1)).created
            assert store.commit_tool_prepared(_t1(1, 1)).created  # the fact is known by now
            assert store.health_gate.facts.no_partials is True
            writer.append(_tool_partial("partial-x", 1, 1))
            assert len(_rows(root)["partials"]) == 1
            assert store.commit_tool_outcome(_t2(1, 1)).created
            assert _rows(root)["partials"] == []
        finally:
            store.close()
            if other_connection:
                writer.close()


def test_failed_row_first_insert_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An id already stored in *another* invocation is invisible to the invocation's transition
    check; with warm insert facts T1 tries the row first, fails on the primary key, and must
    then answer exactly as the existence query would (``event_identity_conflict``), the failed
    statement counting no change."""
    answers = []
    for row_first in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(primitive, "INSERT_FIRST", row_first)
            store = RuntimeStore.open(tmp_path / f"s-{row_first}")
            try:
                store.commit_tool_prepared(_t1(1, 1))
                store.commit_tool_prepared(_t1(0, 2))  # warms the facts of run 2
                conn = store.connection
                before = conn.total_changes
                answers.append(outcome_of(lambda: store.commit_tool_prepared(_t1(1, 2, id_run=1))))
                assert conn.total_changes == before
            finally:
                store.close()
    assert answers[0] == answers[1]
    assert answers[0][0] == "error" and answers[0][2] == "event_identity_conflict"
