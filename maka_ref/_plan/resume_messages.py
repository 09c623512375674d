"""The fixed English messages of Phase 0 diagnostics (spec 20 §1.3, §1.8).

Why a module of its own: the texts are part of the plan's output (same input, same plan), so
they sit in one place, built only from ids and names found in the input, apart from the rules
that decide which diagnostics exist. The choices are listed in ``docs/choices/plan.md``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._plan.resume_codes import (
    PENDING_TOOL_RESULT,
    RUNTIME_OFFSET_MISMATCH,
    TOOL_LEDGER_CORRUPTION,
    TOOL_NAME_MISMATCH,
    TOOL_NOT_DISPATCHED,
    TOOL_RECOVERY_CORRUPTION,
    TOOL_RECOVERY_PARKED,
    UNMATCHED_TOOL_RESULT,
)

__all__: list[str] = []  # private helpers of the planner, imported by name


def _text(value: Any, fallback: str) -> str:
    return value if type(value) is str and value else fallback


def _call_phrase(tool_call_id: Any, tool_name: Any) -> str:
    return f"tool call {_text(tool_call_id, '(unknown id)')} ({_text(tool_name, 'unknown tool')})"


def _event_phrase(event_id: Any) -> str:
    return f"event {event_id}" if type(event_id) is str and event_id else "an event without a usable id"


def _message(code: str, *, event_id: Any = None, tool_call_id: Any = None, tool_name: Any = None,
             hidden: bool = False, reason: Any = None, issue_code: Any = None,
             call_tool_name: Any = None) -> str:
    """The fixed English message of a diagnostic (see ``docs/choices/plan.md``)."""
    event = _event_phrase(event_id)
    if code == RUNTIME_OFFSET_MISMATCH:
        return (
            "The expected runtime event high-water does not match the number of supplied "
            "runtime events; the prefix is not the one that was planned."
        )
    if code == PENDING_TOOL_RESULT:
        which = "Hidden nested " if hidden else "The "
        return (
            f"{which}{_call_phrase(tool_call_id, tool_name)} has no committed result; its side "
            "effects may or may not have happened."
        )
    if code == TOOL_NOT_DISPATCHED:
        return (
            f"The {_call_phrase(tool_call_id, tool_name)} was committed but never dispatched, so "
            "it has no result to replay."
        )
    if code == TOOL_RECOVERY_PARKED:
        return (
            f"The {_call_phrase(tool_call_id, tool_name)} is parked by a recovery decision "
            f"({_text(reason, 'unknown reason')}) and needs attention before replay."
        )
    if code == TOOL_RECOVERY_CORRUPTION:
        return (
            f"The recovery state of {_call_phrase(tool_call_id, tool_name)} is corrupt "
            f"({_text(reason, 'unknown reason')})."
        )
    if code == "protocol_marker_invalid":
        return f"The tool-boundary protocol marker on {event} is invalid."
    if code == "duplicate_event_id":
        return f"The id of {event} appears more than once in the ledger."
    if code == "semantic_lane_conflict":
        if type(event_id) is str and event_id:
            return f"Event {event_id} does not fit the envelope of exactly one tool-ledger lane."
        return "A ledger entry is not a JSON object with a usable id, or does not fit one lane."
    if code == TOOL_LEDGER_CORRUPTION:
        return f"The tool ledger is corrupt at {event} ({_text(issue_code, 'unknown issue')})."
    if code == UNMATCHED_TOOL_RESULT:
        return f"The tool result {event} does not match any visible tool call."
    if code == TOOL_NAME_MISMATCH:
        return (
            f"The tool result {event} names tool {_text(tool_name, '(none)')} but its call "
            f"names tool {_text(call_tool_name, '(none)')}."
        )
    return f"Diagnostic {code}."  # not reached: every emitted code is listed above
