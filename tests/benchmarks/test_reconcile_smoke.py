"""Smoke test: ``python -m benchmarks.reconcile`` runs end to end at a tiny size (no timing
asserted), really records evidence on its "with" side and none on its "without" side, and
leaves no workspace behind."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import reconcile  # noqa: E402
from maka_ref._runtime import tool_runtime  # noqa: E402


def test_reconcile_benchmark_runs_tiny(tmp_path: Path) -> None:
    original = tool_runtime.build_evidence
    result = reconcile.measure(rounds=1, calls=2, size=16, directory=str(tmp_path))
    assert tool_runtime.build_evidence is original  # the "without" side is undone
    assert set(result["wall"]) == set(result["cpu"]) == {
        "perCallWithEvidenceMs", "perCallWithoutMs", "ratio", "emptyTurnMs"}
    assert result["calls"] == 2 and list(tmp_path.iterdir()) == []
    assert isinstance(result["addedCpuOverCallWall"], float)


def test_the_sides_differ_only_in_evidence(tmp_path: Path) -> None:
    from maka_ref._runtime import run_turn
    from maka_ref._store.runtime_store import RuntimeStore

    script = reconcile._script(1, 8)
    with_ws, without_ws = tmp_path / "with", tmp_path / "without"
    for ws in (with_ws, without_ws):
        ws.mkdir()
        (ws / "f0.txt").write_bytes(b"a" * 8)
    run_turn(with_ws, script)
    original = tool_runtime.build_evidence
    tool_runtime.build_evidence = lambda *a, **k: None  # type: ignore[assignment]
    try:
        run_turn(without_ws, script)
    finally:
        tool_runtime.build_evidence = original  # type: ignore[assignment]
    counts = []
    for ws in (with_ws, without_ws):
        with RuntimeStore.open_read_only(ws) as store, store.read() as conn:
            counts.append(conn.execute("SELECT COUNT(*) FROM runtime_tool_evidence").fetchone()[0])
        assert (ws / "f0.txt").read_bytes() == b"b" * 8
    assert counts == [1, 0]
