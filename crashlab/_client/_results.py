"""Plain value objects the client hands back: the handshake, a reply, a kill proof, a close report.

Why frozen dataclasses: they end up in reports and in assertions of clauses; immutability
keeps one clause from editing what another one sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CloseReport", "Handshake", "KillProof", "Reply"]


@dataclass(frozen=True)
class Handshake:
    """What the implementation declared in its ``hello`` response (protocol §3)."""

    protocol: int
    name: str
    version: str
    capabilities: tuple[str, ...]
    failpoints: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Reply:
    """One response (protocol §2.2). ``ok: false`` is a value, never an exception."""

    ok: bool
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @property
    def code(self) -> str | None:
        """The error code (the only part of an error the harness may compare), else ``None``."""
        if self.error is None:
            return None
        code = self.error.get("code")
        return code if isinstance(code, str) else None


@dataclass(frozen=True)
class KillProof:
    """Evidence that a SIGKILL was real: the exit status and the tree check after it.

    ``survivors`` are processes of the tree that outlived the group kill (they escaped the
    process group, e.g. with ``setsid``); the client killed them too, but a non-empty tuple
    fails the clause (verdict ``survivors``).
    """

    pid: int
    returncode: int
    killed_by_sigkill: bool
    survivors: tuple[int, ...]

    @property
    def verdict(self) -> str | None:
        """``'survivors'`` when something outlived the kill, else ``None``."""
        return "survivors" if self.survivors else None


@dataclass(frozen=True)
class CloseReport:
    """How a session ended (protocol §1.7).

    ``escalated`` is ``'sigterm'`` or ``'sigkill'`` when the process did not exit within the
    timeout after end-of-file on stdin. ``killed`` is true when the session had already ended
    by :meth:`ProtocolClient.kill` or a :class:`ProtocolFailure`, so nothing was asked of the
    shutdown and ``exit_status`` is that of the kill.
    """

    exit_status: int | None
    escalated: str | None
    survivors: tuple[int, ...]
    killed: bool = False

    @property
    def verdict(self) -> str | None:
        """The §7 verdict of the shutdown, or ``None`` when it was clean."""
        if self.survivors:
            return "survivors"
        if self.killed:
            return None
        if self.escalated is not None:
            return "shutdown_timeout"
        if self.exit_status != 0:
            return "exited"
        return None
