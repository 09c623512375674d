"""Drain the child's stderr into a ring buffer that keeps only the last 64 KiB.

Why drain at all: an undrained stderr pipe fills (64 KiB) and blocks the implementation,
which would look like a hang of *its* making. Why only the tail: protocol §1.4 lets an
implementation log freely; the report needs the end (where the failure is), never all of it.
"""

from __future__ import annotations

import os
import threading

__all__ = ["TAIL_BYTES", "StderrTail"]

#: How much of stderr the report keeps (protocol §1.4).
TAIL_BYTES = 64 * 1024

_CHUNK = 64 * 1024


class StderrTail:
    """Reads ``fd`` on a daemon thread until EOF, keeping the last :data:`TAIL_BYTES` bytes."""

    def __init__(self, fd: int, *, limit: int = TAIL_BYTES) -> None:
        self._fd = fd
        self._limit = limit
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="crashlab-stderr", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, _CHUNK)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._buf += chunk
                excess = len(self._buf) - self._limit
                if excess > 0:
                    del self._buf[:excess]

    def text(self) -> str:
        """The tail so far, decoded as UTF-8 (a character cut at the start becomes U+FFFD)."""
        with self._lock:
            return self._buf.decode("utf-8", errors="replace")

    def join(self, timeout: float) -> bool:
        """Wait for EOF on stderr; ``True`` if the thread ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
