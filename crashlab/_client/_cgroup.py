"""One cgroup (v2) per protocol session, where the harness may create one (Linux).

Why: the process group, the descendant snapshots and the environment token of ``_process``
all miss one kind of process — a grandchild that double-forked, called ``setsid`` and
scrubbed its environment before any snapshot saw it (a daemon). A cgroup is inherited by
every ``fork`` and no process can leave it without write access to another cgroup's
``cgroup.procs``, so everything the implementation ever started is listed in the session's
``cgroup.procs`` and can be killed at once (``cgroup.kill``, Linux ≥ 5.14; else one by one).

Where it is not available (not Linux, no cgroup2 mount, the harness's own cgroup not
writable — an unprivileged user without a delegated subtree), :func:`create` answers
``None`` and :func:`unavailable_reason` says why; tracking falls back to group, snapshots
and token, and the reports say that a double-forked, ``setsid``, environment-scrubbed
daemon cannot be tracked. ``CRASHLAB_NO_CGROUP=1`` turns cgroups off.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["ENV_OPT_OUT", "SessionCgroup", "create", "tracking_description", "unavailable_reason"]

ENV_OPT_OUT = "CRASHLAB_NO_CGROUP"
_EMPTY_WAIT_S = 2.0

_lock = threading.Lock()
_base: str | None = None  # the directory session cgroups are created in
_reason: str | None = None  # why there is none (set once the first attempt failed)
_tried = False


def _own_cgroup_dir() -> tuple[str | None, str]:
    """The cgroup2 directory of this process, or ``(None, reason)``."""
    if not sys.platform.startswith("linux"):
        return None, f"cgroups are a Linux feature (this is {sys.platform})"
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            own = next((line.strip()[3:] for line in fh if line.startswith("0::")), None)
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            mounts = [line.split() for line in fh]
    except OSError as exc:
        return None, f"cannot read /proc: {exc}"
    if own is None:
        return None, "this process is in no cgroup v2 hierarchy"
    for fields in mounts:
        try:
            dash = fields.index("-")
        except ValueError:
            continue
        if fields[dash + 1] != "cgroup2":
            continue
        root, point = fields[3], fields[4]
        relative = own if root == "/" else (own[len(root):] if own.startswith(root) else None)
        if relative is None:
            continue
        candidate = os.path.join(point, relative.lstrip("/"))
        if os.path.isdir(candidate):
            return candidate, ""
    return None, "no cgroup2 file system is mounted where this process's cgroup is visible"


def _base_dir() -> str | None:
    global _base, _reason, _tried
    with _lock:
        if _tried:
            return _base
        _tried = True
        if os.environ.get(ENV_OPT_OUT, "") not in ("", "0"):
            _reason = f"{ENV_OPT_OUT} is set"
            return None
        own, why = _own_cgroup_dir()
        if own is None:
            _reason = why
            return None
        if not os.access(os.path.join(own, "cgroup.procs"), os.W_OK) or not os.access(own, os.W_OK):
            _reason = f"the harness's cgroup {own} is not writable (no delegated cgroup subtree)"
            return None
        _base = own
        _remove_stale(own)
        return _base


def _remove_stale(base: str) -> None:
    """Remove the empty session cgroups of harness processes that are gone (a harness killed
    with SIGKILL cannot remove its own); a non-empty one is left for its owner or the kernel."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "maka" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # its harness is alive
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            os.rmdir(os.path.join(base, name))
        except OSError:
            pass


def unavailable_reason() -> str | None:
    """Why sessions get no cgroup (``None`` when they do, or before the first attempt)."""
    _base_dir()
    return _reason


def tracking_description() -> str:
    """One sentence for reports: how an implementation's processes are found."""
    reason = unavailable_reason()
    if reason is None:
        return "cgroup v2 per session (every descendant, daemons included), process group, environment token"
    return (f"process group, descendant snapshots and environment token; no cgroup ({reason}), so a "
            f"double-forked, setsid, environment-scrubbed daemon cannot be tracked")


class SessionCgroup:
    """The cgroup of one session: ``procs_file`` is what a new process writes its pid to."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.procs_file = os.path.join(path, "cgroup.procs")

    def pids(self) -> list[int]:
        try:
            with open(self.procs_file, encoding="ascii") as fh:
                return [int(line) for line in fh if line.strip()]
        except (OSError, ValueError):
            return []

    def contains(self, pid: int) -> bool:
        return pid in self.pids()

    def join(self, pid: int) -> bool:
        """Move ``pid`` into this cgroup; ``False`` if the kernel refused."""
        try:
            fd = os.open(self.procs_file, os.O_WRONLY)
            try:
                os.write(fd, str(pid).encode("ascii"))
            finally:
                os.close(fd)
            return True
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (``cgroup.kill`` where the kernel has it)."""
        try:
            with open(os.path.join(self.path, "cgroup.kill"), "w", encoding="ascii") as fh:
                fh.write("1")
            return
        except OSError:
            pass
        for _ in range(3):  # a process forking while we kill: a few passes catch its children
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self) -> None:
        """Kill what is left, wait until the cgroup is empty (bounded), remove it."""
        deadline = time.monotonic() + _EMPTY_WAIT_S
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # left behind: an empty-later cgroup costs nothing but its directory
                self.kill()
                time.sleep(0.01)


def create(label: str) -> SessionCgroup | None:
    """A new cgroup for one session, or ``None`` where cgroups cannot be used."""
    global _reason
    base = _base_dir()
    if base is None:
        return None
    path = os.path.join(base, f"maka-{os.getpid()}-{label}")
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as exc:
        with _lock:
            _reason = f"cannot create a cgroup under {base}: {exc.strerror or exc}"
        return None
    return SessionCgroup(path)


def _reset_after_fork() -> None:
    global _base, _reason, _tried, _lock
    _base, _reason, _tried, _lock = None, None, False, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
