"""``python -m benchmarks.durable``: throughput of the durable SQLite store (issue 3).

Measures, in one process and on one disk (a temporary directory under ``--dir``):

1. **Tool calls per second through T1 + T2** on the real :class:`RuntimeStore`: per call one
   ``commit_tool_prepared`` (call + dispatch) and one ``commit_tool_outcome`` (response),
   i.e. two durable ``BEGIN IMMEDIATE … COMMIT`` transactions (spec 30 §2.3, §2.4). A run
   (one invocation) holds ``--calls-per-run`` calls; inputs are built before the clock starts.
2. **Raw commits per second**: single-row ``BEGIN IMMEDIATE; INSERT …; COMMIT`` transactions
   on a connection opened by the store's own ``connect()`` (same pragmas: WAL,
   ``synchronous=FULL``, ``busy_timeout``, ``foreign_keys``), row size ≈ a canonical call event.
3. **Store-shaped SQL** (the decomposition): exactly the rows T1 and T2 write (events,
   session ordinals, journal rows, the operation row and its compare-and-set update), with
   precomputed canonical payloads and no validation, in the same two transactions per call.
   ``raw → shaped`` is the cost of the bigger physical write set; ``shaped → store`` is the
   cost of the store's Python-side validation and checks.

   The three run after a warm-up (the WAL must reach its steady size: an fsync of a growing
   file costs several times one that overwrites WAL frames in place) in rounds of many
   small interleaved slices (raw, store, shaped, raw, …), so all three see the same disk
   conditions even when fsync latency drifts; the **ratio = (tool calls/s) / (raw
   commits/s)** is reported per round and from the medians (two commits per call make 0.5
   the physical ceiling).
   **Pages written per commit** (``benchmarks._write_set``, untimed): WAL frames appended by
   one raw commit, one T1 and one T2, and the b-trees they belong to. It explains why the
   ratio stays far below 0.5 where fsync is cheap (``--skip-write-set`` skips it).
4. **Where the time goes, by invocation size**: tool calls/s for several ``calls per run``,
   with the transition check, ``insert_event``, the canonicalisation and the ``COMMIT``
   timed separately (in-process wrappers around the store's functions; no store file is
   changed).
5. **Full projection rebuild** (``rebuild_tool_projections()``, spec 30 §3.2) of a ledger of
   ``--rebuild-events`` events (default 100 000), built quickly through the store's
   conversation-copy batch import (one transaction per session, tool facts included), then
   timed best-of-N (also as CPU time and with the cyclic GC off), with the share spent
   reading + decoding rows and scanning. The writer ``open()`` (migration check + full
   health scan, §2.1) of that database is timed too.

Prints markdown tables; ``--json PATH`` also writes the numbers. Results and method:
``docs/performance.md`` ("Durable writes and projection rebuild").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._events.encode import encode_runtime_event
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._store import RuntimeStore, T1Input, T2Input
from maka_ref._store.connection import connect
from maka_ref._store.rows import EVENT_COLUMNS, decode_event_row, event_kind

from benchmarks._write_set import measure_write_set

T1_PROTOCOL = "t1_after_preflight_v1"
SESSION = "bench-session"


# =======================================================================================
# Inputs
# =======================================================================================


def _envelope(event_id: str, run: int, ts: int, role: str, author: str, session: str = SESSION) -> dict[str, Any]:
    return {
        "id": event_id,
        "invocationId": f"{session}-inv-{run}",
        "runId": f"run-{run}",
        "sessionId": session,
        "turnId": f"turn-{run}",
        "ts": ts,
        "partial": False,
        "role": role,
        "author": author,
    }


def _tool_events(
    run: int, call: int, ts: int, session: str = SESSION, mode: str = "reconcile"
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(call, dispatch, response) of one realistic ``Write`` call (≈ 250-byte arguments)."""
    call_id = f"toolu_{run:06d}_{call:04d}"
    op = f"op-{session}-{run}-{call}"
    args = {"path": f"notes/{call % 97}.txt", "content": f"line {call}: " + "lorem ipsum dolor sit amet " * 8}
    c = _envelope(f"c-{session}-{run}-{call}", run, ts, "model", "agent", session)
    c["content"] = {"kind": "function_call", "id": call_id, "name": "Write", "args": args}
    c["refs"] = {"toolCallId": call_id}
    d = _envelope(f"{op}_dispatch", run, ts, "system", "system", session)
    d["actions"] = {
        "toolDispatch": {
            "protocol": T1_PROTOCOL,
            "operationId": op,
            "providerToolCallId": call_id,
            "toolName": "Write",
            "canonicalArgsHash": canonical_args_hash("Write", args),
            "recoveryMode": mode,
        }
    }
    d["refs"] = {"operationId": op, "toolCallId": call_id}
    r = _envelope(f"{op}_response", run, ts + 1, "tool", "tool", session)
    r["content"] = {"kind": "function_response", "id": call_id, "name": "Write", "result": {"ok": True, "bytes": 262}}
    r["refs"] = {"operationId": op, "toolCallId": call_id}
    r["actions"] = {"stateDelta": {"durationMs": 3}}
    return c, d, r


@dataclass
class _Call:
    t1: T1Input
    t2: T2Input


def _calls(first: int, count: int, calls_per_run: int, run_offset: int = 0) -> list[_Call]:
    out = []
    for n in range(first, first + count):
        run, call = run_offset + n // calls_per_run, n % calls_per_run
        ts = 1_700_000_000_000 + n * 10
        c, d, r = _tool_events(run, call, ts)
        fact = d["actions"]["toolDispatch"]
        op = fact["operationId"]
        t1 = T1Input(op, f"{op}_prepared", c, d, fact["providerToolCallId"], "Write", fact["canonicalArgsHash"],
                     fact["recoveryMode"], ts)
        out.append(_Call(t1, T2Input(op, f"{op}_outcome", r, ts + 1)))
    return out


# =======================================================================================
# Measurements
# =======================================================================================


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
        "perRound": [
            {k: {"rate": t.rate, "wallMs": t.wall_ms, "cpuMs": t.cpu_ms} for k, t in r.items()} for r in per_round
        ],
    }


#: Parts of one T1 + T2 timed by :class:`_Breakdown` (store functions wrapped in-process).
PARTS = (
    ("transition", "transition check (read + decode the invocation, scan)"),
    ("insert", "insert_event (identity, steering, seal checks + INSERTs)"),
    ("canonical", "prepare_t1/prepare_t2 (canonicalise inputs, args hash)"),
    ("commit", "COMMIT (WAL write + fsync)"),
)


class _Breakdown:
    """Wraps a few store functions *in this process only* to time them (the store's files are
    untouched): the transition check, ``insert_event``, the pre-transaction canonicalisation
    and the ``COMMIT`` of the store's write transaction. The remainder is everything else
    (operation/journal SQL, transaction plumbing, the benchmark loop)."""

    def __init__(self) -> None:
        self.acc = dict.fromkeys((key for key, _ in PARTS), 0.0)
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, module: Any, name: str, key: str) -> None:
        original = getattr(module, name)
        acc = self.acc

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                acc[key] += time.perf_counter() - start

        self._saved.append((module, name, original))
        setattr(module, name, timed)

    def __enter__(self) -> "_Breakdown":
        from contextlib import contextmanager

        from maka_ref._store import runtime_store, tool_writers

        self._wrap(tool_writers, "assert_tool_ledger_transition", "transition")
        self._wrap(tool_writers, "insert_event", "insert")
        self._wrap(tool_writers, "prepare_t1", "canonical")
        self._wrap(tool_writers, "prepare_t2", "canonical")
        original_tx = runtime_store.write_transaction
        acc = self.acc

        @contextmanager
        def write_transaction(conn: sqlite3.Connection) -> Any:
            manager = original_tx(conn)
            entered = manager.__enter__()
            try:
                yield entered
            except BaseException:
                if not manager.__exit__(*sys.exc_info()):
                    raise
                return
            start = time.perf_counter()
            manager.__exit__(None, None, None)  # COMMIT
            acc["commit"] += time.perf_counter() - start

        self._saved.append((runtime_store, "write_transaction", original_tx))
        runtime_store.write_transaction = write_transaction  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        self._saved.clear()


def measure_scaling(root: Path, sizes: list[int], calls: int, warmup_calls: int) -> list[dict[str, Any]]:
    """T1 + T2 per call for several invocation sizes, with the per-part breakdown."""
    out = []
    for size in sizes:
        print(f"scaling: {size} calls per run", file=sys.stderr, flush=True)
        store = StoreCalls(root / f"scaling-{size}", size)
        try:
            store.run(warmup_calls)
            # Start the timed calls at a run boundary so each measured run grows from empty.
            store.next = -(-store.next // size) * size
            with _Breakdown() as breakdown:
                timing = store.run(calls)
        finally:
            store.close()
        parts = {key: value / calls * 1e3 for key, value in breakdown.acc.items()}
        parts["other"] = timing.wall_ms - sum(parts.values())
        out.append({"callsPerRun": size, "rate": timing.rate, "wallMs": timing.wall_ms, "cpuMs": timing.cpu_ms,
                    "partsMs": parts})
    return out


# =======================================================================================
# Rebuild
# =======================================================================================


def _run_ledger(session: str, run: int, n_calls: int, shape: str) -> list[dict[str, Any]]:
    """One run: marker user event, ``n_calls`` rounds of (text, call, dispatch, response);
    ``shape`` ends it with a recovered crash (a prepared-only op + a recovery bundle) or a
    plain completion."""
    ts = 1_700_000_000_000 + run * 100_000
    user = _envelope(f"u-{session}-{run}", run, ts, "user", "user", session)
    user["content"] = {"kind": "text", "text": "please update the notes"}
    user["actions"] = {"runtimeProtocol": {"toolBoundary": T1_PROTOCOL}}
    events = [user]
    for k in range(n_calls):
        ts += 10
        text = _envelope(f"t-{session}-{run}-{k}", run, ts, "model", "agent", session)
        text["content"] = {"kind": "text", "text": f"Writing note {k}."}
        c, d, r = _tool_events(run, k, ts, session)
        last = k == n_calls - 1
        if last and shape in ("completed", "parked", "prepared"):
            events += [text, c, d]
            if shape == "prepared":
                break
            op = d["actions"]["toolDispatch"]["operationId"]
            refs = {"operationId": op, "toolCallId": c["content"]["id"]}
            obs = "matches_expected_state" if shape == "completed" else "diverged"
            rec = _envelope(f"{op}_reconcile", run, ts + 2, "system", "system", session)
            rec["actions"] = {"toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 1, "payload": {
                "protocol": "tool_reconcile_v1", "operationId": op, "observation": obs,
                "observationSchema": "state_identity_v1", "observationDigest": "sha256:" + "a" * 64}}}
            rec["refs"] = dict(refs)
            evidence = [c["id"], d["id"], rec["id"]]
            if shape == "completed":
                r["ts"] = ts + 3
                payload = {"protocol": "tool_recovery_v1", "operationId": op, "disposition": "completed",
                           "reasonCode": "reconcile_matches_expected_state", "outcomeEventId": r["id"],
                           "evidenceEventIds": evidence + [r["id"]]}
                tail = [rec, r]
            else:
                payload = {"protocol": "tool_recovery_v1", "operationId": op, "disposition": "parked",
                           "reasonCode": "reconcile_diverged", "evidenceEventIds": evidence}
                tail = [rec]
            dec = _envelope(f"{op}_decision", run, ts + 4, "system", "system", session)
            dec["actions"] = {"toolRecovery": {"kind": "maka.tool.recovery_decision", "version": 1, "payload": payload}}
            dec["refs"] = dict(refs)
            events += tail + [dec]
        else:
            events += [text, c, d, r]
    end = _envelope(f"end-{session}-{run}", run, ts + 50, "system", "system", session)
    end["status"] = "completed"
    end["actions"] = {"endInvocation": True, "stateDelta": {}}
    events.append(end)
    return events


def build_rebuild_ledger(store: RuntimeStore, target_events: int, runs_per_session: int = 100,
                         calls_per_run: int = 24) -> dict[str, int]:
    """≈ ``target_events`` events: sessions of ``runs_per_session`` runs of ≈ 4×calls+3 events
    (one run in ten ends with a prepared-only op, one with a completed and one with a parked
    recovery bundle), imported with one conversation copy per session."""
    shapes = ["normal"] * 7 + ["prepared", "completed", "parked"]
    total = 0
    session_no = 0
    while total < target_events:
        session_no += 1
        session = f"bench-session-{session_no}"
        runs = []
        for i in range(runs_per_session):
            if total >= target_events:
                break
            run = session_no * 10_000 + i
            events = _run_ledger(session, run, calls_per_run, shapes[i % len(shapes)])
            runs.append((f"run-{run}", events))
            total += len(events)
        print(f"rebuild ledger: importing {session} ({total:,} events so far)", file=sys.stderr, flush=True)
        store.import_conversation_copy(session, runs)
    return {"events": total, "sessions": session_no}


def measure_rebuild(root: Path, target_events: int, repeat: int) -> dict[str, Any]:
    directory = root / "rebuild"
    store = RuntimeStore.open(directory)
    build_start = time.perf_counter()
    built = build_rebuild_ledger(store, target_events)
    build_s = time.perf_counter() - build_start
    store.close()

    opens = [_timed(1, lambda: RuntimeStore.open(directory).close()) for _ in range(repeat)]
    store = RuntimeStore.open(directory)
    try:
        n_events = store.connection.execute("SELECT COUNT(*) FROM runtime_events").fetchone()[0]
        timings = []
        report = None
        for _ in range(repeat):
            box: dict[str, Any] = {}
            timings.append(_timed(1, lambda: box.setdefault("r", store.rebuild_tool_projections())))
            report = box["r"]
        assert report is not None
        gc.collect()
        gc.disable()  # how much of it is the cyclic GC walking the freshly decoded events
        try:
            no_gc = _timed(1, store.rebuild_tool_projections)
        finally:
            gc.enable()

        # Breakdown (read-only, same statements as the rebuild's first two steps, spec 30 §3.2).
        conn = store.connection
        rows_box: dict[str, Any] = {}
        t_select = _timed(1, lambda: rows_box.setdefault("rows", conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM runtime_events ORDER BY invocation_id ASC, event_seq ASC, event_id ASC"
        ).fetchall()))
        t_decode = _timed(
            1, lambda: rows_box.setdefault("events", [decode_event_row(r).event for r in rows_box["rows"]])
        )
        t_scan = _timed(1, lambda: scan_tool_ledger(rows_box["events"]))
    finally:
        store.close()
    best = min(t.wall for t in timings)
    return {
        "events": n_events,
        "sessions": built["sessions"],
        "buildSeconds": build_s,
        "buildEventsPerSecond": n_events / build_s,
        "operations": report.operations,
        "journalEvents": report.journal_events,
        "rebuildSeconds": [t.wall for t in timings],
        "rebuildBestSeconds": best,
        "rebuildMedianSeconds": _median([t.wall for t in timings]),
        "rebuildEventsPerSecond": n_events / best,
        "rebuildCpuSeconds": min(t.cpu for t in timings),
        "rebuildNoGcSeconds": no_gc.wall,
        "selectSeconds": t_select.wall,
        "decodeSeconds": t_decode.wall,
        "scanSeconds": t_scan.wall,
        "openSeconds": min(t.wall for t in opens),
        "openAllSeconds": [t.wall for t in opens],
        "dbMB": sum(p.stat().st_size for p in directory.iterdir()) / 1e6,
    }


# =======================================================================================
# Report
# =======================================================================================


def _filesystem(path: Path) -> str:
    try:
        best = ("", "?", "?")
        resolved = str(path.resolve())
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                device, mount, fstype = line.split()[:3]
                if resolved.startswith(mount.rstrip("/") + "/") and len(mount) > len(best[0]):
                    best = (mount, fstype, device)
        return f"{best[1]} on {best[2]} (mounted at {best[0]})"
    except OSError:
        return "unknown"


def _print_write_set(ws: dict[str, Any]) -> None:
    print()
    print(f"### Pages written per commit (WAL frames of {ws['pageSize']} bytes, mean of {ws['commits']} commits each)")
    print()
    print("| commit | WAL frames | b-trees touched (commits of the sample that touched it) |")
    print("|---|---:|---|")
    print(f"| raw single-row commit | {ws['rawFrames']:.1f} | raw_commits |")
    for key, label in (("t1", "T1 `commit_tool_prepared`"), ("t2", "T2 `commit_tool_outcome`")):
        trees = ws[f"{key}Btrees"]
        listed = ", ".join(f"{name} ({count})" for name, count in trees.items()) if trees else "(no dbstat)"
        print(f"| {label} | {ws[f'{key}Frames']:.1f} | {listed} |")


def print_report(env: dict[str, Any], tp: dict[str, Any] | None, scaling: list[dict[str, Any]] | None,
                 rb: dict[str, Any] | None, ws: dict[str, Any] | None = None) -> None:
    print(f"Python {env['python']}, SQLite {env['sqlite']}, {env['platform']}, {env['cpus']} CPUs")
    print(f"directory: {env['dir']} ({env['filesystem']}); journal_mode=wal, synchronous=FULL (asserted)")
    if tp is not None:
        print()
        print(f"### T1+T2 throughput vs raw commits ({tp['rounds']} rounds of {tp['slicesPerRound']} interleaved "
              f"slices; {tp['callsPerRound']} calls and {tp['rawCommitsPerRound']} raw commits per round; "
              f"{tp['callsPerRun']} calls per run; raw row {tp['payloadBytes']} bytes)")
        print()
        print("| measurement | unit | median rate /s | best rate /s | wall ms per unit | CPU ms per unit |")
        print("|---|---|---:|---:|---:|---:|")
        for key, label, unit in (
            ("raw", "raw single-row commit", "commit"),
            ("shaped", "store-shaped SQL, T1+T2 rows, no checks (2 commits)", "tool call"),
            ("store", "RuntimeStore T1 + T2 (2 commits)", "tool call"),
        ):
            s = tp[key]
            print(f"| {label} | {unit} | {s['medianRate']:,.0f} | {s['bestRate']:,.0f} | "
                  f"{s['medianWallMs']:.3f} | {s['medianCpuMs']:.3f} |")
        print()
        print(f"**ratio = tool calls/s ÷ raw commits/s = {tp['ratio']:.3f}** (ceiling 0.5, target ≥ 0.4); "
              f"store-shaped SQL alone: {tp['ratioShaped']:.3f} (the schema's own ceiling on this disk; the "
              f"store reaches {tp['ratio'] / tp['ratioShaped']:.0%} of it); per round: "
              + ", ".join(f"{r:.3f}" for r in tp["perRoundRatios"]))
    if ws is not None:
        _print_write_set(ws)
    if scaling:
        print()
        print("### Where one T1 + T2 spends its time, by invocation size (ms per tool call)")
        print()
        print("| calls per run (invocation) | tool calls/s | wall | CPU | "
              + " | ".join(label for _, label in PARTS) + " | other |")
        print("|---:|---:|---:|---:|" + "---:|" * (len(PARTS) + 1))
        for row in scaling:
            parts = row["partsMs"]
            print(f"| {row['callsPerRun']} | {row['rate']:,.0f} | {row['wallMs']:.2f} | {row['cpuMs']:.2f} | "
                  + " | ".join(f"{parts[key]:.2f}" for key, _ in PARTS) + f" | {parts['other']:.2f} |")
    if rb is not None:
        print()
        print(f"### Full projection rebuild ({rb['events']:,} events, {rb['sessions']} sessions, "
              f"{rb['dbMB']:.0f} MB on disk)")
        print()
        print("| step | seconds | events/s |")
        print("|---|---:|---:|")
        print(f"| build via conversation-copy import (not part of the rebuild) | {rb['buildSeconds']:.1f} | "
              f"{rb['buildEventsPerSecond']:,.0f} |")
        print(f"| `rebuild_tool_projections()` best of {len(rb['rebuildSeconds'])} "
              f"({rb['operations']:,} operations, {rb['journalEvents']:,} journal rows) | "
              f"{rb['rebuildBestSeconds']:.2f} | {rb['rebuildEventsPerSecond']:,.0f} |")
        print(f"| same, CPU seconds (process time) | {rb['rebuildCpuSeconds']:.2f} | "
              f"{rb['events'] / rb['rebuildCpuSeconds']:,.0f} |")
        print(f"| same, cyclic GC disabled | {rb['rebuildNoGcSeconds']:.2f} | "
              f"{rb['events'] / rb['rebuildNoGcSeconds']:,.0f} |")
        print(f"| … of which SELECT all rows | {rb['selectSeconds']:.2f} | "
              f"{rb['events'] / rb['selectSeconds']:,.0f} |")
        print(f"| … of which decode rows (identity re-check) | {rb['decodeSeconds']:.2f} | "
              f"{rb['events'] / rb['decodeSeconds']:,.0f} |")
        print(f"| … of which `scan_tool_ledger` | {rb['scanSeconds']:.2f} | "
              f"{rb['events'] / rb['scanSeconds']:,.0f} |")
        print(f"| writer `RuntimeStore.open()` + `close()` (full health scan), best of "
              f"{len(rb['openAllSeconds'])} | {rb['openSeconds']:.2f} | "
              f"{rb['events'] / rb['openSeconds']:,.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.durable", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=None, help="parent of the temporary directory (default: the system temp dir)")
    parser.add_argument("--calls", type=int, default=300, help="tool calls per round (T1+T2 each)")
    parser.add_argument("--raw-commits", type=int, default=600, help="raw single-row commits per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--slices", type=int, default=30, help="interleaved slices per round")
    parser.add_argument("--calls-per-run", type=int, default=10, help="tool calls per run/invocation")
    parser.add_argument("--warmup-calls", type=int, default=300)
    parser.add_argument("--warmup-commits", type=int, default=2000)
    parser.add_argument("--scaling", default="1,10,100", help="calls-per-run sizes for the scaling table ('' = skip)")
    parser.add_argument("--scaling-calls", type=int, default=200)
    parser.add_argument("--rebuild-events", type=int, default=100_000, help="0 = skip the rebuild measurement")
    parser.add_argument("--rebuild-repeat", type=int, default=3)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-write-set", action="store_true", help="skip counting WAL frames per commit")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary databases")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="maka-durable-bench-", dir=args.dir))
    env = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "dir": str(root),
        "filesystem": _filesystem(root),
    }
    try:
        tp = None
        if not args.skip_throughput:
            tp = measure_throughput(root, args.calls, args.rounds, args.raw_commits, args.slices,
                                    args.calls_per_run, args.warmup_calls, args.warmup_commits)
        ws = None if args.skip_write_set else measure_write_set(root)
        sizes = [int(s) for s in args.scaling.split(",") if s]
        scaling = measure_scaling(root, sizes, args.scaling_calls, min(args.warmup_calls, 200)) if sizes else None
        rb = measure_rebuild(root, args.rebuild_events, args.rebuild_repeat) if args.rebuild_events > 0 else None
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_report(env, tp, scaling, rb, ws)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump({"env": env, "throughput": tp, "writeSet": ws, "scaling": scaling, "rebuild": rb}, fh,
                      indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
