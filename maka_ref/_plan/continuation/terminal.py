"""Terminal classification of a run (spec 20 §4.3) and ``terminalRepairSucceeded`` (§3.3).

Why this exists: the continuation planner may only continue from a source whose terminal
state is settled — the header says terminal, the ledger holds exactly one terminal *fact*,
that fact is the last immutable event, and the two agree. The same classification decides
whether an existing continuation target is finished (§3.5). Startup repair (§4) uses the
same rules; this module is the pure part only (no writes).

Rules (§4.3), for a run header H and its events:

* matching terminal events = non-partial events with H's ``sessionId``, ``runId`` and
  ``turnId`` that satisfy the terminal predicate;
* 0 → ``none``; ≥ 2 → ``ambiguous``; exactly 1 → ``fact`` if its ``status`` is terminal
  (``endInvocation`` alone is not enough), a failure class is derivable for ``failed`` and
  an abort source for ``aborted``/``cancelled``; otherwise ``incomplete_single_terminal``;
* failure class: first non-empty string of ``stateDelta.failureClass``,
  ``stateDelta.errorClass``, ``stateDelta.reason``, ``stateDelta.code``, error-content
  ``reason``, error-content ``code``, then the header's ``failureClass`` (§9 item 24);
* abort source: ``stateDelta.abortSource``, ``stateDelta.source``, ``refs.abortSource``,
  ``refs.source``, then the header's ``abortSource``;
* header matches fact iff statuses equal and, for ``failed``, ``failureClass`` equal, for
  ``cancelled``, ``abortSource`` equal.

Never raises; reads fields defensively. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from maka_ref._events.predicates import is_partial_event, is_terminal_event

__all__ = [
    "TERMINAL_HEADER_STATUSES",
    "TerminalClassification",
    "classify_terminal",
    "derive_abort_source",
    "derive_failure_class",
    "header_matches_fact",
    "terminal_repair_succeeded",
]

#: §5.1 terminal run statuses (mirrors ``_store.run_header.TERMINAL_RUN_STATUSES``; the pure
#: core does not import the store layer).
TERMINAL_HEADER_STATUSES = frozenset({"completed", "failed", "cancelled"})

_RUN_STATUS = {"completed": "completed", "failed": "failed", "aborted": "cancelled", "cancelled": "cancelled"}
_TURN_STATUS = {"completed": "completed", "failed": "failed", "cancelled": "aborted"}

TerminalKind = Literal["none", "ambiguous", "fact", "incomplete_single_terminal"]


def _get(value: Any, key: str) -> Any:
    return dict.get(value, key) if isinstance(value, dict) else (value.get(key) if isinstance(value, Mapping) else None)


def _first_str(*values: Any) -> str | None:
    for value in values:
        if type(value) is str and value:
            return value
    return None


def derive_failure_class(event: Any, header: Any = None) -> str | None:
    """§4.3: stateDelta failureClass/errorClass/reason/code, error-content reason/code, header."""
    delta = _get(_get(event, "actions"), "stateDelta")
    content = _get(event, "content")
    error = content if _get(content, "kind") == "error" else None
    return _first_str(
        _get(delta, "failureClass"),
        _get(delta, "errorClass"),
        _get(delta, "reason"),
        _get(delta, "code"),
        _get(error, "reason"),
        _get(error, "code"),
        _get(header, "failureClass"),
    )


def derive_abort_source(event: Any, header: Any = None) -> str | None:
    """§4.3: stateDelta abortSource/source, refs abortSource/source, header."""
    delta = _get(_get(event, "actions"), "stateDelta")
    refs = _get(event, "refs")
    return _first_str(
        _get(delta, "abortSource"),
        _get(delta, "source"),
        _get(refs, "abortSource"),
        _get(refs, "source"),
        _get(header, "abortSource"),
    )


@dataclass(frozen=True, slots=True)
class TerminalClassification:
    """The result of §4.3 for one header and its events."""

    kind: TerminalKind
    #: The single matching terminal event (``fact`` and ``incomplete_single_terminal``).
    event: Any = None
    #: Index of ``event`` in the supplied events.
    event_index: int | None = None
    run_status: str | None = None
    turn_status: str | None = None
    failure_class: str | None = None
    abort_source: str | None = None

    @property
    def is_fact(self) -> bool:
        return self.kind == "fact"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.event_index is not None:
            out["eventIndex"] = self.event_index
        for key, value in (
            ("runStatus", self.run_status),
            ("turnStatus", self.turn_status),
            ("failureClass", self.failure_class),
            ("abortSource", self.abort_source),
        ):
            if value is not None:
                out[key] = value
        return out


def classify_terminal(header: Any, events: Sequence[Any]) -> TerminalClassification:
    """§4.3 terminal classification of ``events`` under ``header``. Never raises."""
    session_id, run_id, turn_id = _get(header, "sessionId"), _get(header, "runId"), _get(header, "turnId")
    matching: list[tuple[int, Any]] = []
    for index, event in enumerate(events):
        if not isinstance(event, Mapping) or is_partial_event(event) or not is_terminal_event(event):
            continue
        if _get(event, "sessionId") == session_id and _get(event, "runId") == run_id and _get(event, "turnId") == turn_id:
            matching.append((index, event))
    if not matching:
        return TerminalClassification("none")
    if len(matching) > 1:
        return TerminalClassification("ambiguous")
    index, event = matching[0]
    status = _get(event, "status")
    run_status = _RUN_STATUS.get(status) if type(status) is str else None
    if run_status is None:
        return TerminalClassification("incomplete_single_terminal", event, index)
    failure_class = abort_source = None
    if run_status == "failed":
        failure_class = derive_failure_class(event, header)
        if failure_class is None:
            return TerminalClassification("incomplete_single_terminal", event, index)
    elif run_status == "cancelled":
        abort_source = derive_abort_source(event, header)
        if abort_source is None:
            return TerminalClassification("incomplete_single_terminal", event, index)
    return TerminalClassification(
        "fact", event, index, run_status, _TURN_STATUS[run_status], failure_class, abort_source
    )


def header_matches_fact(header: Any, fact: TerminalClassification) -> bool:
    """§4.3: statuses equal; ``failed`` → same ``failureClass``; ``cancelled`` → same ``abortSource``."""
    if not fact.is_fact or _get(header, "status") != fact.run_status:
        return False
    if fact.run_status == "failed":
        return _get(header, "failureClass") == fact.failure_class
    if fact.run_status == "cancelled":
        return _get(header, "abortSource") == fact.abort_source
    return True


def terminal_repair_succeeded(header: Any, events: Sequence[Any]) -> bool:
    """§3.3: header terminal AND a terminal fact AND it is the last event AND they match."""
    status = _get(header, "status")
    if type(status) is not str or status not in TERMINAL_HEADER_STATUSES:
        return False
    fact = classify_terminal(header, events)
    return fact.is_fact and fact.event_index == len(events) - 1 and header_matches_fact(header, fact)
