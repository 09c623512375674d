"""One hermetic ``git`` invocation (spec-phase4 §3.2).

Why: the carrier runs the real ``git`` program inside the *user's* repository. Whatever that
repository's configuration, the user's machine or the calling process's environment says, a
call must not run a user program (hooks, fsmonitor, filters, pagers, credential helpers, gpg),
must not read state that depends on who runs it (global and system configuration, global
excludes), must not touch the user's index, and must end — a timeout kills the whole process
group, so nothing git started is left running. Every failure becomes a
:class:`~maka_ref._checkpoint.failure.CheckpointError`, never a traceback.

A :class:`GitScratch` is the private directory one carrier operation owns (``HOME``, an empty
hooks directory, the exclude and attributes files, the private index); a :class:`Git` binds
the program, the scratch, the timeout and the repository paths.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Self

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.policy import CheckpointPolicy, exclude_file_text

__all__ = [
    "AUTHOR_DATE",
    "AUTHOR_EMAIL",
    "AUTHOR_NAME",
    "DEFAULT_TIMEOUT_SECONDS",
    "MIN_GIT_VERSION",
    "Git",
    "GitProgram",
    "GitScratch",
    "Pending",
    "find_git",
]

DEFAULT_TIMEOUT_SECONDS: Final = 120.0
MIN_GIT_VERSION: Final = (2, 25, 0)
AUTHOR_NAME: Final = "Maka Checkpoint"
AUTHOR_EMAIL: Final = "checkpoint@maka.invalid"
#: 2000-01-01T00:00:00Z, upstream's fixed baseline date (git-workspace-service.ts:140).
AUTHOR_DATE: Final = "946684800 +0000"
_STDERR_TAIL: Final = 500
_VERSION: Final = re.compile(rb"git version (\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class GitProgram:
    """The ``git`` executable every call of one carrier uses (an absolute path)."""

    path: str
    version: tuple[int, int, int]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def find_git(search_path: str | None = None, timeout: float = 10.0) -> GitProgram:
    """Resolve ``git`` on ``search_path`` (default: this process's ``PATH``) and check its
    version (§3.3 checks 2–3)."""
    path_value = os.environ.get("PATH", os.defpath) if search_path is None else search_path
    executable = shutil.which("git", path=path_value) if path_value else None
    if executable is None:
        raise CheckpointError("git_unavailable", "no git program on PATH")
    executable = os.path.abspath(executable)
    try:
        process = subprocess.Popen(
            [executable, "version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={"PATH": os.defpath, "LC_ALL": "C", "LANG": "C"},
            start_new_session=True,
        )
    except OSError as exc:
        raise CheckpointError("git_unavailable", f"git cannot be started: {exc.strerror}") from None
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        raise CheckpointError("git_unavailable", "git version did not answer in time") from None
    match = _VERSION.search(out)
    if process.returncode != 0 or match is None:
        raise CheckpointError("git_unavailable", "git version gave no version")
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if version < MIN_GIT_VERSION:
        raise CheckpointError(
            "git_version_unsupported", f"git {'.'.join(map(str, version))} is older than 2.25",
            {"version": ".".join(map(str, version))},
        )
    return GitProgram(executable, version)


class GitScratch:
    """A private ``0700`` temporary directory for one operation; removed by :meth:`close`.

    It is ``HOME`` (no configuration file is ever written there) and names ``no-hooks/`` (never
    created: ``core.hooksPath``), ``exclude`` (the policy's excluded paths: ``core.excludesFile``;
    ``core.attributesFile`` is the null device) and the private index path (not created: Git
    creates it)."""

    def __init__(self, policy: CheckpointPolicy) -> None:
        self.root = tempfile.mkdtemp(prefix="maka-checkpoint-")
        try:
            self.home = self.root
            # never created: Git looks for hooks there and finds none (the directory is ours, 0700)
            self.hooks = os.path.join(self.root, "no-hooks")
            self.exclude = os.path.join(self.root, "exclude")
            self.attributes = os.devnull  # an empty attributes file
            with open(self.exclude, "wb") as handle:
                handle.write(exclude_file_text(policy))
            self.index = os.path.join(self.root, "index")
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _subcommand(args: Sequence[str]) -> str:
    for arg in args:
        if not arg.startswith("-"):
            return arg
    return "git"


@dataclass(slots=True)
class Git:
    """``git`` bound to one scratch directory, one repository and a per-call timeout.

    ``git_dir``/``work_tree`` are passed explicitly once known (no rediscovery between calls);
    before that, calls run with ``cwd`` = the workspace and Git discovers the repository."""

    program: GitProgram
    scratch: GitScratch
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    cwd: str | None = None
    git_dir: str | None = None
    work_tree: str | None = None

    def environment(self, *, index: str | None) -> dict[str, str]:
        """The whole environment of a call (§3.2 item 2): nothing is inherited but ``TMPDIR``."""
        env = {
            "PATH": os.pathsep.join([os.path.dirname(self.program.path), os.defpath]),
            "HOME": self.scratch.home,
            "XDG_CONFIG_HOME": os.path.join(self.scratch.home, "xdg"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "LANG": "C",
            "LC_ALL": "C",
            "TZ": "UTC",
            "GIT_AUTHOR_NAME": AUTHOR_NAME,
            "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
            "GIT_AUTHOR_DATE": AUTHOR_DATE,
            "GIT_COMMITTER_NAME": AUTHOR_NAME,
            "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
            "GIT_COMMITTER_DATE": AUTHOR_DATE,
        }
        if "TMPDIR" in os.environ:
            env["TMPDIR"] = os.environ["TMPDIR"]
        if index is not None:
            env["GIT_INDEX_FILE"] = index
        return env

    def argv(self, args: Sequence[str], *, work_tree: str | None = None) -> list[str]:
        """``git --no-pager -c …`` (§3.2 item 3) ``[--git-dir --work-tree]`` + ``args``."""
        config = {
            "core.hooksPath": self.scratch.hooks,
            "core.fsmonitor": "false",
            "core.excludesFile": self.scratch.exclude,
            "core.attributesFile": self.scratch.attributes,
            "core.autocrlf": "false",
            "core.safecrlf": "false",
            "core.fileMode": "true",
            "core.symlinks": "true",
            "core.splitIndex": "false",
            "gc.auto": "0",
            "maintenance.auto": "false",
            "commit.gpgSign": "false",
            "submodule.recurse": "false",
            "credential.helper": "",
            "protocol.allow": "never",
            "core.sshCommand": "",
        }
        argv = [self.program.path, "--no-pager"]
        for key, value in config.items():
            argv += ["-c", f"{key}={value}"]
        if self.git_dir is not None:
            argv.append(f"--git-dir={self.git_dir}")
        tree = work_tree if work_tree is not None else self.work_tree
        if tree is not None:
            argv.append(f"--work-tree={tree}")
        return argv + list(args)

    def run(
        self,
        args: Sequence[str],
        *,
        index: str | None = None,
        stdin: bytes | None = None,
        ok: Iterable[int] = (0,),
        work_tree: str | None = None,
    ) -> tuple[int, bytes, bytes]:
        """Run one command to completion; ``(status, stdout, stderr)`` for a status in ``ok``,
        else a ``CheckpointError``. ``index`` sets ``GIT_INDEX_FILE`` (only ever a private
        file: the scratch index or another file the carrier owns)."""
        return self.start(args, index=index, stdin=stdin, work_tree=work_tree).wait(ok)

    def start(
        self,
        args: Sequence[str],
        *,
        index: str | None = None,
        stdin: bytes | None = None,
        work_tree: str | None = None,
    ) -> Pending:
        """Start a command and return at once (the carrier parses files while Git works);
        :meth:`Pending.wait` finishes it under the same deadline as :meth:`run`."""
        process = self._start(args, index=index, stdin=stdin is not None, work_tree=work_tree)
        return Pending(self, list(args), process, stdin, time.monotonic() + self.timeout)

    def stream(
        self,
        args: Sequence[str],
        lines: Iterable[bytes],
        consume: Callable[[object], None],
        *,
        index: str | None = None,
    ) -> None:
        """Run a batch command (``cat-file --batch``): a thread writes ``lines``, ``consume``
        reads the process's stdout (a binary stream) to the end. The whole call is bounded by
        the timeout: a watchdog kills the process group."""
        process = self._start(args, index=index, stdin=True, work_tree=None)
        expired = threading.Event()

        def watchdog() -> None:
            expired.set()
            _kill_group(process)

        timer = threading.Timer(self.timeout, watchdog)
        timer.daemon = True

        def feed() -> None:
            assert process.stdin is not None
            try:
                for line in lines:
                    process.stdin.write(line)
                process.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass

        writer = threading.Thread(target=feed, daemon=True)
        err_chunks: list[bytes] = []

        def drain_stderr() -> None:
            assert process.stderr is not None
            err_chunks.append(process.stderr.read())

        reader = threading.Thread(target=drain_stderr, daemon=True)
        timer.start()
        writer.start()
        reader.start()
        try:
            consume(process.stdout)
        except BaseException:
            _kill_group(process)
            raise
        finally:
            timer.cancel()
            writer.join()
            reader.join()
            if process.stdout is not None:
                process.stdout.close()
            process.wait()
        if expired.is_set():
            raise CheckpointError(
                "git_timeout", f"git {_subcommand(args)} did not finish in {self.timeout:g} s",
                {"subcommand": _subcommand(args), "timeoutSeconds": int(self.timeout)},
            )
        if process.returncode != 0:
            raise self.failure(args, process.returncode, b"".join(err_chunks))

    def _start(self, args: Sequence[str], *, index: str | None, stdin: bool,
               work_tree: str | None) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                self.argv(args, work_tree=work_tree),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.environment(index=index),
                cwd=self.cwd or self.scratch.root,
                start_new_session=True,
            )
        except OSError as exc:
            raise CheckpointError("git_unavailable", f"git cannot be started: {exc.strerror}") from None

    @staticmethod
    def failure(args: Sequence[str], status: int, stderr: bytes) -> CheckpointError:
        """Map a non-zero exit to a code (§3.2 item 5)."""
        text = stderr.decode("utf-8", "replace")
        if "detected dubious ownership" in text:
            return CheckpointError("repository_ownership_unsafe", "git refuses this repository for its owner")
        if "not a git repository" in text.lower():
            return CheckpointError("not_a_git_repository", "the workspace is not inside a Git repository")
        tail = text[-_STDERR_TAIL:].strip()
        return CheckpointError(
            "git_failed", f"git {_subcommand(args)} failed with status {status}: {tail}",
            {"subcommand": _subcommand(args), "exitStatus": status, "stderr": tail},
        )



@dataclass(slots=True)
class Pending:
    """A started ``git`` command (see :meth:`Git.start`)."""

    git: Git
    args: list[str]
    process: subprocess.Popen[bytes]
    stdin: bytes | None
    deadline: float

    def wait(self, ok: Iterable[int] = (0,)) -> tuple[int, bytes, bytes]:
        process = self.process
        try:
            out, err = process.communicate(input=self.stdin, timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise CheckpointError(
                "git_timeout", f"git {_subcommand(self.args)} did not finish in {self.git.timeout:g} s",
                {"subcommand": _subcommand(self.args), "timeoutSeconds": int(self.git.timeout)},
            ) from None
        except BaseException:
            _kill_group(process)
            process.wait()
            raise
        if process.returncode not in tuple(ok):
            raise self.git.failure(self.args, process.returncode, err)
        return process.returncode, out, err

    def abandon(self) -> None:
        """Kill and reap (used when the caller fails before waiting)."""
        if self.process.poll() is None:
            _kill_group(self.process)
        self.process.communicate()
