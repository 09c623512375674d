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
  The incomplete-prefix classifier (:mod:`maka_ref._store.legacy.json_prefix`) is what lets the
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
``legacy.json_prefix``, ``_store.errors``, ``_store.partials`` (safe ids) and the
:class:`~maka_ref._store.runtime_store.RuntimeStore` facade.

Split (each a sibling module with one job; every name above is still importable from here):
``decode`` (the line decoder of rules 5–7 and the exceptions it raises), ``layout`` (§5.1
layout, fingerprint), ``sources`` (the
``runtime_import_sources`` table, transaction, batch step), ``reports`` (the report
values), ``readers`` (the reader protocol, the ``sqlite`` reader). This module keeps
the entry points that orchestrate them and the ``jsonl`` reader. The callers of
``_decode_lines`` stay here and look it up in this module's namespace, where the crash mutant
``crash-jsonl-torn-tail-accepted`` wraps it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from maka_ref._codec.frozen import FrozenDict
from maka_ref._events.encode import encode_runtime_event
from maka_ref._store.legacy.decode import (
    LegacyIdentityMismatchError,
    LegacyJsonlCorruptionError,
    LegacyPartialEventError,
    _decode_lines,
)
from maka_ref._store.legacy.layout import (
    RUNTIME_EVENTS_FILE_NAME,
    LegacyRunFile,
    _regular_file,
    _run_file,
    file_fingerprint,
    is_safe_storage_id,
    iter_legacy_run_files,
)
from maka_ref._store.legacy.readers import RuntimeEventReader, SqliteRuntimeEventReader
from maka_ref._store.legacy.reports import (
    ImportReport,
    JsonlImportReport,
    LegacyStoreOpen,
)
from maka_ref._store.legacy.sources import (
    IMPORT_SOURCES_DDL,
    _import_events,
    _now_ms,
    _recorded_fingerprint,
    _transaction,
    ensure_import_sources_table,
)
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


# =========================================================================== parsing (rules 5–7)


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


# =========================================================================== tree import (rules 1–3)


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


def open_runtime_event_reader(root: str | os.PathLike[str]) -> JsonlRuntimeEventReader | SqliteRuntimeEventReader:
    """§5.2 rule 4: ``sqlite`` when ``<root>/runtime.sqlite`` exists (read-only open, no
    migration, no JSONL fallback or merge), otherwise ``jsonl`` over the files without
    creating a database."""
    base = Path(root)
    if os.path.lexists(base / DATABASE_FILE_NAME):
        return SqliteRuntimeEventReader(RuntimeStore.open_read_only(base))
    return JsonlRuntimeEventReader(base)
