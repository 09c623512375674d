"""Case C of spec 20 §4.6: why a non-terminal run without a terminal RuntimeEvent stopped.

Pure: classifies from the run header and its operational (AgentRun) event log. The outcome
is always ``failed`` with failure class ``app_restarted``; only the diagnostic differs
(rules in spec order, first match wins):

1. last event ``model_stream_completed`` and no terminal run event →
   ``model_stream_completed_without_runtime_terminal``;
2. header ``waiting_for_user`` or last event ``permission_requested``/``permission_failed`` →
   ``stale_user_wait``;
3. last event ``tool_started`` → ``tool_interrupted``;
4. header ``created``/``running`` and (no events, or last event a start-up event) →
   ``run_interrupted``;
5. otherwise ``non_terminal_run_recovered``.

"Last event" ignores ``event_corrupt`` placeholders; ``eventCorrupt: true`` is added when the
log holds one. Rule 4 is read as *header and events* (read as "or", rule 5 could never apply
to a non-terminal header): docs/choices/repair.md.

Sandbox-boundary restart closures (``sandbox_boundary_closed_by_restart``) do not exist in
this reference runtime (no sandbox boundary store), so that branch is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["APP_RESTARTED", "RUN_TERMINAL_EVENT_TYPES", "diagnose_interrupted_run"]

APP_RESTARTED: Final = "app_restarted"
RUN_TERMINAL_EVENT_TYPES: Final = frozenset({"run_completed", "run_failed", "run_cancelled"})
_STARTUP_EVENTS: Final = frozenset(
    {"run_created", "run_started", "turn_started", "model_resolved", "model_stream_started", "run_status_changed"}
)


def diagnose_interrupted_run(header: Mapping[str, Any], run_events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{recoveryReason, lastEventType?, eventCorrupt?}`` (key order is the stateDelta order)."""
    corrupt = any(event.get("type") == "event_corrupt" for event in run_events)
    real = [event for event in run_events if event.get("type") != "event_corrupt"]
    last = real[-1].get("type") if real else None
    has_terminal_run_event = any(event.get("type") in RUN_TERMINAL_EVENT_TYPES for event in real)
    status = header.get("status")
    if last == "model_stream_completed" and not has_terminal_run_event:
        reason = "model_stream_completed_without_runtime_terminal"
    elif status == "waiting_for_user" or last in ("permission_requested", "permission_failed"):
        reason = "stale_user_wait"
    elif last == "tool_started":
        reason = "tool_interrupted"
    elif status in ("created", "running") and (last is None or last in _STARTUP_EVENTS):
        reason = "run_interrupted"
    else:
        reason = "non_terminal_run_recovered"
    diagnostic: dict[str, Any] = {"recoveryReason": reason}
    if last is not None:
        diagnostic["lastEventType"] = last
    if corrupt:
        diagnostic["eventCorrupt"] = True
    return diagnostic
