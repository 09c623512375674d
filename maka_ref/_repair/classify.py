"""Terminal classification of one run (spec 20 §4.3) — pure functions, no I/O.

Why separate: startup repair, the §4.7 read path and tests need the same answer for "does
this run have a terminal *fact*?", and the answer must not depend on the store.

``classify_terminal(header, events)`` →

* ``none``: no matching terminal event;
* ``ambiguous``: two or more;
* ``incomplete``: exactly one, but it is not a fact (no terminal status — an
  ``endInvocation``-only event —, or ``failed`` without a derivable failure class, or
  ``aborted``/``cancelled`` without a derivable abort source);
* ``fact``: exactly one, with its run status, failure class / abort source.

"Matching" = non-partial, same ``sessionId``/``runId``/``turnId`` as the header, terminal by
the §0.1 predicate. Derivations take the first non-empty string in the spec's order and fall
back to the header's own ``failureClass`` / ``abortSource`` (§9 item 24).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from maka_ref._events.predicates import is_partial_event, is_terminal_event, terminal_run_status
from maka_ref._plan.continuation.terminal import derive_abort_source, derive_failure_class

__all__ = [
    "TURN_STATUS_BY_RUN_STATUS",
    "TerminalClassification",
    "classify_terminal",
    "derive_abort_source",
    "derive_failure_class",
    "header_matches_fact",
    "matching_terminal_events",
]

TURN_STATUS_BY_RUN_STATUS: Final = {"completed": "completed", "failed": "failed", "cancelled": "aborted"}


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def matching_terminal_events(header: Mapping[str, Any], events: Sequence[Any]) -> list[Any]:
    """Non-partial terminal events carrying the header's session, run and turn ids."""
    keys = ("sessionId", "runId", "turnId")
    return [
        event
        for event in events
        if not is_partial_event(event)
        and is_terminal_event(event)
        and all(_get(event, key) == header.get(key) for key in keys)
    ]


@dataclass(frozen=True, slots=True)
class TerminalClassification:
    kind: str  # none | ambiguous | incomplete | fact
    event: Mapping[str, Any] | None = None  # the single matching terminal (incomplete or fact)
    run_status: str | None = None  # completed | failed | cancelled (fact, or incomplete with a status)
    failure_class: str | None = None
    abort_source: str | None = None
    count: int = 0

    @property
    def turn_status(self) -> str | None:
        return TURN_STATUS_BY_RUN_STATUS.get(self.run_status or "")


def classify_terminal(header: Mapping[str, Any], events: Sequence[Any]) -> TerminalClassification:
    matching = matching_terminal_events(header, events)
    if not matching:
        return TerminalClassification("none")
    if len(matching) > 1:
        return TerminalClassification("ambiguous", count=len(matching))
    event = matching[0]
    status = terminal_run_status(event)
    failure = derive_failure_class(event, header) if status == "failed" else None
    abort = derive_abort_source(event, header) if status == "cancelled" else None
    complete = status is not None and (status != "failed" or failure) and (status != "cancelled" or abort)
    return TerminalClassification(
        "fact" if complete else "incomplete", event, status, failure, abort, count=1
    )


def header_matches_fact(header: Mapping[str, Any], fact: TerminalClassification) -> bool:
    """§4.3: statuses equal; for ``failed`` the classes equal; for ``cancelled`` the sources."""
    if fact.kind != "fact" or header.get("status") != fact.run_status:
        return False
    if fact.run_status == "failed":
        return header.get("failureClass") == fact.failure_class
    if fact.run_status == "cancelled":
        return header.get("abortSource") == fact.abort_source
    return True
