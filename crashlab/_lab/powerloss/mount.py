"""The harness's side of the power-loss filesystem: is FUSE here, mount, cut, unmount.

Why here and not in the fault: a test, a benchmark and the fault all mount the same way, and
the promises that make a mount safe to use in a sweep live in one place:

* **never hang**: every wait has a deadline (ready, each control request, unmount, the
  server's exit); an unmount that fails (``EBUSY``) falls back to ``fusermount3 -u -z`` (lazy:
  detached at once, cleaned when the last user goes);
* **never leak**: the server is spawned on the crash lab's lifeline (it dies with the harness,
  ``PR_SET_PDEATHSIG``), in its own session, and mounts with ``auto_unmount`` (fusermount3
  unmounts when the server dies); :meth:`PowerLossMount.close` kills and reaps it and checks
  with psutil that nothing of its tree is left;
* **never pass by accident**: :func:`unavailable` names why power loss cannot run here
  (non-Linux, no ``/dev/fuse``, no permission, ``fusermount3`` or the binding missing), and the
  fault reports such trials "not run: <reason>", never passed.

The mount is made over a directory in place: its content moves (one ``rename``) into the
backing directory, the FUSE mount takes its path, and after the cut the rebuilt durable tree
takes the path back, as a plain directory, for the after-crash checks.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import psutil

__all__ = ["ENV_OFF", "MountError", "PowerLossMount", "is_mounted", "unavailable"]

READY_TIMEOUT = 15.0
REQUEST_TIMEOUT = 60.0
UNMOUNT_TIMEOUT = 10.0

def _start_server(cwd: Path) -> Any:
    """The server process, told its directories on stdin. Forked from the crash lab's zygote
    (:mod:`crashlab._client._zygote.client`: a warm interpreter that has imported the server and
    ``mfusepy`` once, so a trial pays a ``fork``, not an interpreter start — the difference
    between ≈ 1.2× and ≈ 2× a kill trial) unless ``CRASHLAB_NO_PREFORK=1`` or the platform
    cannot; then a plain, lean interpreter (:data:`_BOOT`). Either way it dies with the harness
    (the zygote's children die with it, the plain one through the lifeline) in its own session."""
    from crashlab._client import _lifeline
    from crashlab._client._zygote import client as _zygote

    env = dict(os.environ, FUSE_LIBRARY_PATH=_libfuse3() or "libfuse3.so.3")
    if _zygote.prefork_argv([sys.executable, "-m", "crashlab._lab.powerloss.server"], None) is not None:
        try:
            child = _zygote.spawn_forked("crashlab._lab.powerloss.server", [], cwd=cwd, env=env,
                                         session_env="CRASHLAB_POWERLOSS_SESSION")
        except OSError:
            child = None
        if child is not None:
            return child
    here = Path(__file__).resolve().parent
    argv = [sys.executable, "-S", "-c", _BOOT, _binding_dir(), str(here.parents[1]), str(here.parent), str(here)]
    return _lifeline.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True, cwd=str(cwd), env=env)


#: Run the server without importing the harness, and without ``site`` (``-S``: the editable
#: install's import hook alone costs ≈ 0.1 s): the directory holding ``mfusepy`` goes on the
#: path, the ``crashlab`` package and its ``_lab`` are registered as bare namespaces (their
#: ``__init__`` would import the client, the catalogue and ``maka_ref``, ≈ 0.12 s), so only
#: the model, the filesystem and ``mfusepy`` load — a power-loss trial pays its server's
#: start once per trial.
_BOOT = """
import sys, types
sys.path.insert(0, sys.argv[1])
for name, path in zip(("crashlab", "crashlab._lab", "crashlab._lab.powerloss"), sys.argv[2:5]):
    module = types.ModuleType(name); module.__path__ = [path]; sys.modules[name] = module
from crashlab._lab.powerloss.server import main
sys.exit(main(sys.argv[5:]))
"""


class MountError(Exception):
    """The mount could not be made (``permission``: the system refused it)."""

    def __init__(self, message: str, permission: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.permission = permission


#: ``CRASHLAB_NO_POWERLOSS=1``: power-loss trials are "not run" even where FUSE works.
ENV_OFF = "CRASHLAB_NO_POWERLOSS"


def unavailable() -> str | None:
    """Why the power-loss filesystem cannot run here, or ``None`` when it can."""
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        return f"turned off ({ENV_OFF}={os.environ[ENV_OFF]})"
    return _machine_unavailable()


@lru_cache(maxsize=1)
def _machine_unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"the power-loss filesystem needs FUSE on Linux; this is {sys.platform}"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: FUSE is not available in this kernel or container"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this user (no permission to mount FUSE)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (Debian/Ubuntu: apt-get install fuse3)"
    if importlib.util.find_spec("mfusepy") is None:
        return "the FUSE binding mfusepy is not installed (pip install 'maka-conformance[powerloss]')"
    library = _libfuse3()
    if library is None:
        return "libfuse3 is missing (Debian/Ubuntu: apt-get install fuse3)"
    try:
        ctypes.CDLL(library)
    except OSError as exc:
        return f"libfuse3 cannot be loaded: {exc}"
    return None


@lru_cache(maxsize=1)
def _libfuse3() -> str | None:
    """libfuse 3, named for the server (``FUSE_LIBRARY_PATH``): mfusepy would otherwise take
    libfuse 2 when both are installed (GitHub's runners have it), and find it by running
    ``ldconfig`` in every server (≈ 0.1 s a trial)."""
    return ctypes.util.find_library("fuse3")


@lru_cache(maxsize=1)
def _binding_dir() -> str:
    spec = importlib.util.find_spec("mfusepy")
    if spec is None or spec.origin is None:
        raise MountError("the FUSE binding mfusepy is not installed")
    return os.path.dirname(spec.origin)


def is_mounted(path: str | os.PathLike[str]) -> bool:
    """Is ``path`` a mount point now (``/proc/self/mountinfo``; ``os.path.ismount`` stats the
    path, which hangs on a wedged FUSE server)."""
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 4 and fields[4].encode().decode("unicode_escape") == target:
                    return True
    except OSError:
        return False
    return False


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _fusermount(*args: str, timeout: float = UNMOUNT_TIMEOUT) -> tuple[bool, str]:
    try:
        done = subprocess.run(["fusermount3", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"fusermount3 {' '.join(args)} timed out after {timeout:.0f} s"
    except OSError as exc:
        return False, str(exc)
    return done.returncode == 0, done.stderr.strip()


class PowerLossMount:
    """One mount of the power-loss filesystem over ``mountpoint`` (a directory), its state
    (backing directory, graveyard, the rebuilt tree) under ``state``."""

    def __init__(self, mountpoint: Path, state: Path) -> None:
        self.mountpoint = Path(os.path.realpath(mountpoint))
        self.state = Path(state)
        self.backing = self.state / "backing"
        self.after = self.state / "after"
        self.process: Any = None  # a subprocess.Popen or the zygote's ForkedChild
        self._lines: "queue.Queue[dict[str, Any] | None]" = queue.Queue()
        self._stderr: list[str] = []
        self.mounted = False
        self.cut_report: dict[str, Any] | None = None
        self._tree: list[psutil.Process] = []

    # -- mount -------------------------------------------------------------------------------

    def launch(self) -> "PowerLossMount":
        """Move the directory's content aside and start the server (returns at once: the
        caller may do other work, then :meth:`wait_ready`)."""
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(self.mountpoint, self.backing)
        except OSError:  # another filesystem: copy
            shutil.copytree(self.mountpoint, self.backing, symlinks=True)
            shutil.rmtree(self.mountpoint)
        self.mountpoint.mkdir()
        self.process = _start_server(self.state)
        config = {"backing": str(self.backing), "state": str(self.state), "mountpoint": str(self.mountpoint)}
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(config) + "\n").encode())
        self.process.stdin.flush()
        threading.Thread(target=self._read_stdout, name="powerloss-stdout", daemon=True).start()
        threading.Thread(target=self._read_stderr, name="powerloss-stderr", daemon=True).start()
        return self

    def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            try:
                self._lines.put(json.loads(raw))
            except ValueError:
                self._stderr.append(raw.decode("utf-8", "replace"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for raw in iter(self.process.stderr.readline, b""):
            self._stderr.append(raw.decode("utf-8", "replace"))
            del self._stderr[:-200]

    @property
    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-4000:]

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> "PowerLossMount":
        """Until the kernel has mounted the server; :class:`MountError` (after cleaning up) if
        it does not within ``timeout``."""
        try:
            message = self._lines.get(timeout=timeout)
        except queue.Empty:
            message = None
            problem = f"the power-loss filesystem did not mount within {timeout:.0f} s"
        else:
            problem = "" if message and message.get("event") == "ready" else "the power-loss filesystem exited"
        if not problem and not is_mounted(self.mountpoint):
            problem = "the power-loss filesystem said ready but nothing is mounted"
        if problem:
            self.close()
            tail = self.stderr_tail.strip()
            permission = any(s in tail for s in ("Operation not permitted", "Permission denied", "permission denied"))
            raise MountError(f"{problem}: {tail[-600:] or 'no output'}", permission=permission)
        self.mounted = True
        try:  # the server and what it started (fusermount3's auto_unmount helper, in its own session)
            server = psutil.Process(self.process.pid) if self.process is not None else None
            self._tree = [server, *server.children(recursive=True)] if server is not None else []
        except psutil.Error:
            self._tree = []
        return self

    @classmethod
    def mount(cls, mountpoint: Path, state: Path, timeout: float = READY_TIMEOUT) -> "PowerLossMount":
        return cls(mountpoint, state).launch().wait_ready(timeout)

    # -- control -----------------------------------------------------------------------------

    def request(self, payload: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        if self.process is None or self.process.stdin is None:
            raise MountError("the power-loss filesystem is not running")
        try:
            self.process.stdin.write((json.dumps(payload) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise MountError(f"the power-loss filesystem is gone: {exc}: {self.stderr_tail[-600:]}") from None
        try:
            reply = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise MountError(f"the power-loss filesystem did not answer {payload.get('op')} within {timeout:.0f} s")
        if reply is None:
            raise MountError(f"the power-loss filesystem exited during {payload.get('op')}: {self.stderr_tail[-600:]}")
        if not reply.get("ok"):
            raise MountError(f"the power-loss filesystem failed {payload.get('op')}: {reply.get('error')}")
        return reply

    def stats(self) -> dict[str, Any]:
        return dict(self.request({"op": "stats"})["stats"])

    def lose_power(self, granularity: int | None = None, seed: int = 0) -> dict[str, Any]:
        """The cut: every non-durable change is undone (``granularity``: a prefix of the last
        non-durable write survives at that sector size), the server is unmounted, and the
        durable tree takes the mount point's place as a plain directory. The caller has killed
        every process that used the mount. Returns the cut's report."""
        report = dict(self.request({"op": "cut", "after": str(self.after), "granularity": granularity,
                                    "seed": seed})["report"])
        self.unmount()
        os.rmdir(self.mountpoint)
        os.rename(self.after, self.mountpoint)
        self.cut_report = report
        # the page cache's view and the graveyard go: every surviving file keeps only the names
        # the durable tree gives it (a store may refuse a file with a second name)
        for gone in (self.backing, self.state / "graveyard", self.state / "outside"):
            shutil.rmtree(gone, ignore_errors=True)
        return report

    # -- unmount and cleanup -----------------------------------------------------------------

    def unmount(self, timeout: float = UNMOUNT_TIMEOUT) -> None:
        """``fusermount3 -u``, then ``-u -z`` if that fails; the server then exits (waited for,
        killed if it does not). Raises :class:`MountError` if the mount is still there."""
        problems = []
        if is_mounted(self.mountpoint):
            ok, message = _fusermount("-u", str(self.mountpoint), timeout=timeout)
            if not ok:
                problems.append(message)
                _fusermount("-u", "-z", str(self.mountpoint), timeout=timeout)
        self._stop_server(timeout)
        self.mounted = False
        if is_mounted(self.mountpoint):
            raise MountError(f"{self.mountpoint} is still mounted after fusermount3 -u and -u -z: {problems}")

    def _stop_server(self, timeout: float) -> None:
        process = self.process
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        for stream in (process.stdout, process.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> list[int]:
        """Whatever state it is in: unmounted (lazily if need be), the server killed and
        reaped. Returns the pids of any process of its session still alive (then killed)."""
        if is_mounted(self.mountpoint):
            ok, _ = _fusermount("-u", str(self.mountpoint))
            if not ok:
                _fusermount("-u", "-z", str(self.mountpoint))
        leftovers: list[int] = []
        if self.process is not None:
            self._stop_server(2.0)
            self.process = None
        # psutil.Process objects: a pid reused since is not mistaken for ours (create time)
        alive = [p for p in self._tree if _running(p)]
        if alive:
            _gone, alive = psutil.wait_procs(alive, timeout=2.0)  # the helper exits once unmounted
            for proc in alive:
                if _running(proc):
                    leftovers.append(proc.pid)
                    try:
                        proc.kill()
                    except psutil.Error:
                        pass
        self._tree = []
        self.mounted = False
        if self.cut_report is None and self.backing.is_dir() and not is_mounted(self.mountpoint):
            # no cut happened (the drive failed): the files as the page cache held them go
            # back in place, so a failure bundle shows what the implementation wrote
            try:
                os.rmdir(self.mountpoint)
                os.rename(self.backing, self.mountpoint)
            except OSError:
                pass
        return leftovers
