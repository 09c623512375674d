"""Process-level helpers of a forked child: its exit code, interpreter shutdown, the fd limit.

Separate from :mod:`crashlab._client._zygote.server` so the fork loop reads as a loop;
``_child`` itself stays there because it reads ``_learn_w``, the global ``serve`` rebinds.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# Private helpers only: imported by name into crashlab._client._zygote.server.
__all__: list[str] = []


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:
        pass
    return 1


def _finish(code: int) -> int:
    """What interpreter shutdown does before the process ends: threads, atexit, flush."""
    try:
        import threading

        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
    except BaseException:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            if stream is sys.stdout:
                code = code or 120  # as the interpreter does when flushing stdout fails
    return code


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        return 4096
