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

Layout: the value types live in ``_process_race.types`` and the spawned-worker plumbing in
``_process_race.spawn``; this module keeps the protocol (:func:`run_race`) and re-exports them.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Iterable, Mapping

from maka_ref.testing import race_worker
from maka_ref.testing._process_race.spawn import _wait_drained, _wait_until, _Worker
from maka_ref.testing._process_race.types import RaceError, RaceOutcome, WorkerResult, WorkerSpec

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
