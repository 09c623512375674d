"""The one exception the protocol client raises for a misbehaving implementation.

Why one class with a ``verdict`` string instead of a hierarchy: the conformance report needs
a verdict (protocol §7), not a traceback. Callers branch on ``verdict``; the message, the op
and the stderr tail are what a human reads in the report. Everything else the client raises
(``RuntimeError`` for misuse, a validator's own bug) is a harness problem, not a verdict.
"""

from __future__ import annotations

__all__ = ["VERDICTS", "ProtocolFailure"]

#: Every verdict :class:`ProtocolFailure` can carry (protocol §7 plus the start-up ones).
VERDICTS: tuple[str, ...] = (
    "timeout",
    "exited",
    "protocol_violation",
    "output_flood",
    "unexpected_failpoint",
    "survivors",
    "shutdown_timeout",
    "spawn_failed",
    "handshake_failed",
)


class ProtocolFailure(Exception):
    """The implementation misbehaved; the session is over and its process tree is reaped.

    By the time this is raised the client has already SIGKILLed the process group, waited
    for the process and killed any straggler of its tree (listed in :attr:`survivors`).
    """

    verdict: str
    message: str
    op: str | None
    stderr_tail: str
    exit_status: int | None
    survivors: tuple[int, ...]

    def __init__(
        self,
        verdict: str,
        message: str,
        *,
        op: str | None = None,
        stderr_tail: str = "",
        exit_status: int | None = None,
        survivors: tuple[int, ...] = (),
    ) -> None:
        if verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r}")
        self.verdict = verdict
        self.message = message
        self.op = op
        self.stderr_tail = stderr_tail
        self.exit_status = exit_status
        self.survivors = survivors
        super().__init__(verdict, message)

    def __str__(self) -> str:
        where = f" (op {self.op})" if self.op else ""
        status = f"; exit status {self.exit_status}" if self.exit_status is not None else ""
        return f"{self.verdict}{where}: {self.message}{status}"
