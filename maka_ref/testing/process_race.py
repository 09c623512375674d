"""Race several real OS processes on one ``runtime.sqlite`` (spec 30 §7, §10 items 34–36).

Why real processes: SQLite's locking (``BEGIN IMMEDIATE``, the WAL switch, busy handling,
``PRAGMA data_version``) only shows its behaviour across separate connections in separate
processes; threads in one interpreter share the GIL and the ``sqlite3`` module's state and
hide the interleavings that matter. The crash lab reuses this module.

Protocol (parent side of spec 30 §7.1; the worker is :mod:`maka_ref.testing.race_worker`):

1. spawn every worker (``sys.executable -m maka_ref.testing.race_worker``) with its mode, the
   database path and the start-file path in the environment; their stdout/stderr are drained by
   reader threads from the first moment, so a worker that dies early is a diagnostic, never a
   hang (§10 item 34);
2. wait until every worker's accumulated stdout contains ``READY`` (substring over all output
   so far, never per chunk — §10 item 35), 15 s;
3. create the start file (content ``go``): all workers leave their 5 ms polling loop together;
4. open-only races: wait for every ``OPENED`` (15 s), then create the stop file (``close``);
5. wait for every worker to exit (30 s).

On any timeout, or a worker exiting before ``READY``, every remaining worker is SIGKILLed,
every child is reaped (up to 5 s) and :class:`RaceError` is raised listing each worker's mode,
pid, exit code or signal, stdout and stderr. Whatever happens (including ``KeyboardInterrupt``),
no child outlives :func:`run_race`.

Results are matched by **code**: a worker prints ``RESULT ok <json>`` (stdout, exit 0) or
``RESULT error <code> <message>`` (stderr, exit 2) where ``<code>`` is the store error's stable
``code`` (:attr:`WorkerResult.error_code`).

``psutil`` (a test extra) is needed only by :func:`descendant_pids`, imported lazily.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from maka_ref.testing import race_worker

__all__ = [
    "OPENED_TIMEOUT_S",
    "READY_TIMEOUT_S",
    "REAP_TIMEOUT_S",
    "RESULT_TIMEOUT_S",
    "RaceError",
    "RaceOutcome",
    "WorkerResult",
    "WorkerSpec",
    "descendant_pids",
    "run_race",
]

READY_TIMEOUT_S = 15.0
OPENED_TIMEOUT_S = 15.0
RESULT_TIMEOUT_S = 30.0
REAP_TIMEOUT_S = 5.0

_PACKAGE_ROOT = str(Path(race_worker.__file__).resolve().parents[2])


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One worker: its mode and extra environment variables (e.g. the worker index)."""

    mode: str
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkerResult:
    """What one worker did: exit status and everything it wrote."""

    index: int
    mode: str
    pid: int
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def signal(self) -> int | None:
        """The signal that killed the worker (POSIX negative return code), else None."""
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.result_line is not None

    @property
    def result_line(self) -> str | None:
        """The worker's ``RESULT ok …`` line (stdout)."""
        return _find_line(self.stdout, "RESULT ok")

    @property
    def error_line(self) -> str | None:
        """The worker's ``RESULT error …`` line (stderr)."""
        return _find_line(self.stderr, "RESULT error")

    @property
    def detail(self) -> Any:
        """The JSON after ``RESULT ok`` (``{}`` when the mode reports nothing)."""
        line = self.result_line
        if line is None:
            raise ValueError(f"worker {self.index} ({self.mode}) has no RESULT ok line")
        rest = line[len("RESULT ok"):].strip()
        return json.loads(rest) if rest else {}

    @property
    def error_code(self) -> str | None:
        """The stable code of ``RESULT error <code> <message>``, None without such a line."""
        line = self.error_line
        if line is None:
            return None
        parts = line.split(" ", 3)
        return parts[2] if len(parts) > 2 else ""

    @property
    def error_class(self) -> str | None:
        """The exception class name from the worker's ``ERROR_CLASS <name>`` line."""
        line = _find_line(self.stderr, "ERROR_CLASS ")
        return line[len("ERROR_CLASS "):].strip() if line is not None else None

    def describe(self) -> str:
        if self.returncode is None:
            status = "still running"
        elif self.signal is not None:
            try:
                status = f"killed by {signal.Signals(self.signal).name}"
            except ValueError:
                status = f"killed by signal {self.signal}"
        else:
            status = f"exit {self.returncode}"
        return (
            f"worker {self.index} mode={self.mode} pid={self.pid} {status}\n"
            f"  stdout: {self.stdout!r}\n  stderr: {self.stderr!r}"
        )


@dataclass(frozen=True, slots=True)
class RaceOutcome:
    """All workers of a finished race, in spawn order."""

    workers: tuple[WorkerResult, ...]
    elapsed_s: float

    @property
    def exit_codes(self) -> list[int | None]:
        return [worker.returncode for worker in self.workers]

    @property
    def sorted_exit_codes(self) -> list[int]:
        return sorted(code if code is not None else -1 for code in self.exit_codes)

    @property
    def winners(self) -> list[WorkerResult]:
        return [worker for worker in self.workers if worker.returncode == 0]

    @property
    def losers(self) -> list[WorkerResult]:
        return [worker for worker in self.workers if worker.returncode != 0]

    def describe(self) -> str:
        return "\n".join(worker.describe() for worker in self.workers)


class RaceError(AssertionError):
    """The race could not run to completion (timeout, early death); carries diagnostics."""

    def __init__(self, reason: str, workers: Sequence[WorkerResult]) -> None:
        self.reason = reason
        self.workers = tuple(workers)
        super().__init__(reason + "\n" + "\n".join(worker.describe() for worker in self.workers))


def _find_line(text: str, prefix: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(prefix):
            return line
    return None


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


def run_race(
    workers: Iterable[str | WorkerSpec],
    db_path: str | Path,
    *,
    work_dir: str | Path,
    open_only: bool | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
    opened_timeout: float = OPENED_TIMEOUT_S,
    result_timeout: float = RESULT_TIMEOUT_S,
    extra_env: Mapping[str, str] | None = None,
) -> RaceOutcome:
    """Run one race (module docstring) and return every worker's result.

    ``workers``: modes, or :class:`WorkerSpec` with extra environment. ``work_dir`` holds the
    start/stop files (an existing, per-test directory: xdist-safe). ``open_only`` defaults to
    "every worker is an open-only mode". Raises :class:`RaceError` on a timeout or a worker that
    exited before ``READY`` / (open-only) ``OPENED``; never leaves a child running.
    """
    specs = [w if isinstance(w, WorkerSpec) else WorkerSpec(w) for w in workers]
    if not specs:
        raise ValueError("a race needs at least one worker")
    if open_only is None:
        open_only = all(spec.mode in race_worker.OPEN_ONLY_MODES for spec in specs)
    work = Path(work_dir)
    start = work / f"race-start-{uuid.uuid4().hex}"
    stop = Path(f"{start}.stop")
    base_env = dict(os.environ)
    base_env.update(extra_env or {})
    base_env["PYTHONPATH"] = os.pathsep.join(
        [_PACKAGE_ROOT, *[p for p in base_env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    base_env["PYTHONUNBUFFERED"] = "1"
    changed = threading.Condition()
    spawned: list[_Worker] = []
    began = time.monotonic()

    def fail(reason: str) -> RaceError:
        for worker in spawned:
            worker.kill()
        for worker in spawned:
            worker.reap(REAP_TIMEOUT_S)
        return RaceError(reason, [worker.result() for worker in spawned])

    try:
        for index, spec in enumerate(specs):
            env = dict(base_env)
            env.update(spec.env)
            env[race_worker.ENV_MODE] = spec.mode
            env[race_worker.ENV_DB] = str(db_path)
            env[race_worker.ENV_START] = str(start)
            env[race_worker.ENV_STOP] = str(stop)
            env.setdefault(race_worker.ENV_WORKER, str(index))
            spawned.append(_Worker(index, spec, env, str(work), changed))

        ready, dead = _wait_until(changed, spawned, "READY", time.monotonic() + ready_timeout)
        if dead:
            raise fail(f"{len(dead)} worker(s) exited before READY")
        if not ready:
            raise fail(f"timed out after {ready_timeout} s waiting for READY")
        start.write_text("go", encoding="utf-8")

        if open_only:
            opened, dead = _wait_until(changed, spawned, "OPENED", time.monotonic() + opened_timeout)
            if not opened and not dead:
                raise fail(f"timed out after {opened_timeout} s waiting for OPENED")
            # A worker that failed to open is a result (exit 2), not a harness failure.
            stop.write_text("close", encoding="utf-8")

        deadline = time.monotonic() + result_timeout
        for worker in spawned:
            try:
                worker.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise fail(f"timed out after {result_timeout} s waiting for results") from None
        if not _wait_drained(changed, spawned, deadline):
            raise fail(f"timed out after {result_timeout} s draining worker output")
        for worker in spawned:
            worker.reap(REAP_TIMEOUT_S)
        return RaceOutcome(tuple(worker.result() for worker in spawned), time.monotonic() - began)
    finally:
        # Whatever happened (RaceError, KeyboardInterrupt, a bug here): no child survives.
        for worker in spawned:
            worker.kill()
        for worker in spawned:
            worker.reap(REAP_TIMEOUT_S)


def descendant_pids(pid: int | None = None) -> set[int]:
    """PIDs of every descendant of ``pid`` (default: this process), zombies included.

    Tests snapshot this before a race and assert afterwards that nothing new survives
    (a zombie is an un-reaped child, so it counts). Requires ``psutil``."""
    import psutil

    try:
        return {child.pid for child in psutil.Process(pid or os.getpid()).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()
