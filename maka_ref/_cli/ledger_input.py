"""Reading a ledger file (JSON lines of RuntimeEvents) for the command line.

Why its own module: this is the only place where the core is fed from bytes, so it owns the
rule that a torn or undecodable row is storage corruption and never a committed prefix
(spec 20 §1.8): any bad line stops the command with a stable error code and the line number,
instead of silently planning over a shorter ledger.

Why line by line, and the memory bound: a ledger can be hundreds of megabytes. Holding its
text, the list of its lines, the parsed JSON values and the decoded events at once cost about
eleven times the file's size; here each line is read, decoded as UTF-8, parsed and decoded
as a RuntimeEvent before the next is read, so what stays is the decoded events plus one line
(at most :data:`MAX_LINE_BYTES`). What is refused before reading: a path that is not a
regular file once opened (a FIFO would block, ``/dev/zero`` never ends, a directory has no
lines) is ``input_not_regular_file``; a line longer than :data:`MAX_LINE_BYTES` (from stdin,
which may be a pipe, or a file) is ``input_line_too_long``.

Which error wins is what it was when the whole text was decoded, then parsed, then decoded
as events: the first invalid UTF-8 anywhere, else the first line that is not JSON, else the
first line that is not a RuntimeEvent. So after a JSON or event error the rest is still
scanned (without keeping anything) for an error of an earlier class.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator, TypeVar

from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError, MakaRefError
from maka_ref._events.fast import fast_decode_event
from maka_ref._events.schema import decode_runtime_event

__all__ = [
    "MAX_LINE_BYTES",
    "InputError",
    "iter_ledger_values",
    "load_ledger",
    "load_ledger_with",
]

#: Longest line accepted, without its ``\n`` (the protocol's line cap, ``docs/protocol.md``
#: §1.3: a ledger that fits a request fits here).
MAX_LINE_BYTES = 16 * 1024 * 1024

_T = TypeVar("_T")


@dataclass(frozen=True)
class InputError(Exception):
    """A stable CLI error: ``code`` ∈ invalid_json | invalid_runtime_event | unreadable_input |
    input_not_regular_file | input_line_too_long | usage | …"""

    code: str
    message: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code}
        if self.line is not None:
            error["line"] = self.line
        error["message"] = self.message
        return {"error": error}


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open(source: str) -> BinaryIO:
    """stdin for ``-`` (a pipe is fine: lines are bounded), else the regular file ``source``.

    ``O_NONBLOCK`` so that opening a FIFO returns at once and ``fstat`` of the opened file
    can refuse it; a symlink to a regular file is a regular file (the user named it)."""
    if source == "-":
        if sys.stdin is None:  # started with descriptor 0 closed
            raise InputError("unreadable_input", "cannot read '-': standard input is closed")
        return sys.stdin.buffer
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, IsADirectoryError):
            raise InputError("input_not_regular_file", f"{source!r} is a directory, not a ledger file") from None
        raise InputError("unreadable_input", f"cannot read {source!r}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError("input_not_regular_file", f"{source!r} is {_kind(mode)}, not a ledger file")
    return os.fdopen(fd, "rb")


def _raw_lines(handle: BinaryIO, source: str) -> Iterator[bytes]:
    """The lines of ``handle`` without ``\\n`` (one final ``\\n`` ends the last line; it does
    not start an empty one), each at most :data:`MAX_LINE_BYTES`."""
    number = 0
    while True:
        try:
            chunk = handle.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            raise InputError("unreadable_input", f"cannot read {source!r}: {exc.strerror or exc}") from None
        if not chunk:
            return
        number += 1
        if chunk.endswith(b"\n"):
            yield chunk[:-1]
        elif len(chunk) > MAX_LINE_BYTES:
            raise InputError(
                "input_line_too_long", f"line {number} is longer than {MAX_LINE_BYTES} bytes", number
            )
        else:
            yield chunk  # an unterminated last line (a torn tail: the parser decides)


def iter_ledger_values(source: str) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` of every line of ``source``; raises :class:`InputError`
    with the precedence of the module docstring (invalid UTF-8, then invalid JSON)."""
    for number, value, _decoded in _iter_lines(source, None):
        yield number, value


def _iter_lines(source: str, fast: Callable[[str], Any] | None) -> Iterator[tuple[int, Any, bool]]:
    """``(line number, value, decoded)``: ``value`` is ``fast(line)`` when that is not ``None``
    (``decoded`` is then true: the line was already decoded in one step, issue 18), else the
    line's JSON value from ``parse_json``."""
    handle = _open(source)
    json_error: InputError | None = None
    try:
        for number, raw in enumerate(_raw_lines(handle, source), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("invalid_json", f"line {number} is not valid UTF-8", number) from None
            if json_error is not None:
                continue  # only an invalid UTF-8 line can still take precedence
            if line.endswith("\r"):
                line = line[:-1]
            if fast is not None:
                decoded = fast(line)
                if decoded is not None:
                    yield number, decoded, True
                    continue
            try:
                value = parse_json(line)
            except InvalidJSONTextError as exc:
                json_error = InputError("invalid_json", f"line {number} is not JSON: {exc.message}", number)
                continue
            yield number, value, False
    finally:
        if source != "-":
            handle.close()
    if json_error is not None:
        raise json_error


#: Envelope fields whose values repeat on every event of a run (spec 10 §1.1 identity).
_SHARED_FIELDS = ("invocationId", "runId", "sessionId", "turnId")


def _share_identity(value: Any, seen: dict[str, str]) -> None:
    """Make equal identity strings one object across events (the parser makes a fresh copy
    per line; four per event, about a sixth of a decoded event's memory). Equal values, so
    nothing a reader can observe changes."""
    if type(value) is not dict:
        return
    for key in _SHARED_FIELDS:
        text = value.get(key)
        if type(text) is str and len(text) <= 256:
            value[key] = seen.setdefault(text, text)


def load_ledger_with(
    source: str,
    convert: Callable[[Any], _T],
    fast: Callable[[str, dict[str, str]], _T | None] | None = None,
) -> list[_T]:
    """``convert`` of every line's JSON value, in order. A :class:`MakaRefError` from
    ``convert`` is ``invalid_runtime_event`` at that line, reported once the rest of the input
    has shown no UTF-8 or JSON error (which would win).

    ``fast``, when given, is tried on each line's text first (with the identity strings seen
    so far, to share them as :func:`_share_identity` does) and must return exactly
    ``convert(parse_json(line))`` or ``None`` (then the line takes the exact path)."""
    out: list[_T] = []
    failed: InputError | None = None
    seen: dict[str, str] = {}
    first_pass = None if fast is None else (lambda line: fast(line, seen))
    for number, value, decoded in _iter_lines(source, first_pass):
        if failed is not None:
            continue
        _share_identity(value, seen)
        if decoded:
            out.append(value)
            continue
        try:
            out.append(convert(value))
        except MakaRefError as exc:
            failed = InputError("invalid_runtime_event", f"line {number}: {exc}", number)
            out.clear()
    if failed is not None:
        raise failed
    return out


def load_ledger(source: str) -> list[Any]:
    """Read, parse and decode a ledger line by line; raises :class:`InputError`. Lines go
    through :func:`fast_decode_event` first (same result, proven, or ``None``)."""
    return load_ledger_with(source, decode_runtime_event, fast_decode_event)
