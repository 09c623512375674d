"""``python -m benchmarks.integrity [--sizes 10000,100000] [--repeat N] [--dir DIR] [--json PATH]``.

What the integrity check of every writer open costs (issue 13 item 1; docs/performance.md
"Integrity check on open"). ``RuntimeStore.open`` refuses a damaged store before its first write
(``maka_ref._store.engine.faults``); the question is which check it can afford:

* ``PRAGMA quick_check`` — B-tree structure, but *not* whether index entries match their rows
  (it misses the flipped index byte of ``tests/hostile/test_store_faults.py``);
* ``PRAGMA integrity_check`` — everything ``quick_check`` does plus the index/row comparison.

Per store size, in one process and on one disk, best of ``--repeat``, round-robin so background
load hits every measurement alike:

1. **open without the check** — ``RuntimeStore.open`` + ``close`` with the check replaced by a
   no-op: connect, pragmas, migration check, capability gate and the full health scan (§2.1).
   This is the baseline: what an open cost before the check existed;
2. **quick_check** and **integrity_check** — each on a fresh read-only handle, as the open runs it;
3. **open with the check** — ``RuntimeStore.open`` as shipped.

Ratios: check / open-without-check. The store is built like ``benchmarks.durable``'s rebuild
ledger (sessions of 100 runs, 24 tool calls a run, recovery bundles in one run in ten),
through the store's conversation-copy import.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from maka_ref._store import RuntimeStore, runtime_store
from maka_ref._store.engine.connection import connect

from benchmarks._durable.rebuild import build_rebuild_ledger

STEPS = ("openWithoutCheck", "quickCheck", "integrityCheck", "openWithCheck")


def _pragma_on_read_only(db: Path, pragma: str) -> Callable[[], None]:
    def run() -> None:
        conn = connect(db, read_only=True)
        try:
            assert conn.execute(pragma).fetchall() == [("ok",)]
        finally:
            conn.close()

    return run


def _open_without_check(root: Path) -> Callable[[], None]:
    def run() -> None:
        original = runtime_store._refuse_damaged
        runtime_store._refuse_damaged = lambda db_path: None  # type: ignore[assignment]
        try:
            RuntimeStore.open(root).close()
        finally:
            runtime_store._refuse_damaged = original

    return run


def measure(root: Path, n_events: int, repeat: int) -> dict[str, Any]:
    directory = root / f"store-{n_events}"
    store = RuntimeStore.open(directory)
    try:
        build_rebuild_ledger(store, n_events)
        events = store.connection.execute("SELECT COUNT(*) FROM runtime_events").fetchone()[0]
    finally:
        store.close()
    db = directory / runtime_store.DB_FILE_NAME
    steps: dict[str, Callable[[], None]] = {
        "openWithoutCheck": _open_without_check(directory),
        "quickCheck": _pragma_on_read_only(db, "PRAGMA quick_check"),
        "integrityCheck": _pragma_on_read_only(db, "PRAGMA integrity_check"),
        "openWithCheck": lambda: RuntimeStore.open(directory).close(),
    }
    best = {name: float("inf") for name in STEPS}
    for _ in range(repeat):
        for name in STEPS:
            start = time.perf_counter()
            steps[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["openWithoutCheck"]
    return {
        "events": events,
        "dbMB": round(db.stat().st_size / 1e6, 1),
        "seconds": {name: round(value, 4) for name, value in best.items()},
        "ratios": {
            "quickCheck/openWithoutCheck": round(best["quickCheck"] / base, 3),
            "integrityCheck/openWithoutCheck": round(best["integrityCheck"] / base, 3),
            "openWithCheck/openWithoutCheck": round(best["openWithCheck"] / base, 3),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.integrity", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="store sizes in events (comma-separated)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the stores are built (default: a temporary directory)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.sizes.split(",") if part]
    root = Path(tempfile.mkdtemp(prefix="maka-bench-integrity-", dir=args.dir))
    try:
        results = [measure(root, size, args.repeat) for size in sizes]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    document = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "repeat": args.repeat,
        "results": results,
    }
    text = json.dumps(document, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
