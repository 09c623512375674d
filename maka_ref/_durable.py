"""Writing bytes to an open descriptor, completely and durably, on every platform we claim.

Why one place: every file the reference writes itself — tool targets, the effect log, the
workspace marker, script and lifecycle sidecars, Git's exclude file — is written through a
descriptor it opened with its own checks (``O_NOFOLLOW``, ``fstat``), and each needs the same
two promises: ``os.write`` may write less than asked, so loop until every byte is written; and
a write the protocol relies on after a crash is made durable before the caller moves on.

"Durable" is not the same call everywhere (``docs/crashlab-powerloss.md``, "What durable
means per platform"): on Linux ``fsync(2)`` returns once the data is on the device; on macOS
``fsync(2)`` only hands the data to the drive, which may keep it in its volatile cache, and
the documented way to reach the platters is ``fcntl(fd, F_FULLFSYNC)``. :func:`sync` is that
choice, for files and directories alike. This module holds no policy about *which* file; its
callers do.
"""

from __future__ import annotations

import errno
import os
import sys

__all__ = ["F_FULLFSYNC", "sync", "sync_call", "write_all"]

#: ``F_FULLFSYNC`` from macOS ``<sys/fcntl.h>`` (51). Python's ``fcntl`` module defines it only
#: on darwin; the constant is spelled out so the darwin branch can be exercised on Linux.
F_FULLFSYNC = 51

#: Errors of ``F_FULLFSYNC`` that mean "this file system cannot do it" (an SMB or FAT volume):
#: then ``fsync`` is the best there is, as SQLite's own unix VFS does.
_NO_FULLFSYNC = frozenset({errno.EINVAL, errno.ENOTSUP, getattr(errno, "ENOTTY", errno.EINVAL)})


def sync_call() -> str:
    """The call :func:`sync` makes on this platform (the handshake's ``durability.sync``)."""
    return "F_FULLFSYNC" if sys.platform == "darwin" else "fsync"


def sync(fd: int) -> None:
    """Make ``fd``'s data and metadata durable: ``fcntl(F_FULLFSYNC)`` on macOS (falling back to
    ``fsync`` where the file system refuses it), ``fsync`` elsewhere. Works on a directory
    descriptor too (a new or renamed entry is durable once its directory is synced)."""
    if sys.platform == "darwin":
        import fcntl

        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_FULLFSYNC", F_FULLFSYNC))
            return
        except OSError as exc:
            if exc.errno not in _NO_FULLFSYNC:
                raise
    os.fsync(fd)


def write_all(fd: int, data: bytes, *, sync: bool = False) -> None:
    """Write every byte of ``data`` to ``fd`` (short writes retried); ``sync``: then make it
    durable (:func:`sync`)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if sync:
        _sync(fd)


_sync = sync
