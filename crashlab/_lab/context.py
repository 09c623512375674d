"""What a fault mode or driver may use while a trial runs (the engine implements it).

Why an interface of its own: the fault modes (``torn``, ``pause``, ``race``) and the drivers
(``prefix``, ``live``) are written separately from the engine that runs trials, and must not
reach into it. Everything a fault needs is here: a fresh workspace, a way to start more
implementation processes (each one handshaken, and reaped by the engine at the end of the
trial whatever happens), and a way to record checks and evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from crashlab._lab.model import TrialSpec

__all__ = ["TrialContext"]


class TrialContext(Protocol):
    spec: TrialSpec
    #: A fresh, empty directory for this trial (the implementation's workspace).
    workspace: Path
    #: Free-form JSON evidence for the report and the failure bundle.
    evidence: dict[str, Any]

    def spawn(self) -> Any:
        """Start one more implementation process (a :class:`crashlab.ProtocolClient`,
        handshake done, working directory = a scratch dir, not the workspace; its requests,
        kill and close are written to the trial's timeline, :mod:`crashlab._lab.timeline`).
        The engine kills and reaps every process spawned for the trial when the trial ends,
        and records survivors as a failed ``no_survivors`` check."""
        ...

    def record(self, name: str, ok: bool, detail: str = "") -> None:
        """Record one oracle's verdict (see :class:`crashlab._lab.model.Check`; it is a step
        of the timeline too)."""
        ...

    @property
    def handshake(self) -> Any:
        """The implementation's handshake (:class:`crashlab.Handshake`)."""
        ...
