"""The on-disk layout of the legacy JSONL profile (spec 30 §5.1) and its file fingerprint.

Why a module of its own: both the tree import and the read-only ``jsonl`` reader walk the
same ``<root>/sessions/<s>/runs/<r>/runtime-events.jsonl`` tree (safe ids only, sorted, no
symlinks), and ``_inspect`` lists it too; none of that needs the parser or the store.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from maka_ref._codec.numbers import format_number
from maka_ref._store.partials import is_safe_id

__all__ = [
    "RUNTIME_EVENTS_FILE_NAME",
    "LegacyRunFile",
    "file_fingerprint",
    "is_safe_storage_id",
    "iter_legacy_run_files",
]

RUNTIME_EVENTS_FILE_NAME = "runtime-events.jsonl"


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
