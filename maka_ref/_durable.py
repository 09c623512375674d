"""Writing bytes to an open descriptor, completely and (where asked) durably.

Why one place: every file the reference writes itself — tool targets, the effect log, the
workspace marker, script and lifecycle sidecars, Git's exclude file — is written through a
descriptor it opened with its own checks (``O_NOFOLLOW``, ``fstat``), and each needs the same
two promises: ``os.write`` may write less than asked, so loop until every byte is written; and
a write the protocol relies on after a crash is ``fsync``-ed before the caller moves on. This
module holds no policy about *which* file; its callers do.
"""

from __future__ import annotations

import os

__all__ = ["write_all"]


def write_all(fd: int, data: bytes, *, sync: bool = False) -> None:
    """Write every byte of ``data`` to ``fd`` (short writes retried); ``sync``: then ``fsync``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if sync:
        os.fsync(fd)
