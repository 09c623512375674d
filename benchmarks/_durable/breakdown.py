"""Where one T1 + T2 spends its time in ``python -m benchmarks.durable``: in-process wrappers
around store functions, by invocation size. Separate because it patches store modules while
it runs, and nothing else in the benchmark should live next to that.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._durable.throughput import StoreCalls


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

        from maka_ref._store import runtime_store
        from maka_ref._store.writers import outcome as outcome_step
        from maka_ref._store.writers import tool as tool_writers

        # T1 runs in ``writers.tool``; T2's checks and insert run in ``writers.outcome``.
        for module in (tool_writers, outcome_step):
            self._wrap(module, "assert_tool_ledger_transition", "transition")
            self._wrap(module, "insert_event", "insert")
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
