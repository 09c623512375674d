"""The value types of the process race: what to spawn and what came back.

:class:`WorkerSpec` (one worker to spawn), :class:`WorkerResult` (its exit status and output,
parsed into the ``RESULT``/``ERROR_CLASS`` lines), :class:`RaceOutcome` and :class:`RaceError`.
They are plain data with no process handling, kept apart from the spawning and waiting code;
re-exported by :mod:`maka_ref.testing.process_race`, the module to import them from.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = [
    "RaceError",
    "RaceOutcome",
    "WorkerResult",
    "WorkerSpec",
]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One worker: its mode and extra environment variables (e.g. the worker index)."""

    mode: str
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkerResult:
    """What one worker did: exit status and everything it wrote."""

    index: int
    mode: str
    pid: int
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def signal(self) -> int | None:
        """The signal that killed the worker (POSIX negative return code), else None."""
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.result_line is not None

    @property
    def result_line(self) -> str | None:
        """The worker's ``RESULT ok …`` line (stdout)."""
        return _find_line(self.stdout, "RESULT ok")

    @property
    def error_line(self) -> str | None:
        """The worker's ``RESULT error …`` line (stderr)."""
        return _find_line(self.stderr, "RESULT error")

    @property
    def detail(self) -> Any:
        """The JSON after ``RESULT ok`` (``{}`` when the mode reports nothing)."""
        line = self.result_line
        if line is None:
            raise ValueError(f"worker {self.index} ({self.mode}) has no RESULT ok line")
        rest = line[len("RESULT ok"):].strip()
        return json.loads(rest) if rest else {}

    @property
    def error_code(self) -> str | None:
        """The stable code of ``RESULT error <code> <message>``, None without such a line."""
        line = self.error_line
        if line is None:
            return None
        parts = line.split(" ", 3)
        return parts[2] if len(parts) > 2 else ""

    @property
    def error_class(self) -> str | None:
        """The exception class name from the worker's ``ERROR_CLASS <name>`` line."""
        line = _find_line(self.stderr, "ERROR_CLASS ")
        return line[len("ERROR_CLASS "):].strip() if line is not None else None

    def describe(self) -> str:
        if self.returncode is None:
            status = "still running"
        elif self.signal is not None:
            try:
                status = f"killed by {signal.Signals(self.signal).name}"
            except ValueError:
                status = f"killed by signal {self.signal}"
        else:
            status = f"exit {self.returncode}"
        return (
            f"worker {self.index} mode={self.mode} pid={self.pid} {status}\n"
            f"  stdout: {self.stdout!r}\n  stderr: {self.stderr!r}"
        )


@dataclass(frozen=True, slots=True)
class RaceOutcome:
    """All workers of a finished race, in spawn order."""

    workers: tuple[WorkerResult, ...]
    elapsed_s: float

    @property
    def exit_codes(self) -> list[int | None]:
        return [worker.returncode for worker in self.workers]

    @property
    def sorted_exit_codes(self) -> list[int]:
        return sorted(code if code is not None else -1 for code in self.exit_codes)

    @property
    def winners(self) -> list[WorkerResult]:
        return [worker for worker in self.workers if worker.returncode == 0]

    @property
    def losers(self) -> list[WorkerResult]:
        return [worker for worker in self.workers if worker.returncode != 0]

    def describe(self) -> str:
        return "\n".join(worker.describe() for worker in self.workers)


class RaceError(AssertionError):
    """The race could not run to completion (timeout, early death); carries diagnostics."""

    def __init__(self, reason: str, workers: Sequence[WorkerResult]) -> None:
        self.reason = reason
        self.workers = tuple(workers)
        super().__init__(reason + "\n" + "\n".join(worker.describe() for worker in self.workers))


def _find_line(text: str, prefix: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(prefix):
            return line
    return None
