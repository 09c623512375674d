"""Write-side transition validation (spec 10 §4.6, §2.5).

What: ``validate_transition(existing, candidates, kind)`` decides whether a writer may append
``candidates`` to ``existing``: (1) a corrupt existing ledger refuses everything with its
first issue (so even exact retries fail closed); (2) candidates whose id already exists are
dropped when canonically equal (exact retry) and refused with ``duplicate_event_id``
otherwise; (3) the remaining candidates must have the shape of ``kind``; (4) the prospective
ledger must scan clean.

Why: every tool-bearing writer (generic append/import, T1, T2, recovery bundle) must apply
the same rules as the read-side scanner, so no writer can persist what the scanner would
call corrupt.

Exact-retry equality is equality of ``canonical_event_json`` (§2.5: normalisation happens
before comparison); a candidate — or a stored event — that cannot be encoded is "different".

Depends on: ``_ledger.scanner``, ``_ledger.lanes``, ``_ledger.results``,
``_events.encode.canonical_event_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

from maka_ref._events.encode import canonical_event_json
from maka_ref._ledger.lanes import (
    CONFLICT,
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    RECONCILE_RESULT,
    RECOVERY_DECISION,
    SEMANTIC_LANE_CONFLICT,
    TOOL_DISPATCH,
    classify_lane,
    validate_generic_append,
)
from maka_ref._ledger.results import ToolLedgerIssue
from maka_ref._ledger.scanner import LedgerScanner, as_event_sequence

TransitionKind = Literal["generic_append", "t1_prepare", "t2_outcome", "recovery_bundle"]
TRANSITION_KINDS: tuple[str, ...] = ("generic_append", "t1_prepare", "t2_outcome", "recovery_bundle")

DUPLICATE_EVENT_ID = "duplicate_event_id"
TRANSITION_SHAPE_CONFLICT = "transition_shape_conflict"

_ALLOWED_SHAPES: dict[str, tuple[tuple[str, ...], ...]] = {
    "t1_prepare": ((FUNCTION_CALL, TOOL_DISPATCH), (TOOL_DISPATCH,)),
    "t2_outcome": ((FUNCTION_RESPONSE,),),
    "recovery_bundle": (
        (RECONCILE_RESULT, RECOVERY_DECISION),
        (RECONCILE_RESULT, FUNCTION_RESPONSE, RECOVERY_DECISION),
    ),
}


@dataclass(frozen=True, slots=True)
class TransitionResult:
    """Outcome of ``validate_transition``.

    ``remaining`` holds the candidates that were *not* dropped as exact retries, in input
    order (what the writer must insert). It is ``()`` when the transition is refused.
    """

    ok: bool
    issue: ToolLedgerIssue | None = None
    remaining: tuple[Any, ...] = ()

    @property
    def code(self) -> str | None:
        return self.issue.code if self.issue is not None else None

    @property
    def event_id(self) -> str | None:
        return self.issue.event_id if self.issue is not None else None

    def to_json(self) -> dict[str, Any]:
        if self.ok or self.issue is None:
            return {"ok": True}
        issue = self.issue
        out: dict[str, Any] = {"ok": False, "code": issue.code}
        if issue.event_id is not None:  # None: the event has no id (absent, as upstream)
            out["eventId"] = issue.event_id
        # The anchor copies operationId/toolCallId only when non-empty (truthy).
        if issue.operation_id:
            out["operationId"] = issue.operation_id
        if issue.tool_call_id:
            out["toolCallId"] = issue.tool_call_id
        return out


_OK_EMPTY = TransitionResult(True)


def _refuse(issue: ToolLedgerIssue) -> TransitionResult:
    return TransitionResult(False, issue)


def _id_of(event: Any) -> str | None:
    value = event.get("id") if isinstance(event, dict) else None
    return value if isinstance(value, str) else None


def _canonical(event: Any) -> str | None:
    try:
        return canonical_event_json(event)
    except Exception:  # not encodable → never equal to anything
        return None


def _same_event(prior: Any, candidate: Any) -> bool:
    if prior is candidate:
        # Identity still has to be encodable to count as an exact retry.
        return _canonical(candidate) is not None
    left = _canonical(prior)
    return left is not None and left == _canonical(candidate)


def _shape_issue(remaining: list[Any], kind: str) -> ToolLedgerIssue | None:
    """§4.6 step 3 on a non-empty list of remaining candidates."""
    lanes = [classify_lane(candidate) for candidate in remaining]
    for candidate, lane in zip(remaining, lanes):
        if lane == CONFLICT:
            return ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, _id_of(candidate))
    if kind == "generic_append":
        for candidate in remaining:
            code = validate_generic_append(candidate)
            if code is not None:
                return ToolLedgerIssue(code, _id_of(candidate))
        return None
    shape = tuple(lanes)
    ok = shape in _ALLOWED_SHAPES[kind]
    if ok and kind == "t2_outcome":
        refs = remaining[0].get("refs")
        ok = isinstance(refs, dict) and "operationId" in refs
    if ok:
        return None
    # upstream: ``events[0]?.id ?? 'unknown'`` (core/src/tool-ledger-scanner.ts:569)
    first_id = _id_of(remaining[0])
    return ToolLedgerIssue(TRANSITION_SHAPE_CONFLICT, "unknown" if first_id is None else first_id)


def validate_transition(existing: Iterable[Any], candidates: Iterable[Any], kind: TransitionKind) -> TransitionResult:
    """§4.6. Returns ``ok`` (with the non-retry ``remaining`` candidates) or the refusal issue.

    ``kind`` must be one of ``TRANSITION_KINDS`` (anything else is a programming error:
    ``ValueError``). Never mutates its inputs.
    """
    if kind not in TRANSITION_KINDS:
        raise ValueError(f"unknown transition kind: {kind!r}")
    return TransitionState(existing).advance(candidates, kind)


class TransitionState:
    """The scanned state of an ``existing`` ledger that later transitions are validated against.

    Why: a writer that appends to the same invocation again and again (T1, T2, T1, …) would
    otherwise re-scan the whole ledger for every write, which makes an invocation quadratic.
    ``advance`` validates candidates exactly as :func:`validate_transition` does (that
    function *is* ``TransitionState(existing).advance(...)``) and, when they are accepted,
    feeds them into the state, so the state then describes ``existing + remaining``: a scan
    fed in consecutive pieces equals one scan of the whole (``LedgerScanner``).

    Pure and in-memory. After a refusal the state is spent (``usable`` is False): it may
    hold the refused candidates, so it must be discarded, never advanced again. Whoever
    keeps a state across writes must also make sure the ledger really grew by exactly the
    accepted ``remaining`` (the store checks this against durable rows).
    """

    __slots__ = ("_by_id", "_issue", "_scanner", "_spent", "count")

    def __init__(self, existing: Iterable[Any] = ()) -> None:
        existing = as_event_sequence(existing)
        scanner = LedgerScanner()
        scanner.feed(existing)
        self._scanner = scanner
        #: The first issue of the existing ledger (it refuses everything), or None.
        self._issue: ToolLedgerIssue | None = scanner.first_issue()
        # id → event, the last one winning (upstream's ``existingById``); an event without an id
        # is keyed by None (upstream: ``undefined``).
        self._by_id: dict[str | None, Any] = {}
        if self._issue is None:
            for event in existing:  # healthy ⇒ every entry is an object whose id is a string or absent
                self._by_id[event.get("id")] = event
        self._spent = False
        #: How many entries the state describes (existing plus every accepted ``remaining``).
        self.count = len(existing)

    @property
    def healthy(self) -> bool:
        """True when the described ledger scans clean."""
        return self._issue is None

    @property
    def usable(self) -> bool:
        """False after a refusal (see the class docstring)."""
        return not self._spent

    def advance(self, candidates: Iterable[Any], kind: TransitionKind) -> TransitionResult:
        """:func:`validate_transition` against the described ledger; on success the accepted
        ``remaining`` candidates become part of it."""
        if self._spent:
            raise RuntimeError("TransitionState used after a refusal")
        if kind not in TRANSITION_KINDS:
            raise ValueError(f"unknown transition kind: {kind!r}")
        candidates = as_event_sequence(candidates)

        # 1. A corrupt existing ledger refuses everything with its first issue.
        if self._issue is not None:
            return _refuse(self._issue)

        # 2. Exact retries are dropped; a different event under an existing id is refused.
        by_id = self._by_id
        remaining: list[Any] = []
        for candidate in candidates:
            candidate_id = candidate.get("id") if isinstance(candidate, dict) else None
            prior = by_id.get(candidate_id) if candidate_id is None or isinstance(candidate_id, str) else None
            if prior is None:
                remaining.append(candidate)
            elif not _same_event(prior, candidate):
                return _refuse(ToolLedgerIssue(DUPLICATE_EVENT_ID, candidate_id))
        if not remaining:
            return _OK_EMPTY  # existing is healthy and nothing new is written

        # 3. Shape of the remaining candidates.
        issue = _shape_issue(remaining, kind)
        if issue is not None:
            return _refuse(issue)

        # 4. The prospective ledger must scan clean: the existing part is clean, so the first
        # issue of the whole scan is the first one feeding ``remaining`` reports.
        scanner = self._scanner
        scanner.feed(remaining)
        issue = scanner.first_issue()
        if issue is not None:
            self._spent = True
            return _refuse(issue)
        for event in remaining:  # clean ⇒ objects whose id is a unique string or absent
            by_id[event.get("id")] = event
        self.count += len(remaining)
        return TransitionResult(True, None, tuple(remaining))


__all__ = ["TRANSITION_KINDS", "TransitionResult", "TransitionState", "validate_transition"]
