"""Smoke test: ``python -m benchmarks.durable`` runs end to end at a tiny size, and its
write-set measurement (WAL frames per commit, ``benchmarks._write_set``) counts real pages
of the b-trees spec 30 §2.3/§2.4 say T1 and T2 write. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import durable  # noqa: E402
from benchmarks._write_set import measure_write_set  # noqa: E402


def test_durable_benchmark_runs_tiny(tmp_path: Path, capsys) -> None:
    out = tmp_path / "durable.json"
    argv = ["--dir", str(tmp_path), "--calls", "4", "--raw-commits", "4", "--rounds", "1", "--slices", "2",
            "--warmup-calls", "2", "--warmup-commits", "2", "--scaling", "", "--rebuild-events", "0",
            "--json", str(out)]
    assert durable.main(argv) == 0
    printed = capsys.readouterr().out
    assert "**ratio = tool calls/s ÷ raw commits/s" in printed
    assert "### Pages written per commit" in printed
    assert "literal SQL scripts run inside SQLite" in printed
    result = json.loads(out.read_text())
    assert result["throughput"]["rounds"] == 1 and result["writeSet"]["commits"] > 0
    assert len(result["sqliteFloor"]["perRound"]) == 1 and result["sqliteFloor"]["ratio"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["durable.json"]  # the temporary databases are removed


def test_write_set_counts_the_spec_btrees(tmp_path: Path) -> None:
    ws = measure_write_set(tmp_path, calls=5, warmup_calls=20)
    assert 1 <= ws["rawFrames"] <= 3  # one row in one table (plus, sometimes, the header page)
    # Every T1 inserts into the ledger, the ordinals, the journal and the operations table
    # (spec 30 §2.3); every T2 into the ledger, the ordinals and the journal, and updates the
    # operation row (§2.4). Each of those b-trees must show up in every commit of the sample.
    t1, t2 = ws["t1Btrees"], ws["t2Btrees"]
    if t1 is None:  # this SQLite was built without dbstat: only the counts can be checked
        assert ws["t1Frames"] > ws["rawFrames"] and ws["t2Frames"] > ws["rawFrames"]
        return
    for table in ("runtime_events", "runtime_session_event_ordinals", "tool_journal_events", "tool_operations"):
        assert t1.get(table) == 5 and t2.get(table) == 5, (table, t1, t2)
    assert "sqlite_autoindex_tool_operations_1" not in t2 or t2["sqlite_autoindex_tool_operations_1"] < 5  # UPDATE only
    assert ws["t1Frames"] >= len([n for n, c in t1.items() if c == 5])
    assert ws["t2Frames"] >= len([n for n, c in t2.items() if c == 5])


_TABLES = (
    "SELECT * FROM runtime_events ORDER BY event_id",
    "SELECT * FROM runtime_session_event_ordinals ORDER BY session_id, ordinal",
    "SELECT * FROM tool_journal_events ORDER BY journal_seq",
    "SELECT * FROM tool_operations ORDER BY operation_id",
)


def _same_rows_as_the_store(tmp_path: Path, write: Callable[[Path], None], run_offset: int) -> None:
    """``write`` fills a fresh store directory with 7 calls (3 per run) its own way; the real
    T1/T2 with the same inputs must leave exactly the same rows, and the result must pass
    the writer-open health scan."""
    from benchmarks._durable.inputs import _calls
    from maka_ref._store import RuntimeStore

    write(tmp_path / "written")
    real = RuntimeStore.open(tmp_path / "real")
    written = RuntimeStore.open(tmp_path / "written")
    try:
        for call in _calls(0, 7, 3, run_offset=run_offset):
            real.commit_tool_prepared(call.t1)
            real.commit_tool_outcome(call.t2)
        for sql in _TABLES:
            rows = written.connection.execute(sql).fetchall()
            assert rows and rows == real.connection.execute(sql).fetchall(), sql
        assert written.health_gate.failure() is None
    finally:
        real.close()
        written.close()


def test_shaped_sql_writes_exactly_the_store_rows(tmp_path: Path) -> None:
    """The shaped-SQL line is the schema's ceiling only if it writes what T1/T2 write."""
    from benchmarks._durable.throughput import ShapedSql

    def write(directory: Path) -> None:
        shaped = ShapedSql(directory, calls_per_run=3)
        try:
            shaped.run(7)
        finally:
            shaped.close()

    _same_rows_as_the_store(tmp_path, write, run_offset=0)


def test_sqlite_floor_scripts_write_exactly_the_store_rows(tmp_path: Path) -> None:
    """Likewise for the literal SQL scripts of the ceiling check."""
    from benchmarks._durable.floor import _Scripts
    from maka_ref._store import RuntimeStore

    def write(directory: Path) -> None:
        store = RuntimeStore.open(directory)
        try:
            for first, second in _Scripts(calls_per_run=3).take(7):
                store.connection.executescript(first)
                store.connection.executescript(second)
        finally:
            store.close()

    _same_rows_as_the_store(tmp_path, write, run_offset=20_000)
