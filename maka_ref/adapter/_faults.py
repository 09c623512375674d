"""``faults.arm`` and the failpoint announcement (``docs/protocol.md`` §2.3, §4.4).

Why through the store's registry: every failpoint the reference knows — the live P0–P11, the
store hooks inside write transactions, the continuation crash points of spec 20 §4.9 — is
reached by a call of :func:`maka_ref._store.engine.failpoints.failpoint` (the continuation sites call
it before their own ``MAKA_RUNTIME_CONTINUATION_FAILPOINT`` check). So arming that registry
with the ``block`` action and registering one announcer covers all of them: the announcer
writes ``{"failpoint": "<id>"}`` on the protocol stdout (flushed) and the registry then blocks
the thread until the process is killed, inside the open transaction where there is one.

The ``stop`` action (optional ``action`` param, protocol §4.4): the registry is armed with a
callable that writes the same stderr line, announces through the same announcers, then stops
the whole process with ``SIGSTOP`` sent to itself. When the harness sends ``SIGCONT`` the
``os.kill`` call returns and the caller carries on exactly as if the point were unarmed: the
pending request gets its normal response. This is how the crash lab's ``pause`` fault freezes
a writer *inside* a tool while a second process repairs and resumes, then lets the first one
come back as a late writer. The point still fires once (the registry's ``fired`` flag).

Which ids the adapter announces in ``hello``: :data:`ANNOUNCED_FAILPOINTS`, the ids some
protocol operation can reach (the spec-phase4 §8 checkpoint points included: ``checkpoint.*``
reaches them). The workspace-authority hooks are left out: no protocol
operation commits a workspace baseline, so they could never be reached (protocol §3: a listed
id that cannot be reached is a failure). The Phase 3 reconciler's points
(:data:`RECONCILER_FAILPOINTS`) are listed only by a session that claims ``runtime.reconcile``.
"""

from __future__ import annotations

import os
import signal
from typing import Any, Callable, Mapping

from maka_ref._runtime.livepoints import CONTINUATION_FAILPOINTS, LIVE_FAILPOINTS, NON_LOOP_FAILPOINTS
from maka_ref._store.engine import failpoints as registry
from maka_ref.adapter._errors import OpError, invalid_params
from maka_ref.adapter._params import opt_int, req

__all__ = ["ACTIONS", "ANNOUNCED_FAILPOINTS", "KNOWN_FAILPOINTS", "RECONCILER_FAILPOINTS", "arm", "install_announcer",
           "stop_self"]

#: The values of ``faults.arm``'s optional ``action`` param (protocol §4.4).
ACTIONS: tuple[str, ...] = ("block", "stop")

#: The spec 30 §2.7 authority hooks (not the spec-phase4 §8 checkpoint points, which the
#: ``checkpoint.*`` operations reach: ``registry.CHECKPOINT_FAILPOINTS``).
_WORKSPACE_HOOKS = frozenset(name for name in registry.FAILPOINT_NAMES if "workspace" in name) - registry.CHECKPOINT_FAILPOINTS
#: The Phase 3 reconciler's points (docs/spec-phase3.md §5.6): reached by ``runtime.reconcile``
#: and ``runtime.repair {"reconcile": true}``, so listed in ``hello`` only when the session claims
#: ``runtime.reconcile`` (protocol §3: a listed id that cannot be reached is a failure).
RECONCILER_FAILPOINTS: frozenset[str] = frozenset(
    name for name in registry.FAILPOINT_NAMES if name.startswith("reconcile_")
)

#: Every id this implementation can arm: live, store hooks and continuation points.
KNOWN_FAILPOINTS: frozenset[str] = registry.FAILPOINT_NAMES
assert set(CONTINUATION_FAILPOINTS) <= KNOWN_FAILPOINTS


def _order(name: str) -> tuple[int, int, str]:
    if name.startswith("P") and name[1:].isdigit():
        return (0, int(name[1:]), name)
    return (1 if name not in CONTINUATION_FAILPOINTS else 2, 0, name)


#: The ids listed in ``hello`` (reachable through some protocol operation), in a stable order.
ANNOUNCED_FAILPOINTS: tuple[str, ...] = tuple(
    sorted((KNOWN_FAILPOINTS - _WORKSPACE_HOOKS), key=_order)
)
assert set(LIVE_FAILPOINTS) | set(NON_LOOP_FAILPOINTS) <= set(ANNOUNCED_FAILPOINTS)


def install_announcer(announce: Callable[[str], None]) -> None:
    """Register ``announce(name)``: called by the ``block`` action right before blocking."""
    if announce not in registry.ANNOUNCERS:
        registry.ANNOUNCERS.append(announce)


def stop_self(name: str) -> None:
    """The ``stop`` action: stderr line, announcement, then ``SIGSTOP`` to this process.

    Returns (and the caller continues normally) once the process is sent ``SIGCONT``.
    """
    os.write(2, f"MAKA_FAILPOINT {name} (stopping)\n".encode())
    for announce in list(registry.ANNOUNCERS):
        announce(name)
    os.kill(os.getpid(), signal.SIGSTOP)
    os.write(2, f"MAKA_FAILPOINT {name} continued\n".encode())


def arm(params: Mapping[str, Any]) -> dict[str, Any]:
    name = req(params, "failpoint")
    if not isinstance(name, str):
        raise invalid_params("params.failpoint must be a string")
    hit = opt_int(params, "hit", 1)
    if hit < 1:
        raise invalid_params("params.hit must be a positive integer")
    action = params.get("action", "block")
    if action not in ACTIONS:
        raise invalid_params(f"params.action must be one of {', '.join(ACTIONS)}")
    if name not in KNOWN_FAILPOINTS:
        raise OpError("unknown_failpoint", f"no failpoint {name!r}")
    if action == "stop" and not hasattr(signal, "SIGSTOP"):
        raise OpError("fault_action_unsupported", "this platform has no SIGSTOP; only action block is available")
    registry.arm(name, "block" if action == "block" else stop_self, hit=hit)
    return {"armed": name}
