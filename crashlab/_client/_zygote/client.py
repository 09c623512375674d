"""Pre-forked children: spawn ``python -m MODULE`` by forking a warm interpreter (a zygote).

Why: a crash trial starts two to four implementation processes, and for an implementation in
Python most of a spawn is import time (≈ 0.2–0.5 s for the reference adapter against ≈ 0.03 s
for ``python -c pass``). A zygote (:mod:`crashlab._client._zygote.server`) imports the module
once and forks per spawn; the fork is a few milliseconds.

When it is used (:func:`prefork_argv`): the command is exactly ``[sys.executable, "-m",
MODULE, *args]`` (this interpreter, no interpreter options), the platform has ``fork`` and
``socket.send_fds`` (POSIX), ``CRASHLAB_NO_PREFORK`` is not ``1`` (unless forced with
``prefork=True``), and the zygote could import the module. Anything else — another
interpreter, ``node …``, a zygote that failed to start — falls back to a plain spawn.

What stays the same for the child (so the protocol behaviour, :class:`KillProof` and
:class:`CloseReport` keep their meaning): its own session and process group, stdin/stdout/
stderr pipes, exactly the environment and working directory the client asked for, and a real
exit status — the zygote is the parent, reaps the child and reports ``returncode`` (``-9``
after SIGKILL) over the child's status socket, which :class:`ForkedChild` turns into the
``pid``/``poll``/``wait``/``returncode``/``send_signal`` that ``_process`` uses of a ``Popen``.

What differs, and why it is safe for protocol-driven use:

* modules are imported before the environment of a particular child is known. Therefore one
  zygote serves one **environment** (the child's, minus the per-session token): a module that
  reads an environment variable at import (``maka_ref._store.engine.failpoints`` reads
  ``MAKA_REF_FAILPOINT``) sees exactly what a plain child would. Arming a point through
  ``faults.arm`` (the protocol way) needs nothing special either;
* the preloaded modules are imported from the installed paths, not from the child's working
  directory (``sys.path[0]`` is still the child's cwd for anything imported later), so a
  module shadowed by a file in the child's cwd is not honoured — use plain spawn for that;
* every child of a zygote shares its hash seed (``PYTHONHASHSEED`` in the environment is
  honoured, as it is keyed like any other variable). ``random`` is reseeded in each child.

Lifetime: zygotes live in a per-process registry (at most :data:`MAX_ZYGOTES`, least recently
used evicted); the owner closes its channel at exit (``atexit``) and waits for the zygote.
A zygote whose channel is closed exits once the children it still reports on are reaped,
and at once when the client process is gone. After ``fork`` of the client process, a new
registry is started (a zygote is never shared across client processes).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import Mapping, Sequence

from crashlab._client import _lifeline

__all__ = ["ENV_OPT_OUT", "MAX_ZYGOTES", "ForkedChild", "Zygote", "prefork_argv", "shutdown_zygotes", "spawn_forked",
           "zygote_pids"]

#: ``CRASHLAB_NO_PREFORK=1`` turns pre-forking off (``prefork=True`` still forces it).
ENV_OPT_OUT = "CRASHLAB_NO_PREFORK"
#: ``CRASHLAB_PREFORK_LEARN=0``: the zygote preloads only the module and its ``__main__``'s
#: imports, never what its children imported later.
ENV_LEARN = "CRASHLAB_PREFORK_LEARN"
#: Zygotes kept per client process (one per command line × environment).
MAX_ZYGOTES = 4

_START_TIMEOUT_S = 30.0
_PID_TIMEOUT_S = 10.0
_ZYGOTE_EXIT_S = 5.0


def supported() -> bool:
    return os.name == "posix" and hasattr(os, "fork") and hasattr(socket, "send_fds")


def prefork_argv(argv: Sequence[str], prefork: bool | None) -> tuple[str, list[str]] | None:
    """``(module, args)`` when ``argv`` may be pre-forked, else ``None`` (plain spawn)."""
    if prefork is False or not supported():
        return None
    if prefork is None and os.environ.get(ENV_OPT_OUT, "") not in ("", "0"):
        return None
    if len(argv) < 3 or argv[1] != "-m" or not argv[2] or argv[2].startswith("-"):
        return None
    if os.path.abspath(argv[0]) != os.path.abspath(sys.executable):
        return None
    return argv[2], list(argv[3:])


class ForkedChild:
    """The client's handle on a child forked by a zygote: what ``_process`` uses of ``Popen``."""

    def __init__(self, pid: int, status: socket.socket, stdin: int, stdout: int, stderr: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self.stdin = open(stdin, "wb", buffering=0)
        self.stdout = open(stdout, "rb", buffering=0)
        self.stderr = open(stderr, "rb", buffering=0)
        self._status = status
        self._buf = b""
        self._lock = threading.Lock()

    def _read_status(self, timeout: float | None) -> None:
        """Read what the zygote sent (``exit N``) within ``timeout`` (``None``: block)."""
        with self._lock:
            if self.returncode is not None:
                return
            deadline = None if timeout is None else time.monotonic() + timeout
            while self.returncode is None:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                readable, _, _ = select.select([self._status], [], [], remaining)
                if not readable:
                    return
                try:
                    chunk = self._status.recv(256)
                except OSError:
                    chunk = b""
                if not chunk:
                    self._lost()
                    return
                self._buf += chunk
                while b"\n" in self._buf:
                    line, self._buf = self._buf.split(b"\n", 1)
                    if line.startswith(b"exit "):
                        self.returncode = int(line[5:])
                        self._status.close()
                        return
                if deadline is not None and time.monotonic() >= deadline:
                    return

    def _lost(self) -> None:
        """The zygote went away without a status (it was killed): the status is unknown.

        ``-255`` (never ``-9``) once the process is gone, so a kill proof built on it fails."""
        self._status.close()
        deadline = time.monotonic() + 5.0
        while _exists(self.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.returncode = -255

    def poll(self) -> int | None:
        self._read_status(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._read_status(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _exists(pid: int) -> bool:
    try:
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:
        return False


class Zygote:
    """One running fork server for ``module`` in one environment."""

    def __init__(self, module: str, env: Mapping[str, str], preload: Sequence[str] = (), *, learn: bool = True) -> None:
        self.module = module
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._channel = parent
        self._lock = threading.Lock()
        try:
            self.proc = _lifeline.popen(  # the zygote, and so its children, die with this process
                [sys.executable, "-m", "crashlab._client._zygote.server", "--channel", str(child.fileno()),
                 *([] if learn else ["--no-learn"]), module, *preload],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(env), close_fds=True, pass_fds=(child.fileno(),), start_new_session=True,
            )
        finally:
            child.close()
        self.pid = self.proc.pid
        line = self._readline(_START_TIMEOUT_S)
        if not line.startswith("ready "):
            self.close()
            raise OSError(f"zygote for {module} did not start: {line or 'no answer'}")

    def _readline(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        buf = b""
        while not buf.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            readable, _, _ = select.select([self._channel], [], [], remaining)
            if not readable:
                break
            chunk = self._channel.recv(1)  # one byte at a time: nothing after the line is ours
            if not chunk:
                break
            buf += chunk
        return buf.decode("utf-8", "replace").strip()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, args: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
              cgroup: str | None = None) -> ForkedChild:
        """Fork one child; raises ``OSError`` if the zygote cannot (the caller falls back)."""
        cwd_text = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
        if not os.path.isdir(cwd_text):
            raise FileNotFoundError(f"no such directory: {cwd_text!r}")  # as Popen would
        pipes = [os.pipe() for _ in range(3)]  # (read, write) each, close-on-exec
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        mine, remote = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        request = json.dumps({"argv": list(args), "env": dict(env), "cwd": cwd_text, "cgroup": cgroup}).encode("utf-8")
        try:
            with self._lock:
                socket.send_fds(self._channel, [b"S"], [*theirs, remote.fileno()])
            mine.sendall(struct.pack(">I", len(request)) + request)
            pid = self._await_pid(mine)
        except BaseException:
            mine.close()
            for fd in ours:
                os.close(fd)
            raise
        finally:
            remote.close()
            for fd in theirs:
                os.close(fd)
        return ForkedChild(pid, mine, *ours, args=[sys.executable, "-m", self.module, *args])

    def _await_pid(self, sock: socket.socket) -> int:
        deadline = time.monotonic() + _PID_TIMEOUT_S
        buf = b""
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([sock], [], [], max(remaining, 0.0))
            if not readable:
                raise OSError("the zygote did not fork in time")
            chunk = sock.recv(1)  # byte by byte: the ``exit`` line that may follow stays queued
            if not chunk:
                raise OSError("the zygote closed the status socket before forking")
            buf += chunk
        line = buf.decode("utf-8", "replace").strip()
        if not line.startswith("pid "):
            raise OSError(f"zygote: {line}")
        return int(line[4:])

    def close_channel(self) -> None:
        """No more spawns: the zygote exits once the children it reports on are reaped."""
        try:
            self._channel.close()
        except OSError:
            pass

    def close(self, timeout: float = _ZYGOTE_EXIT_S) -> None:
        """End of channel; wait for the zygote (it outlives this only for unreaped children)."""
        self.close_channel()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=timeout)


_registry: "OrderedDict[tuple, Zygote]" = OrderedDict()
_retiring: list[Zygote] = []  # evicted: channel closed, still reporting on live children
_failed: set[tuple] = set()
_registry_lock = threading.Lock()
_owner_pid = os.getpid()


#: Variables that do not select a zygote (the child still gets them, exactly): they change per
#: session or per test and no module reads them at import.
VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST", "_", "OLDPWD"})


def _key(module: str, args: Sequence[str], env: Mapping[str, str], exclude: str) -> tuple:
    return (module, tuple(args),
            tuple(sorted((k, v) for k, v in env.items() if k != exclude and k not in VOLATILE_ENV)))


def _reset_after_fork() -> None:
    global _owner_pid
    _registry.clear()
    _retiring.clear()
    _failed.clear()
    _owner_pid = os.getpid()


def spawn_forked(module: str, args: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
                 session_env: str, cgroup: str | None = None) -> ForkedChild | None:
    """Fork ``python -m module args`` from a zygote, or ``None`` when no zygote can serve it."""
    if os.getpid() != _owner_pid:
        _reset_after_fork()
    key = _key(module, args, env, session_env)
    with _registry_lock:
        if key in _failed:
            return None
        zygote = _registry.get(key)
        if zygote is not None and not zygote.alive:
            _registry.pop(key, None)
            zygote = None
        if zygote is None:
            zygote_env = {k: v for k, v in env.items() if k != session_env and k not in VOLATILE_ENV}
            try:
                zygote = Zygote(module, zygote_env, learn=env.get(ENV_LEARN, "1") != "0")
            except OSError:
                _failed.add(key)
                return None
            _registry[key] = zygote
            while len(_registry) > MAX_ZYGOTES:
                _, old = _registry.popitem(last=False)
                old.close_channel()  # never blocks: its live children keep their status
                _retiring.append(old)
        _retiring[:] = [z for z in _retiring if z.alive]
        _registry.move_to_end(key)
    try:
        return zygote.spawn(args, cwd=cwd, env=env, cgroup=cgroup)
    except FileNotFoundError:
        raise
    except OSError:  # the zygote stopped forking (e.g. a learned import started a thread)
        with _registry_lock:
            if _registry.get(key) is zygote:
                _registry.pop(key)
                zygote.close_channel()
                _retiring.append(zygote)
            _failed.add(key)
        return None


def zygote_pids() -> list[int]:
    """Pids of the zygotes this process runs (tests and the benchmark)."""
    with _registry_lock:
        return [z.pid for z in [*_registry.values(), *_retiring] if z.alive]


def shutdown_zygotes() -> None:
    """Close every zygote of this process and wait for it (also run at interpreter exit)."""
    if os.getpid() != _owner_pid:
        return
    with _registry_lock:
        zygotes = [*_registry.values(), *_retiring]
        _registry.clear()
        _retiring.clear()
        _failed.clear()
    for zygote in zygotes:
        zygote.close_channel()
    deadline = time.monotonic() + _ZYGOTE_EXIT_S
    for zygote in zygotes:
        try:
            zygote.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # a child still running: it is orphaned, as a plain one
            zygote.proc.kill()
            zygote.proc.wait()


atexit.register(shutdown_zygotes)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
