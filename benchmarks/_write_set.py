"""How many WAL frames (database pages) one commit writes: raw single-row commit vs T1 vs T2.

Why: the durable-write target (issue 3) assumes both sides are bound by one fsync per commit,
so that a tool call (two commits) costs two raw commits. On storage where fsync is cheap the
cost of a commit follows the pages it writes instead, and the spec's schema (spec 30 §1.2)
makes T1 and T2 touch one leaf page in each of about 15 b-trees (tables, their UNIQUE
autoindexes, the named indexes, ``sqlite_sequence``), where the raw commit touches one or
two. This measurement makes that difference visible in the same report as the ratio.

Method: on fresh databases with the store's pragmas, after a warm-up, the WAL is
checkpointed and truncated and automatic checkpoints are switched off; each commit then
appends exactly its frames, so ``Δ(size of -wal) / (page_size + 24)`` counts them. When
SQLite has the ``dbstat`` table, each frame's page number is mapped to the b-tree it belongs
to. Nothing here is timed.
"""

from __future__ import annotations

import sqlite3
import struct
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from benchmarks._durable.inputs import _calls
from benchmarks._durable.throughput import RawCommits, StoreCalls

__all__ = ["measure_write_set"]

_WAL_HEADER = 32
_FRAME_HEADER = 24


class _WalWatch:
    """Frames appended to one database's ``-wal`` by each commit (checkpoints off)."""

    def __init__(self, conn: sqlite3.Connection, db_path: Path) -> None:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        self.page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        self.wal = Path(str(db_path) + "-wal")
        self.db_path = db_path

    def frames_of(self, commit: Callable[[], Any]) -> list[int]:
        """Page numbers of the frames ``commit()`` appended, in order."""
        before = max(self.wal.stat().st_size, _WAL_HEADER)
        commit()
        with open(self.wal, "rb") as fh:
            fh.seek(before)
            data = fh.read()
        step = self.page_size + _FRAME_HEADER
        return [struct.unpack(">I", data[off:off + 4])[0] for off in range(0, len(data) - step + 1, step)]

    def btree_names(self) -> dict[int, str] | None:
        """page number → b-tree name, or None when this SQLite has no ``dbstat``."""
        probe = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
        try:
            names = {int(page): str(name) for page, name in probe.execute("SELECT pageno, name FROM dbstat")}
        except sqlite3.DatabaseError:
            return None
        finally:
            probe.close()
        names[1] = "page 1 (file header: database size)"  # also sqlite_schema's root
        return names


def _by_count(trees: Counter[str]) -> dict[str, int] | None:
    """Most-touched first, ties by name (``most_common`` alone keeps hash-dependent order)."""
    return dict(sorted(trees.items(), key=lambda item: (-item[1], item[0]))) if trees else None


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def measure_write_set(root: Path, calls: int = 40, warmup_calls: int = 200) -> dict[str, Any]:
    """Mean frames per commit for raw commits, T1 and T2; the b-trees T1 and T2 touched."""

    store = StoreCalls(root / "write-set-store", calls_per_run=10, run_offset=10_000)
    raw = RawCommits(root / "write-set-raw", payload_bytes=578)
    try:
        store.run(warmup_calls)
        raw.run(warmup_calls)
        store_watch = _WalWatch(store.store.connection, store.store.db_path)
        raw_watch = _WalWatch(raw.conn, root / "write-set-raw" / "raw.sqlite")
        t1_frames: list[int] = []
        t2_frames: list[int] = []
        t1_trees: Counter[str] = Counter()
        t2_trees: Counter[str] = Counter()
        for call in _calls(warmup_calls, calls, 10, run_offset=10_000):
            t1_pages = store_watch.frames_of(lambda: store.store.commit_tool_prepared(call.t1))
            t2_pages = store_watch.frames_of(lambda: store.store.commit_tool_outcome(call.t2))
            t1_frames.append(len(t1_pages))
            t2_frames.append(len(t2_pages))
            names = store_watch.btree_names()
            if names is not None:
                t1_trees.update({names.get(page, "other") for page in t1_pages})
                t2_trees.update({names.get(page, "other") for page in t2_pages})
        execute = raw.conn.execute

        def raw_commit() -> None:
            execute("BEGIN IMMEDIATE")
            execute("INSERT INTO raw_commits (payload) VALUES (?)", (raw.payload,))
            execute("COMMIT")

        raw_frames = [len(raw_watch.frames_of(raw_commit)) for _ in range(calls)]
    finally:
        store.close()
        raw.close()
    return {
        "pageSize": store_watch.page_size,
        "commits": calls,
        "rawFrames": _mean(raw_frames),
        "t1Frames": _mean(t1_frames),
        "t2Frames": _mean(t2_frames),
        "t1Btrees": _by_count(t1_trees),
        "t2Btrees": _by_count(t2_trees),
    }
