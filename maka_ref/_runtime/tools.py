"""The real tools of the reference runtime: ``Write``, ``Edit``, ``Read``, ``Append``.

Why real tools: the crash lab's hardest promise is about *side effects* — no completed tool
runs twice, no unknown side effect is called "not executed". That needs tools whose effects
are on disk, can be half done when the process is killed, and can be checked afterwards.

Each tool declares

* ``args_schema`` — a JSON Schema (checked with ``jsonschema`` in preflight, before T1);
* ``recovery_mode`` — the ``toolDispatch.recoveryMode`` written by T1 (spec 10 §1.3.1):

  ========  =====================  ================================================================
  tool      recoveryMode           why
  ========  =====================  ================================================================
  Read      ``replay_safe``        no side effect; running it again is harmless
  Write     ``reconcile``          whole-file content; with Phase 3 evidence (spec-phase3 §1) a
                                   reconciler finalizes it when the file holds the promised state
  Edit      ``never_auto_retry``   not idempotent in general; **``reconcile`` when T1 carries
                                   evidence** (before and expected-after digests make the state
                                   comparable, spec-phase3 §1.1 item 2)
  Append    ``never_auto_retry``   not idempotent; ``reconcile`` when T1 carries evidence (a kill
                                   mid-append is then observed ``diverged`` and parks)
  ========  =====================  ================================================================

  The runtime (:mod:`~maka_ref._runtime.tool_runtime`) decides per call: evidence recorded →
  ``reconcile``; otherwise the tool's own mode above. With evidence the tool re-checks, just
  before its effect, that the target is the promised one in its ``before`` state
  (spec-phase3 §1.7; ``evidence_target_changed`` otherwise).

* ``preflight(root, args)`` — argument schema and workspace confinement; raising
  :class:`ToolError` / :class:`~maka_ref._runtime.paths.ConfinementError` makes the runtime
  commit a pre-T1 synthetic error response instead of crossing T1;
* ``run(ctx, args)`` — the implementation: resolves the path again by descent
  (:mod:`~maka_ref._runtime.beneath`: ``O_NOFOLLOW`` per component below a directory
  descriptor, so no symlink swapped in since preflight — or during the call — can redirect
  it), opens the file relative to its directory's descriptor, refuses a file with more than
  one link (``path_hardlinked``), performs the effect and returns a JSON result; an expected
  failure raises :class:`ToolError`, which the runtime commits through T2 as an ``isError``
  result. The effect-log line is written by the runtime immediately before ``run``.

Durability: ``Write`` and ``Edit`` replace the whole file through a temporary file in the
same directory (created, renamed and fsynced through the directory's descriptor) (``.<name>.<operationId>.tmp``: written, fsynced, renamed over the target,
directory fsynced). ``Append`` appends in two writes. Failpoint ``P3`` ("implementation in
progress", spec 20 §2) sits where the effect is *partially* done: after the temporary file is
durable and before the rename (``Write``/``Edit``), between the two halves of an append
(``Append``), after the file was read (``Read``). A kill at P3 therefore leaves the temporary
file behind (``Write``/``Edit``) or half the appended bytes (``Append``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

import jsonschema

from maka_ref._durable import sync as durable_sync, write_all
from maka_ref._runtime._schemacheck import compile_schema
from maka_ref._runtime.effects import fsync_directory as _fsync_directory
from maka_ref._runtime.errors import RuntimeLoopError
from maka_ref._runtime.beneath import Beneath, descend
from maka_ref._runtime.file_evidence import EvidenceMismatch, check_before
from maka_ref._runtime.paths import ConfinementError, confined_text, is_reserved, path_parts, refuse_hardlinked
from maka_ref._store.engine.failpoints import failpoint

__all__ = [
    "MAX_READ_BYTES",
    "TOOLS",
    "AppendTool",
    "EditTool",
    "ReadTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "WriteTool",
    "temp_path_for",
]

MAX_READ_BYTES: Final = 1024 * 1024
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)


class ToolError(RuntimeLoopError):
    """An expected tool failure; becomes an ``isError`` result ``{"code", "message"}``."""

    code = "tool_failed"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What an implementation may use: the canonical workspace root, its operation id, and the
    Phase 3 evidence T1 committed for it (None: no promise to keep, spec-phase3 §1.7)."""

    root: Path
    operation_id: str
    evidence: Any = None


def _path_schema() -> dict[str, Any]:
    return {"type": "string", "minLength": 1}


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"{what} is not encodable as UTF-8 (lone surrogate)", code="content_not_encodable") from None


def _display(parts_path: str) -> str:
    """The path as the tool reports it: normalised relative form (``a//./b`` → ``a/b``)."""
    return "/".join(part for part in parts_path.split("/") if part not in ("", "."))


def temp_path_for(target: Path, operation_id: str) -> Path:
    """The temporary file a ``Write``/``Edit`` of ``target`` uses (left behind by a kill at P3)."""
    return target.parent / f".{target.name}.{operation_id}.tmp"


def _lstat_final(where: Beneath) -> os.stat_result | None:
    try:
        return os.stat(where.at(where.name), dir_fd=where.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _require_regular_or_absent(where: Beneath, shown: str) -> os.stat_result | None:
    """The final component's ``lstat`` when it is one regular file with one link, None when
    absent; a symlink here appeared after the descent resolved the name (``path_changed``)."""
    info = _lstat_final(where)
    if info is None:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise ConfinementError(f"{shown} became a symlink while the call ran", code="path_changed")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file", code="not_a_file")
    refuse_hardlinked(info, shown)
    return info


def _open_final(where: Beneath, flags: int, shown: str, mode: int = 0o644) -> tuple[int, os.stat_result]:
    """Open the final component relative to its directory's descriptor, never following a
    symlink and never blocking on a FIFO; the descriptor must be one regular file with one link."""
    try:
        fd = os.open(where.at(where.name), flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, mode, dir_fd=where.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfinementError(f"{shown} became a symlink while the call ran", code="path_changed") from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, opened for writing
            raise ToolError(f"{shown} is not a regular file", code="not_a_file") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown} is not a regular file", code="not_a_file")
        refuse_hardlinked(info, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _replace_file(where: Beneath, data: bytes, operation_id: str, mode: int) -> None:
    """Temp file + fsync + rename + directory fsync, all relative to the directory's descriptor;
    P3 between the durable temp and the rename."""
    temp = where.at(f".{where.name}.{operation_id}.tmp")
    target = where.at(where.name)
    dir_fd = where.dir_fd
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    try:
        fd = os.open(temp, flags, mode, dir_fd=dir_fd)
    except FileExistsError:  # a leftover of an earlier kill at P3 for this operation
        os.unlink(temp, dir_fd=dir_fd)
        fd = os.open(temp, flags, mode, dir_fd=dir_fd)
    try:
        try:
            write_all(fd, data)
            durable_sync(fd)
        finally:
            os.close(fd)
        failpoint("P3")  # spec 20 §2 P3: implementation in progress, effect partially done
        os.replace(temp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    if dir_fd is not None:
        try:
            durable_sync(dir_fd)
        except OSError:  # pragma: no cover - a file system without directory fsync
            pass
    else:  # pragma: no cover - the text fallback
        _fsync_directory(Path(where.dir_text))


class Tool:
    """Base of the tools; subclasses set ``name``, ``recovery_mode``, ``args_schema`` and ``_run``."""

    name: ClassVar[str]
    recovery_mode: ClassVar[str]
    args_schema: ClassVar[Mapping[str, Any]]

    def __init__(self) -> None:
        self._validator = jsonschema.Draft202012Validator(self.args_schema)
        # Exact compiled check of the same schema (None: outside the subset → jsonschema only).
        self._valid = compile_schema(self.args_schema)

    def preflight(self, root: Path, args: Any) -> None:
        """Schema and confinement checks; raises ToolError / ConfinementError."""
        valid = self._valid
        error = None if valid is not None and valid(args) else jsonschema.exceptions.best_match(self._validator.iter_errors(args))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(root)"
            raise ToolError(f"Invalid arguments for {self.name} at {where}: {error.message}", code="invalid_tool_arguments")
        resolved = confined_text(root, args["path"])
        try:
            info = os.lstat(resolved)
        except OSError:
            return  # absent (or unreadable): the implementation decides
        refuse_hardlinked(info, _display(args["path"]))

    #: Whether the implementation creates missing parent directories (Write, Append).
    creates_parents: ClassVar[bool] = False

    def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Any:
        """The implementation: the path is resolved again by descent (module
        :mod:`~maka_ref._runtime.beneath`) and the effect happens relative to the descriptor of
        the directory that descent opened; returns a JSON result."""
        parts = path_parts(args["path"])
        shown = "/".join(parts)
        try:
            with descend(ctx.root, parts, create_dirs=self.creates_parents, reserved=is_reserved, shown=shown) as where:
                return self._run(ctx, where, shown, args)
        except OSError as exc:
            code = "file_not_found" if exc.errno == errno.ENOENT else "io_error"
            raise ToolError(f"{self.name} failed: {exc.strerror or exc}", code=code) from None

    def _run(self, ctx: ToolContext, where: Beneath, shown: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    @staticmethod
    def _keep_promise(ctx: ToolContext, where: Beneath) -> None:
        """spec-phase3 §1.7 steps 1–2 just before the effect: the target is the evidence's and
        still in its ``before`` state, else an error result and no effect."""
        if ctx.evidence is None:
            return
        try:
            check_before(str(ctx.root), where, ctx.evidence)
        except EvidenceMismatch as exc:
            raise ToolError(f"Did not run: {exc}", code="evidence_target_changed") from None


class WriteTool(Tool):
    """Write a whole file (created with its parent directories if absent)."""

    name = "Write"
    recovery_mode = "reconcile"
    args_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "content"],
        "properties": {"path": _path_schema(), "content": {"type": "string"}},
    }

    creates_parents = True

    def _run(self, ctx: ToolContext, where: Beneath, shown: str, args: Mapping[str, Any]) -> Any:
        data = _encode(args["content"], "content")
        info = _require_regular_or_absent(where, shown)
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o644
        self._keep_promise(ctx, where)
        _replace_file(where, data, ctx.operation_id, mode)
        return {"path": shown, "bytesWritten": len(data)}


class EditTool(Tool):
    """Replace the one exact occurrence of ``old`` with ``new``; absent or ambiguous is an error."""

    name = "Edit"
    recovery_mode = "never_auto_retry"
    args_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "old", "new"],
        "properties": {"path": _path_schema(), "old": {"type": "string", "minLength": 1}, "new": {"type": "string"}},
    }

    def _run(self, ctx: ToolContext, where: Beneath, shown: str, args: Mapping[str, Any]) -> Any:
        if _require_regular_or_absent(where, shown) is None:
            raise ToolError(f"{shown} does not exist", code="file_not_found")
        self._keep_promise(ctx, where)
        text, info = _read_text(where, shown)
        old, new = args["old"], args["new"]
        count = text.count(old)
        if count == 0:
            raise ToolError(f"The text to replace was not found in {shown}", code="edit_target_absent")
        if count > 1:
            raise ToolError(
                f"The text to replace occurs {count} times in {shown}; it must occur exactly once",
                code="edit_target_ambiguous",
            )
        data = _encode(text.replace(old, new, 1), "new")
        _replace_file(where, data, ctx.operation_id, stat.S_IMODE(info.st_mode))
        return {"path": shown, "replacements": 1}


def _read_text(where: Beneath, shown: str) -> tuple[str, os.stat_result]:
    """The file's UTF-8 text (bounded) and the ``fstat`` of the descriptor it was read from."""
    fd, info = _open_final(where, os.O_RDONLY, shown)
    try:
        if info.st_size > MAX_READ_BYTES:
            raise ToolError(f"{shown} is larger than {MAX_READ_BYTES} bytes", code="file_too_large")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_READ_BYTES:
                raise ToolError(f"{shown} is larger than {MAX_READ_BYTES} bytes", code="file_too_large")
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8"), info
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text", code="not_utf8") from None


class ReadTool(Tool):
    """Return a UTF-8 text file (at most :data:`MAX_READ_BYTES`)."""

    name = "Read"
    recovery_mode = "replay_safe"
    args_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {"path": _path_schema()},
    }

    def _run(self, ctx: ToolContext, where: Beneath, shown: str, args: Mapping[str, Any]) -> Any:
        if _require_regular_or_absent(where, shown) is None:
            raise ToolError(f"{shown} does not exist", code="file_not_found")
        text, _ = _read_text(where, shown)
        failpoint("P3")  # spec 20 §2 P3 (no side effect to leave half done)
        return {"path": shown, "content": text}


class AppendTool(Tool):
    """Append text to a file (created if absent) in two fsynced writes; P3 between them."""

    name = "Append"
    recovery_mode = "never_auto_retry"
    args_schema = WriteTool.args_schema

    creates_parents = True

    def _run(self, ctx: ToolContext, where: Beneath, shown: str, args: Mapping[str, Any]) -> Any:
        data = _encode(args["content"], "content")
        _require_regular_or_absent(where, shown)
        self._keep_promise(ctx, where)
        fd, _ = _open_final(where, os.O_WRONLY | os.O_APPEND | os.O_CREAT, shown)
        try:
            half = len(data) // 2
            write_all(fd, data[:half])
            durable_sync(fd)
            failpoint("P3")  # spec 20 §2 P3: half of the bytes are appended
            write_all(fd, data[half:])
            durable_sync(fd)
        finally:
            os.close(fd)
        return {"path": shown, "bytesAppended": len(data)}


#: The tool catalogue of the reference runtime, by name.
TOOLS: Final[Mapping[str, Tool]] = {tool.name: tool for tool in (WriteTool(), EditTool(), ReadTool(), AppendTool())}
