"""The schema's write set with no Python in the loop: T1/T2 rows as literal SQL scripts.

Why: the store-shaped SQL line still pays one Python call per statement, so one could argue a
store written in C would beat it. Here each T1 and each T2 is one literal ``BEGIN IMMEDIATE;
INSERT …; COMMIT;`` script run by ``executescript`` (parsing and executing entirely inside
SQLite), against a raw single-row commit run the same way, interleaved like the main
measurement. It is an upper bound for any store that writes spec 30 §1.2's rows with
``synchronous=FULL``; it also pays SQL parsing, which prepared statements would not.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from maka_ref._events.encode import encode_runtime_event
from maka_ref._store import RuntimeStore
from maka_ref._store.engine.connection import connect
from maka_ref._store.engine.rows import event_kind

from benchmarks._durable.inputs import _calls
from benchmarks._durable.throughput import _check_pragmas

__all__ = ["measure_sqlite_floor"]


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


class _Scripts:
    """Builds the T1 and T2 scripts of successive calls (event_seq and ordinals counted here,
    as the shaped line does; inputs are built before the clock starts)."""

    def __init__(self, calls_per_run: int) -> None:
        self.calls_per_run = calls_per_run
        self.next = 0
        self.seqs: dict[str, int] = {}
        self.ordinal = 0

    def _event(self, encoded: Any, committed_at: int) -> str:
        e = encoded.event
        seq = self.seqs[e["invocationId"]] = self.seqs.get(e["invocationId"], 0) + 1
        self.ordinal += 1
        q = _literal
        return (
            "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
            f"payload_json, committed_at) VALUES ({q(e['id'])}, {q(e['sessionId'])}, {q(e['invocationId'])}, "
            f"{q(e['runId'])}, {q(e['turnId'])}, {seq}, {q(event_kind(e))}, {q(encoded.canonical_json)}, "
            f"{committed_at});"
            "INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) VALUES "
            f"({q(e['sessionId'])}, {self.ordinal}, {q(e['id'])});"
        )

    def take(self, count: int) -> list[tuple[str, str]]:
        q = _literal
        out = []
        for call in _calls(self.next, count, self.calls_per_run, run_offset=20_000):
            t1, t2 = call.t1, call.t2
            c, d, r = (encode_runtime_event(e) for e in (t1.runtime_event, t1.dispatch_runtime_event, t2.runtime_event))
            op, ce = t1.operation_id, c.event

            def journal(journal_id: str, event: Any, state: str, at: int) -> str:
                return (
                    "INSERT INTO tool_journal_events (journal_event_id, operation_id, invocation_id, run_id, turn_id, "
                    "state, runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, committed_at) VALUES "
                    f"({q(journal_id)}, {q(op)}, {q(event['invocationId'])}, {q(event['runId'])}, "
                    f"{q(event['turnId'])}, {q(state)}, {q(event['id'])}, {q(t1.canonical_args_hash)}, "
                    f"{q(t1.recovery_mode)}, NULL, {at});"
                )

            first = (
                "BEGIN IMMEDIATE;" + self._event(c, t1.committed_at) + self._event(d, t1.committed_at)
                + journal(t1.journal_event_id, d.event, "prepared", t1.committed_at)
                + "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, "
                "tool_name, canonical_args_hash, recovery_mode, current_state, call_event_id, dispatch_event_id, "
                f"result_event_id, version) VALUES ({q(op)}, {q(ce['invocationId'])}, {q(ce['runId'])}, "
                f"{q(ce['turnId'])}, {q(t1.provider_tool_call_id)}, {q(t1.tool_name)}, {q(t1.canonical_args_hash)}, "
                f"{q(t1.recovery_mode)}, 'prepared', {q(ce['id'])}, {q(d.event['id'])}, NULL, 1);COMMIT;"
            )
            second = (
                "BEGIN IMMEDIATE;" + self._event(r, t2.committed_at)
                + journal(t2.journal_event_id, r.event, "outcome_committed", t2.committed_at)
                + f"UPDATE tool_operations SET current_state = 'outcome_committed', result_event_id = {q(r.event['id'])}, "
                f"version = version + 1 WHERE operation_id = {q(op)} AND current_state = 'prepared' "
                "AND result_event_id IS NULL;COMMIT;"
            )
            out.append((first, second))
        self.next += count
        return out


def measure_sqlite_floor(root: Path, rounds: int, slices: int, calls_per_slice: int, commits_per_slice: int,
                         calls_per_run: int, warmup_calls: int, warmup_commits: int) -> dict[str, Any]:
    """Median ratio of literal-script tool calls/s to literal-script raw commits/s."""
    store = RuntimeStore.open(root / "floor-store")  # the real v12 schema and pragmas
    raw = connect(root / "floor-raw" / "raw.sqlite", read_only=False)
    try:
        _check_pragmas(store.connection)
        _check_pragmas(raw)
        raw.execute("CREATE TABLE IF NOT EXISTS raw_commits (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        raw_script = "BEGIN IMMEDIATE;INSERT INTO raw_commits (payload) VALUES ('" + "x" * 578 + "');COMMIT;"
        scripts = _Scripts(calls_per_run)
        run_store, run_raw = store.connection.executescript, raw.executescript
        for first, second in scripts.take(warmup_calls):
            run_store(first)
            run_store(second)
        for _ in range(warmup_commits):
            run_raw(raw_script)
        per_round = []
        for _ in range(rounds):
            raw_s = calls_s = 0.0
            for _ in range(slices):
                batch = scripts.take(calls_per_slice)
                start = time.perf_counter()
                for _ in range(commits_per_slice):
                    run_raw(raw_script)
                raw_s += time.perf_counter() - start
                start = time.perf_counter()
                for first, second in batch:
                    run_store(first)
                    run_store(second)
                calls_s += time.perf_counter() - start
            raw_rate = slices * commits_per_slice / raw_s
            call_rate = slices * calls_per_slice / calls_s
            per_round.append({"rawCommitMs": 1e3 / raw_rate, "callMs": 1e3 / call_rate, "ratio": call_rate / raw_rate})
    finally:
        store.close()
        raw.close()
    return {
        "ratio": statistics.median(r["ratio"] for r in per_round),
        "perRound": per_round,
    }
