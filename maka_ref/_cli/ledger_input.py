"""Reading a ledger file (JSON lines of RuntimeEvents) for the command line.

Why its own module: this is the only place where the core is fed from bytes, so it owns the
rule that a torn or undecodable row is storage corruption and never a committed prefix
(spec 20 §1.8): any bad line stops the command with a stable error code and the line number,
instead of silently planning over a shorter ledger.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError, RuntimeEventSchemaError
from maka_ref._events.schema import decode_runtime_event


@dataclass(frozen=True)
class InputError(Exception):
    """A stable CLI error: ``code`` ∈ invalid_json | invalid_runtime_event | unreadable_input | usage."""

    code: str
    message: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code}
        if self.line is not None:
            error["line"] = self.line
        error["message"] = self.message
        return {"error": error}


def read_ledger_text(source: str) -> str:
    """Read ``source`` (a path, or ``-`` for stdin) as UTF-8 text."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read()
        else:
            data = Path(source).read_bytes()
    except OSError as exc:
        raise InputError("unreadable_input", f"cannot read {source!r}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError("invalid_json", f"line {line} is not valid UTF-8", line) from None


def split_lines(text: str) -> list[str]:
    """Split JSON-lines text. One final newline is a terminator, not an empty last line."""
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_ledger_lines(text: str) -> list[Any]:
    """Parse every line as one JSON value; the first bad line (torn tail included) is an error."""
    values: list[Any] = []
    for number, line in enumerate(split_lines(text), start=1):
        try:
            values.append(parse_json(line))
        except InvalidJSONTextError as exc:
            raise InputError("invalid_json", f"line {number} is not JSON: {exc.message}", number) from None
    return values


def decode_ledger(values: list[Any]) -> list[Any]:
    """Decode every value as a RuntimeEvent (closed schema, normalised, frozen)."""
    events: list[Any] = []
    for number, value in enumerate(values, start=1):
        try:
            events.append(decode_runtime_event(value))
        except RuntimeEventSchemaError as exc:
            raise InputError("invalid_runtime_event", f"line {number}: {exc}", number) from None
    return events


def load_ledger(source: str) -> list[Any]:
    """Read, parse and decode a ledger; raises :class:`InputError`."""
    return decode_ledger(parse_ledger_lines(read_ledger_text(source)))
