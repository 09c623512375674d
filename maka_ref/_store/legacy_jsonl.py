"""The optional legacy JSONL profile (spec 30 §5; §9 items 138–144; §10 item 33).

Why it exists: runtimes that predate ``runtime.sqlite`` kept one ``runtime-events.jsonl`` per
run. Upstream has since deleted that store, but a conformance harness must still be able to
say what crash-safe *migration* from it means: a one-way, batch-idempotent import on the first
writer open that never touches the source files, and a read-only inspection path that never
creates a database.

What lives here:

* the layout of §5.1 (:func:`iter_legacy_run_files`): ``<root>/sessions/<s>/runs/<r>/
  runtime-events.jsonl``, visiting only directory names matching ``^[A-Za-z0-9_-]{1,128}$``,
  in sorted order;
* the legacy parse of rule 5 and the torn-last-line rule 6 (:func:`parse_legacy_jsonl`) —
  with the **project decision of issue 3**: a torn last line is storage corruption (spec 20
  §1.8), so the file is *refused* (:class:`LegacyJsonlCorruptionError`, code
  ``legacy_jsonl_torn_tail``), never silently skipped as upstream did (spec 30 §9 item 142).
  The incomplete-prefix classifier (:mod:`maka_ref._store.json_prefix`) is what lets the
  error say "torn" (``legacy_jsonl_torn_tail``) rather than "garbage"
  (``legacy_jsonl_invalid_line``). See ``docs/choices/legacy-jsonl.md``;
* the tree import of rules 1–3 (:func:`import_legacy_tree`,
  :func:`open_runtime_store_with_legacy_import`) with the ``runtime_import_sources`` table:
  one transaction per file holding the store's batch import *and* the source-row upsert;
* the read-only inspection of rule 4 (:func:`open_runtime_event_reader`): ``kind = "jsonl"``
  over the files when no database exists (and then none is ever created), otherwise
  ``kind = "sqlite"`` with no fallback to, or merge with, the files;
* the strict single-run import and the export of rules 7–8
  (:func:`import_runtime_events_from_jsonl`, :func:`export_runtime_events_to_jsonl`).

Every event read from a file passes the pure core: ``parse_json``, then the legacy shape
upgrade, then ``encode_runtime_event`` (schema decode + lossless round trip), so the reader
returns exactly what an import would store.

Depends on: ``_codec`` (``parse_json``, ``format_number``), ``_events.encode``,
``_store.json_prefix``, ``_store.errors``, ``_store.partial_keys`` (safe ids) and the
:class:`~maka_ref._store.runtime_store.RuntimeStore` facade.
"""

from __future__ import annotations

import os
import sqlite3
import stat as stat_module
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._codec.numbers import format_number
from maka_ref._errors import InvalidJSONTextError, MakaRefError
from maka_ref._events.encode import encode_runtime_event
from maka_ref._store.errors import StoreError
from maka_ref._store.json_prefix import classify_json_bytes
from maka_ref._store.partial_keys import is_safe_id
from maka_ref._store.runtime_store import DB_FILE_NAME, RuntimeStore

__all__ = [
    "DATABASE_FILE_NAME",
    "IMPORT_SOURCES_DDL",
    "RUNTIME_EVENTS_FILE_NAME",
    "ImportReport",
    "JsonlImportReport",
    "JsonlRuntimeEventReader",
    "LegacyIdentityMismatchError",
    "LegacyJsonlCorruptionError",
    "LegacyPartialEventError",
    "LegacyRunFile",
    "LegacyStoreOpen",
    "RuntimeEventReader",
    "SqliteRuntimeEventReader",
    "ensure_import_sources_table",
    "export_runtime_events_to_jsonl",
    "file_fingerprint",
    "import_legacy_tree",
    "import_runtime_events_from_jsonl",
    "is_safe_storage_id",
    "iter_legacy_run_files",
    "open_runtime_event_reader",
    "open_runtime_store_with_legacy_import",
    "parse_legacy_jsonl",
    "parse_strict_jsonl",
]

DATABASE_FILE_NAME = DB_FILE_NAME
RUNTIME_EVENTS_FILE_NAME = "runtime-events.jsonl"

#: §5.2 rule 2, verbatim. Created by the legacy profile on writer open (never by a reader).
IMPORT_SOURCES_DDL = (
    "CREATE TABLE IF NOT EXISTS runtime_import_sources ("
    "source_path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, imported_at INTEGER NOT NULL)"
)

_JSON_WS_BYTES = b" \t\r\n"

# Legacy permission requests (before the ``kind`` discriminator) gain these on decode (rule 5).
_LEGACY_PERMISSION_KIND = "tool_permission"


# =========================================================================== errors


class LegacyJsonlCorruptionError(StoreError):
    """A legacy JSONL line cannot be read (§5.2 rules 6–7; spec 20 §1.8).

    ``code`` is ``legacy_jsonl_torn_tail`` when the offending line is the file's unterminated
    last line and an incomplete prefix of a JSON document (a crash tore the append), and
    ``legacy_jsonl_invalid_line`` for anything else (garbage, a newline-terminated fragment, a
    line that is JSON but not a RuntimeEvent). ``line`` is 1-based and counts every physical
    line, blank ones included; ``run_id`` is the run directory's id.
    """

    TORN_TAIL = "legacy_jsonl_torn_tail"
    INVALID_LINE = "legacy_jsonl_invalid_line"

    def __init__(self, message: str, *, code: str, line: int, run_id: str, detail: str | None = None) -> None:
        super().__init__(message, code=code, detail=detail)
        self.line = line
        self.run_id = run_id

    @property
    def torn_tail(self) -> bool:
        return self.code == self.TORN_TAIL


class LegacyIdentityMismatchError(StoreError):
    """An event's session/run differs from the directory or argument it is imported under."""

    code = "legacy_import_identity_mismatch"

    def __init__(self, session_id: str, run_id: str, *, event_id: object = None) -> None:
        super().__init__(
            f"RuntimeEvent import identity mismatch for session {session_id}, run {run_id}",
            detail=None if event_id is None else f"event {event_id}",
        )
        self.session_id = session_id
        self.run_id = run_id
        self.event_id = event_id


class LegacyPartialEventError(StoreError):
    """Rule 7: the strict single-run import refuses every partial event."""

    code = "legacy_jsonl_partial_event"

    def __init__(self, event_id: object) -> None:
        super().__init__(f"Partial RuntimeEvent {event_id} cannot be imported as immutable JSONL")
        self.event_id = event_id


# =========================================================================== layout (§5.1)


def is_safe_storage_id(value: object) -> bool:
    """``^[A-Za-z0-9_-]{1,128}$`` (spec 30 §2.1 "safe ids", §5.1)."""
    return is_safe_id(value)


@dataclass(frozen=True, slots=True)
class LegacyRunFile:
    """One ``runtime-events.jsonl`` of the legacy layout."""

    session_id: str
    run_id: str
    path: Path
    #: ``sessions/<s>/runs/<r>/runtime-events.jsonl``: the ``runtime_import_sources`` key.
    source_path: str


def _safe_subdirectories(directory: Path) -> list[str]:
    """Sorted names of the real (non-symlink) subdirectories whose names are safe ids."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    for entry in entries:
        if not is_safe_storage_id(entry.name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
        except OSError:
            continue
    return sorted(names)


def _regular_file(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st if stat_module.S_ISREG(st.st_mode) else None


def _run_file(root: Path, session_id: str, run_id: str) -> LegacyRunFile:
    path = root / "sessions" / session_id / "runs" / run_id / RUNTIME_EVENTS_FILE_NAME
    source = f"sessions/{session_id}/runs/{run_id}/{RUNTIME_EVENTS_FILE_NAME}"
    return LegacyRunFile(session_id=session_id, run_id=run_id, path=path, source_path=source)


def iter_legacy_run_files(root: str | os.PathLike[str]) -> Iterator[LegacyRunFile]:
    """Every regular ``runtime-events.jsonl`` of the §5.1 layout, sessions then runs sorted."""
    base = Path(root)
    for session_id in _safe_subdirectories(base / "sessions"):
        for run_id in _safe_subdirectories(base / "sessions" / session_id / "runs"):
            run_file = _run_file(base, session_id, run_id)
            if _regular_file(run_file.path) is not None:
                yield run_file


def file_fingerprint(st: os.stat_result) -> str:
    """``<size>:<mtimeMs>`` with Node's ``mtimeMs`` (a double of milliseconds, printed as
    ECMAScript ``Number::toString``), so fingerprints recorded by either runtime agree."""
    seconds, nanos = divmod(st.st_mtime_ns, 1_000_000_000)
    mtime_ms = seconds * 1e3 + nanos / 1e6
    return f"{st.st_size}:{format_number(mtime_ms)}"


# =========================================================================== parsing (rules 5–7)


def _upgrade_legacy_shapes(value: Any) -> Any:
    """Rule 5: the persisted-event decoder upgrades old shapes before the schema check.

    Old permission requests (no ``kind``) gain ``kind: "tool_permission"`` and
    ``rememberForTurnAllowed: false``. Returns ``value`` itself when nothing changes (the
    input is never mutated).
    """
    if not isinstance(value, dict):
        return value
    actions = value.get("actions")
    if not isinstance(actions, dict):
        return value
    request = actions.get("permissionRequest")
    if not isinstance(request, dict) or "kind" in request:
        return value
    upgraded_request = {**request, "kind": _LEGACY_PERMISSION_KIND}
    upgraded_request.setdefault("rememberForTurnAllowed", False)
    return {**value, "actions": {**actions, "permissionRequest": upgraded_request}}


def _is_legacy_stream_partial(value: Any) -> bool:
    """Rule 5: a legacy stream-partial snapshot row: ``partial === true``, no status/actions."""
    return (
        isinstance(value, dict)
        and value.get("partial") is True
        and "status" not in value
        and "actions" not in value
    )


Flavour = Literal["legacy", "reader", "strict"]


def _line_error(flavour: Flavour, line: int, run_id: str, *, torn: bool, cause: str) -> LegacyJsonlCorruptionError:
    code = LegacyJsonlCorruptionError.TORN_TAIL if torn else LegacyJsonlCorruptionError.INVALID_LINE
    reason = "torn last line (an incomplete JSON prefix without a trailing newline)" if torn else cause
    if flavour == "legacy":
        message = f"Invalid legacy RuntimeEvent JSONL line {line} for run {run_id}"
    elif flavour == "reader":
        message = f"Invalid RuntimeEvent JSONL line {line} for run {run_id}: {reason}"
    else:
        message = f"Invalid RuntimeEvent JSONL line {line} for run {run_id}"
    return LegacyJsonlCorruptionError(message, code=code, line=line, run_id=run_id, detail=reason)


def _split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Physical lines and whether the last one is unterminated (no trailing ``\\n``)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, False
    return lines, True


def _decode_lines(
    data: bytes,
    session_id: str,
    run_id: str,
    *,
    flavour: Flavour,
    skip_legacy_partials: bool,
) -> list[FrozenDict]:
    lines, unterminated = _split_lines(data)
    events: list[FrozenDict] = []
    last = len(lines)
    for number, raw in enumerate(lines, start=1):
        if raw.strip(_JSON_WS_BYTES) == b"":
            continue  # blank lines are ignored
        is_tail = unterminated and number == last
        try:
            text = raw.decode("utf-8")
            value = parse_json(text)
        except (UnicodeDecodeError, InvalidJSONTextError) as exc:
            # Rule 6: only the unterminated last line can be torn; the classifier decides.
            torn = is_tail and classify_json_bytes(raw) == "incomplete_prefix"
            raise _line_error(flavour, number, run_id, torn=torn, cause=str(exc)) from exc
        if skip_legacy_partials and _is_legacy_stream_partial(value):
            continue
        try:
            event = encode_runtime_event(_upgrade_legacy_shapes(value)).event
        except MakaRefError as exc:
            raise _line_error(flavour, number, run_id, torn=False, cause=str(exc)) from exc
        if event["sessionId"] != session_id or event["runId"] != run_id:
            raise LegacyIdentityMismatchError(session_id, run_id, event_id=event["id"])
        events.append(event)
    return events


def parse_legacy_jsonl(data: bytes, session_id: str, run_id: str) -> list[FrozenDict]:
    """Rules 5–6 for the tree import: the decoded events of one legacy file, in file order.

    Blank lines are ignored; legacy stream-partial snapshot rows (``partial: true``, no
    ``status``, no ``actions``) are skipped unread by the schema; every other line goes
    through ``parse_json`` → legacy shape upgrade → ``encode_runtime_event``, and must belong
    to (``session_id``, ``run_id``). A torn last line is refused (project decision, see the
    module docstring), so this either returns every event of the file or raises.
    """
    return _decode_lines(bytes(data), session_id, run_id, flavour="legacy", skip_legacy_partials=True)


def parse_strict_jsonl(text: str, session_id: str, run_id: str) -> list[FrozenDict]:
    """Rule 7: one run's JSONL text; no torn-tail tolerance, no partial events at all."""
    if not isinstance(text, str):
        raise TypeError(f"JSONL text must be str, got {type(text).__name__}")
    data = text.encode("utf-8", "surrogatepass")
    events = _decode_lines(data, session_id, run_id, flavour="strict", skip_legacy_partials=False)
    for event in events:
        if event["partial"] is True:
            raise LegacyPartialEventError(event["id"])
    return events


# =========================================================================== store access


def _transaction(store: RuntimeStore) -> AbstractContextManager[sqlite3.Connection]:
    """One write transaction (``RuntimeStore.write``: ``BEGIN IMMEDIATE`` under the store's
    lock). The store's own writers called inside it (``import_batch``) join it, so the batch
    import and the source-row upsert commit or roll back together."""
    return store.write()


_IMPORT_SOURCES_COLUMNS = (
    ("source_path", "TEXT", 0, 1),
    ("fingerprint", "TEXT", 1, 0),
    ("imported_at", "INTEGER", 1, 0),
)


def _import_sources_columns(store: RuntimeStore) -> tuple[tuple[str, str, int, int], ...]:
    with store.read() as conn:
        rows = conn.execute("PRAGMA table_info(runtime_import_sources)").fetchall()
    # (cid, name, type, notnull, dflt_value, pk)
    return tuple((row[1], str(row[2]).upper(), row[3], row[5]) for row in rows)


def ensure_import_sources_table(store: RuntimeStore) -> None:
    """Create ``runtime_import_sources`` if absent (writer open only, §5.2 rule 2); fail
    closed (``import_sources_shape_mismatch``) if a table of that name has another shape."""
    if not _import_sources_columns(store):
        with _transaction(store) as conn:
            conn.execute(IMPORT_SOURCES_DDL)
    if _import_sources_columns(store) != _IMPORT_SOURCES_COLUMNS:
        raise StoreError(
            "runtime_import_sources does not have the legacy import shape",
            code="import_sources_shape_mismatch",
        )


def _recorded_fingerprint(store: RuntimeStore, source_path: str) -> str | None:
    with store.read() as conn:
        row = conn.execute(
            "SELECT fingerprint FROM runtime_import_sources WHERE source_path = ?", (source_path,)
        ).fetchone()
    return None if row is None else row[0]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# =========================================================================== tree import (rules 1–3)


@dataclass(frozen=True, slots=True)
class ImportReport:
    """§5.2 rule 2 report. ``files_scanned`` counts files actually read (a file whose
    fingerprint is recorded is skipped unread and not counted, §9 item 138)."""

    files_scanned: int = 0
    events_read: int = 0
    events_imported: int = 0
    events_existing: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "filesScanned": self.files_scanned,
            "eventsRead": self.events_read,
            "eventsImported": self.events_imported,
            "eventsExisting": self.events_existing,
        }


@dataclass(frozen=True, slots=True)
class JsonlImportReport:
    """Rule 7 report of one strict single-run import (§9 item 140: ``{2,2,0}``)."""

    events_read: int = 0
    events_imported: int = 0
    events_existing: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "eventsRead": self.events_read,
            "eventsImported": self.events_imported,
            "eventsExisting": self.events_existing,
        }


def _import_events(store: RuntimeStore, session_id: str, run_id: str, events: Sequence[FrozenDict]) -> tuple[int, int]:
    """Batch import inside the caller's transaction; returns (imported, existing)."""
    if not events:
        return 0, 0
    created = store.import_batch(session_id, run_id, list(events))
    imported = sum(1 for flag in created if flag)
    return imported, len(events) - imported


def import_legacy_tree(store: RuntimeStore, root: str | os.PathLike[str]) -> ImportReport:
    """§5.2 rules 2–3: import every legacy ``runtime-events.jsonl`` under ``root`` into ``store``.

    Per file, in layout order: a recorded fingerprint skips the file unread; otherwise the
    file is read and parsed (rules 5–6; a torn or invalid line refuses the file), and its
    events are batch-imported with the source-row upsert in **one** transaction. Any error
    rolls that file back and aborts the whole import (files imported earlier stay imported).
    Source files are only ever read: bytes and mtime stay unchanged.
    """
    ensure_import_sources_table(store)
    files = events_read = events_imported = events_existing = 0
    for run_file in iter_legacy_run_files(root):
        st = _regular_file(run_file.path)
        if st is None:
            continue  # vanished between listing and stat
        fingerprint = file_fingerprint(st)
        if _recorded_fingerprint(store, run_file.source_path) == fingerprint:
            continue  # rule 2: recorded → skipped, not even read
        data = run_file.path.read_bytes()
        files += 1
        events = parse_legacy_jsonl(data, run_file.session_id, run_file.run_id)
        events_read += len(events)
        with _transaction(store) as conn:
            imported, existing = _import_events(store, run_file.session_id, run_file.run_id, events)
            conn.execute(
                "INSERT INTO runtime_import_sources (source_path, fingerprint, imported_at) VALUES (?, ?, ?) "
                "ON CONFLICT (source_path) DO UPDATE SET fingerprint = excluded.fingerprint, "
                "imported_at = excluded.imported_at",
                (run_file.source_path, fingerprint, _now_ms()),
            )
        events_imported += imported
        events_existing += existing
    return ImportReport(files, events_read, events_imported, events_existing)


class LegacyStoreOpen(NamedTuple):
    """Result of :func:`open_runtime_store_with_legacy_import`: a ``kind = sqlite`` writer."""

    store: RuntimeStore
    report: ImportReport


def open_runtime_store_with_legacy_import(root: str | os.PathLike[str]) -> LegacyStoreOpen:
    """§5.2 rule 1: open (create, migrate) the writer, then import the legacy tree before
    returning. There is no backend flag: the result is always the SQLite store. If the import
    fails the store is closed and the error propagates (the JSONL stays intact, rule 3)."""
    store = RuntimeStore.open(root)
    try:
        report = import_legacy_tree(store, root)
    except BaseException:
        store.close()
        raise
    return LegacyStoreOpen(store, report)


# =========================================================================== strict import / export (7–8)


def import_runtime_events_from_jsonl(
    store: RuntimeStore, session_id: str, run_id: str, text: str
) -> JsonlImportReport:
    """Rule 7: import one run's JSONL text strictly (no torn tail, no partials, identity
    checked) through the batch path, all-or-nothing."""
    events = parse_strict_jsonl(text, session_id, run_id)
    with _transaction(store):
        imported, existing = _import_events(store, session_id, run_id, events)
    return JsonlImportReport(len(events), imported, existing)


class _EventSource(Protocol):
    def read_run_events(self, session_id: str, run_id: str) -> Sequence[Mapping[str, Any]]: ...


def export_runtime_events_to_jsonl(source: _EventSource, session_id: str, run_id: str) -> str:
    """Rule 8: the run's immutable events (no partials), one canonical JSON per line, joined
    by ``\\n`` with a trailing ``\\n``; an empty run exports ``""``."""
    lines = [
        encode_runtime_event(event).canonical_json
        for event in source.read_run_events(session_id, run_id)
        if event.get("partial") is not True
    ]
    return "".join(line + "\n" for line in lines)


# =========================================================================== read-only inspection (rule 4)


class RuntimeEventReader(Protocol):
    """What rule 4 hands out: read methods only (never an ``append``)."""

    @property
    def kind(self) -> Literal["jsonl", "sqlite"]: ...

    def list_sessions(self) -> list[str]: ...

    def list_runs(self, session_id: str) -> list[str]: ...

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]: ...

    def close(self) -> None: ...


class JsonlRuntimeEventReader:
    """``kind = "jsonl"``: the legacy files, read-only. It never creates a file or directory
    (§10 item 33), so in particular never ``runtime.sqlite``; a torn or invalid line raises
    :class:`LegacyJsonlCorruptionError` (``Invalid RuntimeEvent JSONL line <n> for run <r>:
    …``)."""

    __slots__ = ("_root",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root)

    @property
    def kind(self) -> Literal["jsonl"]:
        return "jsonl"

    @property
    def root(self) -> Path:
        return self._root

    def list_sessions(self) -> list[str]:
        """Sessions (safe names, sorted) that hold at least one run with a runtime-events file."""
        return sorted({f.session_id for f in iter_legacy_run_files(self._root)})

    def list_runs(self, session_id: str) -> list[str]:
        if not is_safe_storage_id(session_id):
            return []
        return [f.run_id for f in iter_legacy_run_files(self._root) if f.session_id == session_id]

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]:
        """The run's events in file order (legacy stream partials skipped, as on import);
        ``[]`` when the layout has no such run (unsafe ids never name a visited directory)."""
        if not (is_safe_storage_id(session_id) and is_safe_storage_id(run_id)):
            return []
        path = _run_file(self._root, session_id, run_id).path
        if _regular_file(path) is None:
            return []
        data = path.read_bytes()
        return _decode_lines(data, session_id, run_id, flavour="reader", skip_legacy_partials=True)

    def close(self) -> None:
        return None

    def __enter__(self) -> JsonlRuntimeEventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqliteRuntimeEventReader:
    """``kind = "sqlite"``: a read-only view of ``runtime.sqlite`` (never the JSONL files)."""

    __slots__ = ("_store",)

    def __init__(self, store: RuntimeStore) -> None:
        self._store = store

    @property
    def kind(self) -> Literal["sqlite"]:
        return "sqlite"

    @property
    def store(self) -> RuntimeStore:
        return self._store

    def list_sessions(self) -> list[str]:
        with self._store.read() as conn:
            rows = conn.execute("SELECT DISTINCT session_id FROM runtime_events ORDER BY session_id").fetchall()
        return [row[0] for row in rows]

    def list_runs(self, session_id: str) -> list[str]:
        with self._store.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT run_id FROM runtime_events WHERE session_id = ? ORDER BY run_id", (session_id,)
            ).fetchall()
        return [row[0] for row in rows]

    def read_run_events(self, session_id: str, run_id: str) -> list[FrozenDict]:
        return list(self._store.read_run_events(session_id, run_id))

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> SqliteRuntimeEventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_runtime_event_reader(root: str | os.PathLike[str]) -> JsonlRuntimeEventReader | SqliteRuntimeEventReader:
    """§5.2 rule 4: ``sqlite`` when ``<root>/runtime.sqlite`` exists (read-only open, no
    migration, no JSONL fallback or merge), otherwise ``jsonl`` over the files without
    creating a database."""
    base = Path(root)
    if os.path.lexists(base / DATABASE_FILE_NAME):
        return SqliteRuntimeEventReader(RuntimeStore.open_read_only(base))
    return JsonlRuntimeEventReader(base)
