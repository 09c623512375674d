"""T1+T2 throughput of ``python -m benchmarks.durable``: raw commits, the real store and the
store-shaped SQL, run in interleaved slices. Separate because the timing helpers and the three
runners are shared (``benchmarks._write_set``, ``benchmarks.loop``, the scaling table), while the
CLI, the rebuild and the report are not.
"""

from __future__ import annotations

import gc
import sqlite3
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from maka_ref._events.encode import encode_runtime_event
from maka_ref._store import RuntimeStore, T1Input
from maka_ref._store.engine.connection import connect
from maka_ref._store.engine.rows import event_kind

from benchmarks._durable.inputs import _calls


@dataclass
class Timing:
    count: int
    wall: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.count / self.wall

    @property
    def wall_ms(self) -> float:
        return self.wall / self.count * 1e3

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.count * 1e3


def _timed(count: int, fn: Callable[[], None]) -> Timing:
    gc.collect()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    fn()
    return Timing(count, time.perf_counter() - wall0, time.process_time() - cpu0)


def _check_pragmas(conn: sqlite3.Connection) -> None:
    """The comparison is only fair with the store's durability settings (spec 30 §1.1)."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    if str(mode).lower() != "wal" or sync != 2:
        raise SystemExit(f"unexpected pragmas: journal_mode={mode} synchronous={sync} (need wal / FULL=2)")


class RawCommits:
    """Single-row ``BEGIN IMMEDIATE; INSERT; COMMIT`` on the store's own connection setup."""

    def __init__(self, directory: Path, payload_bytes: int) -> None:
        self.conn = connect(directory / "raw.sqlite", read_only=False)
        _check_pragmas(self.conn)
        self.conn.execute("CREATE TABLE IF NOT EXISTS raw_commits (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        self.payload = "x" * payload_bytes

    def run(self, count: int) -> Timing:
        execute, payload = self.conn.execute, self.payload

        def body() -> None:
            for _ in range(count):
                execute("BEGIN IMMEDIATE")
                execute("INSERT INTO raw_commits (payload) VALUES (?)", (payload,))
                execute("COMMIT")

        return _timed(count, body)

    def close(self) -> None:
        self.conn.close()


class StoreCalls:
    """T1 + T2 per tool call on the real store."""

    def __init__(self, directory: Path, calls_per_run: int, run_offset: int = 0) -> None:
        self.store = RuntimeStore.open(directory)
        _check_pragmas(self.store.connection)
        self.calls_per_run = calls_per_run
        self.run_offset = run_offset
        self.next = 0

    def run(self, count: int) -> Timing:
        calls = _calls(self.next, count, self.calls_per_run, self.run_offset)
        self.next += count
        prepared, outcome = self.store.commit_tool_prepared, self.store.commit_tool_outcome

        def body() -> None:
            for call in calls:
                if not prepared(call.t1).created or not outcome(call.t2).created:
                    raise AssertionError("benchmark call was not created")

        return _timed(count, body)

    def close(self) -> None:
        self.store.close()


class ShapedSql:
    """The rows T1 and T2 write, with precomputed canonical payloads and no checks."""

    def __init__(self, directory: Path, calls_per_run: int) -> None:
        store = RuntimeStore.open(directory)  # creates the real schema (v12) with the real pragmas
        self.conn = store.connection
        self._store = store
        _check_pragmas(self.conn)
        self.calls_per_run = calls_per_run
        self.next = 0
        self.ordinal = 0
        self.seqs: dict[str, int] = {}

    def run(self, count: int) -> Timing:
        calls = _calls(self.next, count, self.calls_per_run)
        self.next += count
        rows = []
        for call in calls:
            t1 = call.t1
            raw_events = (t1.runtime_event, t1.dispatch_runtime_event, call.t2.runtime_event)
            enc = [encode_runtime_event(e) for e in raw_events]
            rows.append((t1, call.t2, enc))
        execute = self.conn.execute
        seqs = self.seqs

        def insert_event(encoded: Any, committed_at: int) -> None:
            e = encoded.event
            seq = seqs.get(e["invocationId"], 0) + 1
            seqs[e["invocationId"]] = seq
            execute(
                "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, "
                "event_kind, payload_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (e["id"], e["sessionId"], e["invocationId"], e["runId"], e["turnId"], seq, event_kind(e),
                 encoded.canonical_json, committed_at),
            )
            self.ordinal += 1
            execute("INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) VALUES (?, ?, ?)",
                    (e["sessionId"], self.ordinal, e["id"]))

        def journal(op: str, jid: str, e: Any, state: str, t1: T1Input, at: int) -> None:
            execute(
                "INSERT INTO tool_journal_events (journal_event_id, operation_id, invocation_id, run_id, turn_id, "
                "state, runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, committed_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                (jid, op, e["invocationId"], e["runId"], e["turnId"], state, e["id"], t1.canonical_args_hash,
                 t1.recovery_mode, at),
            )

        def body() -> None:
            for t1, t2, (call, dispatch, response) in rows:
                op = t1.operation_id
                execute("BEGIN IMMEDIATE")
                insert_event(call, t1.committed_at)
                insert_event(dispatch, t1.committed_at)
                journal(op, t1.journal_event_id, dispatch.event, "prepared", t1, t1.committed_at)
                c = call.event
                execute(
                    "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, "
                    "tool_name, canonical_args_hash, recovery_mode, current_state, call_event_id, dispatch_event_id, "
                    "result_event_id, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'prepared', ?, ?, NULL, 1)",
                    (op, c["invocationId"], c["runId"], c["turnId"], t1.provider_tool_call_id, t1.tool_name,
                     t1.canonical_args_hash, t1.recovery_mode, c["id"], dispatch.event["id"]),
                )
                execute("COMMIT")
                execute("BEGIN IMMEDIATE")
                insert_event(response, t2.committed_at)
                journal(op, t2.journal_event_id, response.event, "outcome_committed", t1, t2.committed_at)
                execute(
                    "UPDATE tool_operations SET current_state = 'outcome_committed', result_event_id = ?, "
                    "version = version + 1 WHERE operation_id = ? AND current_state = 'prepared' "
                    "AND result_event_id IS NULL",
                    (response.event["id"], op),
                )
                execute("COMMIT")

        return _timed(count, body)

    def close(self) -> None:
        self._store.close()


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _add(a: Timing | None, b: Timing) -> Timing:
    return b if a is None else Timing(a.count + b.count, a.wall + b.wall, a.cpu + b.cpu)


def measure_throughput(root: Path, calls: int, rounds: int, raw_commits: int, slices: int, calls_per_run: int,
                       warmup_calls: int, warmup_commits: int) -> dict[str, Any]:
    """Rounds of ``slices`` fine-grained slices; each slice runs raw commits, store calls and
    shaped calls back to back, so all three see the same disk conditions (fsync latency on
    shared or virtual disks drifts on a scale of seconds)."""
    sample = _calls(0, 1, 1)[0].t1.runtime_event
    payload_bytes = len(encode_runtime_event(sample).canonical_json.encode("utf-8"))
    raw = RawCommits(root / "raw", payload_bytes)
    store = StoreCalls(root / "store", calls_per_run)
    shaped = ShapedSql(root / "shaped", calls_per_run)
    calls_per_slice = max(1, calls // slices)
    commits_per_slice = max(1, raw_commits // slices)
    try:
        print(f"warm-up: {warmup_commits} raw commits, {warmup_calls} store calls, {warmup_calls} shaped calls",
              file=sys.stderr, flush=True)
        raw.run(warmup_commits)
        store.run(warmup_calls)
        shaped.run(warmup_calls)
        per_round = []
        for r in range(rounds):
            print(f"round {r + 1}/{rounds}", file=sys.stderr, flush=True)
            totals: dict[str, Timing | None] = {"raw": None, "store": None, "shaped": None}
            for _ in range(slices):
                totals["raw"] = _add(totals["raw"], raw.run(commits_per_slice))
                totals["store"] = _add(totals["store"], store.run(calls_per_slice))
                totals["shaped"] = _add(totals["shaped"], shaped.run(calls_per_slice))
            per_round.append({k: v for k, v in totals.items() if v is not None})
    finally:
        raw.close()
        store.close()
        shaped.close()

    def summary(key: str) -> dict[str, float]:
        timings = [r[key] for r in per_round]
        return {
            "medianRate": _median([t.rate for t in timings]),
            "bestRate": max(t.rate for t in timings),
            "medianWallMs": _median([t.wall_ms for t in timings]),
            "medianCpuMs": _median([t.cpu_ms for t in timings]),
        }

    raw_s, store_s, shaped_s = summary("raw"), summary("store"), summary("shaped")
    return {
        "payloadBytes": payload_bytes,
        "callsPerRound": calls_per_slice * slices,
        "rawCommitsPerRound": commits_per_slice * slices,
        "slicesPerRound": slices,
        "rounds": rounds,
        "callsPerRun": calls_per_run,
        "raw": raw_s,
        "store": store_s,
        "shaped": shaped_s,
        "ratio": store_s["medianRate"] / raw_s["medianRate"],
        "ratioShaped": shaped_s["medianRate"] / raw_s["medianRate"],
        "perRoundRatios": [r["store"].rate / r["raw"].rate for r in per_round],
        # The store's share of the schema's own ceiling (issue 18: target ≥ 0.8), per round
        # (store and shaped calls of one round ran in the same interleaved slices).
        "ceilingShare": store_s["medianRate"] / shaped_s["medianRate"],
        "perRoundCeilingShares": [r["store"].rate / r["shaped"].rate for r in per_round],
        "perRound": [
            {k: {"rate": t.rate, "wallMs": t.wall_ms, "cpuMs": t.cpu_ms} for k, t in r.items()} for r in per_round
        ],
    }
