"""Recovered terminal RuntimeEvents (spec 20 §4.2) and the terminal commit (§4.1).

The commit order is the invariant of §4.1: **the terminal RuntimeEvent is durable before the
terminal header is written**, then the terminal operational event is appended unless one of
that type already exists. Every step is idempotent on retry, and every id repair writes is a
pure function of ``(sessionId, runId)``, so a crash between any two commits converges on the
next pass (§4.8): the event is found and reused (it is the run's one terminal), the header is
patched again with the same values, the operational event is appended only if missing.

Failpoint ``P10`` ("recovery-decision commit", spec 20 §2) fires between the event commit and
the header commit — the repair's own "terminal fact, non-terminal header" window.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

from maka_ref._codec.frozen import thaw
from maka_ref._events.predicates import is_partial_event, terminal_run_status
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.errors import StoreError
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.runtime_store import RuntimeStore

__all__ = [
    "EVENT_STATUS_BY_RUN_STATUS",
    "RUN_EVENT_TYPE_BY_STATUS",
    "commit_terminal",
    "header_patch",
    "recovered_terminal_event",
    "repair_id",
]

#: §4.2 / §9 item 23: a cancelled run is written with RuntimeEvent status ``aborted``.
EVENT_STATUS_BY_RUN_STATUS: Final = {"completed": "completed", "failed": "failed", "cancelled": "aborted"}
RUN_EVENT_TYPE_BY_STATUS: Final = {"completed": "run_completed", "failed": "run_failed", "cancelled": "run_cancelled"}
_FAILURE_MESSAGE_LIMIT: Final = 2000


def repair_id(kind: str, session_id: str, run_id: str) -> str:
    """``agent-run-repair-<kind>-<first 32 hex of SHA256("maka.agent-run-repair.<kind>.v1\\0<session>\\0<run>")>``.

    Same construction as the claim saga's ids (§4.5), keyed by the run instead of the claim.
    ``kind``: ``terminal`` (the recovered RuntimeEvent) or ``run_failed`` / ``run_completed``
    / ``run_cancelled`` (the operational event).
    """
    text = f"maka.agent-run-repair.{kind}.v1\0{session_id}\0{run_id}"
    return f"agent-run-repair-{kind}-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def recovered_terminal_event(
    header: Mapping[str, Any],
    ts: int | float,
    status: str,
    *,
    failure_class: str | None = None,
    message: str | None = None,
    recovery_reason: str | None = None,
    diagnostic: Mapping[str, Any] | None = None,
    abort_source: str | None = None,
    invocation_id: str | None = None,
) -> dict[str, Any]:
    """§4.2 recovered variant; ``status`` is the *run* status (cancelled → event ``aborted``)."""
    event_status = EVENT_STATUS_BY_RUN_STATUS[status]
    invocation = header.get("invocationId") or invocation_id or f"recovery-{header['runId']}"
    event: dict[str, Any] = {
        "id": repair_id("terminal", header["sessionId"], header["runId"]),
        "invocationId": invocation,
        "runId": header["runId"],
        "sessionId": header["sessionId"],
        "turnId": header["turnId"],
        "ts": ts,
        "partial": False,
        "role": "system",
        "author": "system",
        "status": event_status,
    }
    state: dict[str, Any] = {}
    if recovery_reason is not None:
        state["recovered"] = True
        state["recoveryReason"] = recovery_reason
    for key, value in (diagnostic or {}).items():
        if key != "recoveryReason":
            state[key] = value
    if status == "failed":
        failure = failure_class or "unknown"
        event["content"] = {"kind": "error", "code": failure, "reason": failure, "message": message or failure}
        state["failureClass"] = failure
    if status == "cancelled":
        state["abortSource"] = abort_source or "unknown"
    event["actions"] = {"endInvocation": True, "stateDelta": state}
    return event


def _validate(header: Mapping[str, Any], event: Mapping[str, Any], status: str) -> None:
    """§4.1 step 1."""
    if is_partial_event(event) or terminal_run_status(event) != status:
        raise StoreError(
            f"terminal RuntimeEvent {event.get('id')!r} cannot commit a {status!r} run header",
            code="terminal_status_mismatch",
        )
    for key in ("sessionId", "runId", "turnId"):
        if event.get(key) != header.get(key):
            raise StoreError(
                f"terminal RuntimeEvent {key} does not match run {header['sessionId']}/{header['runId']}",
                code="terminal_identity_mismatch",
            )


def header_patch(
    event: Mapping[str, Any],
    status: str,
    *,
    failure_class: str | None,
    failure_message: str | None,
    abort_source: str | None,
) -> dict[str, Any]:
    """§4.1 step 3. Fields that do not apply to ``status`` are cleared (``None`` removes them)."""
    ts = event["ts"]
    patch: dict[str, Any] = {"status": status, "updatedAt": ts, "completedAt": ts}
    if status == "failed":
        patch["failureClass"] = failure_class or "unknown"
        patch["failureMessage"] = failure_message[:_FAILURE_MESSAGE_LIMIT] if failure_message else None
    else:
        patch["failureClass"] = None
        patch["failureMessage"] = None
    patch["abortSource"] = (abort_source or "unknown") if status == "cancelled" else None
    return patch


def commit_terminal(
    store: RuntimeStore,
    runs: AgentRunStore,
    header: Mapping[str, Any],
    event: Mapping[str, Any],
    status: str,
    *,
    failure_class: str | None = None,
    failure_message: str | None = None,
    abort_source: str | None = None,
    run_event_data: Mapping[str, Any] | None = None,
    run_events: Sequence[Mapping[str, Any]] = (),
) -> Mapping[str, Any]:
    """§4.1 steps 1–4; returns the new header. ``event`` may be the stored one (reused)."""
    session_id, run_id = header["sessionId"], header["runId"]
    _validate(header, event, status)
    store.ensure_terminal_durable(thaw(event))  # appends if absent, else re-checks the barrier
    failpoint("P10")  # terminal fact durable, header not yet (spec 20 §4.8)
    patch = header_patch(
        event, status, failure_class=failure_class, failure_message=failure_message, abort_source=abort_source
    )
    updated = runs.update_run(session_id, run_id, patch)
    event_type = RUN_EVENT_TYPE_BY_STATUS[status]
    if not any(item.get("type") == event_type for item in run_events):
        data: dict[str, Any] = {}
        if status == "failed":
            data["failureClass"] = patch["failureClass"]
        if status == "cancelled":
            data["abortSource"] = patch["abortSource"]
        data.update(run_event_data or {})
        data["terminalEventId"] = event["id"]
        op_event: dict[str, Any] = {
            "type": event_type,
            "id": repair_id(event_type, session_id, run_id),
            "runId": run_id,
            "sessionId": session_id,
            "turnId": header["turnId"],
            "ts": event["ts"],
            "data": data,
        }
        if status == "failed" and patch.get("failureMessage"):
            op_event["message"] = patch["failureMessage"]
        runs.append_event(session_id, run_id, op_event)
    return updated
