"""Interrupted Code Mode outcomes (spec 10 §6.5, §8.17).

What: in ``code_mode`` tool mode, an outer provider ``exec`` call that was dispatched but
never answered cannot be resumed (its in-process interpreter died with the crash). The
runtime settles it with a synthetic, error-marked T2 outcome. This helper builds those T2
commits as plain JSON dicts ``{operationId, journalEventId, committedAt, runtimeEvent}``.

Why pinned to the anchor: it does **not** gate on ``hasCorruption`` and does not require the
protocol marker (spec §6.5 [X], §8.17); callers that want the safer behaviour gate it
themselves.

Robustness: never raises, never mutates its input; the produced dicts share no objects with
the input (every copied value is a string).

Depends on: ``_ledger.resolver``, ``_ledger.lanes``, ``_ledger.scanner``.
"""

from __future__ import annotations

from typing import Any, Iterable

from maka_ref._ledger.lanes import FUNCTION_CALL, classify_lane
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.scanner import as_event_sequence

INTERRUPTED_MESSAGE = "Code Mode execution was interrupted by runtime recovery."


def build_interrupted_code_mode_outcome_commits(
    events: Iterable[Any], now: Any, tool_mode: Any
) -> list[dict[str, Any]]:
    """§6.5: one T2 commit per interrupted outer ``exec`` operation; ``[]`` unless code_mode."""
    if tool_mode != "code_mode":
        return []
    events = as_event_sequence(events)
    resolution = resolve_recovery(events)
    by_id: dict[str, Any] | None = None
    commits: list[dict[str, Any]] = []
    for decision in resolution.decisions:
        operation_id = decision.operation_id
        call_event_id = decision.call_runtime_event_id
        if (
            decision.status != "indeterminate"
            or decision.reason != "dispatch_without_response"
            or not operation_id
            or not call_event_id
        ):
            continue
        if by_id is None:
            # The anchor looks the call up by id with a last-wins map over the input.
            by_id = {}
            for event in events:
                if isinstance(event, dict):
                    event_id = event.get("id")
                    if isinstance(event_id, str):
                        by_id[event_id] = event
        call_event = by_id.get(call_event_id)
        if call_event is None or classify_lane(call_event) != FUNCTION_CALL:
            continue
        call = call_event["content"]
        if (
            call.get("name") != "exec"
            or call_event.get("origin") == "code_mode"
            or call_event.get("modelVisibility") == "hidden"
        ):
            continue
        call_id = call["id"]
        runtime_event = {
            "id": f"{operation_id}_response",
            "invocationId": call_event["invocationId"],
            "runId": call_event["runId"],
            "sessionId": call_event["sessionId"],
            "turnId": call_event["turnId"],
            "ts": now,
            "partial": False,
            "role": "tool",
            "author": "tool",
            "origin": "provider",
            "modelVisibility": "visible",
            "content": {
                "kind": "function_response",
                "id": call_id,
                "name": "exec",
                "result": {
                    "kind": "json",
                    "value": {"kind": "code_mode", "status": "interrupted", "message": INTERRUPTED_MESSAGE},
                },
                "isError": True,
            },
            "refs": {"operationId": operation_id, "toolCallId": call_id},
        }
        commits.append(
            {
                "operationId": operation_id,
                "journalEventId": f"{operation_id}_outcome",
                "committedAt": now,
                "runtimeEvent": runtime_event,
            }
        )
    return commits


__all__ = ["build_interrupted_code_mode_outcome_commits"]
