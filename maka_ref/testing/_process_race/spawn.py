"""One spawned race worker and the waits on its output (parent side of spec 30 §7.1).

:class:`_Worker` starts ``python -m maka_ref.testing.race_worker`` and drains both pipes from
the first moment in reader threads; :func:`_wait_until` and :func:`_wait_drained` block on the
shared condition until tokens appear or output ends. Kept apart from :func:`run_race`'s
protocol steps in :mod:`maka_ref.testing.process_race`, which is the only user.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any, Sequence

from maka_ref.testing._process_race.types import WorkerResult, WorkerSpec

# Private helpers only; maka_ref.testing.process_race imports them by name.
__all__: list[str] = []


class _Worker:
    """A spawned worker and the threads draining its pipes into growing buffers."""

    def __init__(self, index: int, spec: WorkerSpec, env: dict[str, str], cwd: str, changed: threading.Condition):
        self.index = index
        self.mode = spec.mode
        self._changed = changed
        self._out = bytearray()
        self._err = bytearray()
        self._eof = [False, False]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "maka_ref.testing.race_worker"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._threads = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self._out, 0), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self._err, 1), daemon=True),
        ]
        try:
            for thread in self._threads:
                thread.start()
        except BaseException:  # cannot drain it: never leave it running
            self.proc.kill()
            self.proc.wait()
            raise

    def _drain(self, pipe: Any, buffer: bytearray, slot: int) -> None:
        fd = pipe.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                with self._changed:
                    if not chunk:
                        self._eof[slot] = True
                        self._changed.notify_all()
                        return
                    buffer.extend(chunk)
                    self._changed.notify_all()
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    # -- the following are called with ``changed`` held -------------------------------------

    def stdout_text(self) -> str:
        return self._out.decode("utf-8", "replace")

    def stderr_text(self) -> str:
        return self._err.decode("utf-8", "replace")

    def has(self, token: str) -> bool:
        return token.encode() in self._out

    def stdout_closed(self) -> bool:
        return self._eof[0]

    def drained(self) -> bool:
        return all(self._eof)

    # -- lifecycle ---------------------------------------------------------------------------

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()  # SIGKILL on POSIX, TerminateProcess on Windows
            except OSError:
                pass

    def reap(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        for thread in self._threads:
            thread.join(timeout=timeout)

    def result(self) -> WorkerResult:
        with self._changed:
            return WorkerResult(
                self.index, self.mode, self.proc.pid, self.proc.poll(), self.stdout_text(), self.stderr_text()
            )


def _wait_until(
    changed: threading.Condition, workers: Sequence[_Worker], token: str, deadline: float
) -> tuple[bool, list[_Worker]]:
    """Wait until every worker printed ``token`` or closed its stdout without it.

    Returns ``(all_printed, died_without_token)``."""
    with changed:
        while True:
            dead = [w for w in workers if not w.has(token) and w.stdout_closed()]
            if all(w.has(token) or w.stdout_closed() for w in workers):
                return (not dead, dead)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return (False, [])
            changed.wait(timeout=min(remaining, 0.05))


def _wait_drained(changed: threading.Condition, workers: Sequence[_Worker], deadline: float) -> bool:
    with changed:
        while not all(worker.drained() for worker in workers):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            changed.wait(timeout=min(remaining, 0.05))
        return True
