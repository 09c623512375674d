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
   **The same rows as literal SQL scripts** (``benchmarks._durable.floor``): each T1 and T2
   one ``executescript`` call, parsed and run entirely inside SQLite, against a raw commit
   run the same way, interleaved likewise: the ceiling of any store writing this schema
   (``--skip-floor`` skips it).
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

6. **Upstream's store** (only with ``--upstream DIR``, a built ``maka-agent`` checkout, and a Node
   with ``node:sqlite``): the same calls through upstream's ``commitToolPrepared`` /
   ``commitToolOutcome`` against a raw ``node:sqlite`` commit, interleaved the same way
   (``benchmarks/_durable/upstream.mjs``).

Prints markdown tables; ``--json PATH`` also writes the numbers. Results and method:
``docs/performance.md`` ("Durable writes and projection rebuild").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import tempfile
from pathlib import Path

from benchmarks._durable.breakdown import measure_scaling
from benchmarks._durable.floor import measure_sqlite_floor
from benchmarks._durable.inputs import _calls
from benchmarks._durable.rebuild import measure_rebuild
from benchmarks._durable.report import _filesystem, print_report
from benchmarks._durable.throughput import RawCommits, StoreCalls, measure_throughput
from benchmarks._durable.upstream import measure_upstream
from benchmarks._write_set import measure_write_set

#: ``main`` plus the names other code imports from here (``benchmarks.loop``: ``StoreCalls``,
#: ``_filesystem``; ``RawCommits`` and ``_calls``, which ``benchmarks._write_set`` used to import
#: from here). The implementation lives in the ``benchmarks._durable_*`` modules.
__all__ = ["RawCommits", "StoreCalls", "_calls", "_filesystem", "main"]


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
    parser.add_argument("--skip-floor", action="store_true",
                        help="skip the literal-SQL-script ceiling check (same rows, no Python per statement)")
    parser.add_argument("--upstream", default=None,
                        help="a built maka-agent checkout: also time its store with node:sqlite (needs Node >= 22.19)")
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
        floor = None
        if not args.skip_throughput and not args.skip_floor:
            floor = measure_sqlite_floor(root, args.rounds, args.slices, max(1, args.calls // args.slices),
                                         max(1, args.raw_commits // args.slices), args.calls_per_run,
                                         args.warmup_calls, args.warmup_commits)
        upstream = None
        if args.upstream and not args.skip_throughput:
            upstream = measure_upstream(root, args.upstream, args.rounds, args.slices, max(1, args.calls // args.slices),
                                        max(1, args.raw_commits // args.slices), args.calls_per_run,
                                        args.warmup_calls, args.warmup_commits)
        sizes = [int(s) for s in args.scaling.split(",") if s]
        scaling = measure_scaling(root, sizes, args.scaling_calls, min(args.warmup_calls, 200)) if sizes else None
        rb = measure_rebuild(root, args.rebuild_events, args.rebuild_repeat) if args.rebuild_events > 0 else None
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_report(env, tp, scaling, rb, ws, floor, upstream)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump({"env": env, "throughput": tp, "sqliteFloor": floor, "upstream": upstream, "writeSet": ws, "scaling": scaling,
                       "rebuild": rb}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
