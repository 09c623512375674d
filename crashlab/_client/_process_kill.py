"""psutil-level helpers of ``_process``: liveness, group membership, killing and waiting.

Why a separate module: "is it alive", "kill these and wait until they are dead (or zombies)"
are the same for every caller and are independent of how a tree is found; ``ProcessTree``
in ``_process`` decides what to kill, this module only does the killing and the waiting.
"""

from __future__ import annotations

import os
import time
from typing import Iterable

import psutil

# Private helpers only: imported by name into crashlab._client._process.
__all__: list[str] = []

_STRAGGLER_KILL_WAIT_S = 2.0
_POLL_S = 0.01


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except OSError:
        return False


def _add(found: dict[int, psutil.Process], pid: int) -> None:
    try:
        found[pid] = psutil.Process(pid)
    except psutil.NoSuchProcess:
        pass


def _wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Poll until every process is gone or a zombie; return those still alive at ``timeout``.

    Why not ``psutil.wait_procs``: an orphan's zombie lingers until init reaps it (and some
    container inits never do), so "pid exists" is the wrong test; "not a zombie" is right.
    """
    deadline = time.monotonic() + timeout
    alive = [proc for proc in procs if _alive(proc)]
    while alive and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        alive = [proc for proc in alive if _alive(proc)]
    return alive


def _kill(procs: Iterable[psutil.Process]) -> None:
    targets = []
    for proc in procs:
        try:
            proc.kill()
            targets.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    _wait_dead(targets, _STRAGGLER_KILL_WAIT_S)
