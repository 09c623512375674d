"""Where ``inspect`` puts its private snapshot, and how a dead inspection's leftovers go.

Why a module: the snapshot directory must live *outside* the workspace (creating and removing
it must not change the workspace's listing), must be removed when the inspection ends, and
must not pile up when an inspection is killed (SIGKILL runs no ``finally``). A directory the
kernel drops with the process would need a private mount namespace or memory file system we
cannot count on, so instead each directory's name records its owner —
``maka-ref-inspect-<pid>-<start>-<random>``, ``<start>`` being the process's start time in
milliseconds since the epoch — and every inspection first sweeps the directories of owners
that are gone. The pid alone is not enough (pids are reused); pid plus start time names one
process for the machine's lifetime. A directory whose owner still runs is never touched,
nor is anything that is not one of our directories: a link, another user's directory, a
name that does not parse (e.g. from an older version) all stay.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import psutil

from maka_ref._store.errors import StoreError

__all__ = ["PREFIX", "make_private_dir", "sweep_stale_dirs"]

PREFIX = "maka-ref-inspect-"
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-(\d+)-")
#: Start times are read back from the kernel with clock-tick resolution (10 ms); a pid whose
#: start time is this close is the same process.
_SAME_START_MS = 50


def _start_ms(pid: int) -> int | None:
    """The start time of ``pid`` in ms since the epoch; ``None`` when no such process runs."""
    try:
        return round(psutil.Process(pid).create_time() * 1000)
    except psutil.NoSuchProcess:
        return None


def _owner_gone(pid: int, start_ms: int) -> bool:
    try:
        current = _start_ms(pid)
    except (psutil.Error, OSError):
        return False  # cannot tell (access denied, /proc unreadable): keep it
    return current is None or abs(current - start_ms) > _SAME_START_MS


def sweep_stale_dirs(base: Path) -> list[Path]:
    """Remove the snapshot directories in ``base`` whose owning process has ended; returns
    what was removed."""
    removed: list[Path] = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    uid = os.geteuid()
    for name in names:
        match = _NAME.match(name)
        if match is None:
            continue
        path = base / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            continue
        if _owner_gone(int(match.group(1)), int(match.group(2))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_private_dir(workspace: Path) -> Path:
    """A fresh snapshot directory that is not inside ``workspace``, named after this process
    (after sweeping the leftovers of dead inspections in the same place)."""
    root = workspace.resolve()
    me = os.getpid()
    prefix = f"{PREFIX}{me}-{_start_ms(me) or 0}-"
    candidates = [tempfile.gettempdir(), "/dev/shm", "/var/tmp", "/tmp"]
    for base in candidates:
        try:
            resolved = Path(base).resolve()
        except OSError:
            continue
        if resolved == root or resolved.is_relative_to(root) or not resolved.is_dir():
            continue
        sweep_stale_dirs(resolved)
        try:
            return Path(tempfile.mkdtemp(prefix=prefix, dir=resolved))
        except OSError:
            continue
    raise StoreError(
        "no temporary directory outside the workspace is available for the inspection snapshot",
        code="snapshot_unavailable",
    )
