"""The script sidecar: how ``resume`` in a new process finds the script of the source run.

Why a sidecar: the scripted provider answers from a script file, but the AgentRun header is a
closed shape (spec 20 §5.1) — it has no field for a script path. So ``maka-ref run`` copies the
*validated* script into the workspace before the turn starts, keyed by the run id it is about
to use: ``<workspace>/.maka/scripts/<runId>.json`` (a copy, not a path, so moving or deleting
the original script cannot change what a continuation replays). A continuation writes the same
file for its own target run, so a multi-generation chain finds its script at every generation.

The write is atomic (temp file, fsync, rename) and happens before the run header exists, so a
run killed at any failpoint already has its sidecar. It is the runtime's own file, so it is
reached without following any symlink (``O_NOFOLLOW`` at ``.maka``, ``scripts`` and the file):
a ``.maka`` planted as a link to an outside directory is refused (``runtime_file_unsafe``).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, Final

from maka_ref._durable import sync as durable_sync
from maka_ref._durable import write_all
from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError
from maka_ref._runtime.beneath import open_private_dir
from maka_ref._runtime.errors import RuntimeLoopError, ScriptError
from maka_ref._runtime.provider import MAX_SCRIPT_BYTES, Script, load_script

__all__ = ["SCRIPTS_DIR", "SidecarUnsafeError", "read_script_sidecar", "script_sidecar_path", "write_script_sidecar"]

SCRIPTS_DIR: Final = os.path.join(".maka", "scripts")
_SCRIPTS_PARTS: Final = [".maka", "scripts"]
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


class SidecarUnsafeError(RuntimeLoopError):
    """``.maka``, ``.maka/scripts`` or the sidecar itself is a symlink or not what it should be:
    the runtime will not write (or read) its own file through it (``runtime_file_unsafe``)."""

    code = "runtime_file_unsafe"


def script_sidecar_path(root: str | os.PathLike[str], run_id: str) -> Path:
    return Path(root) / SCRIPTS_DIR / f"{run_id}.json"


def _scripts_dir(root: str | os.PathLike[str], *, create: bool) -> int:
    """A descriptor of ``.maka/scripts``, reached without following any symlink."""
    try:
        return open_private_dir(root, _SCRIPTS_PARTS, create=create)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise SidecarUnsafeError(
                f"{SCRIPTS_DIR} in {os.fspath(root)} must be a real directory, not a symlink or a file"
            ) from None
        raise


def write_script_sidecar(root: str | os.PathLike[str], run_id: str, script: Any) -> Path:
    """Validate ``script`` (path, mapping or :class:`Script`) and store it for ``run_id``.

    Every step happens relative to the descriptor of ``.maka/scripts`` (reached with
    ``O_NOFOLLOW`` per component), so a symlinked ``.maka`` cannot redirect the write outside
    the workspace (:class:`SidecarUnsafeError`)."""
    loaded = load_script(script)
    name = f"{run_id}.json"
    temp = f".{name}.tmp{os.getpid()}"
    # ASCII escapes: a lone surrogate in the script's text (valid JSON, not encodable as UTF-8)
    # is stored as \udXXX and reads back as the same string.
    data = json.dumps(loaded.to_json(), ensure_ascii=True, sort_keys=True).encode("ascii")
    dir_fd = _scripts_dir(root, create=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
        except FileExistsError:  # left by a killed run of this very process id
            os.unlink(temp, dir_fd=dir_fd)
            fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
        try:
            write_all(fd, data, sync=True)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a planted link itself
        try:
            durable_sync(dir_fd)
        except OSError:  # pragma: no cover - a file system without directory fsync
            pass
    finally:
        os.close(dir_fd)
    return script_sidecar_path(root, run_id)


def read_script_sidecar(root: str | os.PathLike[str], run_id: str) -> Script:
    """The script stored for ``run_id``; raises ``ScriptError`` (``script_unreadable``) if absent
    and :class:`SidecarUnsafeError` if it (or a directory on the way) is a symlink or not a
    regular file."""
    where = script_sidecar_path(root, run_id)
    try:
        dir_fd = _scripts_dir(root, create=False)
        try:
            fd = os.open(f"{run_id}.json", os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SidecarUnsafeError(f"Script sidecar {where} is a symlink") from None
        raise ScriptError(f"Cannot read script {where}: {exc.strerror or exc}", code="script_unreadable") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SidecarUnsafeError(f"Script sidecar {where} is not a regular file")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_SCRIPT_BYTES:
                raise ScriptError(f"Script {where} is larger than {MAX_SCRIPT_BYTES} bytes")
            chunks.append(chunk)
    except OSError as exc:
        raise ScriptError(f"Cannot read script {where}: {exc.strerror or exc}", code="script_unreadable") from None
    finally:
        os.close(fd)
    try:
        value = parse_json(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, InvalidJSONTextError) as exc:
        raise ScriptError(f"Script {where} is not JSON text: {exc}") from None
    if not isinstance(value, dict):
        raise ScriptError(f"Script {where} is not a JSON object")
    return load_script(value)
