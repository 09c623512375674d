"""Children die with the harness: ``PR_SET_PDEATHSIG`` on Linux, set before the child runs.

Why: a harness killed with SIGKILL runs no cleanup, so an implementation it left blocked at a
failpoint, stopped by a pause fault, or a pytest tree of ``certify`` would run (or wait)
forever. With ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` the kernel kills the child when its parent
dies, whatever killed the parent.

Two details of the kernel's rule shape this module:

* "parent" means the parent **thread**: a child spawned from a short-lived thread (a sweep's
  worker, a test's helper thread) would be killed when that thread ends. So every spawn that
  sets the signal is done by one long-lived thread of the process, :func:`spawn_on_lifeline`.
* the parent may die between ``fork`` and ``prctl``; the child then checks ``getppid()``
  against the parent it was forked from and kills itself if it was already orphaned.

Elsewhere (no ``prctl``) nothing is set and :data:`SUPPORTED` is false; the caller's
``atexit`` and signal handlers are then the only cleanup (a SIGKILLed harness leaves its
children running there — the reports say so).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, TypeVar

__all__ = ["ENV_WATCH_PARENT", "SUPPORTED", "child_setup", "die_with_parent", "popen", "spawn_on_lifeline",
           "watch_parent"]

#: Set (to ``1``) by ``certify`` for its pytest tree: each process of it ends when its parent does.
ENV_WATCH_PARENT = "MAKA_CONFORMANCE_LIFELINE"
_WATCH_PERIOD_S = 0.2

_PR_SET_PDEATHSIG = 1
_T = TypeVar("_T")


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_prctl = _load_prctl()
#: Can a child be made to die with its parent here?
SUPPORTED = _prctl is not None


def die_with_parent(expected_parent: int | None = None) -> bool:
    """Ask for SIGKILL when this process's parent dies; ``True`` if set.

    With ``expected_parent``: if the parent is already gone (``getppid()`` differs), die now."""
    if _prctl is None:
        return False
    if _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def child_setup(cgroup_procs: str | None = None) -> Callable[[], None] | None:
    """A ``preexec_fn`` that joins ``cgroup_procs`` (a cgroup's ``cgroup.procs``) and sets the
    parent-death signal; ``None`` when there is nothing to do.

    Everything is computed before ``fork``: the function runs in the child of a threaded
    process, where it must only make system calls (no import, no lock)."""
    if _prctl is None and cgroup_procs is None:
        return None
    parent = os.getpid()
    path = os.fsencode(cgroup_procs) if cgroup_procs is not None else None
    prctl, sigkill = _prctl, int(signal.SIGKILL)

    def setup() -> None:
        if path is not None:
            try:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, b"%d" % os.getpid())
                finally:
                    os.close(fd)
            except OSError:
                pass  # the parent checks membership and falls back
        if prctl is not None and prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0) == 0 and os.getppid() != parent:
            os.kill(os.getpid(), sigkill)

    return setup


class _Spawner:
    """The one thread that spawns children which must die with this process."""

    def __init__(self) -> None:
        self.requests: "queue.Queue[tuple[Callable[[], Any], Future[Any]]]" = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="crashlab-lifeline", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            fn, future = self.requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller's thread
                future.set_exception(exc)


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def spawn_on_lifeline(fn: Callable[[], _T]) -> _T:
    """Run ``fn`` (a ``Popen``) on the long-lived spawner thread, so the parent-death signal
    set in the child refers to a thread that lives as long as this process."""
    global _spawner
    if _prctl is None:
        return fn()
    with _spawner_lock:
        if _spawner is None or not _spawner.thread.is_alive():
            _spawner = _Spawner()
        spawner = _spawner
    if threading.current_thread() is spawner.thread:
        return fn()
    future: Future[_T] = Future()
    spawner.requests.put((fn, future))
    return future.result()


def popen(argv: list[str], *, cgroup_procs: str | None = None, **kwargs: Any) -> "subprocess.Popen[bytes]":
    """``subprocess.Popen`` whose child dies with this process (and joins ``cgroup_procs``)."""
    setup = child_setup(cgroup_procs)
    return spawn_on_lifeline(lambda: subprocess.Popen(argv, preexec_fn=setup, **kwargs))


def watch_parent() -> None:
    """Kill this process (SIGKILL) soon after its parent is gone — the portable watchdog.

    Why polling ``getppid()`` and not only :func:`die_with_parent`: it works on every POSIX
    system, and it does not depend on which thread of the parent forked us (xdist's gateway
    threads). A process whose parent died is reparented, so ``getppid()`` changes. Its own
    children then die with it: the adapters through their parent-death signal (Linux)."""
    parent = os.getppid()
    if parent <= 1:
        return

    def run() -> None:
        while True:
            time.sleep(_WATCH_PERIOD_S)
            if os.getppid() != parent:
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=run, name="crashlab-parent-watch", daemon=True).start()


def _reset_after_fork() -> None:
    global _spawner, _spawner_lock
    _spawner = None
    _spawner_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
