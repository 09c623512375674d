"""A private, consistent copy of a workspace's SQLite files (``maka-ref inspect``).

Why a copy: even a ``mode=ro`` connection to a live WAL database writes read marks into the
workspace's ``-shm`` (and a first reader may rebuild it, or create ``-wal``/``-shm``), so any
SQLite open of the workspace's files can change them. ``inspect`` promises to leave every
file byte-identical, so SQLite never opens them at all: the files are copied with plain
reads into a temporary directory *outside* the workspace and SQLite opens the copy.

What is copied: ``runtime.sqlite`` and whichever of ``-wal``, ``-shm`` and ``-journal``
exist, never the main file alone (spec 30 §10 item 8): committed frames may live only in the
WAL. The copied ``-shm`` is inert: no connection holds the copy, so SQLite's first
connection to it discards the index and rebuilds it from the copied ``-wal`` (which is why
the ``-shm`` takes no part in the consistency check below). A copied rollback ``-journal`` is
hot by construction (nobody holds the copy's lock), so :func:`settle_hot_journal` lets SQLite
roll it back *in the copy*, giving the last committed state.

Residual risk and its detection: a writer may commit, or checkpoint the WAL into the main
file, while we copy, which would give a main file and a WAL from different moments. Before
and after copying we take a cheap signature of each source (inode, size, mtime and ctime in
nanoseconds, plus the 100-byte database header and the 32-byte WAL header, which carry the
change counter and the WAL salts). If every signature is unchanged, every copied file was
unchanged over the whole copy window, so all copies show one single moment. Otherwise the
copy is discarded and retried (:data:`ATTEMPTS` times with a short back-off), then
``workspace_busy``. What remains undetectable is a change that leaves size, timestamps (whose
granularity is the kernel's clock tick) and both headers identical within one tick — a
vanishingly small window on a database that was being written at that very moment.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Callable

from maka_ref._store.errors import StoreError

__all__ = ["ATTEMPTS", "SIDECAR_SUFFIXES", "copy_database_files", "make_private_dir", "settle_hot_journal"]

#: Files next to ``runtime.sqlite`` that belong to it (SQLite's own names).
SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
#: Copy attempts before giving up with ``workspace_busy`` (about one second of back-off).
ATTEMPTS = 8
_BACKOFF_S = 0.02
_BACKOFF_MAX_S = 0.25
#: The -shm is a derived index rebuilt on the copy, so it is copied but not compared.
_UNCHECKED_SUFFIXES = frozenset({"-shm"})
_HEADER_BYTES = {"": 100, "-wal": 32, "-journal": 28}

_Signature = tuple[object, ...] | None

#: Indirection for tests (a copy that races with a writer).
copy_file: Callable[[Path, Path], object] = shutil.copyfile


def _busy(message: str) -> StoreError:
    return StoreError(message, code="workspace_busy")


def _unreadable(path: Path, error: OSError) -> StoreError:
    return StoreError(
        f"cannot read {path.name} in the workspace: {error.strerror or error}", code="workspace_unreadable"
    )


def _signature(path: Path, suffix: str) -> _Signature:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _unreadable(path, error) from None
    header = b""
    size = _HEADER_BYTES.get(suffix, 0)
    if size:
        try:
            with open(path, "rb") as handle:
                header = handle.read(size)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _unreadable(path, error) from None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, header)


def _signatures(db_path: Path) -> dict[str, _Signature]:
    out: dict[str, _Signature] = {}
    for suffix in ("", *SIDECAR_SUFFIXES):
        if suffix in _UNCHECKED_SUFFIXES:
            continue
        out[suffix] = _signature(Path(f"{db_path}{suffix}"), suffix)
    return out


def _copy_once(db_path: Path, dest_db: Path) -> list[str] | None:
    """Copy every existing file; the copied names, or None when a file vanished meanwhile."""
    copied: list[str] = []
    for suffix in ("", *SIDECAR_SUFFIXES):
        source = Path(f"{db_path}{suffix}")
        if not os.path.lexists(source):
            continue
        try:
            copy_file(source, Path(f"{dest_db}{suffix}"))
        except FileNotFoundError:
            if suffix == "":
                return None
            continue  # a sidecar deleted by a closing writer: the signatures decide
        except OSError as error:
            raise _unreadable(source, error) from None
        copied.append(source.name)
    return copied


def _clear(directory: Path) -> None:
    for entry in directory.iterdir():
        entry.unlink()


def copy_database_files(db_path: Path, dest_dir: Path) -> list[str]:
    """Copy ``db_path`` and its sidecars into ``dest_dir`` (same names) as one consistent
    snapshot; returns the copied file names (sorted). Raises ``workspace_busy`` after
    :data:`ATTEMPTS` attempts that each raced with a writer, ``workspace_unreadable`` on a
    permission error, ``database_corrupt`` when the database path is not a regular file."""
    dest_db = dest_dir / db_path.name
    if os.path.lexists(db_path) and not db_path.is_file():
        raise StoreError(f"{db_path.name} is not a regular file", code="database_corrupt")
    for attempt in range(ATTEMPTS):
        if attempt:
            _clear(dest_dir)
            time.sleep(min(_BACKOFF_S * (2 ** (attempt - 1)), _BACKOFF_MAX_S))
        before = _signatures(db_path)
        if before[""] is None:
            raise StoreError(f"{db_path.name} vanished while it was being inspected", code="workspace_busy")
        copied = _copy_once(db_path, dest_db)
        if copied is not None and _signatures(db_path) == before:
            return sorted(copied)
    _clear(dest_dir)
    raise _busy(f"{db_path.name} kept changing while it was being copied ({ATTEMPTS} attempts)")


def make_private_dir(workspace: Path) -> Path:
    """A fresh temporary directory that is not inside ``workspace`` (so creating and removing
    it never changes the workspace's listing)."""
    root = workspace.resolve()
    candidates = [tempfile.gettempdir(), "/dev/shm", "/var/tmp", "/tmp"]
    for base in candidates:
        try:
            resolved = Path(base).resolve()
        except OSError:
            continue
        if resolved == root or resolved.is_relative_to(root) or not resolved.is_dir():
            continue
        try:
            return Path(tempfile.mkdtemp(prefix="maka-ref-inspect-", dir=resolved))
        except OSError:
            continue
    raise StoreError(
        "no temporary directory outside the workspace is available for the inspection snapshot",
        code="snapshot_unavailable",
    )


def settle_hot_journal(dest_db: Path) -> None:
    """Roll a copied hot rollback ``-journal`` back *in the private copy* (a read-only handle
    cannot, and reading around it would show a half-written transaction)."""
    if not Path(f"{dest_db}-journal").exists():
        return
    conn = sqlite3.connect(dest_db.absolute().as_uri() + "?mode=rw", uri=True, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()
