"""The cyclic-GC pause around bulk decodes (``maka_ref._store.engine.gc_pause``; docs/performance.md,
"Durable writes", item 6): the writer-open health scan (spec 30 §2.1) and the projection
rebuild (§3.2) decode with the collector off for large batches, and the process-wide switch
always comes back as it was, also when the scan stops at a corrupt row."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from maka_ref._store import RuntimeStore, projections

from maka_ref._store.engine import gc_pause

from maka_ref._store.insert import health
from tests.maka_ref.store.support import loop_t1 as t1, loop_t2 as t2, raw


@pytest.fixture
def gc_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def test_pause_only_for_large_batches_and_restored_on_error(gc_on: None) -> None:
    with gc_pause.cyclic_gc_paused(gc_pause.MIN_ROWS - 1):
        assert gc.isenabled()
    with gc_pause.cyclic_gc_paused(gc_pause.MIN_ROWS):
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError):
        with gc_pause.cyclic_gc_paused(gc_pause.MIN_ROWS):
            raise KeyError("decode failed")
    assert gc.isenabled()


def test_collector_already_off_is_left_off(gc_on: None) -> None:
    gc.disable()
    with gc_pause.cyclic_gc_paused(10 * gc_pause.MIN_ROWS):
        assert not gc.isenabled()
    assert not gc.isenabled()


def _record_gc_state(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[bool]:
    seen: list[bool] = []
    real = module.decode_event_row

    def decode(row: tuple[Any, ...]) -> Any:
        seen.append(gc.isenabled())
        return real(row)

    monkeypatch.setattr(module, "decode_event_row", decode)
    return seen


def _store_with_calls(root: Path, calls: int) -> None:
    store = RuntimeStore.open(root)
    try:
        for call in range(calls):
            store.commit_tool_prepared(t1(call))
            store.commit_tool_outcome(t2(call))
    finally:
        store.close()


def test_open_scan_and_rebuild_decode_with_the_collector_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gc_on: None
) -> None:
    _store_with_calls(tmp_path, 3)  # 9 events
    monkeypatch.setattr(gc_pause, "MIN_ROWS", 9)
    scanned = _record_gc_state(monkeypatch, health)
    store = RuntimeStore.open(tmp_path)
    try:
        assert scanned == [False] * 9 and gc.isenabled()
        rebuilt = _record_gc_state(monkeypatch, projections)
        report = store.rebuild_tool_projections()
        assert report.operations == 3
        assert rebuilt == [False] * 9 and gc.isenabled()
        monkeypatch.setattr(gc_pause, "MIN_ROWS", 10)  # below the threshold: collector stays on
        rebuilt.clear()
        store.rebuild_tool_projections()
        assert rebuilt == [True] * 9
    finally:
        store.close()


def test_scan_that_stops_at_a_corrupt_row_restores_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gc_on: None
) -> None:
    _store_with_calls(tmp_path, 2)
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET payload_json = '{not json' WHERE event_id = 'c-1-1'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(gc_pause, "MIN_ROWS", 1)
    seen = _record_gc_state(monkeypatch, health)
    store = RuntimeStore.open(tmp_path)  # the open scan stops at the corrupt row and caches it
    try:
        assert gc.isenabled()
        assert seen and not any(seen)  # it really decoded with the collector off
        assert store.health_gate.failure() is not None
        with pytest.raises(Exception) as caught:
            store.commit_tool_prepared(t1(5))  # tool writes fail closed on the cached failure
        assert not isinstance(caught.value, AssertionError)
    finally:
        store.close()
    assert gc.isenabled()
