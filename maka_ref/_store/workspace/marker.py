"""The ``.maka-workspace.json`` marker: its format, its file steps and its errors (spec 20 §6.1, §6.2).

Why one module: the marker is one concept read three ways, top to bottom here —

1. the error type every workspace step raises (``WorkspaceIdentityError`` with its closed
   code vocabulary, §6.2), so the resolvers, the Git exclude step and the marker steps
   all share one vocabulary;
2. the pure format (bytes in, id out; no file system, no Git): the writer form, the reader's
   exact-shape check and the ``workspace:v1:`` identity (§6.1, §9 item 27);
3. the file-system steps, the crash- and race-sensitive part of resolution: canonical
   directory, bounded ``O_NOFOLLOW`` marker read, fsync, create-if-absent by hard link, the
   (device, inode) re-check and temp-file cleanup. POSIX-first: on platforms without
   ``O_NOFOLLOW``/``O_NONBLOCK``/``O_DIRECTORY`` the corresponding guard is skipped.

The public resolvers live in :mod:`~maka_ref._store.workspace.identity.identity`, the exclude rule in
:mod:`~maka_ref._store.workspace.identity.git`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from typing import Any, Final, Literal

from maka_ref._codec.jsontext import parse_json
from maka_ref._durable import sync as durable_sync
from maka_ref._durable import write_all
from maka_ref._errors import InvalidJSONTextError
from maka_ref._store.errors import StoreError

__all__ = [
    "IDENTITY_PREFIX",
    "MARKER_FILE_NAME",
    "MAX_MARKER_BYTES",
    "WORKSPACE_ERROR_CODES",
    "WorkspaceIdentityError",
    "format_workspace_marker",
    "identity_from_workspace_id",
    "is_workspace_uuid",
    "parse_workspace_marker",
]


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


class WorkspaceIdentityError(StoreError):
    """A workspace-resolution failure; ``code`` is one of :data:`WORKSPACE_ERROR_CODES`."""

    def __init__(self, code: WorkspaceErrorCode, message: str, *, detail: str | None = None) -> None:
        if code not in WORKSPACE_ERROR_CODES:
            raise ValueError(f"unknown workspace error code {code!r}")
        super().__init__(message, code=code, detail=detail)


def _io_failed(message: str, exc: BaseException | None = None) -> WorkspaceIdentityError:
    detail = None if exc is None else f"{type(exc).__name__}: {exc}"[:500]
    return WorkspaceIdentityError("workspace_io_failed", message, detail=detail)


MARKER_FILE_NAME: Final = ".maka-workspace.json"
IDENTITY_PREFIX: Final = "workspace:v1:"
MAX_MARKER_BYTES: Final = 4096
_UUID_RE: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE | re.ASCII
)


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


_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_MISSING: Final = (errno.ENOENT, errno.ENOTDIR)


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
        durable_sync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # a file system without directory fsync
            raise


_DIR_FD_OK: Final = (
    os.name == "posix"
    and _O_DIRECTORY != 0
    and {os.open, os.link, os.unlink} <= os.supports_dir_fd
)


def _publish_marker(canonical: str, dev_ino: tuple[int, int], new_workspace_id: str | None = None) -> bool:
    """§6.2 step 5 after the exclude rule: temp file, re-check, hard link; True if we published.

    ``new_workspace_id`` (a random v4 UUID the caller drew earlier, default: drawn here) is the
    id the marker gets *if* this call publishes it: an isolated restore (spec-phase4 §7.2) must
    name the destination's identity in its claim before the destination exists.

    On POSIX every step goes through one descriptor of the remembered directory, so the
    temporary file is created in — and always removed from — that directory even if the path
    is swapped meanwhile (the swap itself is reported as ``workspace_identity_changed``).
    """
    temp_name = f"{MARKER_FILE_NAME}.{os.getpid()}.{uuid.uuid4()}.tmp"
    content = format_workspace_marker(new_workspace_id if new_workspace_id is not None else str(uuid.uuid4()))
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
            write_all(fd, content, sync=True)
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
