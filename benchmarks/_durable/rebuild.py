"""Full projection rebuild of ``python -m benchmarks.durable``: a large ledger built through
the conversation-copy import, then ``rebuild_tool_projections()`` and the writer ``open()``
timed. Separate because building and timing a 100k-event ledger is its own job, unrelated to
the per-commit measurements.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._store import RuntimeStore
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row

from benchmarks._durable.inputs import T1_PROTOCOL, _envelope, _tool_events
from benchmarks._durable.throughput import _median, _timed


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
