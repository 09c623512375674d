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

import errno
import os
import sqlite3
import stat
import tempfile  # noqa: F401 - tests patch snapshot.tempfile.mkdtemp (private_dirs uses it)
import time
from pathlib import Path
from typing import Callable

from maka_ref._inspect.private_dirs import make_private_dir
from maka_ref._store.errors import StoreError

__all__ = [
    "ATTEMPTS",
    "SIDECAR_SUFFIXES",
    "copy_database_files",
    "copy_regular_file",
    "make_private_dir",
    "settle_hot_journal",
]

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

_CHUNK = 1024 * 1024
_SENDFILE_CHUNK = 64 * 1024 * 1024


def _not_regular(path: Path, mode: int) -> StoreError:
    kind = (
        "a symbolic link" if stat.S_ISLNK(mode)
        else "a directory" if stat.S_ISDIR(mode)
        else "a FIFO" if stat.S_ISFIFO(mode)
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket" if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    # The store's own codes for the same fault (maka_ref._store.engine.faults), so that inspect and
    # a writer name a linked or FIFO store file alike.
    return StoreError(
        f"{path.name} in the workspace is {kind}, not a regular file; SQLite's own files never are",
        code="store_file_symlink" if stat.S_ISLNK(mode) else "store_file_not_regular",
    )


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading without following a final symlink and without blocking on a
    FIFO, then check the *opened* file (``fstat``, so no swap between check and read)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == getattr(os, "ELOOP", 40):  # O_NOFOLLOW on a symlink
            raise _not_regular(path, os.lstat(path).st_mode) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_regular(path, st.st_mode)
    return fd, st


def copy_regular_file(source: Path, dest: Path) -> None:
    """Copy the regular file ``source`` to the new file ``dest``, reading at most the size
    ``fstat`` gave when it was opened (plus one probe byte).

    Why bounded: a symlink to ``/dev/zero`` or a FIFO in place of a sidecar would otherwise
    make the copy endless or blocking. A file that grows while we copy is cut at its opened
    size; the signatures before and after the copy then differ and the copy is retried, so the
    cut never reaches SQLite.
    """
    fd, st = _open_regular(source)
    try:
        with open(dest, "xb") as out:
            remaining = st.st_size + 1
            use_sendfile = hasattr(os, "sendfile")
            while remaining > 0:
                if use_sendfile:  # in-kernel copy (what shutil.copyfile used), still bounded
                    try:
                        sent = os.sendfile(out.fileno(), fd, None, min(_SENDFILE_CHUNK, remaining))
                    except OSError as error:
                        if error.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                            raise
                        use_sendfile = False
                        continue
                    if not sent:
                        break
                    remaining -= sent
                    continue
                chunk = os.read(fd, min(_CHUNK, remaining))
                if not chunk:
                    break
                out.write(chunk)
                remaining -= len(chunk)
    finally:
        os.close(fd)


#: Indirection for tests (a copy that races with a writer).
copy_file: Callable[[Path, Path], object] = copy_regular_file


def _busy(message: str) -> StoreError:
    return StoreError(message, code="workspace_busy")


def _unreadable(path: Path, error: OSError) -> StoreError:
    return StoreError(
        f"cannot read {path.name} in the workspace: {error.strerror or error}", code="workspace_unreadable"
    )


def _signature(path: Path, suffix: str) -> _Signature:
    """``lstat`` (never through a link) and the header read through :func:`_open_regular`, so
    a link, FIFO or device is refused here, before anything is copied or waited on."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _unreadable(path, error) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    header = b""
    size = _HEADER_BYTES.get(suffix, 0)
    if size:
        try:
            fd, _ = _open_regular(path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _unreadable(path, error) from None
        try:
            header = os.pread(fd, size, 0)
        except OSError as error:
            raise _unreadable(path, error) from None
        finally:
            os.close(fd)
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


def _check_room(db_path: Path, dest_dir: Path) -> None:
    """Refuse a snapshot that cannot fit where it would be written (``snapshot_unavailable``)
    instead of filling that file system: the copy needs the files' full (apparent) sizes."""
    needed = 0
    for suffix in ("", *SIDECAR_SUFFIXES):
        try:
            st = os.lstat(f"{db_path}{suffix}")
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            needed += st.st_size
    try:
        fs = os.statvfs(dest_dir)
    except OSError:
        return
    available = fs.f_bavail * fs.f_frsize
    if needed > available:
        raise StoreError(
            f"the inspection snapshot needs {needed} bytes but {dest_dir.parent} has {available} free",
            code="snapshot_unavailable",
        )


def _clear(directory: Path) -> None:
    for entry in directory.iterdir():
        entry.unlink()


def copy_database_files(db_path: Path, dest_dir: Path) -> list[str]:
    """Copy ``db_path`` and its sidecars into ``dest_dir`` (same names) as one consistent
    snapshot; returns the copied file names (sorted). Raises ``workspace_busy`` after
    :data:`ATTEMPTS` attempts that each raced with a writer, ``workspace_unreadable`` on a
    permission error, ``store_file_symlink`` / ``store_file_not_regular`` when the database or
    a sidecar is a symlink / not a regular file (FIFO, device, directory: refused before
    anything is read from it), and
    ``snapshot_unavailable`` when the copy would not fit in the temporary file system."""
    dest_db = dest_dir / db_path.name
    for attempt in range(ATTEMPTS):
        if attempt:
            _clear(dest_dir)
            time.sleep(min(_BACKOFF_S * (2 ** (attempt - 1)), _BACKOFF_MAX_S))
        before = _signatures(db_path)
        if before[""] is None:
            raise StoreError(f"{db_path.name} vanished while it was being inspected", code="workspace_busy")
        _check_room(db_path, dest_dir)
        copied = _copy_once(db_path, dest_db)
        if copied is not None and _signatures(db_path) == before:
            return sorted(copied)
    _clear(dest_dir)
    raise _busy(f"{db_path.name} kept changing while it was being copied ({ATTEMPTS} attempts)")


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
