"""The file observer: what is at an evidence record's canonical target now (spec-phase3 §4.2).

Why it is stricter than the tools: the tools resolve a symlink that stays inside the workspace
(``maka_ref/_runtime/beneath.py``), but the evidence already holds the *resolved* path — the one
the effect acted on (spec-phase3 §1.5). A link found on that path now is a change of the path,
and following it would observe some other file (or read outside the workspace). So every
directory is opened ``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's descriptor, the final
component is ``lstat``-ed without following, and only a regular file is ever opened — with
``O_NOFOLLOW | O_NONBLOCK`` relative to its directory's descriptor, so a FIFO or link swapped in
meanwhile can neither redirect nor block the read.

Why it never raises and never writes: the reconciler must be able to run on any workspace,
however hostile, and its answer is a fact it commits. Every failure becomes
``unreadable`` with a closed reason (spec-phase3 §4.3); nothing is created, written, renamed,
removed, truncated or re-moded, and every descriptor is closed before returning. ``O_NOATIME``
is used where the kernel allows it, so even the access time stays as it was; with
``durable=True`` (the reconciler's call) the read file and its directory are ``fsync``-ed, which
flushes and changes no byte and no timestamp.

Bounded: a regular file larger than ``MAX_FILE_BYTES`` is reported by size without being read
(its size already differs from both evidence states, spec-phase3 §4.4); a smaller one is read
for at most ``size + 1`` bytes, and any disagreement between ``lstat``, two ``fstat`` calls and
the bytes read is ``changed_during_observation``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import Final

from maka_ref._durable import sync as durable_sync
from maka_ref._reconcile.evidence import (
    MAX_FILE_BYTES,
    FileEvidence,
    target_path_problem,
)
from maka_ref._reconcile.observation import ObservedState

__all__ = ["OBSERVER_SUPPORTED", "observe", "observe_evidence"]

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_NOATIME: Final = getattr(os, "O_NOATIME", 0)
_DIR_FLAGS: Final = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_FILE_FLAGS: Final = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
_CHUNK: Final = 1024 * 1024

#: Whether descriptor-relative, no-follow opens exist here (POSIX); elsewhere every observation
#: is the transient ``unsupported_platform`` (spec-phase3 §1.6).
OBSERVER_SUPPORTED: Final = (
    os.name == "posix"
    and _O_DIRECTORY != 0
    and _O_NOFOLLOW != 0
    and {os.open, os.stat} <= os.supports_dir_fd
)

_RESOURCE_ERRNOS: Final = frozenset(
    code for code in (errno.EMFILE, errno.ENFILE, errno.ENOMEM, getattr(errno, "ENOBUFS", None)) if code is not None
)
_PERMISSION_ERRNOS: Final = frozenset({errno.EACCES, errno.EPERM})
_NOT_DIRECTORY_ERRNOS: Final = frozenset({errno.ELOOP, errno.ENOTDIR})
_NO_SYNC_ERRNOS: Final = frozenset(
    code for code in (errno.EINVAL, getattr(errno, "ENOTSUP", None), getattr(errno, "EOPNOTSUPP", None)) if code is not None
)


class _Unreadable(Exception):
    """Internal: ends an observation with ``unreadable(reason)``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def observe_evidence(root: str | os.PathLike[str], evidence: FileEvidence, *, durable: bool = False) -> ObservedState:
    """:func:`observe` of the record's canonical target (spec-phase3 §4.2)."""
    return observe(root, evidence.target_path, durable=durable)


def observe(root: str | os.PathLike[str], target_path: str, *, durable: bool = False) -> ObservedState:
    """What is at ``<root>/<target_path>`` now (spec-phase3 §4.1–§4.3); never raises, never writes.

    ``root`` is the canonical workspace root (opened as given); ``target_path`` a canonical
    target (spec-phase3 §1.5). ``durable``: ``fsync`` a regular file that was read and its
    directory before answering (spec-phase3 §5.1 step 5).
    """
    if target_path_problem(target_path) is not None:
        return ObservedState.unreadable("target_invalid")
    if not OBSERVER_SUPPORTED:  # pragma: no cover - non-POSIX
        return ObservedState.unreadable("unsupported_platform")
    try:
        root_fd = os.open(os.fspath(root), os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as exc:
        return ObservedState.unreadable("resource_exhausted" if exc.errno in _RESOURCE_ERRNOS else "workspace_unreachable")
    except (TypeError, ValueError):  # not a path, or a path with NUL
        return ObservedState.unreadable("workspace_unreachable")
    descriptors = [root_fd]
    try:
        return _observe_below(descriptors, target_path.split("/"), durable)
    except _Unreadable as stop:
        return ObservedState.unreadable(stop.reason)
    except OSError as exc:
        return ObservedState.unreadable(_reason(exc))
    except Exception:  # noqa: BLE001 - the observer answers, it never raises (spec-phase3 §4.2 item 6)
        return ObservedState.unreadable("io_error")
    finally:
        for fd in descriptors:
            os.close(fd)


def _observe_below(descriptors: list[int], parts: list[str], durable: bool) -> ObservedState:
    """Steps 2–4 of spec-phase3 §4.2; appends every descriptor it opens to ``descriptors``."""
    for name in parts[:-1]:
        try:
            descriptors.append(os.open(name, _DIR_FLAGS, dir_fd=descriptors[-1]))
        except FileNotFoundError:
            return ObservedState.of_type("absent")
        except OSError as exc:
            if exc.errno in _NOT_DIRECTORY_ERRNOS:
                raise _Unreadable("ancestor_not_directory") from None
            raise
    dir_fd, name = descriptors[-1], parts[-1]
    try:
        link = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return ObservedState.of_type("absent")
    if stat.S_ISLNK(link.st_mode):
        return ObservedState.of_type("symlink")
    if stat.S_ISDIR(link.st_mode):
        return ObservedState.of_type("directory")
    if not stat.S_ISREG(link.st_mode):
        return ObservedState.of_type("other")
    if link.st_size > MAX_FILE_BYTES:  # never read: its size differs from both states
        return ObservedState.regular(link.st_size, link.st_nlink, stat.S_IMODE(link.st_mode), None)
    fd = _open_regular(name, dir_fd)
    try:
        first = os.fstat(fd)
        if not stat.S_ISREG(first.st_mode) or _identity(first) != _identity(link):
            raise _Unreadable("changed_during_observation")
        digest, count = _digest_bounded(fd, first.st_size)
        second = os.fstat(fd)
        if count != first.st_size or _identity(second) != _identity(first):
            raise _Unreadable("changed_during_observation")
        if durable:
            _sync(fd, dir_fd)
        return ObservedState.regular(first.st_size, first.st_nlink, stat.S_IMODE(first.st_mode), digest)
    finally:
        os.close(fd)


def _open_regular(name: str, dir_fd: int) -> int:
    """Open the final component read-only, never following a link and never blocking; with
    ``O_NOATIME`` when the kernel allows it (only the owner or a privileged process may)."""
    flags = _FILE_FLAGS | _O_NOATIME
    while True:
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except PermissionError:
            if flags & _O_NOATIME:
                flags &= ~_O_NOATIME
                continue
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENXIO):  # swapped since the lstat
                raise _Unreadable("changed_during_observation") from None
            raise


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What must not change while a file is observed: the object and its content-bearing stamps."""
    return (info.st_dev, info.st_ino, info.st_mode, info.st_nlink, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _digest_bounded(fd: int, size: int) -> tuple[str, int]:
    """SHA-256 of at most ``size + 1`` bytes from ``fd`` and how many were read (one more than
    ``size`` means the file grew)."""
    h = hashlib.sha256()
    remaining = size + 1
    count = 0
    while remaining > 0:
        chunk = os.read(fd, min(_CHUNK, remaining))
        if not chunk:
            break
        h.update(chunk)
        count += len(chunk)
        remaining -= len(chunk)
    return "sha256:" + h.hexdigest(), count


def _sync(fd: int, dir_fd: int) -> None:
    """Make the observed state durable (spec-phase3 §4.2): the file, then its directory entry.
    A file system without directory ``fsync`` (``EINVAL``/``ENOTSUP``) has nothing to flush."""
    try:
        durable_sync(fd)
    except OSError:
        raise _Unreadable("sync_failed") from None
    try:
        durable_sync(dir_fd)
    except OSError as exc:
        if exc.errno not in _NO_SYNC_ERRNOS:
            raise _Unreadable("sync_failed") from None


def _reason(exc: OSError) -> str:
    """The unreadable reason of an unexpected ``OSError`` (spec-phase3 §4.3)."""
    if exc.errno in _PERMISSION_ERRNOS:
        return "permission_denied"
    if exc.errno in _RESOURCE_ERRNOS:
        return "resource_exhausted"
    return "io_error"
