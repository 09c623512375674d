"""The Phase 0 crash contract: failpoints P0–P11 and their reference ledger (spec 20 §2).

Why this module exists: the crash lab kills a child process at each failpoint, reopens the
store and projects the committed prefix; the conformance suite and our own tests check the same
table without processes. Keeping the catalogue, the reference ledger and the required decisions
here, as data, means every consumer checks the same thing.

* ``FAILPOINTS`` — the machine-readable catalogue ``{id, boundary, committedPrefix}`` in order.
  ``id`` and ``committedPrefix`` are exact; ``boundary`` is the spec's paraphrase (free text).
* ``COMMITTED_PREFIXES`` — the distinct committed prefixes, in catalogue order.
* ``PREFIX_SIZES`` — committed prefix -> number of reference-ledger events.
* ``reference_crash_ledger(P)`` — the reference ledger (legacy: no T1 marker) cut at ``P``'s
  committed prefix, as new plain dicts.
* ``EXPECTED_PHASE0_DECISIONS`` — the §2 "required decisions" table, keyed by committed
  prefix, with ``replay_event_ids(P)`` giving the concrete ids for one failpoint.

Reference-ledger ids and timestamps are our choice (the spec names the events only ``user``,
``call``, ``response``, ``terminal``): event ``<label>-<P>`` (``user-P3``, ``call-P3``, …) with
``ts`` 1, 2, 3, 4 in ledger order. See ``docs/choices/plan.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

__all__ = [
    "COMMITTED_PREFIXES",
    "EXPECTED_PHASE0_DECISIONS",
    "ExpectedPhase0Decision",
    "FAILPOINTS",
    "FAILPOINT_IDS",
    "Failpoint",
    "PREFIX_SIZES",
    "REFERENCE_LEDGER_LABELS",
    "expected_phase0_decision",
    "failpoint",
    "reference_crash_ledger",
    "reference_event_id",
    "reference_identity",
]

BEFORE_FUNCTION_CALL = "before_function_call"
AFTER_FUNCTION_CALL = "after_function_call"
AFTER_FUNCTION_RESPONSE = "after_function_response"
AFTER_TERMINAL_EVENT = "after_terminal_event"


@dataclass(frozen=True, slots=True)
class Failpoint:
    """One catalogue row (spec 20 §2)."""

    id: str
    #: Where the crash happens (the spec's paraphrase; free text, not a stable machine name).
    boundary: str
    #: The last fully committed RuntimeEvent prefix after the crash (exact machine name).
    committed_prefix: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "boundary": self.boundary, "committedPrefix": self.committed_prefix}


#: The catalogue, in order (spec 20 §2).
FAILPOINTS: tuple[Failpoint, ...] = (
    Failpoint("P0", "before tool preparation (T1)", BEFORE_FUNCTION_CALL),
    Failpoint("P1", "function_call committed, prepared journal not yet", AFTER_FUNCTION_CALL),
    Failpoint("P2", "prepared journal committed, implementation not started", AFTER_FUNCTION_CALL),
    Failpoint("P3", "tool implementation in progress", AFTER_FUNCTION_CALL),
    Failpoint("P4", "side effect done, outcome transaction (T2) not committed", AFTER_FUNCTION_CALL),
    Failpoint("P5", "function_response committed, outcome journal not yet", AFTER_FUNCTION_RESPONSE),
    Failpoint("P6", "outcome committed, result not delivered to model", AFTER_FUNCTION_RESPONSE),
    Failpoint("P7", "result delivered, next provider step not started", AFTER_FUNCTION_RESPONSE),
    Failpoint("P8", "terminal RuntimeEvent commit", AFTER_FUNCTION_RESPONSE),
    Failpoint("P9", "terminal run-header commit", AFTER_TERMINAL_EVENT),
    Failpoint("P10", "recovery-decision commit", AFTER_TERMINAL_EVENT),
    Failpoint("P11", "continuation-run creation", AFTER_TERMINAL_EVENT),
)

FAILPOINT_IDS: tuple[str, ...] = tuple(fp.id for fp in FAILPOINTS)

#: The distinct committed prefixes, in catalogue order.
COMMITTED_PREFIXES: tuple[str, ...] = (
    BEFORE_FUNCTION_CALL,
    AFTER_FUNCTION_CALL,
    AFTER_FUNCTION_RESPONSE,
    AFTER_TERMINAL_EVENT,
)

#: Committed prefix -> number of events of the reference ledger it keeps.
PREFIX_SIZES: Mapping[str, int] = MappingProxyType(
    {
        BEFORE_FUNCTION_CALL: 1,
        AFTER_FUNCTION_CALL: 2,
        AFTER_FUNCTION_RESPONSE: 3,
        AFTER_TERMINAL_EVENT: 4,
    }
)

#: Labels of the four reference-ledger events, in ledger order.
REFERENCE_LEDGER_LABELS: tuple[str, ...] = ("user", "call", "response", "terminal")

_BY_ID: Mapping[str, Failpoint] = MappingProxyType({fp.id: fp for fp in FAILPOINTS})


def failpoint(failpoint_id: str) -> Failpoint:
    """The catalogue row of ``failpoint_id``; raises ``KeyError`` for an unknown id."""
    try:
        return _BY_ID[failpoint_id]
    except (KeyError, TypeError):
        raise KeyError(f"unknown failpoint id: {failpoint_id!r} (expected one of P0..P11)") from None


def reference_identity(failpoint_id: str) -> dict[str, str]:
    """The execution identity of ``failpoint_id``'s reference ledger (spec 20 §2)."""
    fp = failpoint(failpoint_id)
    return {
        "sessionId": f"session-{fp.id}",
        "invocationId": f"invocation-run-{fp.id}",
        "runId": f"run-{fp.id}",
        "turnId": f"turn-run-{fp.id}",
    }


def reference_event_id(failpoint_id: str, label: str) -> str:
    """Our id of the reference-ledger event ``label`` (``user``/``call``/``response``/``terminal``)."""
    fp = failpoint(failpoint_id)
    if label not in REFERENCE_LEDGER_LABELS:
        raise KeyError(f"unknown reference ledger label: {label!r}")
    return f"{label}-{fp.id}"


def _full_reference_ledger(failpoint_id: str) -> list[dict[str, Any]]:
    identity = reference_identity(failpoint_id)

    def event(label: str, ts: int, **fields: Any) -> dict[str, Any]:
        return {"id": reference_event_id(failpoint_id, label), **identity, "ts": ts, "partial": False, **fields}

    return [
        event("user", 1, role="user", author="user", content={"kind": "text", "text": "run the tool"}),
        event(
            "call",
            2,
            role="model",
            author="agent",
            content={"kind": "function_call", "id": "tool-1", "name": "Bash", "args": {"command": "touch marker"}},
        ),
        event(
            "response",
            3,
            role="tool",
            author="tool",
            content={"kind": "function_response", "id": "tool-1", "name": "Bash", "result": {"exitCode": 0}},
        ),
        event("terminal", 4, role="system", author="system", status="failed", actions={"endInvocation": True}),
    ]


def reference_crash_ledger(failpoint_id: str) -> list[dict[str, Any]]:
    """The committed prefix that exists after a crash at ``failpoint_id`` (spec 20 §2).

    Returns new plain dicts on every call (callers may modify them). Raises ``KeyError`` for an
    id outside P0–P11 (a programming error, not a ledger condition).
    """
    size = PREFIX_SIZES[failpoint(failpoint_id).committed_prefix]
    return _full_reference_ledger(failpoint_id)[:size]


@dataclass(frozen=True, slots=True)
class ExpectedPhase0Decision:
    """One row of spec 20 §2 "Required decisions" for the reference ledger."""

    committed_prefix: str
    disposition: str
    #: ``op[i].status`` of each operation, in order (``()`` = no operations).
    operation_statuses: tuple[str, ...]
    rejection_reasons: tuple[str, ...]
    #: Labels (``REFERENCE_LEDGER_LABELS``) of ``replayRuntimeEvents``, in order.
    replay_labels: tuple[str, ...]
    #: Not a column of the §2 table: follows from §1.5 (only an indeterminate op sets it).
    requires_verification: bool

    def replay_event_ids(self, failpoint_id: str) -> tuple[str, ...]:
        """The concrete ``replayRuntimeEvents`` ids for one failpoint's reference ledger."""
        return tuple(reference_event_id(failpoint_id, label) for label in self.replay_labels)

    def to_json(self) -> dict[str, Any]:
        return {
            "committedPrefix": self.committed_prefix,
            "disposition": self.disposition,
            "operationStatuses": list(self.operation_statuses),
            "rejectionReasons": list(self.rejection_reasons),
            "replayLabels": list(self.replay_labels),
            "requiresVerification": self.requires_verification,
        }


#: Spec 20 §2 "Required decisions", keyed by committed prefix (catalogue order).
EXPECTED_PHASE0_DECISIONS: Mapping[str, ExpectedPhase0Decision] = MappingProxyType(
    {
        BEFORE_FUNCTION_CALL: ExpectedPhase0Decision(
            BEFORE_FUNCTION_CALL, "safe_replay", (), (), ("user",), False
        ),
        AFTER_FUNCTION_CALL: ExpectedPhase0Decision(
            AFTER_FUNCTION_CALL, "blocked", ("indeterminate",), ("dangling_tool_state",), ("user",), True
        ),
        AFTER_FUNCTION_RESPONSE: ExpectedPhase0Decision(
            AFTER_FUNCTION_RESPONSE, "safe_replay", ("succeeded",), (), ("user", "call", "response"), False
        ),
        AFTER_TERMINAL_EVENT: ExpectedPhase0Decision(
            AFTER_TERMINAL_EVENT,
            "safe_replay",
            ("succeeded",),
            (),
            ("user", "call", "response", "terminal"),
            False,
        ),
    }
)


def expected_phase0_decision(failpoint_id: str) -> ExpectedPhase0Decision:
    """The required Phase 0 decision for ``failpoint_id``'s committed prefix."""
    return EXPECTED_PHASE0_DECISIONS[failpoint(failpoint_id).committed_prefix]
