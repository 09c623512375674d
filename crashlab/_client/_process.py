"""Everything POSIX about the child: spawning it, writing to it with a deadline, finding and killing its tree.

Why one module: process groups, sessions, ``killpg``, ``select`` on pipes and the
``/proc``-based scans are the non-portable part of the client; keeping them together means a
Windows port (job objects) touches only this file.

Reading order:

* **``/proc`` readers** (Linux): stat rows and the pid→ppid table. They run after every reply
  and twice per kill, so they read ``/proc/PID/stat`` directly (one read per process instead
  of psutil's several); elsewhere psutil answers.
* **Killing and waiting** (psutil level): "is it alive", "kill these and wait until they are
  dead (or zombies)" — the same for every caller, independent of how a tree is found.
* **The tree and the child**: ``ProcessTree`` decides what belongs to the tree and therefore
  what to kill; ``spawn``, ``write_all`` with a deadline and ``watch_exit``.

How the tree is found (protocol §1.2: "no process of the tree survives"):

* the child starts a new session (``start_new_session=True``), so its pid is both its
  process-group id and its session id; ``killpg`` reaches every member that stayed;
* after every reply and before every kill, ``children(recursive=True)`` is snapshotted into
  a record of :class:`psutil.Process` objects (which remember their create time, so a reused
  pid is never mistaken for ours); a grandchild that later reparents to init is still known;
* every process of the tree inherits the environment variable :data:`SESSION_ENV` with a token
  unique to this session; a scan of all processes' environments finds even a grandchild that
  double-forked and escaped before any snapshot saw it;
* any process whose process group or session is the child's is also part of the tree.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from typing import Callable, Iterable, Mapping, Sequence

import psutil

from crashlab._client import _lifeline
from crashlab._client._cgroup import SessionCgroup
from crashlab._client._zygote.client import ForkedChild, prefork_argv, spawn_forked

__all__ = [
    "ProcessTree",
    "SESSION_ENV",
    "spawn",
    "watch_exit",
    "write_all",
]


# Private helpers only: imported by name into crashlab._client._process.

_PROC_OK = os.path.isfile("/proc/self/stat") and os.path.isdir("/proc/self/task")


def _read_stat(pid: int) -> tuple[int, int, int, int] | None:
    """``(ppid, pgrp, session, starttime)`` from ``/proc/PID/stat``, or ``None``."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 2048)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _proc_table() -> dict[int, tuple[int, int, int, int]] | None:
    """Every process's ``(ppid, pgrp, session, starttime)`` on Linux (``None`` elsewhere).

    One read per process instead of psutil's several: the scans run after every reply and
    twice per kill, so they are the client's own share of a crash cycle."""
    if not _PROC_OK:
        return None
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit():
            row = _read_stat(int(name))
            if row is not None:
                table[int(name)] = row
    return table


def _start_ticks(pid: int) -> int | None:
    row = _read_stat(pid) if _PROC_OK else None
    return row[3] if row is not None else None


_ppids: dict[int, int] = {}
_ppids_lock = threading.Lock()


def _ppid_table() -> dict[int, int] | None:
    """pid → ppid of every process, read incrementally (Linux; ``None`` elsewhere).

    Why incremental: :meth:`ProcessTree.snapshot` runs after every reply; listing ``/proc``
    is cheap, reading every ``stat`` is not, and only a process new since the last listing can
    be a new descendant (a known process never gains a parent other than a reaper). A pid
    reused between two listings a few milliseconds apart would need a full pid wrap-around.
    """
    if not _PROC_OK:
        return None
    try:
        pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
    except OSError:
        return None
    with _ppids_lock:
        for gone in _ppids.keys() - pids:
            del _ppids[gone]
        for pid in pids - _ppids.keys():
            row = _read_stat(pid)
            if row is not None:
                _ppids[pid] = row[0]
        return dict(_ppids)


# Private helpers only: imported by name into crashlab._client._process.

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


#: Environment variable carrying the per-session token that marks every process of the tree.
SESSION_ENV = "MAKA_CONFORMANCE_SESSION"

_GROUP_DEATH_GRACE_S = 2.0

_Predicate = Callable[[psutil.Process], bool]


def spawn(
    argv: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
    prefork: bool | None = None, cgroup: SessionCgroup | None = None,
) -> "subprocess.Popen[bytes] | ForkedChild":
    """Start ``argv`` in a new session with three pipes; raises ``OSError`` if it cannot.

    A ``python -m MODULE`` command of this interpreter is forked from a warm zygote when
    ``prefork`` allows it (``None``: unless ``CRASHLAB_NO_PREFORK=1``), see ``_zygote``; the
    handle then is a :class:`~crashlab._client._zygote.client.ForkedChild`, otherwise a ``Popen``.
    Either way the child joins ``cgroup`` before it runs a line of its own, and dies with
    this process (``_lifeline``).
    """
    procs = cgroup.procs_file if cgroup is not None else None
    target = prefork_argv(argv, prefork)
    if target is not None:
        child = spawn_forked(target[0], target[1], cwd=cwd, env=env, session_env=SESSION_ENV, cgroup=procs)
        if child is not None:
            return child
    return _lifeline.popen(
        list(argv),
        cgroup_procs=procs,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        bufsize=0,
        close_fds=True,
        start_new_session=True,
    )


_EXIT_POLL_S = 0.05  # the fallback watcher's period where there is no pidfd


def watch_exit(pid: int, notify: Callable[[], None]) -> None:
    """Call ``notify()`` (once, from a daemon thread) when process ``pid`` exits; never reaps it.

    Why: a leader may exit while a descendant keeps its stdout open, and then no end of file
    ever tells the client. Linux: a pidfd becomes readable at the exit (whoever is the
    parent, so a zygote-forked child works too). Elsewhere: psutil is polled every 50 ms.
    """
    pidfd = -1
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            notify()
            return
        except OSError:
            pidfd = -1

    def run() -> None:
        try:
            if pidfd >= 0:
                poller = select.poll()  # not select(): a pidfd may be above FD_SETSIZE
                poller.register(pidfd, select.POLLIN)
                while not poller.poll():
                    pass
            else:
                try:
                    proc = psutil.Process(pid)
                    while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                        time.sleep(_EXIT_POLL_S)
                except psutil.Error:
                    pass
        finally:
            if pidfd >= 0:
                os.close(pidfd)
            notify()

    threading.Thread(target=run, name=f"crashlab-exit-{pid}", daemon=True).start()


def write_all(fd: int, data: bytes, deadline: float) -> bool:
    """Write ``data`` to a pipe before ``deadline`` (monotonic); ``False`` on timeout.

    Why not a plain ``write``: a child that stops reading stdin fills the pipe (64 KiB) and a
    blocking write would hang the harness. Raises ``BrokenPipeError`` if the reader is gone.
    """
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        _, writable, _ = select.select([], [fd], [], remaining)
        if not writable:
            continue
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[written:]
    return True


class ProcessTree:
    """The child and every process it spawned, found by record, group, session and token."""

    def __init__(self, popen: "subprocess.Popen[bytes] | ForkedChild", token: str,
                 cgroup: SessionCgroup | None = None) -> None:
        self.popen = popen
        self.cgroup = cgroup
        self.pid = popen.pid
        self.pgid = popen.pid  # new session: the leader's pid is the group and session id
        self.token = token
        self.recorded: dict[int, psutil.Process] = {}
        self._start_ticks = _start_ticks(popen.pid)  # Linux: leader's start, in clock ticks
        self._seen: set[int] = set()  # pids listed at the last snapshot
        try:
            self._leader: psutil.Process | None = psutil.Process(popen.pid)
        except psutil.NoSuchProcess:
            self._leader = None

    # ------------------------------------------------------------------ tracking

    def group_is_ours(self) -> bool:
        """May the group/session id still be taken to mean our tree?

        Once the leader is reaped its pid — our group and session id — can be reused by
        another process (another trial's child, which starts a session of that id); a
        ``killpg`` or a group scan would then hit a stranger. The kernel never hands out a
        pid while a group or session of that id exists, so: if the pid now names a process
        other than our leader, the group is no longer ours.
        """
        if self.popen.returncode is None:
            return True  # not reaped: the pid is still held by our leader (maybe a zombie)
        try:
            current = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return True
        except psutil.AccessDenied:  # pragma: no cover - someone else's process
            return False
        if self._leader is None:
            return False
        try:
            return current.create_time() == self._leader.create_time()
        except psutil.Error:
            return False

    def snapshot(self) -> None:
        """Record the leader's current descendants (cheap: one /proc scan)."""
        if self._leader is None:
            return
        table = _ppid_table()
        if table is not None:
            if self.popen.returncode is not None:
                return
            # only a process new since the last snapshot can be a new descendant: its parent is
            # the leader, a recorded descendant, or another new process
            pending = [pid for pid in table.keys() - self._seen if pid != self.pid]
            self._seen = set(table)
            tree = {self.pid, *self.recorded}
            grew = True
            while pending and grew:
                grew, rest = False, []
                for pid in pending:
                    if table.get(pid) in tree:
                        tree.add(pid)
                        _add(self.recorded, pid)
                        grew = True
                    else:
                        rest.append(pid)
                pending = rest
            return
        try:
            children = self._leader.children(recursive=True)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        for child in children:
            self.recorded.setdefault(child.pid, child)

    def members(self) -> list[psutil.Process]:
        """Every live (non-zombie) process of the tree except the leader and ourselves."""
        found: dict[int, psutil.Process] = {}
        for pid, proc in self.recorded.items():
            if _alive(proc):
                found[pid] = proc
        own = {os.getpid(), self.pid}
        if self.cgroup is not None:  # everything it ever started, daemons included
            for pid in self.cgroup.pids():
                if pid not in own and pid not in found:
                    _add(found, pid)
        ours = self.group_is_ours()
        table = _proc_table()
        if table is not None:  # Linux: one pass over /proc/*/stat
            for pid, (_ppid, pgrp, sid, start) in table.items():
                if pid in own or pid in found:
                    continue
                if ours and (pgrp == self.pgid or sid == self.pgid):
                    _add(found, pid)
                elif self._start_ticks is None or start >= self._start_ticks:
                    # born after our leader: the only processes that can carry its token
                    if _environ_token(pid) == self.token:
                        _add(found, pid)
            return [proc for proc in found.values() if _alive(proc)]
        for pid in psutil.pids():
            if pid in own or pid in found:
                continue
            try:
                in_tree = ours and (os.getpgid(pid) == self.pgid or os.getsid(pid) == self.pgid)
            except OSError:
                continue
            if in_tree:
                _add(found, pid)
        for proc in psutil.process_iter(["environ"]):
            if proc.pid in own or proc.pid in found:
                continue
            environ = proc.info.get("environ") or {}
            if environ.get(SESSION_ENV) == self.token:
                _add(found, proc.pid)
        return [proc for proc in found.values() if _alive(proc)]

    # ------------------------------------------------------------------ signals

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the process group and to the leader (in case it left the group).

        Never to a group whose id was reused after our leader was reaped (:meth:`group_is_ours`)."""
        if self.group_is_ours():
            try:
                os.killpg(self.pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        if self.popen.returncode is None:
            try:
                self.popen.send_signal(sig)
            except (ProcessLookupError, OSError):
                pass

    def wait_leader(self, timeout: float) -> int | None:
        """Wait for (and reap) the leader; its return code, or ``None`` on timeout."""
        try:
            return self.popen.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def kill_all(self) -> tuple[int, ...]:
        """SIGKILL the group, reap the leader, kill every straggler; return the survivors.

        A survivor is a process of the tree that was still alive after the group kill and a
        grace period: one that left the process group, or one that would not die.
        """
        self.snapshot()
        group_before = {proc.pid for proc in self.members() if _in_group(proc.pid, self.pgid)}
        self.signal_group(signal.SIGKILL)
        self.wait_leader(5.0)
        ours = self.group_is_ours()
        return self._sweep(
            lambda proc: proc.pid in group_before or (ours and _in_group(proc.pid, self.pgid)),
            _GROUP_DEATH_GRACE_S,
        )

    def sweep_after_exit(self, grace: float = 0.5) -> tuple[int, ...]:
        """After a clean exit of the leader: whatever of the tree is alive after ``grace``."""
        return self._sweep(lambda proc: True, grace)

    def shutdown(self, timeout: float, term_grace: float) -> tuple[int | None, str | None, tuple[int, ...]]:
        """After EOF on stdin: wait, then SIGTERM, then SIGKILL (protocol §1.7).

        Returns the exit status, the escalation (``None``, ``'sigterm'``, ``'sigkill'``) and
        the survivors of the tree once the leader is gone.
        """
        status = self.wait_leader(timeout)
        escalated = None
        if status is None:
            escalated = "sigterm"
            self.signal_group(signal.SIGTERM)
            status = self.wait_leader(term_grace)
        if status is None:
            survivors = self.kill_all()
            return self.popen.returncode, "sigkill", survivors
        return status, escalated, self.sweep_after_exit()

    def emergency_kill(self) -> None:
        """Safety net for a client dropped unclosed (garbage collection, interpreter exit)."""
        try:
            if self.popen.returncode is None:
                self.signal_group(signal.SIGKILL)
                self.wait_leader(1.0)
            self.release()
        except Exception:  # pragma: no cover - best effort, must never raise
            pass

    def release(self) -> None:
        """The session is over: kill whatever is still in its cgroup and remove the cgroup."""
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            cgroup.remove()

    def _sweep(self, wait_first: _Predicate, grace: float) -> tuple[int, ...]:
        members = self.members()
        waiting = [proc for proc in members if wait_first(proc)]
        others = [proc for proc in members if not wait_first(proc)]
        stragglers = others + _wait_dead(waiting, grace)
        survivors = tuple(sorted(proc.pid for proc in stragglers))
        _kill(stragglers)
        return survivors


def _environ_token(pid: int) -> str | None:
    """The session token in ``/proc/PID/environ`` (the environment the process was exec'd with)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    key = SESSION_ENV.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode("ascii", "replace")
    return None
