"""Observability lifecycle events of safe-boundary continuation (spec 20 §7).

Why a module of its own: the events are the *only* thing continuation reports to the outside
world, and §7 fixes their fields exactly and forbids prompts, tool arguments, tool results,
file contents and secrets. Building them here from identities, reason codes and error classes
only — never from events, headers or plans — makes that rule structural: no builder takes a
value that could carry user data.

Sinks are best effort (§7): :func:`emit` swallows every exception of the sink, so a failing
writer can never change a decision. :class:`LifecycleLog` appends one compact JSON object per
line to ``<workspace>/.maka/lifecycle.jsonl`` (``O_APPEND``, one ``write`` per line), never
through a symlink (:class:`LifecycleLog`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from maka_ref._codec.jsontext import compact_json
from maka_ref._runtime.beneath import open_private_dir

__all__ = [
    "LIFECYCLE_FILE",
    "LifecycleLog",
    "LifecycleSink",
    "emit",
    "error_class",
    "execution_completed",
    "execution_failed",
    "execution_started",
    "plan_approved",
    "plan_parked",
    "read_lifecycle_log",
]

#: Relative to the workspace root.
LIFECYCLE_FILE: Final = os.path.join(".maka", "lifecycle.jsonl")

LifecycleSink = Callable[[Mapping[str, Any]], Any]

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


def plan_approved(session_id: str, source_run_id: str, target_run_id: str) -> dict[str, Any]:
    return {"type": "plan_approved", "sessionId": session_id, "sourceRunId": source_run_id, "targetRunId": target_run_id}


def plan_parked(session_id: str, source_run_id: str, rejection_reasons: Iterable[str]) -> dict[str, Any]:
    return {
        "type": "plan_parked",
        "sessionId": session_id,
        "sourceRunId": source_run_id,
        "rejectionReasons": [str(code) for code in rejection_reasons],
    }


def execution_started(session_id: str, source_run_id: str, target_run_id: str) -> dict[str, Any]:
    return {"type": "execution_started", "sessionId": session_id, "sourceRunId": source_run_id, "targetRunId": target_run_id}


def execution_completed(session_id: str, source_run_id: str, target_run_id: str) -> dict[str, Any]:
    return {"type": "execution_completed", "sessionId": session_id, "sourceRunId": source_run_id, "targetRunId": target_run_id}


def execution_failed(session_id: str, source_run_id: str, target_run_id: str, error_class_: str) -> dict[str, Any]:
    return {
        "type": "execution_failed",
        "sessionId": session_id,
        "sourceRunId": source_run_id,
        "targetRunId": target_run_id,
        "errorClass": error_class_,
    }


def error_class(exc: BaseException | None) -> str:
    """§7: the error's string ``code`` if any, else its class name, else ``unknown``."""
    if exc is None:
        return "unknown"
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return code
    return type(exc).__name__ or "unknown"


def emit(sink: LifecycleSink | None, event: Mapping[str, Any]) -> None:
    """Hand ``event`` to ``sink``; every failure of the sink is swallowed (§7)."""
    if sink is None:
        return
    try:
        sink(event)
    except Exception:  # noqa: BLE001 - best effort by contract
        pass


class LifecycleLog:
    """A JSON-lines sink (callable). ``events`` keeps what was emitted in this process.

    The workspace's log (:meth:`for_workspace`) is one of the runtime's own files: it is
    reached through a descriptor of ``.maka`` opened with ``O_NOFOLLOW`` (never through a
    symlinked ``.maka``), opened itself with ``O_NOFOLLOW`` and appended to only when it is one
    regular file with one link — otherwise the sink fails, which :func:`emit` swallows (§7)."""

    def __init__(self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.root = root
        self.events: list[dict[str, Any]] = []

    @classmethod
    def for_workspace(cls, root: str | os.PathLike[str]) -> "LifecycleLog":
        return cls(Path(root) / LIFECYCLE_FILE, root=root)

    def __call__(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))
        line = (compact_json(dict(event)) + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
        if self.root is not None:
            dir_fd = open_private_dir(self.root, [os.path.dirname(LIFECYCLE_FILE)], create=True)
            try:
                fd = os.open(os.path.basename(LIFECYCLE_FILE), flags, 0o644, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, flags, 0o644)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise OSError(errno.EPERM, f"{self.path} is not one regular file with one link")
            os.write(fd, line)
        finally:
            os.close(fd)


def read_lifecycle_log(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every event of ``<root>/.maka/lifecycle.jsonl`` (missing file → ``[]``)."""
    import json

    path = Path(root) / LIFECYCLE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]
