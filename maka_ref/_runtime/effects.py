"""The workspace effect log ``.maka-effects.jsonl``: the crash lab's oracle for "ran twice".

Why: the RuntimeEvent ledger says what the runtime *committed*; it cannot say whether an
implementation started after a kill between T1 and T2. So every real start of a tool
implementation first appends one JSON line

    {"operationId": "toolop_…", "tool": "Write", "argsHash": "sha256:…", "pid": 1234}

and makes it durable (one ``os.write`` on an ``O_APPEND`` descriptor, then ``fsync``; the
directory is fsynced when the file was just created) **before** the side effect begins. The
log is opened with ``O_NOFOLLOW`` and must then be one regular file with one link (``fstat``):
a symlink or a hard link planted in its place could point outside the workspace, so the
runtime refuses it (the tool does not start: ``effect_log_unavailable``). A
line therefore proves "the implementation may have started"; its absence proves it never
did. Two lines with the same ``operationId`` mean the same operation started twice.

The log is append-only and never read by the runtime itself; tools may not touch it (it is a
reserved name in :mod:`maka_ref._runtime.paths`). A torn last line (a kill inside the one
``write``) is tolerated by :func:`read_effect_log`, which reports it instead of failing.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from maka_ref._durable import sync as durable_sync
from maka_ref._durable import write_all

__all__ = [
    "EFFECT_LOG_NAME",
    "EffectLog",
    "EffectLogContents",
    "append_effect_start",
    "read_effect_log",
]

EFFECT_LOG_NAME: Final = ".maka-effects.jsonl"
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)


def fsync_directory(path: Path) -> None:
    """fsync a directory so a create/rename in it is durable (best effort where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        durable_sync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def append_effect_start(workspace: str | os.PathLike[str], operation_id: str, tool: str, args_hash: str) -> None:
    """Append one start line and fsync it before returning (see the module docstring)."""
    root = Path(workspace)
    path = root / EFFECT_LOG_NAME
    line = json.dumps(
        {"operationId": operation_id, "tool": tool, "argsHash": args_hash, "pid": os.getpid()},
        ensure_ascii=True,
        separators=(",", ":"),
    ).encode("ascii") + b"\n"
    created = not os.path.lexists(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o644)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            # A second name (hard link) may live outside the workspace or be read by a tool:
            # the runtime never appends its oracle to a file it does not solely own.
            raise OSError(errno.EPERM, f"{EFFECT_LOG_NAME} must be one regular file with one link "
                                       f"(mode {stat.filemode(info.st_mode)}, {info.st_nlink} links)")
        write_all(fd, line, sync=True)
    finally:
        os.close(fd)
    if created:
        fsync_directory(root)


@dataclass(frozen=True, slots=True)
class EffectLogContents:
    """Parsed log: ``entries`` in order; ``torn_tail`` when the last line is incomplete."""

    entries: tuple[dict[str, Any], ...]
    torn_tail: bool

    def starts_by_operation(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.entries:
            key = entry.get("operationId")
            if isinstance(key, str):
                counts[key] = counts.get(key, 0) + 1
        return counts


def read_effect_log(workspace: str | os.PathLike[str]) -> EffectLogContents:
    """Read the log of ``workspace`` (absent → empty). Lines that are not JSON objects raise
    ``ValueError`` unless they are the unterminated last line (a torn tail); a log that is a
    symlink (``ELOOP``) or not a regular file raises ``OSError``."""
    path = Path(workspace) / EFFECT_LOG_NAME
    try:  # like the writer: never through a symlink, never blocking on a FIFO
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError:
        return EffectLogContents((), False)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EPERM, f"{EFFECT_LOG_NAME} is not a regular file")
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    lines = data.split(b"\n")
    torn = lines[-1] != b""
    complete = lines[:-1]
    entries: list[dict[str, Any]] = []
    for number, raw in enumerate(complete, start=1):
        value = json.loads(raw.decode("ascii"))
        if not isinstance(value, dict):
            raise ValueError(f"effect log line {number} is not a JSON object")
        entries.append(value)
    return EffectLogContents(tuple(entries), torn)


class EffectLog:
    """The effect log of one workspace (a small handle so tools and tests share one path)."""

    def __init__(self, workspace: str | os.PathLike[str]) -> None:
        self.workspace = Path(workspace)

    @property
    def path(self) -> Path:
        return self.workspace / EFFECT_LOG_NAME

    def record_start(self, operation_id: str, tool: str, args_hash: str) -> None:
        append_effect_start(self.workspace, operation_id, tool, args_hash)

    def read(self) -> EffectLogContents:
        return read_effect_log(self.workspace)
