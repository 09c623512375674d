"""Named failpoint hooks inside the store's write transactions (spec 30 §6, §10 items 9, 37).

Why: the crash suites must stop a writer *inside* an open ``BEGIN IMMEDIATE`` transaction
(then SIGKILL it) and the in-process tests must make a writer fail at the same places and
prove a full rollback. Writers call :func:`failpoint` at the spec's stable names; nothing
happens unless a failpoint is armed.

Arming:

* from the environment, read **once at import**: ``MAKA_REF_FAILPOINT=<name>`` or
  ``<name>#<n>`` (fire on the n-th hit of ``name``, e.g. ``after_runtime_event_insert#2`` is
  the crash mode ``inside_t2``), optionally suffixed ``:raise`` (default action ``block``);
* in-process: ``arm(name, action, hit=1)`` (returns a context manager that disarms on exit)
  and ``disarm()``.

Actions: ``"raise"`` raises :class:`FailpointTriggered` (the writer must roll back fully);
``"block"`` writes ``MAKA_FAILPOINT <name>\\n`` to stderr with one unbuffered ``os.write`` and
then blocks the calling thread synchronously forever (no event loop turn, so no COMMIT or
ROLLBACK can run) until the process is killed; a callable is called with the name (the crash
lab uses this to print its own READY line before blocking).

Announcers: :data:`ANNOUNCERS` is a list of callables that the ``block`` action calls with the
name after its stderr line and before blocking (the wire-protocol adapter appends one that
writes ``{"failpoint": "<name>"}`` on its protocol stdout). Empty by default, so nothing else
changes.

Unarmed cost: one global ``is None`` test per hook.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Literal, Union

__all__ = [
    "ANNOUNCERS",
    "CHECKPOINT_FAILPOINTS",
    "ENV_VAR",
    "FAILPOINT_NAMES",
    "Armed",
    "FailpointTriggered",
    "arm",
    "armed",
    "block_forever",
    "disarm",
    "failpoint",
    "reached_by_reconciler",
    "reconciling",
]

ENV_VAR = "MAKA_REF_FAILPOINT"

#: The stable names of spec 30 §10 item 37 (plus the workspace scan hook).
FAILPOINT_NAMES: frozenset[str] = frozenset(
    (
        "after_runtime_event_insert",
        "after_journal_event_insert",
        "after_recovery_reconcile",
        "after_recovery_outcome",
        "after_recovery_decision",
        "after_continuation_claim_insert",
        "after_continuation_start_insert",
        "after_workspace_epoch_event_insert",
        "after_workspace_version_event_insert",
        "after_workspace_epoch_projection_insert",
        "after_workspace_version_projection_insert",
        "after_workspace_head_projection_insert",
        "after_workspace_canonical_scan",
        # the continuation crash points of spec 20 §4.9 / spec 30 §6.4 (maka_ref._continuation)
        "after_continuation_claim_committed",
        "after_run_created",
        "after_continuation_start_committed",
        "after_terminal_event_committed",
        "after_terminal_header_committed",
        # the Phase 3 reconciler's crash points (spec-phase3 §5.6; maka_ref._repair.reconcile)
        "reconcile_after_observation",
        "reconcile_after_decision",
        "reconcile_inside_bundle",
    )
) | frozenset(f"P{n}" for n in range(12))  # live tool-loop points (maka_ref._runtime, spec 20 §2)

#: The spec-phase4 §8 points the reference reaches (carrier ``on_step`` names and the boundary
#: commit; ``maka_ref._boundary.capture.checkpoint_failpoint`` calls :func:`failpoint` with
#: them), armable here so that ``faults.arm`` reaches them over the wire (protocol §4.6).
CHECKPOINT_FAILPOINTS: frozenset[str] = frozenset(
    (
        "after_checkpoint_objects_written",
        "after_checkpoint_ref_created",
        "after_workspace_boundary_committed",
        "after_workspace_transition_committed",
        "after_restore_materialized",
        "after_restore_published",
        "after_checkpoint_ref_deleted",
    )
)
FAILPOINT_NAMES = FAILPOINT_NAMES | CHECKPOINT_FAILPOINTS

Action = Union[Literal["raise", "block"], Callable[[str], None]]


class FailpointTriggered(RuntimeError):
    """Raised by a failpoint armed with ``"raise"``; writers must roll back completely."""

    def __init__(self, name: str) -> None:
        super().__init__(f"failpoint {name} triggered")
        self.name = name


@dataclass(slots=True)
class Armed:
    """The armed failpoint: fires on the ``hit``-th call of ``name``; ``count`` calls so far."""

    name: str
    action: Action
    hit: int = 1
    count: int = 0
    fired: bool = False

    def __enter__(self) -> "Armed":
        return self

    def __exit__(self, *exc: object) -> None:
        disarm()


_armed: Armed | None = None
_lock = threading.Lock()

#: Called with the failpoint name by the ``block`` action, after the stderr line, before blocking.
ANNOUNCERS: list[Callable[[str], None]] = []


def block_forever() -> None:
    """Block this thread synchronously until the process is killed (never returns)."""
    event = threading.Event()
    while True:
        event.wait(3600.0)


def failpoint(name: str) -> None:
    """Hook called by writers at a named place. Does nothing unless ``name`` is armed."""
    if _armed is None:
        return
    _fire(name)


def _fire(name: str) -> None:
    with _lock:
        current = _armed
        if current is None or current.name != name or current.fired:
            return
        current.count += 1
        if current.count != current.hit:
            return
        current.fired = True
        action = current.action
    if action == "raise":
        raise FailpointTriggered(name)
    if action == "block":
        os.write(2, f"MAKA_FAILPOINT {name}\n".encode())
        for announce in list(ANNOUNCERS):
            announce(name)
        block_forever()
    assert callable(action)
    action(name)


def arm(name: str, action: Action = "raise", *, hit: int = 1) -> Armed:
    """Arm ``name`` (replacing any armed failpoint); use the result as a context manager."""
    global _armed
    if name not in FAILPOINT_NAMES:
        raise ValueError(f"unknown failpoint {name!r}")
    if action not in ("raise", "block") and not callable(action):
        raise ValueError(f"unknown failpoint action {action!r}")
    if type(hit) is not int or hit < 1:
        raise ValueError("failpoint hit must be a positive integer")
    armed_point = Armed(name, action, hit)
    with _lock:
        _armed = armed_point
    return armed_point


def disarm() -> None:
    """Disarm whatever is armed (idempotent)."""
    global _armed
    with _lock:
        _armed = None


def armed() -> Armed | None:
    """The armed failpoint (with its hit ``count`` and ``fired`` flag), or None."""
    return _armed


_reconciling = threading.local()


@contextmanager
def reached_by_reconciler() -> Iterator[None]:
    """Mark this thread as committing a Phase 3 reconciler's bundle, so the bundle writer's
    ``after_recovery_reconcile`` also fires ``reconcile_inside_bundle`` (spec-phase3 §5.1 step 8):
    the reconciler's own crash point inside the transaction, armable apart from every other
    bundle writer's."""
    previous = getattr(_reconciling, "active", False)
    _reconciling.active = True
    try:
        yield
    finally:
        _reconciling.active = previous


def reconciling() -> bool:
    """Whether :func:`reached_by_reconciler` is active on this thread."""
    return getattr(_reconciling, "active", False)


def _arm_from_environment(value: str | None) -> None:
    """Parse ``<name>[#<n>][:raise|:block]``; an unknown name is a loud configuration error."""
    if not value:
        return
    spec, _, action = value.partition(":")
    name, _, nth = spec.partition("#")
    if action not in ("", "raise", "block"):
        raise ValueError(f"{ENV_VAR}: unknown action {action!r}")
    if nth and not nth.isdigit():
        raise ValueError(f"{ENV_VAR}: hit must be a positive integer, got {nth!r}")
    arm(name, action or "block", hit=int(nth) if nth else 1)  # type: ignore[arg-type]


_arm_from_environment(os.environ.get(ENV_VAR))
