"""What every driver hands back, and the kill every driver ends with.

Why shared: "the kill was real" is one proof (killed by SIGKILL, not its own exit; its cleanup
never ran, because the process was blocked at the announcement or idle; nothing of its tree
survives) and must be recorded the same way whether the process was idle after a prefix or
blocked inside the tool loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Driven", "Unreached", "arm", "kill_and_prove"]


class Unreached(Exception):
    """The armed point was never announced: the operation answered instead (must-hit)."""

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.reply = reply


class DriveError(Exception):
    """The implementation refused a step the drive needs (an ``ok: false`` the contract does
    not allow there); a failure of the implementation, not of the harness."""


@dataclass
class Driven:
    """The killed process: its pid (effect-log lines it wrote carry it) and its kill proof."""

    pid: int
    proof: Any
    source: tuple[str, str] | None = None  # (sessionId, runId) of the crashed run, when known
    stderr_tail: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


def ok(reply: Any, op: str) -> Mapping[str, Any]:
    if not reply.ok:
        error = reply.error or {}
        raise DriveError(f"{op} answered ok:false {error.get('code')}: {error.get('message')}")
    return reply.result or {}


def arm(client: Any, failpoint: str, hit: int) -> None:
    """``faults.arm`` (protocol §4.4); an unlisted or refused id is the implementation's failure."""
    if failpoint not in tuple(client.handshake.failpoints or ()):
        raise DriveError(f"failpoint {failpoint} is not listed in the handshake (protocol §3, §4.4: every catalogue "
                         "point of a claimed capability must be armable)")
    ok(client.call("faults.arm", {"failpoint": failpoint, "hit": hit}), "faults.arm")


def kill_and_prove(ctx: Any, client: Any, source: tuple[str, str] | None = None, what: str = "the kill") -> Driven:
    """SIGKILL the process group and record ``kill_was_real`` (protocol §2.3; spec 30 §6.1)."""
    tail = client.stderr_tail
    proof = client.kill()
    real = bool(proof.killed_by_sigkill) and not proof.survivors
    ctx.record("kill_was_real", real, f"{what}: pid {proof.pid} returncode {proof.returncode}"
               + (f", survivors {list(proof.survivors)}" if proof.survivors else ""))
    return Driven(pid=proof.pid, proof=proof, source=source, stderr_tail=tail)
