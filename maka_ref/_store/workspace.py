"""Workspace identity: the ``.maka-workspace.json`` marker and its Git exclude rule (spec 20 §6).

Why: continuation must prove it resumes in the *same logical workspace* as the source run, and
that proof must survive moves, copies and archives (a path or an inode does not). The proof is
a random UUID stored once in a marker file at the canonical workspace root; the identity string
is ``workspace:v1:<workspaceId>`` with the marker's text kept verbatim.

Invariants this module keeps (§6.2, §6.3, §9 items 27–29):

* an existing marker is authoritative and never rewritten;
* a marker is published only by a hard link from a fully written, fsynced temporary file
  (atomic create-if-absent), and every resolver returns what it *re-reads* from disk, so N
  concurrent resolvers converge on one identity (a rename would let them overwrite each other);
* in a Git workspace the exclude rule is written *before* the marker, so a marker never shows
  up in ``git status``; if Git cannot be queried no marker is created; a non-Git workspace
  never runs Git;
* the directory's (device, inode) is re-checked around publication
  (``workspace_identity_changed`` — the *resolution* error, distinct from the execution
  revalidation gate code of the same name, §9 item 36).

Path and cwd differences are diagnostics only (§6.4): :func:`compare_workspace` separates the
hard gates from the ``workspace_location_changed`` diagnostic.

Depends on: ``_codec`` (JSON text, frozen values), ``_store.errors``. POSIX-first: on platforms
without ``O_NOFOLLOW``/``O_NONBLOCK``/``fcntl`` the corresponding guard is skipped.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError
from maka_ref._store.errors import StoreError

try:  # POSIX advisory locks serialise concurrent exclude appends (documented choice)
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "GIT_TIMEOUT_SECONDS",
    "IDENTITY_PREFIX",
    "MARKER_FILE_NAME",
    "MAX_EXCLUDE_BYTES",
    "MAX_MARKER_BYTES",
    "WORKSPACE_ERROR_CODES",
    "WorkspaceIdentity",
    "WorkspaceIdentityError",
    "compare_workspace",
    "format_workspace_marker",
    "identity_from_workspace_id",
    "is_workspace_uuid",
    "normalize_cwd",
    "parse_workspace_marker",
    "read_workspace_identity",
    "resolve_workspace_identity",
]

MARKER_FILE_NAME: Final = ".maka-workspace.json"
IDENTITY_PREFIX: Final = "workspace:v1:"
MAX_MARKER_BYTES: Final = 4096
MAX_EXCLUDE_BYTES: Final = 1024 * 1024
GIT_TIMEOUT_SECONDS: Final = 3.0
_GIT_ENV_REMOVED: Final = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")
_UUID_RE: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE | re.ASCII
)

WORKSPACE_ERROR_CODES: Final = (
    "workspace_not_found",
    "invalid_workspace",
    "workspace_unmarked",
    "invalid_workspace_marker",
    "workspace_identity_changed",
    "workspace_io_failed",
)
WorkspaceErrorCode = Literal[
    "workspace_not_found",
    "invalid_workspace",
    "workspace_unmarked",
    "invalid_workspace_marker",
    "workspace_identity_changed",
    "workspace_io_failed",
]

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_MISSING: Final = (errno.ENOENT, errno.ENOTDIR)


class WorkspaceIdentityError(StoreError):
    """A workspace-resolution failure; ``code`` is one of :data:`WORKSPACE_ERROR_CODES`."""

    def __init__(self, code: WorkspaceErrorCode, message: str, *, detail: str | None = None) -> None:
        if code not in WORKSPACE_ERROR_CODES:
            raise ValueError(f"unknown workspace error code {code!r}")
        super().__init__(message, code=code, detail=detail)


@dataclass(frozen=True, slots=True)
class WorkspaceIdentity:
    """``identity`` = ``workspace:v1:<id>``; ``workspace_path`` is diagnostic only (§6.4)."""

    identity: str
    workspace_path: str
    marker_created: bool

    @property
    def workspace_id(self) -> str:
        return self.identity[len(IDENTITY_PREFIX) :]


# --------------------------------------------------------------------------- marker format


def is_workspace_uuid(value: Any) -> bool:
    """§6.1 / §9 item 27: versions 1–8, variant 8–b, either case."""
    return type(value) is str and _UUID_RE.fullmatch(value) is not None


def identity_from_workspace_id(workspace_id: str) -> str:
    """``workspace:v1:`` + the marker's id, verbatim (case kept)."""
    return IDENTITY_PREFIX + workspace_id


def format_workspace_marker(workspace_id: str) -> bytes:
    """The writer form: compact, ``schemaVersion`` first, trailing newline."""
    if not is_workspace_uuid(workspace_id):
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker candidate has an invalid id")
    return f'{{"schemaVersion":1,"workspaceId":"{workspace_id}"}}\n'.encode("ascii")


def parse_workspace_marker(data: bytes) -> str:
    """Return the ``workspaceId`` of marker bytes (any JSON formatting/key order; exact shape)."""
    if len(data) > MAX_MARKER_BYTES:
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker exceeds 4096 bytes")
    try:
        value = parse_json(data.decode("utf-8"))
    except (UnicodeDecodeError, InvalidJSONTextError) as exc:
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker is not valid JSON") from exc
    if (
        not isinstance(value, dict)
        or set(value) != {"schemaVersion", "workspaceId"}
        or type(value["schemaVersion"]) not in (int, float)
        or value["schemaVersion"] != 1
        or not is_workspace_uuid(value["workspaceId"])
    ):
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker has an invalid shape")
    return str(value["workspaceId"])


# --------------------------------------------------------------------------- filesystem steps


def _io_failed(message: str, exc: BaseException | None = None) -> WorkspaceIdentityError:
    detail = None if exc is None else f"{type(exc).__name__}: {exc}"[:500]
    return WorkspaceIdentityError("workspace_io_failed", message, detail=detail)


def _canonical_directory(path: str | os.PathLike[str]) -> tuple[str, tuple[int, int]]:
    """§6.2 steps 1–2: realpath (trailing separators removed, root kept) and (dev, ino)."""
    absolute = os.path.abspath(os.fspath(path))
    try:
        canonical = os.path.normpath(os.path.realpath(absolute, strict=True))
        info = os.stat(canonical)
    except OSError as exc:
        if exc.errno in _MISSING:
            raise WorkspaceIdentityError("workspace_not_found", f"Workspace does not exist: {absolute}") from exc
        raise _io_failed(f"Unable to resolve workspace path: {absolute}", exc) from exc
    if not stat.S_ISDIR(info.st_mode):
        raise WorkspaceIdentityError("invalid_workspace", f"Workspace is not a directory: {canonical}")
    return canonical, (info.st_dev, info.st_ino)


def _assert_same_directory(canonical: str, expected: tuple[int, int]) -> None:
    try:
        info = os.stat(canonical)
    except OSError as exc:
        if exc.errno in _MISSING:
            info = None
        else:
            raise _io_failed(f"Unable to stat workspace: {canonical}", exc) from exc
    if info is None or not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) != expected:
        raise WorkspaceIdentityError(
            "workspace_identity_changed", f"Workspace changed while creating its marker: {canonical}"
        )


def _read_marker(canonical: str) -> str | None:
    """§6.2 step 3: the marker's ``workspaceId``, or ``None`` when the workspace is unmarked."""
    marker_path = os.path.join(canonical, MARKER_FILE_NAME)
    invalid = f"Workspace marker must be one bounded regular JSON file: {marker_path}"
    try:
        fd = os.open(marker_path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _MISSING:
            return None
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
            raise WorkspaceIdentityError("invalid_workspace_marker", invalid) from exc
        raise _io_failed(f"Unable to open workspace marker: {marker_path}", exc) from exc
    try:
        handle = os.fstat(fd)
        try:
            named = os.lstat(marker_path)
        except OSError as exc:
            if exc.errno in _MISSING:
                raise WorkspaceIdentityError("invalid_workspace_marker", invalid) from exc
            raise
        if (
            not stat.S_ISREG(handle.st_mode)
            or not stat.S_ISREG(named.st_mode)
            or (handle.st_dev, handle.st_ino) != (named.st_dev, named.st_ino)
            or handle.st_size > MAX_MARKER_BYTES
        ):
            raise WorkspaceIdentityError("invalid_workspace_marker", invalid)
        chunks: list[bytes] = []
        remaining = MAX_MARKER_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except WorkspaceIdentityError:
        raise
    except OSError as exc:
        raise _io_failed(f"Unable to read workspace marker: {marker_path}", exc) from exc
    finally:
        os.close(fd)
    return parse_workspace_marker(b"".join(chunks))


def _fsync_fd(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # a file system without directory fsync
            raise


_DIR_FD_OK: Final = (
    os.name == "posix"
    and _O_DIRECTORY != 0
    and {os.open, os.link, os.unlink} <= os.supports_dir_fd
)


def _publish_marker(canonical: str, dev_ino: tuple[int, int]) -> bool:
    """§6.2 step 5 after the exclude rule: temp file, re-check, hard link; True if we published.

    On POSIX every step goes through one descriptor of the remembered directory, so the
    temporary file is created in — and always removed from — that directory even if the path
    is swapped meanwhile (the swap itself is reported as ``workspace_identity_changed``).
    """
    temp_name = f"{MARKER_FILE_NAME}.{os.getpid()}.{uuid.uuid4()}.tmp"
    content = format_workspace_marker(str(uuid.uuid4()))
    dir_fd: int | None = None
    if _DIR_FD_OK:
        try:
            dir_fd = os.open(canonical, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        except OSError as exc:
            raise _io_failed(f"Unable to open workspace directory {canonical}", exc) from exc

    def at(name: str) -> str:
        return name if dir_fd is not None else os.path.join(canonical, name)

    published = False
    temp_created = False
    succeeded = False
    try:
        if dir_fd is not None and (os.fstat(dir_fd).st_dev, os.fstat(dir_fd).st_ino) != dev_ino:
            raise WorkspaceIdentityError(
                "workspace_identity_changed", f"Workspace changed while creating its marker: {canonical}"
            )
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        fd = os.open(at(temp_name), flags, 0o600, dir_fd=dir_fd)
        temp_created = True
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        _assert_same_directory(canonical, dev_ino)  # immediately before publishing
        try:
            os.link(at(temp_name), at(MARKER_FILE_NAME), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            published = True
        except FileExistsError:
            pass  # another resolver won: keep its marker
        if published and os.name == "posix":
            if dir_fd is not None:
                _fsync_fd(dir_fd)
            else:  # pragma: no cover - POSIX without dir_fd support
                sync_fd = os.open(canonical, os.O_RDONLY | _O_CLOEXEC)
                try:
                    _fsync_fd(sync_fd)
                finally:
                    os.close(sync_fd)
        succeeded = True
    except WorkspaceIdentityError:
        raise
    except OSError as exc:
        raise _io_failed(f"Unable to create workspace marker in {canonical}", exc) from exc
    finally:
        try:
            if temp_created:
                _remove_temp(at(temp_name), dir_fd, report=succeeded)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
    return published


def _remove_temp(name: str, dir_fd: int | None, *, report: bool) -> None:
    """Always remove the temporary file; failing to do so is itself ``workspace_io_failed``
    (``report``) unless another error is already propagating (that one is kept)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if report:
            raise _io_failed(f"Unable to remove temporary marker {name}", exc) from exc


# --------------------------------------------------------------------------- Git exclude (§6.3)


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
        view = memoryview(addition)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except WorkspaceIdentityError:
        raise
    except OSError as exc:
        raise _io_failed(f"Unable to update Git exclude file {exclude_path}", exc) from exc
    finally:
        os.close(fd)  # also releases the advisory lock


def _ensure_git_ignore(canonical: str, env: Mapping[str, str] | None) -> None:
    if _inside_git(canonical):
        _ensure_exclude_rule(_git_exclude_path(canonical, env))


# --------------------------------------------------------------------------- public API


def resolve_workspace_identity(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> WorkspaceIdentity:
    """§6.2: resolve (creating the marker if the workspace is unmarked) and return the identity.

    ``env`` replaces ``os.environ`` for locating and running ``git`` (tests, hosts). Raises
    :class:`WorkspaceIdentityError`; any unexpected failure is ``workspace_io_failed``.
    """
    try:
        canonical, dev_ino = _canonical_directory(path)
        workspace_id = _read_marker(canonical)
        if workspace_id is not None:
            _ensure_git_ignore(canonical, env)
            return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, False)
        _ensure_git_ignore(canonical, env)  # first: if this fails nothing is published
        published = _publish_marker(canonical, dev_ino)
        _assert_same_directory(canonical, dev_ino)
        workspace_id = _read_marker(canonical)
        if workspace_id is None:
            raise _io_failed(f"Workspace marker disappeared right after publication: {canonical}")
        return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, published)
    except WorkspaceIdentityError:
        raise
    except Exception as exc:  # noqa: BLE001 - §6.2 step 6: wrap every other cause
        raise _io_failed("Unable to resolve workspace identity", exc) from exc


def read_workspace_identity(path: str | os.PathLike[str], *, require: bool = False) -> WorkspaceIdentity | None:
    """Read-only resolution: never creates a marker, never runs Git, never writes.

    An unmarked workspace returns ``None``, or raises ``workspace_unmarked`` when ``require``.
    """
    try:
        canonical, _ = _canonical_directory(path)
        workspace_id = _read_marker(canonical)
    except WorkspaceIdentityError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _io_failed("Unable to read workspace identity", exc) from exc
    if workspace_id is None:
        if require:
            raise WorkspaceIdentityError("workspace_unmarked", f"Workspace is not marked: {canonical}")
        return None
    return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, False)


def normalize_cwd(cwd: str) -> str:
    """§3.6 (h): ``\\`` → ``/``, trailing ``/`` stripped, lower-cased when it starts ``X:/``."""
    normalized = cwd.replace("\\", "/").rstrip("/")
    if re.match(r"[A-Za-z]:/", normalized):
        normalized = normalized.lower()
    return normalized


def compare_workspace(
    recorded_identity: str | None,
    current_identity: str | None,
    recorded_cwd: str | None,
    current_cwd: str | None,
    *,
    stage: Literal["planning", "execution"] = "planning",
) -> tuple[tuple[str, ...], tuple[FrozenDict, ...]]:
    """§6.4 gate vs diagnostic: ``(gate_codes, diagnostics)``.

    Gates (planning): no recorded identity → ``workspace_identity_missing``; identities differ →
    ``workspace_identity_mismatch`` (``workspace_identity_changed`` at ``stage="execution"``,
    where ``recorded_identity`` is the plan snapshot). Path differences never gate: they yield
    one ``{"code": "workspace_location_changed", "detail": {"sourceCwd", "currentCwd"}}``.
    """
    gates: list[str] = []
    if recorded_identity is None or recorded_identity == "":
        gates.append("workspace_identity_missing")
    elif current_identity != recorded_identity:
        gates.append("workspace_identity_changed" if stage == "execution" else "workspace_identity_mismatch")
    diagnostics: list[FrozenDict] = []
    if (
        recorded_cwd is not None
        and current_cwd is not None
        and normalize_cwd(recorded_cwd) != normalize_cwd(current_cwd)
    ):
        diagnostics.append(
            FrozenDict(
                {
                    "code": "workspace_location_changed",
                    "detail": {"sourceCwd": recorded_cwd, "currentCwd": current_cwd},
                }
            )
        )
    return tuple(gates), tuple(diagnostics)
