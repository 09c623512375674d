"""The legacy JSONL profile (spec 30 §5; §9 items 138–144; §10 item 33; spec 20 §1.8).

Item 142 is adapted to the project decision of issue 3 (``docs/choices/legacy-jsonl.md``): a
torn last line is storage corruption — the import of that file is refused with
``legacy_jsonl_torn_tail``, nothing from it is imported, and the file is left untouched;
appending ``\\n`` turns it into a ``legacy_jsonl_invalid_line`` "line 2" error.

Expected values are copied from the spec (report tuples, messages) or are the fixture events
themselves, never values computed by the code under test.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from maka_ref._store.errors import StoreError
from maka_ref._store.legacy.profile import (
    ImportReport,
    JsonlImportReport,
    LegacyIdentityMismatchError,
    LegacyJsonlCorruptionError,
    LegacyPartialEventError,
    export_runtime_events_to_jsonl,
    file_fingerprint,
    import_legacy_tree,
    import_runtime_events_from_jsonl,
    iter_legacy_run_files,
    open_runtime_event_reader,
    open_runtime_store_with_legacy_import,
    parse_legacy_jsonl,
)
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref.testing.families import event
from maka_ref.testing.strategies import TornJsonl, torn_jsonl

# --------------------------------------------------------------------------- fixtures


def user_text(id: str, text: str, *, session: str = "session-1", run: str = "run-1", ts: int = 1) -> dict[str, Any]:
    return event(
        id,
        sessionId=session,
        runId=run,
        invocationId=f"invocation-{run}",
        role="user",
        author="user",
        ts=ts,
        content={"kind": "text", "text": text},
    )


def model_text(id: str, text: str, *, session: str = "session-1", run: str = "run-1", ts: int = 2) -> dict[str, Any]:
    return event(
        id,
        sessionId=session,
        runId=run,
        invocationId=f"invocation-{run}",
        role="model",
        author="agent",
        ts=ts,
        content={"kind": "text", "text": text},
    )


def legacy_permission_request(id: str, *, session: str = "session-1", run: str = "run-2") -> dict[str, Any]:
    """An old permission request: no ``kind`` discriminator (spec 30 §5.2 rule 5)."""
    return event(
        id,
        sessionId=session,
        runId=run,
        invocationId=f"invocation-{run}",
        role="system",
        author="host",
        ts=3,
        actions={
            "permissionRequest": {
                "requestId": "request-1",
                "toolUseId": "call-1",
                "toolName": "Bash",
                "args": {"command": "ls"},
            }
        },
    )


def line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def jsonl(*values: Any) -> bytes:
    return "".join(line(v) + "\n" for v in values).encode("utf-8")


def write_run(root: Path, session: str, run: str, data: bytes) -> Path:
    path = root / "sessions" / session / "runs" / run / "runtime-events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    # A fixed, distinctive mtime so "mtime unchanged" is a real check.
    os.utime(path, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    return path


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def listing(root: Path) -> list[str]:
    """Every file and directory under ``root`` (relative, sorted)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def stripped(value: Any) -> Any:
    """A plain JSON copy (frozen values compare equal to dicts anyway; this is for clarity)."""
    return json.loads(json.dumps(value))


@pytest.fixture()
def store_at():
    opened: list[Any] = []

    def _open(root: Path) -> RuntimeStore:
        s = RuntimeStore.open(root)
        opened.append(s)
        return s

    yield _open
    for s in opened:
        try:
            s.close()
        except Exception:
            pass


def report(r: ImportReport) -> tuple[int, int, int, int]:
    return (r.files_scanned, r.events_read, r.events_imported, r.events_existing)


# --------------------------------------------------------------------------- layout (§5.1)


def test_layout_visits_only_safe_names_in_sorted_order(tmp_path: Path) -> None:
    """§5.1: only ``^[A-Za-z0-9_-]{1,128}$`` directory names, sorted."""
    for session, run in [("s-b", "r_2"), ("s-b", "r_1"), ("S-a", "run"), ("bad.name", "r"), ("s-b", "has space"), ("x" * 129, "r"), ("y" * 128, "r")]:
        write_run(tmp_path, session, run, b"")
    (tmp_path / "sessions" / "s-b" / "runs" / "no-file").mkdir()
    other = tmp_path / "sessions" / "s-b" / "runs" / "r_3"
    other.mkdir()
    (other / "events.jsonl").write_bytes(b"")  # the AgentRun operational log, not RuntimeEvents
    found = [(f.session_id, f.run_id, f.source_path) for f in iter_legacy_run_files(tmp_path)]
    assert found == [
        ("S-a", "run", "sessions/S-a/runs/run/runtime-events.jsonl"),
        ("s-b", "r_1", "sessions/s-b/runs/r_1/runtime-events.jsonl"),
        ("s-b", "r_2", "sessions/s-b/runs/r_2/runtime-events.jsonl"),
        ("y" * 128, "r", f"sessions/{'y' * 128}/runs/r/runtime-events.jsonl"),
    ]


def test_fingerprint_is_size_and_node_mtime_ms(tmp_path: Path) -> None:
    """§5.2 rule 2: ``<size>:<mtimeMs>`` (Node prints mtimeMs as a double)."""
    path = write_run(tmp_path, "s", "r", b"12345")
    assert file_fingerprint(path.stat()) == "5:1600000000123.4568"
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    assert file_fingerprint(path.stat()) == "5:1600000000000"


# --------------------------------------------------------------------------- item 138


def test_138_two_runs_import_once_and_upgrade_legacy_permission_request(tmp_path: Path, store_at) -> None:
    """§9 item 138: first import {2 files, 4 read, 4 imported, 0 existing}; second
    {0,0,0,0}; the legacy permission request is upgraded on import."""
    run1 = [user_text("e1", "hello"), model_text("e2", "hi")]
    run2 = [user_text("e3", "again", run="run-2"), legacy_permission_request("e4")]
    p1 = write_run(tmp_path, "session-1", "run-1", jsonl(*run1))
    p2 = write_run(tmp_path, "session-1", "run-2", jsonl(*run2))
    before = snapshot(p1), snapshot(p2)

    store = store_at(tmp_path)
    assert report(import_legacy_tree(store, tmp_path)) == (2, 4, 4, 0)
    assert report(import_legacy_tree(store, tmp_path)) == (0, 0, 0, 0)
    assert (snapshot(p1), snapshot(p2)) == before  # rule 3

    assert [stripped(e) for e in store.read_run_events("session-1", "run-1")] == run1
    stored = store.read_run_events("session-1", "run-2")
    assert [e["id"] for e in stored] == ["e3", "e4"]
    request = stored[1]["actions"]["permissionRequest"]
    assert request["kind"] == "tool_permission"
    assert request["rememberForTurnAllowed"] is False
    assert request["toolName"] == "Bash" and request["requestId"] == "request-1"

    rows = store.connection.execute(
        "SELECT source_path, fingerprint FROM runtime_import_sources ORDER BY source_path"
    ).fetchall()
    assert rows == [
        ("sessions/session-1/runs/run-1/runtime-events.jsonl", file_fingerprint(p1.stat())),
        ("sessions/session-1/runs/run-2/runtime-events.jsonl", file_fingerprint(p2.stat())),
    ]


def test_138_report_json_shape(tmp_path: Path, store_at) -> None:
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "x")))
    r = import_legacy_tree(store_at(tmp_path), tmp_path)
    assert r.to_json() == {"filesScanned": 1, "eventsRead": 1, "eventsImported": 1, "eventsExisting": 0}


def test_changed_fingerprint_reimports_idempotently(tmp_path: Path, store_at) -> None:
    """§5.2 rule 2: a file whose fingerprint changed is read again; already-present identical
    events count as existing."""
    path = write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a"), model_text("e2", "b")))
    store = store_at(tmp_path)
    assert report(import_legacy_tree(store, tmp_path)) == (1, 2, 2, 0)
    with path.open("ab") as f:
        f.write(jsonl(model_text("e3", "c", ts=3)))
    assert report(import_legacy_tree(store, tmp_path)) == (1, 3, 1, 2)
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["e1", "e2", "e3"]


# --------------------------------------------------------------------------- item 139


def test_139_legacy_partial_rows_skipped_partial_with_status_and_actions_imported(tmp_path: Path, store_at) -> None:
    """§9 item 139: legacy partial snapshot rows (one with an unknown key) are skipped; a
    partial row with status+actions is imported → {1,3,3,0}."""
    snapshot_row = model_text("p1", "par", ts=2) | {"partial": True}
    snapshot_unknown_key = model_text("p2", "parti", ts=2) | {"partial": True, "legacyStreamOffset": 5}
    partial_with_status = model_text("p3", "", ts=3) | {
        "partial": True,
        "status": "streaming",
        "actions": {"stateDelta": {"k": 1}},
    }
    rows = [user_text("e1", "hello"), snapshot_row, snapshot_unknown_key, partial_with_status, model_text("e2", "done", ts=4)]
    write_run(tmp_path, "session-1", "run-1", jsonl(*rows))
    store = store_at(tmp_path)
    assert report(import_legacy_tree(store, tmp_path)) == (1, 3, 3, 0)
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["e1", "p3", "e2"]


def test_blank_lines_are_ignored(tmp_path: Path, store_at) -> None:
    """§5.2 rule 5: blank lines ignored (line numbers still count them)."""
    data = b"\n  \n" + jsonl(user_text("e1", "a")) + b"\r\n\t\n" + jsonl(model_text("e2", "b"))
    write_run(tmp_path, "session-1", "run-1", data)
    store = store_at(tmp_path)
    assert report(import_legacy_tree(store, tmp_path)) == (1, 2, 2, 0)


# --------------------------------------------------------------------------- identity (rule 5)


def test_identity_mismatch_rolls_back_that_file_and_aborts(tmp_path: Path, store_at) -> None:
    """§5.2 rules 2 and 5: an event of another run → ``RuntimeEvent import identity mismatch
    for session <s>, run <r>``; that file rolls back, files imported earlier stay."""
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")))
    bad = write_run(tmp_path, "session-1", "run-2", jsonl(user_text("e2", "b", run="run-2"), user_text("e3", "c", run="run-9")))
    write_run(tmp_path, "session-1", "run-3", jsonl(user_text("e4", "d", run="run-3")))
    before = snapshot(bad)
    store = store_at(tmp_path)
    with pytest.raises(LegacyIdentityMismatchError) as info:
        import_legacy_tree(store, tmp_path)
    assert info.value.message == "RuntimeEvent import identity mismatch for session session-1, run run-2"
    assert isinstance(info.value, StoreError)
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["e1"]
    assert store.read_run_events("session-1", "run-2") == []
    assert store.read_run_events("session-1", "run-3") == []  # aborted before it
    sources = [r[0] for r in store.connection.execute("SELECT source_path FROM runtime_import_sources").fetchall()]
    assert sources == ["sessions/session-1/runs/run-1/runtime-events.jsonl"]
    assert snapshot(bad) == before


def test_conflicting_event_rolls_back_the_file_and_keeps_its_fingerprint_unrecorded(tmp_path: Path, store_at) -> None:
    """§5.2 rule 2: a conflicting event rolls back that file's transaction."""
    store = store_at(tmp_path)
    store.append(user_text("e1", "original"))
    write_run(tmp_path, "session-1", "run-1", jsonl(model_text("e0", "new"), user_text("e1", "conflicting")))
    with pytest.raises(StoreError):
        import_legacy_tree(store, tmp_path)
    assert [stripped(e) for e in store.read_run_events("session-1", "run-1")] == [user_text("e1", "original")]
    assert store.connection.execute("SELECT COUNT(*) FROM runtime_import_sources").fetchone()[0] == 0


# --------------------------------------------------------------------------- item 142 (adapted)

TORN = b'{"id":"truncated"'


def test_142_torn_tail_is_refused_as_corruption(tmp_path: Path, store_at) -> None:
    """§9 item 142, adapted (issue 3; spec 20 §1.8): ``<event>\\n{"id":"truncated"`` without a
    newline → the import of that file is refused with ``legacy_jsonl_torn_tail``; nothing of
    it is imported; file bytes and mtime unchanged."""
    path = write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "kept?")) + TORN)
    before = snapshot(path)
    store = store_at(tmp_path)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        import_legacy_tree(store, tmp_path)
    err = info.value
    assert err.code == "legacy_jsonl_torn_tail"
    assert err.torn_tail and err.line == 2 and err.run_id == "run-1"
    assert err.message == "Invalid legacy RuntimeEvent JSONL line 2 for run run-1"
    assert isinstance(err, StoreError)
    assert store.read_run_events("session-1", "run-1") == []  # nothing imported from it
    assert store.connection.execute("SELECT COUNT(*) FROM runtime_import_sources").fetchone()[0] == 0
    assert snapshot(path) == before
    # Refused again on the next attempt (no source row was recorded), still untouched.
    with pytest.raises(LegacyJsonlCorruptionError):
        import_legacy_tree(store, tmp_path)
    assert snapshot(path) == before


def test_142_appending_a_newline_makes_it_an_invalid_line_2(tmp_path: Path, store_at) -> None:
    """§9 item 142: after appending ``\\n`` → "line 2" error (now ``legacy_jsonl_invalid_line``)."""
    path = write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "x")) + TORN + b"\n")
    store = store_at(tmp_path)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        import_legacy_tree(store, tmp_path)
    assert info.value.code == "legacy_jsonl_invalid_line"
    assert not info.value.torn_tail
    assert info.value.message == "Invalid legacy RuntimeEvent JSONL line 2 for run run-1"
    assert store.read_run_events("session-1", "run-1") == []
    assert path.read_bytes().endswith(TORN + b"\n")


def test_142_earlier_files_stay_imported_later_files_are_not_attempted(tmp_path: Path, store_at) -> None:
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")))
    write_run(tmp_path, "session-1", "run-2", jsonl(user_text("e2", "b", run="run-2")) + TORN)
    write_run(tmp_path, "session-1", "run-3", jsonl(user_text("e3", "c", run="run-3")))
    store = store_at(tmp_path)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        import_legacy_tree(store, tmp_path)
    assert info.value.code == "legacy_jsonl_torn_tail"
    assert info.value.message == "Invalid legacy RuntimeEvent JSONL line 2 for run run-2"
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["e1"]
    assert store.read_run_events("session-1", "run-2") == []
    assert store.read_run_events("session-1", "run-3") == []


@pytest.mark.parametrize(
    ("tail", "code"),
    [
        (b'{"id":"trunc', "legacy_jsonl_torn_tail"),  # inside a string
        ('{"id":"日本'.encode()[:-1], "legacy_jsonl_torn_tail"),  # inside a UTF-8 character
        (b'{"id":"e9","ts":1.', "legacy_jsonl_torn_tail"),  # number ending in "."
        (b'{"id":"e9","partial":fa', "legacy_jsonl_torn_tail"),  # partial literal
        (b'{"id":"\\u00', "legacy_jsonl_torn_tail"),  # partial \u escape
        (b'{"id":"e9",', "legacy_jsonl_torn_tail"),  # dangling ","
        (b'{"id":"e9",}', "legacy_jsonl_invalid_line"),  # "," before a closing bracket
        (b'{"id":x', "legacy_jsonl_invalid_line"),  # a wrong byte
        (b"{} garbage", "legacy_jsonl_invalid_line"),  # trailing garbage
        (b'{"id":"a\x01', "legacy_jsonl_invalid_line"),  # control character in a string
        (b'{"id":"\xff', "legacy_jsonl_invalid_line"),  # not UTF-8
        (b'{"id":"e9"}', "legacy_jsonl_invalid_line"),  # complete JSON, not a RuntimeEvent
    ],
)
def test_unterminated_last_line_is_classified(tmp_path: Path, tail: bytes, code: str) -> None:
    """The classifier decides torn tail vs garbage (§5, last paragraph); both are refused."""
    data = jsonl(user_text("e1", "a")) + tail
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        parse_legacy_jsonl(data, "session-1", "run-1")
    assert (info.value.code, info.value.line) == (code, 2)


def test_incomplete_prefix_in_the_middle_is_an_invalid_line(tmp_path: Path) -> None:
    """§5.2 rule 6 (a)/(b): only the unterminated last line can be torn."""
    data = jsonl(user_text("e1", "a")) + TORN + b"\n" + jsonl(user_text("e2", "b"))
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        parse_legacy_jsonl(data, "session-1", "run-1")
    assert (info.value.code, info.value.line) == ("legacy_jsonl_invalid_line", 2)


def test_complete_last_line_without_newline_is_imported(tmp_path: Path, store_at) -> None:
    """Only a line that fails to parse is questioned; a complete unterminated record is fine."""
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")) + line(model_text("e2", "b")).encode())
    store = store_at(tmp_path)
    assert report(import_legacy_tree(store, tmp_path)) == (1, 2, 2, 0)


def test_torn_tail_writer_open_fails_and_leaves_jsonl_intact(tmp_path: Path) -> None:
    """Rules 1 and 3: a failed import fails the writer open and leaves the JSONL intact."""
    path = write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")) + TORN)
    before = snapshot(path)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        open_runtime_store_with_legacy_import(tmp_path)
    assert info.value.code == "legacy_jsonl_torn_tail"
    assert snapshot(path) == before


# --------------------------------------------------------------------------- item 143


def test_143_writer_open_imports_and_sqlite_only_events_survive(tmp_path: Path) -> None:
    """§9 item 143: writer open imports and leaves the JSONL bytes and mtime unchanged; an
    SQLite-only event survives reopen; a fresh root yields the SQLite store."""
    legacy = [user_text("e1", "legacy"), model_text("e2", "reply")]
    path = write_run(tmp_path, "session-1", "run-1", jsonl(*legacy))
    before = snapshot(path)

    store, first = open_runtime_store_with_legacy_import(tmp_path)
    try:
        assert report(first) == (1, 2, 2, 0)
        assert snapshot(path) == before
        sqlite_only = user_text("s1", "only in sqlite", run="run-2")
        assert store.append(sqlite_only).created is True
    finally:
        store.close()

    store, second = open_runtime_store_with_legacy_import(tmp_path)
    try:
        assert report(second) == (0, 0, 0, 0)
        assert [stripped(e) for e in store.read_run_events("session-1", "run-2")] == [sqlite_only]
        assert [stripped(e) for e in store.read_run_events("session-1", "run-1")] == legacy
    finally:
        store.close()
    assert snapshot(path) == before

    fresh = tmp_path / "fresh"
    store, r = open_runtime_store_with_legacy_import(fresh)
    try:
        assert isinstance(store, RuntimeStore)
        assert report(r) == (0, 0, 0, 0)
        assert (fresh / "runtime.sqlite").exists()
    finally:
        store.close()
    with open_runtime_event_reader(fresh) as reader:
        assert reader.kind == "sqlite"


# --------------------------------------------------------------------------- item 144 and §10 item 33


def test_144_legacy_only_root_reader_is_jsonl_and_creates_no_database(tmp_path: Path) -> None:
    """§9 item 144 / §10 item 33: reader ``jsonl``, no append method, **no runtime.sqlite
    created**; after a writer opens once, the reader is ``sqlite`` and sees both events."""
    events = [user_text("e1", "hello"), model_text("e2", "world")]
    path = write_run(tmp_path, "session-1", "run-1", jsonl(*events))
    before_listing = listing(tmp_path)
    before_file = snapshot(path)

    reader = open_runtime_event_reader(tmp_path)
    try:
        assert reader.kind == "jsonl"
        assert not hasattr(reader, "append")
        assert not hasattr(reader, "import_batch")
        assert reader.list_sessions() == ["session-1"]
        assert reader.list_runs("session-1") == ["run-1"]
        assert [stripped(e) for e in reader.read_run_events("session-1", "run-1")] == events
        assert reader.read_run_events("session-1", "run-404") == []
        assert reader.read_run_events("..", "run-1") == []
    finally:
        reader.close()
    assert listing(tmp_path) == before_listing  # nothing created, runtime.sqlite included
    assert not (tmp_path / "runtime.sqlite").exists()
    assert snapshot(path) == before_file

    store, _ = open_runtime_store_with_legacy_import(tmp_path)
    store.close()
    with open_runtime_event_reader(tmp_path) as reader:
        assert reader.kind == "sqlite"
        assert not hasattr(reader, "append")
        assert reader.list_sessions() == ["session-1"]
        assert reader.list_runs("session-1") == ["run-1"]
        assert [stripped(e) for e in reader.read_run_events("session-1", "run-1")] == events


def test_reader_never_creates_anything_on_a_missing_or_empty_root(tmp_path: Path) -> None:
    """§10 item 33: read-only openers create no files or directories."""
    missing = tmp_path / "does-not-exist"
    with open_runtime_event_reader(missing) as reader:
        assert reader.kind == "jsonl"
        assert reader.list_sessions() == []
        assert reader.read_run_events("session-1", "run-1") == []
    assert not missing.exists()
    assert listing(tmp_path) == []


def test_sqlite_reader_never_merges_or_falls_back_to_jsonl(tmp_path: Path) -> None:
    """§5.2 rule 4: once the DB exists, the JSONL files are invisible to readers."""
    path = write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")))
    store, _ = open_runtime_store_with_legacy_import(tmp_path)
    store.close()
    with path.open("ab") as f:
        f.write(jsonl(model_text("e2", "appended after import")))
    write_run(tmp_path, "session-2", "run-1", jsonl(user_text("x1", "new", session="session-2")))
    with open_runtime_event_reader(tmp_path) as reader:
        assert reader.kind == "sqlite"
        assert [e["id"] for e in reader.read_run_events("session-1", "run-1")] == ["e1"]
        assert reader.list_sessions() == ["session-1"]


def test_jsonl_reader_refuses_a_torn_tail_with_the_reader_message(tmp_path: Path) -> None:
    """§5.2 rule 6 ("the same rule applied to the legacy reader"), refused per issue 3."""
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a")) + TORN)
    with open_runtime_event_reader(tmp_path) as reader:
        with pytest.raises(LegacyJsonlCorruptionError) as info:
            reader.read_run_events("session-1", "run-1")
    assert info.value.code == "legacy_jsonl_torn_tail"
    assert info.value.message.startswith("Invalid RuntimeEvent JSONL line 2 for run run-1: ")
    assert not (tmp_path / "runtime.sqlite").exists()


# --------------------------------------------------------------------------- items 140, 141 (rules 7–8)


def test_140_export_then_strict_import_into_a_fresh_db_round_trips(tmp_path: Path, store_at) -> None:
    """§9 item 140: export then strict import into a fresh DB → {2,2,0}; identical events."""
    events = [user_text("e1", "héllo 😀"), model_text("e2", "line\nbreak")]
    source = store_at(tmp_path / "a")
    for e in events:
        source.append(e)
    text = export_runtime_events_to_jsonl(source, "session-1", "run-1")
    assert text.endswith("\n") and text.count("\n") == 2
    assert [json.loads(t) for t in text.splitlines()] == events

    target = store_at(tmp_path / "b")
    r = import_runtime_events_from_jsonl(target, "session-1", "run-1", text)
    assert isinstance(r, JsonlImportReport)
    assert (r.events_read, r.events_imported, r.events_existing) == (2, 2, 0)
    assert target.read_run_events("session-1", "run-1") == source.read_run_events("session-1", "run-1")
    assert export_runtime_events_to_jsonl(target, "session-1", "run-1") == text
    # Importing again: all existing.
    again = import_runtime_events_from_jsonl(target, "session-1", "run-1", text)
    assert (again.events_read, again.events_imported, again.events_existing) == (2, 0, 2)


def test_export_of_an_empty_run_is_the_empty_string(tmp_path: Path, store_at) -> None:
    """§5.2 rule 8: an empty run exports ``""``."""
    assert export_runtime_events_to_jsonl(store_at(tmp_path), "session-1", "run-1") == ""


def test_export_leaves_partials_out_and_accepts_readers(tmp_path: Path) -> None:
    """§5.2 rule 8: immutable events only; works on the jsonl reader too."""
    partial_with_status = model_text("p3", "", ts=3) | {"partial": True, "status": "streaming", "actions": {"stateDelta": {}}}
    write_run(tmp_path, "session-1", "run-1", jsonl(user_text("e1", "a"), partial_with_status))
    with open_runtime_event_reader(tmp_path) as reader:
        text = export_runtime_events_to_jsonl(reader, "session-1", "run-1")
    assert [json.loads(t)["id"] for t in text.splitlines()] == ["e1"]


def test_141_strict_import_refusals(tmp_path: Path, store_at) -> None:
    """§9 item 141: ``{not-json}`` → line 1 error; wrong run → identity mismatch; partial →
    "cannot be imported as immutable JSONL". Nothing is written."""
    store = store_at(tmp_path)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        import_runtime_events_from_jsonl(store, "session-1", "run-1", "{not-json}\n")
    assert info.value.message == "Invalid RuntimeEvent JSONL line 1 for run run-1"
    assert info.value.code == "legacy_jsonl_invalid_line" and info.value.line == 1

    with pytest.raises(LegacyIdentityMismatchError) as mismatch:
        import_runtime_events_from_jsonl(store, "session-1", "run-1", line(user_text("e1", "a", run="run-2")) + "\n")
    assert mismatch.value.message == "RuntimeEvent import identity mismatch for session session-1, run run-1"

    partial = model_text("p1", "chunk") | {"partial": True}
    text = line(user_text("e0", "ok")) + "\n" + line(partial) + "\n"
    with pytest.raises(LegacyPartialEventError) as part:
        import_runtime_events_from_jsonl(store, "session-1", "run-1", text)
    assert part.value.message == "Partial RuntimeEvent p1 cannot be imported as immutable JSONL"

    # Strict import has no torn-tail tolerance either.
    with pytest.raises(LegacyJsonlCorruptionError) as torn:
        import_runtime_events_from_jsonl(store, "session-1", "run-1", line(user_text("e0", "ok")) + "\n" + TORN.decode())
    assert torn.value.message == "Invalid RuntimeEvent JSONL line 2 for run run-1"
    assert store.read_run_events("session-1", "run-1") == []


def test_strict_import_is_all_or_nothing_through_the_batch_path(tmp_path: Path, store_at) -> None:
    """Rule 7 uses the batch path (§2.2): a conflicting event writes nothing."""
    store = store_at(tmp_path)
    store.append(user_text("e1", "original"))
    text = line(model_text("e0", "new")) + "\n" + line(user_text("e1", "changed")) + "\n"
    with pytest.raises(StoreError):
        import_runtime_events_from_jsonl(store, "session-1", "run-1", text)
    assert [e["id"] for e in store.read_run_events("session-1", "run-1")] == ["e1"]


# --------------------------------------------------------------------------- the import table


def test_import_sources_table_shape_and_fail_closed(tmp_path: Path, store_at) -> None:
    """§5.2 rule 2: ``runtime_import_sources(source_path TEXT PRIMARY KEY, fingerprint TEXT NOT
    NULL, imported_at INTEGER NOT NULL)``; another shape fails closed."""
    store = store_at(tmp_path)
    import_legacy_tree(store, tmp_path)
    cols = [(r[1], r[2], r[3], r[5]) for r in store.connection.execute("PRAGMA table_info(runtime_import_sources)")]
    assert cols == [("source_path", "TEXT", 0, 1), ("fingerprint", "TEXT", 1, 0), ("imported_at", "INTEGER", 1, 0)]

    other = store_at(tmp_path / "other")
    other.connection.execute("CREATE TABLE runtime_import_sources (source_path TEXT PRIMARY KEY)")
    with pytest.raises(StoreError) as info:
        import_legacy_tree(other, tmp_path / "other")
    assert info.value.code == "import_sources_shape_mismatch"


def test_parse_never_mutates_or_shares_input(tmp_path: Path) -> None:
    request = legacy_permission_request("e4", run="run-1")
    original = copy.deepcopy(request)
    events = parse_legacy_jsonl(jsonl(request), "session-1", "run-1")
    assert request == original
    assert events[0]["actions"]["permissionRequest"]["kind"] == "tool_permission"
    with pytest.raises(TypeError):
        events[0]["id"] = "x"  # type: ignore[index]


# --------------------------------------------------------------------------- property: torn ledgers

def _is_stream_snapshot(e: dict[str, Any]) -> bool:
    return e.get("partial") is True and "status" not in e and "actions" not in e


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(torn_jsonl())
def test_torn_ledgers_are_always_refused_as_torn_tails(torn: TornJsonl) -> None:
    """Spec 30 §5.2 rule 6 + issue 3 (spec 20 §1.8): whatever realistic ledger a crash tore
    (possibly inside a UTF-8 character), the file is refused with ``legacy_jsonl_torn_tail``
    at the torn line; with a newline appended it is ``legacy_jsonl_invalid_line`` at the same
    line; the intact lines alone parse to the ledger's events (stream snapshots skipped)."""
    first = torn.ledger.events[0]
    session_id, run_id = first["sessionId"], first["runId"]
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        parse_legacy_jsonl(torn.data, session_id, run_id)
    assert (info.value.code, info.value.line) == ("legacy_jsonl_torn_tail", torn.torn_line_number)
    with pytest.raises(LegacyJsonlCorruptionError) as info:
        parse_legacy_jsonl(torn.data + b"\n", session_id, run_id)
    assert (info.value.code, info.value.line) == ("legacy_jsonl_invalid_line", torn.torn_line_number)

    intact = torn.data[: torn.data.rfind(b"\n") + 1]
    expected = [e for e in torn.ledger.events[: torn.intact_lines] if not _is_stream_snapshot(e)]
    assert [e["id"] for e in parse_legacy_jsonl(intact, session_id, run_id)] == [e["id"] for e in expected]
