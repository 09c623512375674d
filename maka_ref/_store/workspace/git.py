"""The Git exclude rule for the marker (spec 20 §6.3, §9 items 28–29).

Why separate: this is the only part of resolution that runs a subprocess; it finds the
``info/exclude`` path via ``git rev-parse`` (scrubbed environment, timeout) and appends the
marker rule under an advisory lock, so a marker never shows up in ``git status``. A non-Git
workspace never reaches ``git``.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from typing import Final

from maka_ref._durable import write_all
from maka_ref._store.workspace.marker import (
    _MISSING,
    _O_CLOEXEC,
    _O_NOFOLLOW,
    MARKER_FILE_NAME,
    WorkspaceIdentityError,
    _io_failed,
)

try:  # POSIX advisory locks serialise concurrent exclude appends (documented choice)
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["GIT_TIMEOUT_SECONDS", "MAX_EXCLUDE_BYTES"]

MAX_EXCLUDE_BYTES: Final = 1024 * 1024
GIT_TIMEOUT_SECONDS: Final = 3.0
_GIT_ENV_REMOVED: Final = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def _inside_git(canonical: str) -> bool:
    """The workspace or an ancestor holds a ``.git`` entry (file, directory or link)."""
    current = canonical
    while True:
        try:
            os.lstat(os.path.join(current, ".git"))
            return True
        except OSError as exc:
            if exc.errno not in _MISSING:
                raise _io_failed(f"Unable to inspect {current} for a .git entry", exc) from exc
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _git_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    base = dict(os.environ if env is None else env)
    for name in _GIT_ENV_REMOVED:
        base.pop(name, None)
    base["GIT_OPTIONAL_LOCKS"] = "0"
    return base


def _git_exclude_path(canonical: str, env: Mapping[str, str] | None) -> str:
    git_env = _git_environment(env)
    search_path = git_env.get("PATH", os.defpath)
    executable = shutil.which("git", path=search_path) if search_path else None
    if executable is None:
        raise _io_failed("Git workspace requires a git executable on PATH")
    command = [executable, "-C", canonical, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude"]
    try:
        completed = subprocess.run(
            command,
            env=git_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _io_failed("Unable to query Git for the exclude path", exc) from exc
    if completed.returncode != 0:
        stderr = os.fsdecode(completed.stderr).strip()[:300]
        raise _io_failed(f"git rev-parse failed with status {completed.returncode}: {stderr}")
    output = os.fsdecode(completed.stdout)
    exclude_path = output[:-1] if output.endswith("\n") else output
    if not exclude_path or "\n" in exclude_path or not os.path.isabs(exclude_path):
        raise _io_failed(f"Git reported a non-absolute exclude path: {exclude_path!r}"[:300])
    return exclude_path


def _ensure_exclude_rule(exclude_path: str) -> None:
    rule = MARKER_FILE_NAME.encode("ascii")
    try:
        os.makedirs(os.path.dirname(exclude_path), exist_ok=True)
        fd = os.open(exclude_path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    except OSError as exc:
        raise _io_failed(f"Unable to open Git exclude file {exclude_path}", exc) from exc
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_EXCLUDE_BYTES:
            raise _io_failed(f"Git exclude file must be one regular file of at most 1 MiB: {exclude_path}")
        content = os.pread(fd, info.st_size + 1, 0)
        if len(content) > MAX_EXCLUDE_BYTES:
            raise _io_failed(f"Git exclude file exceeds 1 MiB: {exclude_path}")
        if rule in content.split(b"\n"):
            return
        addition = (b"\n" if content and not content.endswith(b"\n") else b"") + rule + b"\n"
        if len(content) + len(addition) > MAX_EXCLUDE_BYTES:
            raise _io_failed(f"Adding the marker rule would grow the Git exclude file past 1 MiB: {exclude_path}")
        write_all(fd, addition, sync=True)
    except WorkspaceIdentityError:
        raise
    except OSError as exc:
        raise _io_failed(f"Unable to update Git exclude file {exclude_path}", exc) from exc
    finally:
        os.close(fd)  # also releases the advisory lock


def _ensure_git_ignore(canonical: str, env: Mapping[str, str] | None) -> None:
    if _inside_git(canonical):
        _ensure_exclude_rule(_git_exclude_path(canonical, env))
