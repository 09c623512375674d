"""Linux ``/proc`` readers for the tree scans of ``_process``: stat rows and the pid→ppid table.

Why a separate module: these run after every reply and twice per kill, so they read
``/proc/PID/stat`` directly (one read per process instead of psutil's several); that raw,
Linux-only parsing is one job, apart from deciding which processes belong to a tree.
"""

from __future__ import annotations

import os
import threading

# Private helpers only: imported by name into crashlab._client._process.
__all__: list[str] = []

_PROC_OK = os.path.isfile("/proc/self/stat") and os.path.isdir("/proc/self/task")


def _read_stat(pid: int) -> tuple[int, int, int, int] | None:
    """``(ppid, pgrp, session, starttime)`` from ``/proc/PID/stat``, or ``None``."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 2048)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _proc_table() -> dict[int, tuple[int, int, int, int]] | None:
    """Every process's ``(ppid, pgrp, session, starttime)`` on Linux (``None`` elsewhere).

    One read per process instead of psutil's several: the scans run after every reply and
    twice per kill, so they are the client's own share of a crash cycle."""
    if not _PROC_OK:
        return None
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit():
            row = _read_stat(int(name))
            if row is not None:
                table[int(name)] = row
    return table


def _start_ticks(pid: int) -> int | None:
    row = _read_stat(pid) if _PROC_OK else None
    return row[3] if row is not None else None


_ppids: dict[int, int] = {}
_ppids_lock = threading.Lock()


def _ppid_table() -> dict[int, int] | None:
    """pid → ppid of every process, read incrementally (Linux; ``None`` elsewhere).

    Why incremental: :meth:`ProcessTree.snapshot` runs after every reply; listing ``/proc``
    is cheap, reading every ``stat`` is not, and only a process new since the last listing can
    be a new descendant (a known process never gains a parent other than a reaper). A pid
    reused between two listings a few milliseconds apart would need a full pid wrap-around.
    """
    if not _PROC_OK:
        return None
    try:
        pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
    except OSError:
        return None
    with _ppids_lock:
        for gone in _ppids.keys() - pids:
            del _ppids[gone]
        for pid in pids - _ppids.keys():
            row = _read_stat(pid)
            if row is not None:
                _ppids[pid] = row[0]
        return dict(_ppids)
