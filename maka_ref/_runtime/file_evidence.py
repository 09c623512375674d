"""The reference tools' Phase 3 evidence: what ``Write``/``Edit``/``Append`` promise before T1,
and the effect-time check that keeps the promise (spec-phase3 §1.1, §1.4, §1.5, §1.7).

Why here and not in the pure core: computing the evidence means *reading* the target by the
tools' own confinement rules (the descent of :mod:`~maka_ref._runtime.beneath`, which follows a
symlink that stays inside the workspace), and only the runtime knows those rules. The record
itself, its codec and its transforms' definitions stay in :mod:`maka_ref._reconcile`.

When no evidence is recorded (spec-phase3 §1.1 item 3) — the transform would fail, an argument
is not UTF-8, a state exceeds ``MAX_FILE_BYTES`` (or, for ``Edit``, the tool's own 1 MiB read
limit: a call that would fail gets no evidence, §8 item 17), the target is not one regular
file, a directory on the way does not exist yet (choice: the reference resolves the canonical
target only through existing directories), or reading failed — :func:`build_evidence` answers
None and the call runs exactly as before Phase 3.

Choice on modes (spec-phase3 §1.3): ``before.mode`` is recorded; ``expectedAfter.mode`` is
**not** bound, because the temporary file's mode follows the process umask (Appendix A).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from typing import Any, Final

from maka_ref._reconcile import (
    MAX_FILE_BYTES,
    TRANSFORM_FOR_TOOL,
    FileEvidence,
    FileState,
    content_digest,
    expected_result,
    target_path_problem,
)
from maka_ref._runtime.beneath import Beneath, descend
from maka_ref._runtime.paths import ConfinementError, is_reserved, path_parts

__all__ = ["EVIDENCE_TOOLS", "EvidenceMismatch", "build_evidence", "check_before", "read_state", "relative_target"]

#: The tools that record evidence (spec-phase3 §0).
EVIDENCE_TOOLS: Final = frozenset(TRANSFORM_FOR_TOOL)
#: ``Edit`` reads at most this much (``maka_ref._runtime.tools.MAX_READ_BYTES``); a larger file
#: makes it fail, so it gets no evidence. Kept by value: ``tools`` imports this module.
_EDIT_READ_LIMIT: Final = 1024 * 1024
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


class EvidenceMismatch(Exception):
    """The target at effect time is not the one the evidence promised (spec-phase3 §1.7)."""


def relative_target(root: str, where: Beneath) -> str | None:
    """The canonical target (spec-phase3 §1.5) the descent resolved, relative to ``root``."""
    directory = where.dir_text
    if directory == root:
        rel = where.name
    elif directory.startswith(root.rstrip("/") + "/"):
        rel = directory[len(root.rstrip("/")) + 1 :] + "/" + where.name
    else:
        return None
    return rel if target_path_problem(rel) is None else None


def read_state(where: Beneath) -> tuple[FileState, bytes] | None:
    """The target's state and bytes, read through the directory's descriptor without following
    a link; None when it is not absent-or-one-regular-file or is over ``MAX_FILE_BYTES``."""
    assert where.dir_fd is not None
    try:
        info = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return FileState.absent(), b""
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > MAX_FILE_BYTES:
        return None
    fd = os.open(where.name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=where.dir_fd)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
            return None
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                return None
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return FileState.of_bytes(data, stat.S_IMODE(opened.st_mode)), data


def _after(tool: str, before: FileState, data: bytes, args: Mapping[str, Any]) -> bytes | None:
    """The expected-after bytes of spec-phase3 §1.4, or None when the transform would fail."""
    try:
        if tool == "Write":
            return args["content"].encode("utf-8")
        if tool == "Append":
            return data + args["content"].encode("utf-8")
        old, new = args["old"].encode("utf-8"), args["new"].encode("utf-8")
    except UnicodeEncodeError:
        return None
    if before.type != "regular" or not old or len(data) > _EDIT_READ_LIMIT:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if data.count(old) != 1:
        return None
    return data.replace(old, new, 1)


def build_evidence(
    root: str,
    tool: str,
    args: Mapping[str, Any],
    *,
    identity: Mapping[str, str],
    workspace_identity: str,
) -> FileEvidence | None:
    """The record for this call, or None (module docstring). ``identity`` holds the ids of the
    call and dispatch events T1 will commit (``operationId``, ``sessionId``, ``invocationId``,
    ``runId``, ``turnId``, ``providerToolCallId``, ``callEventId``, ``dispatchEventId``,
    ``canonicalArgsHash``). Never writes: the descent creates no directory here."""
    if tool not in EVIDENCE_TOOLS or not isinstance(args, Mapping):
        return None
    try:
        parts = path_parts(args.get("path"))
        with descend(root, parts, create_dirs=False, reserved=is_reserved, shown="/".join(parts)) as where:
            if where.dir_fd is None:  # pragma: no cover - non-POSIX text fallback
                return None
            target = relative_target(root, where)
            read = read_state(where)
    except (OSError, ConfinementError, ValueError):
        return None
    if target is None or read is None:
        return None
    before, data = read
    after = _after(tool, before, data, args)
    if after is None or len(after) > MAX_FILE_BYTES:
        return None
    return FileEvidence.for_call(
        identity, tool_name=tool, workspace_identity=workspace_identity, target_path=target, before=before,
        expected_after=FileState("regular", len(after), content_digest(after)), result=expected_result(tool, args),
    )


def check_before(root: str, where: Beneath, evidence: FileEvidence) -> None:
    """spec-phase3 §1.7 steps 1–2, immediately before the effect: the descent at effect time
    reached the evidence's ``targetPath`` and the target still is ``before``; else
    :class:`EvidenceMismatch` (the tool fails through T2 without touching any file)."""
    if relative_target(root, where) != evidence.target_path:
        raise EvidenceMismatch(f"the path resolves to another target than {evidence.target_path!r} now")
    try:
        read = read_state(where)
    except OSError as exc:
        raise EvidenceMismatch(f"the target could not be read again: {errno.errorcode.get(exc.errno or 0, exc)}") from None
    if read is None or read[0] != evidence.before:
        raise EvidenceMismatch(f"{evidence.target_path} changed since the evidence was recorded")
