"""The continuation crash points of spec 20 §4.9 / spec 30 §6.4, armable in a real process.

Why a module of its own: the five names are after-commit points of the Phase 1 executor
(:mod:`.execute`), and the spec's continuation crash harness arms them with its own variable
(``MAKA_RUNTIME_CONTINUATION_FAILPOINT``) and waits for ``READY:<failpoint>`` on stdout
(spec 30 §6.1, §6.4). Every site also calls the store hook, and the store's failpoint registry
(``maka_ref._store.engine.failpoints``) lists the five names, so ``MAKA_REF_FAILPOINT=<name>`` (and
the protocol adapter's ``faults.arm``) arm them as well.

Arming:

* environment, read **once at import**: ``MAKA_RUNTIME_CONTINUATION_FAILPOINT=<name>`` (action
  ``block``) or ``<name>:raise``; an unknown name or action raises ``ValueError`` at import (a
  loud configuration error, never a silent no-op);
* in-process: :func:`arm` (context manager; default action ``raise``) and :func:`disarm`.

``block``: one unbuffered ``os.write`` of ``READY:<name>\\n`` to stdout and one of
``MAKA_FAILPOINT <name>\\n`` to stderr (the announcement of the store's failpoints, so one
harness waits for both kinds), then the store's extra announcers (``ANNOUNCERS``, if any) are
called with the name, then the thread blocks until the process is killed.
``raise``: :class:`~maka_ref._store.engine.failpoints.FailpointTriggered`. A point fires once.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Final, Literal

from maka_ref._runtime.livepoints import CONTINUATION_FAILPOINTS
from maka_ref._store.engine import failpoints as _store_failpoints
from maka_ref._store.engine.failpoints import FailpointTriggered, block_forever, failpoint

__all__ = ["ENV_VAR", "ArmedContinuationPoint", "arm", "armed", "continuation_failpoint", "disarm"]

ENV_VAR: Final = "MAKA_RUNTIME_CONTINUATION_FAILPOINT"


@dataclass(slots=True)
class ArmedContinuationPoint:
    name: str
    action: Literal["raise", "block"]
    fired: bool = False

    def __enter__(self) -> "ArmedContinuationPoint":
        return self

    def __exit__(self, *exc: object) -> None:
        disarm()


_armed: ArmedContinuationPoint | None = None
_lock = threading.Lock()


def continuation_failpoint(name: str) -> None:
    """Hook at a §4.9 crash point (``name`` ∈ :data:`CONTINUATION_FAILPOINTS`)."""
    assert name in CONTINUATION_FAILPOINTS, name
    failpoint(name)  # the store hook (MAKA_REF_FAILPOINT / faults.arm)
    if _armed is None:
        return
    with _lock:
        current = _armed
        if current is None or current.name != name or current.fired:
            return
        current.fired = True
        action = current.action
    if action == "raise":
        raise FailpointTriggered(name)
    os.write(1, f"READY:{name}\n".encode())
    os.write(2, f"MAKA_FAILPOINT {name}\n".encode())
    for announce in list(getattr(_store_failpoints, "ANNOUNCERS", ())):  # e.g. the protocol adapter's
        announce(name)
    block_forever()


def arm(name: str, action: Literal["raise", "block"] = "raise") -> ArmedContinuationPoint:
    global _armed
    if name not in CONTINUATION_FAILPOINTS:
        raise ValueError(f"unknown continuation failpoint {name!r}")
    if action not in ("raise", "block"):
        raise ValueError(f"unknown failpoint action {action!r}")
    point = ArmedContinuationPoint(name, action)
    with _lock:
        _armed = point
    return point


def disarm() -> None:
    global _armed
    with _lock:
        _armed = None


def armed() -> ArmedContinuationPoint | None:
    return _armed


def _arm_from_environment(value: str | None) -> None:
    if not value:
        return
    name, _, action = value.partition(":")
    if action not in ("", "raise", "block"):
        raise ValueError(f"{ENV_VAR}: unknown action {action!r}")
    try:
        arm(name, action or "block")  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"{ENV_VAR}: {exc}") from None


_arm_from_environment(os.environ.get(ENV_VAR))
