"""``python -m crashlab._client._zygote.server MODULE [PRELOAD...]``: the fork server (zygote).

Why it exists (issue 6, *Performance*): an implementation written in Python pays its import
time (≈ 0.2–0.5 s for the reference adapter) in every process a crash trial starts, and a
trial starts two to four. The zygote imports ``MODULE`` (and what its ``__main__`` imports at
top level, and ``PRELOAD`` modules) once; every spawn is then a ``fork`` of an interpreter
that is already warm. The client side is :mod:`crashlab._client._zygote.client`.

Protocol (all over AF_UNIX stream sockets; the client holds the other ends):

* the **channel** (fd given by ``--channel FD``): first the zygote sends one line
  ``ready <pid>\\n`` (or ``error <message>\\n`` and exits, when preloading failed); then every
  spawn request is one byte ``S`` carrying four fds by SCM_RIGHTS: the child's stdin, stdout,
  stderr and a fresh **status socket**. End of file on the channel means the client is done:
  the zygote accepts no more spawns and exits once every child it still reports on has been
  reaped, or at once when no client end is open any more.
* the **status socket** of one child: the client writes the request (4-byte big-endian length,
  then JSON ``{"argv", "env", "cwd"}``); the zygote forks, answers ``pid <pid>\\n``, and when it
  has reaped the child (``waitpid`` on SIGCHLD) ``exit <returncode>\\n`` (negative: killed by
  that signal, as :attr:`subprocess.Popen.returncode`), then closes the socket.

The child: ``setsid()`` (its own session and group, as ``start_new_session=True``), ``dup2`` of
the three fds onto 0, 1, 2, every other fd closed, signal dispositions reset, ``chdir``,
``os.environ`` replaced, ``sys.argv`` and ``sys.path[0]`` as ``python -m`` would set them, then
``runpy.run_module(MODULE, run_name="__main__", alter_sys=True)``; ``atexit`` handlers run,
stdio is flushed, and the child ends with ``os._exit(code)``.

The zygote itself must stay single-threaded (``fork`` of a threaded process is unsafe) and
never reads or writes ``sys.stdin``/``sys.stdout`` (their buffers are inherited by every child).

This module is the fork loop and entry point; its helpers live in ``_zygote_preload`` (what to
import before forking), ``_zygote_status`` (the status socket) and ``_zygote_child`` (the
child's exit code and shutdown).
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import struct
import sys
from typing import Any

from crashlab._client._lifeline import die_with_parent
from crashlab._client._zygote.child import _exit_code, _finish, _max_fd
from crashlab._client._zygote.preload import _flush_stdio, _learn, _threads, preload
from crashlab._client._zygote.status import _on_status_readable, _reap, _recv_exact, _send

_REQUEST_TIMEOUT_S = 10.0
_MAX_REQUEST = 16 * 1024 * 1024


_zygote_pid = os.getpid()
_learn_w = -1  # write end of the pipe on which children report the modules they imported
_known: set[str] = set()  # sys.modules of the zygote at the last fork


def _child(module: str, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the implementation process. Never returns."""
    code = 1
    try:
        _join_cgroup(request.get("cgroup"), os.getpid())  # before anything that could fork
        die_with_parent(_zygote_pid)  # the zygote is single-threaded: its main thread is the parent
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target, inheritable=True)
        if _learn_w > 3:
            os.closerange(3, _learn_w)
        os.closerange(max(3, _learn_w + 1), _max_fd())
        cwd = request.get("cwd")
        if cwd:
            os.chdir(cwd)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [module, *request["argv"]]
        sys.path[0:0] = [os.getcwd()]  # ``python -m`` puts the working directory first
        import runpy

        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what the interpreter would print for an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        code = _finish(code)
        _report_modules()
    finally:
        os._exit(code)


def _join_cgroup(procs: Any, pid: int) -> None:
    """Write ``pid`` into the session's ``cgroup.procs`` (both the child and the zygote do, so
    the child is in it before the client learns its pid and before it can fork)."""
    if not isinstance(procs, str) or not procs:
        return
    try:
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, str(pid).encode("ascii"))
        finally:
            os.close(fd)
    except OSError:
        pass  # the client checks membership and falls back to tracking without the cgroup


def _report_modules() -> None:
    """Tell the zygote which modules this child imported (it preloads them for later forks).

    Whole lines in writes of at most 512 bytes (atomic on every POSIX pipe, so reports of
    children exiting at once never interleave); the pipe is non-blocking: a full pipe loses
    the report, it never delays the exit."""
    if _learn_w < 0:
        return
    chunk = b""
    try:
        for name, mod in list(sys.modules.items()):
            if name in _known or name.startswith("__") or not name.isascii():
                continue
            origin = str(getattr(mod, "__file__", None) or "")
            line = name.encode() + b"\t" + origin.encode("utf-8", "surrogateescape") + b"\n"
            if len(chunk) + len(line) > 512:
                os.write(_learn_w, chunk)
                chunk = b""
            if len(line) <= 512:
                chunk += line
        if chunk:
            os.write(_learn_w, chunk)
    except OSError:
        pass


def serve(module: str, channel: socket.socket, learn: bool = True) -> None:
    global _learn_w
    learn_r, _learn_w = os.pipe()
    os.set_blocking(learn_r, False)
    os.set_blocking(_learn_w, False)
    learned: dict[str, str] = {}
    pending = b""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    children: dict[int, socket.socket | None] = {}  # pid -> status socket (None: client gone)
    open_channel = True
    _known.update(sys.modules)
    single = learn and _threads() == 1
    while open_channel or any(s is not None for s in children.values()):
        watched: list[Any] = [wake_r, learn_r]
        if open_channel:
            watched.append(channel)
        watched += [s for s in children.values() if s is not None]
        try:
            readable, _, _ = select.select(watched, [], [], 1.0)
        except InterruptedError:
            readable = []
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        if learn_r in readable:
            try:
                while True:
                    data = os.read(learn_r, 65536)
                    if not data:
                        break
                    pending += data
            except BlockingIOError:
                pass
            *lines, pending = pending.split(b"\n")
            for line in lines:
                name, _, origin = line.partition(b"\t")
                if name:
                    learned[name.decode("ascii", "replace")] = origin.decode("utf-8", "surrogateescape")
        _reap(children)
        if learned and single and open_channel and channel not in readable:
            _learn({k: v for k, v in learned.items() if k not in sys.modules})  # idle: no spawn waiting
            learned.clear()
            _known.update(sys.modules)
            import gc

            gc.freeze()
            if _threads() != 1:  # an import started a thread: forking would be unsafe now
                open_channel = False
                channel.close()
                continue
        for item in readable:
            if item is channel:
                open_channel = _accept(module, channel, children)
            elif isinstance(item, socket.socket) and item is not channel:
                _on_status_readable(item, children)
    # client gone: no one can be told about the remaining children; init will reap them
    signal.set_wakeup_fd(-1)


def _accept(module: str, channel: socket.socket, children: dict[int, socket.socket | None]) -> bool:
    try:
        msg, fds, _flags, _addr = socket.recv_fds(channel, 1, 4)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EINTR):
            return True
        return False
    if not msg:
        for fd in fds:
            os.close(fd)
        return False
    if len(fds) != 4:
        for fd in fds:
            os.close(fd)
        return True
    status = socket.socket(fileno=fds[3])
    try:
        status.settimeout(_REQUEST_TIMEOUT_S)
        (size,) = struct.unpack(">I", _recv_exact(status, 4))
        if size > _MAX_REQUEST:
            raise ValueError("request too large")
        request = json.loads(_recv_exact(status, size))
        status.settimeout(None)
    except (OSError, EOFError, ValueError) as exc:
        _send(status, f"error bad request: {exc}\n")
        status.close()
        for fd in fds[:3]:
            os.close(fd)
        return True
    try:
        pid = os.fork()
    except OSError as exc:
        _send(status, f"error fork failed: {exc}\n")
        status.close()
        for fd in fds[:3]:
            os.close(fd)
        return True
    if pid == 0:  # pragma: no cover - the child; runs in its own process
        _child(module, request, fds[:3])
    _join_cgroup(request.get("cgroup"), pid)
    _known.update(sys.modules)
    for fd in fds[:3]:
        os.close(fd)
    children[pid] = status
    _send(status, f"pid {pid}\n")
    return True


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] != "--channel":
        sys.stderr.write("usage: python -m crashlab._client._zygote.server --channel FD [--no-learn] MODULE [PRELOAD...]\n")
        sys.exit(2)
    channel = socket.socket(fileno=int(args[1]))
    learn = args[2] != "--no-learn"
    module, extra = (args[2], args[3:]) if learn else (args[3], args[4:])
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # preload from installed paths only; each child gets its own cwd first
    try:
        preload(module, extra)
    except BaseException as exc:  # noqa: BLE001 - anything: report and let the client fall back
        message = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        channel.sendall(f"error cannot preload {module}: {message}\n".encode("utf-8", "replace"))
        sys.exit(3)
    _flush_stdio()
    import gc

    gc.freeze()  # fewer copy-on-write faults in the children: the collector leaves these alone
    channel.sendall(f"ready {os.getpid()}\n".encode())
    serve(module, channel, learn)


if __name__ == "__main__":
    main()
