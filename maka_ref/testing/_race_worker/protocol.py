"""Wire protocol of one race worker: environment names, barrier polling, stdout/stderr lines.

Shared by the mode bodies (which print progress lines such as ``CLAIM``) and by the worker's
main loop in :mod:`maka_ref.testing.race_worker`; kept apart so neither has to import the other.
Private: import these names from :mod:`maka_ref.testing.race_worker`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

__all__ = [
    "BARRIER_LIMIT_S",
    "ENV_COUNT",
    "ENV_DB",
    "ENV_MODE",
    "ENV_START",
    "ENV_STOP",
    "ENV_WORKER",
    "POLL_S",
    "error_code",
]

ENV_MODE = "MAKA_SQLITE_RECOVERY_CONCURRENCY_MODE"
ENV_DB = "MAKA_SQLITE_RECOVERY_CONCURRENCY_DB"
ENV_START = "MAKA_SQLITE_RECOVERY_CONCURRENCY_START"
ENV_STOP = "MAKA_SQLITE_RECOVERY_CONCURRENCY_STOP"
ENV_WORKER = "MAKA_SQLITE_RECOVERY_CONCURRENCY_WORKER"
ENV_COUNT = "MAKA_SQLITE_RECOVERY_CONCURRENCY_COUNT"

POLL_S = 0.005
#: Safety net: a worker never waits for a barrier longer than this (the parent kills sooner).
BARRIER_LIMIT_S = 120.0


def _say(fd: int, text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")
    while data:
        data = data[os.write(fd, data):]


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + BARRIER_LIMIT_S
    while not path.exists():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"barrier file {path} never appeared")
        time.sleep(POLL_S)


def error_code(error: BaseException) -> str:
    """The stable code a parent matches on: StoreError ``code``, ``SQLITE_<NAME>`` or class."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and code:
        return code
    if isinstance(error, sqlite3.Error):
        name = getattr(error, "sqlite_errorname", None)
        if isinstance(name, str) and name:
            return name
    return type(error).__name__
