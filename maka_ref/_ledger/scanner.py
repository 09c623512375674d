"""The tool-ledger scanner (spec 10 §4.3–§4.5).

What: one pass over events in physical order that groups tool facts into *operations* and
reports every duplicate / order / identity problem as an issue, in the exact emission order
of §4.5. Tool calls are keyed by the tuple ``(invocationId, toolCallId)``; operations are
keyed by ``operationId`` alone (store-wide); event ids are global.

Why: it is the single interpreter of these rules. The resolver, the write-side transition
validator and projection rebuild all consume its result; none may rebuild its maps.

Domain: on well-typed events (every field absent or of its JSON type) the scan is upstream's
``scanToolLedger`` exactly, an absent key reading as JavaScript ``undefined`` (``None`` here:
a present ``null`` is ill-typed, so the two never meet): an event without an id is scanned
under "no id" (a second one is a ``duplicate_event_id`` without ``eventId``), a call without
``content.id`` is keyed by "no call id", and so on. Outside the domain (not a JSON object, an
ill-typed identity or tool field) the entry is reported as a global ``semantic_lane_conflict``
(``eventId`` = the id when it is a string, else absent) and otherwise skipped: the spec
leaves that answer free, and this one fails closed. Never raises, never mutates its input.
See ``docs/choices/ledger.md``.

Depends on: ``_ledger.lanes``, ``_ledger.results``, ``_codec.argshash.canonical_args_hash``.
"""

from __future__ import annotations

from typing import Any, Iterable

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._ledger.lanes import (
    CONFLICT,
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    ORDINARY,
    RECONCILE_RESULT,
    TOOL_DISPATCH,
    lane_of_parts,
)
from maka_ref._ledger.results import ScannedOperation, ToolLedgerIssue, ToolLedgerScan

DUPLICATE_EVENT_ID = "duplicate_event_id"
INVOCATION_IDENTITY_CONFLICT = "invocation_identity_conflict"
SEMANTIC_LANE_CONFLICT = "semantic_lane_conflict"
DUPLICATE_CALL = "duplicate_call"
DUPLICATE_OPERATION = "duplicate_operation"
DUPLICATE_DISPATCH = "duplicate_dispatch"
DUPLICATE_RESPONSE = "duplicate_response"
ORPHAN_RESPONSE = "orphan_response"
CANONICAL_ARGS_HASH_CONFLICT = "canonical_args_hash_conflict"
IDENTITY_CONFLICT = "identity_conflict"
EVENT_ORDER_CONFLICT = "event_order_conflict"

_MISSING = object()


def as_event_sequence(events: Any) -> list[Any] | tuple[Any, ...]:
    """``events`` as a list/tuple without copying when it already is one (internal helper).

    Anything that is not an iterable of entries (``None``, a number, a ``str``/``bytes``,
    a single mapping) becomes a ledger of one uninterpretable entry, so the caller fails
    closed instead of raising or guessing.
    """
    if isinstance(events, (list, tuple)):
        return events
    if events is None or isinstance(events, (str, bytes, bytearray, dict)):
        return (_UNINTERPRETABLE,)
    try:
        return list(events)
    except Exception:  # not iterable, or iteration failed
        return (_UNINTERPRETABLE,)


class _Uninterpretable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<uninterpretable ledger input>"


_UNINTERPRETABLE = _Uninterpretable()


def _same_execution(first: dict | None, second: dict) -> bool:
    """``(sessionId, invocationId, runId, turnId)`` equal; ``first`` absent → False."""
    if first is None:
        return False
    get1 = first.get
    get2 = second.get
    return (
        get1("sessionId") == get2("sessionId")
        and get1("invocationId") == get2("invocationId")
        and get1("runId") == get2("runId")
        and get1("turnId") == get2("turnId")
    )


def _absent_or_strings(event: dict, *values: Any) -> bool:
    """The identity fields are each a string or absent (``None`` for an absent key; a present
    ``null`` or any other type is outside the well-typed domain)."""
    for key, value in zip(("invocationId", "sessionId", "runId", "turnId"), values):
        if value is None:
            if key in event:
                return False
        elif not isinstance(value, str):
            return False
    return True


def _refs_of(event: dict) -> dict:
    refs = event.get("refs")
    return refs if isinstance(refs, dict) else {}


def _hash_of_call(call_event: dict) -> str | None:
    content = call_event.get("content")
    if not isinstance(content, dict):
        return None
    args = content.get("args", _MISSING)
    if args is _MISSING:
        return None
    try:
        return canonical_args_hash(content.get("name"), args)
    except Exception:  # §4.3 step 6: "if that throws" → conflict (never a crash)
        return None


def scan_tool_ledger(events: Iterable[Any]) -> ToolLedgerScan:
    """Scan ``events`` in physical order (§4.3). Never raises; never mutates ``events``."""
    scanner = LedgerScanner()
    scanner.feed(as_event_sequence(events))
    return scanner.result()


class LedgerScanner:
    """``scan_tool_ledger`` in pieces (internal): ``feed`` the ledger in order, then ``result``.

    Feeding the ledger in consecutive pieces gives exactly the result of one scan of the whole
    ledger; it lets the ResumePlan builder run its own pass over each piece while the piece's
    events are still in the CPU cache (``_plan.resume_plan``).

    ``markers``: when a list, the id (``""`` when it is not a string) of every ``dict`` entry
    whose ``actions`` is an object holding ``runtimeProtocol`` is appended to it, in order: the
    resolver's marker rule (spec 10 §6.2 steps 1–2) reads the same field of every event, so it
    rides on this pass instead of making one of its own.

    Same-execution checks: every event attached to an operation has string identity fields
    and shares the operation's ``invocationId`` (operations are keyed by it), and each such
    event either matches its invocation's first spine or was reported as
    ``invocation_identity_conflict``. So while no such conflict has been reported, any two
    attached events are the same execution and ``_same_execution`` need not be asked.
    """

    __slots__ = (
        "_by_call",
        "_by_operation",
        "_issues",
        "_operations",
        "_seen",
        "_spine_conflict",
        "_spines",
        "markers",
    )

    def __init__(self, markers: list[str] | None = None) -> None:
        self.markers = markers
        self._operations: list[ScannedOperation] = []
        self._issues: list[ToolLedgerIssue] = []
        self._seen: set[str] = set()
        # Tool calls are keyed by (invocationId, call id): invocation -> call id -> operation.
        self._by_call: dict[str, dict[str, ScannedOperation]] = {}
        self._by_operation: dict[str, ScannedOperation] = {}
        self._spines: dict[str, tuple[str, str, str]] = {}
        self._spine_conflict = False  # an invocation_identity_conflict was reported (see above)

    def result(self) -> ToolLedgerScan:
        return ToolLedgerScan(tuple(self._operations), tuple(self._issues))

    def first_issue(self) -> ToolLedgerIssue | None:
        """The first issue reported so far, without copying the operations (``result`` does)."""
        issues = self._issues
        return issues[0] if issues else None

    def feed(self, events: Iterable[Any]) -> None:
        """Scan the next entries of the ledger: §4.3 steps 1–8 for each entry, in order.

        Each entry is first *admitted* (an object with a usable id, not seen before, on its
        invocation's spine, on a lane); an ordinary event stops there. A tool fact is then
        grouped by its lane: the call (step 5), the dispatch (step 6), the response (step 7),
        or a recovery fact (step 8).
        """
        admit = self._admit
        for e in events:
            lane = admit(e)
            if lane is ORDINARY or lane is None:
                continue
            calls = self._calls_of(e.get("invocationId"))
            if lane is FUNCTION_CALL:
                self._group_call(e, calls)
            elif lane is TOOL_DISPATCH:
                self._group_dispatch(e, calls)
            elif lane is FUNCTION_RESPONSE:
                self._group_response(e, calls)
            else:
                self._bind_recovery_fact(e, lane)

    # -- admission: steps 1-4 --------------------------------------------------------------
    def _admit(self, e: Any) -> str | None:
        """Steps 1–4 for one entry (1: a new id; 2: the invocation's spine; 3–4: the lane): the lane of a tool fact, ``ORDINARY`` for an event with
        nothing to group, ``None`` for an entry that was reported and is skipped.

        Outside the well-typed domain (not an object, an ill-typed id) the entry is a global
        ``semantic_lane_conflict``. The resolver's marker rule rides on this read of
        ``actions`` (see the class docstring)."""
        if not isinstance(e, dict):
            self._issues.append(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, None))
            return None
        get = e.get
        eid = get("id")
        actions = get("actions")
        markers = self.markers
        if markers is not None and actions is not None and isinstance(actions, dict) and "runtimeProtocol" in actions:
            markers.append(eid if isinstance(eid, str) else None)
        if eid is not None and not isinstance(eid, str) or eid is None and "id" in e:
            self._issues.append(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, None))
            return None
        # Step 1: duplicate ids are skipped entirely (read side never dedups).
        seen = self._seen
        if eid in seen:
            self._issues.append(ToolLedgerIssue(DUPLICATE_EVENT_ID, eid))
            return None
        seen.add(eid)
        inv = get("invocationId")
        sid = get("sessionId")
        rid = get("runId")
        tid = get("turnId")
        if (
            isinstance(inv, str) and isinstance(sid, str) and isinstance(rid, str) and isinstance(tid, str)
        ) or _absent_or_strings(e, inv, sid, rid, tid):
            # Step 2: the invocation's spine; the first recorded spine is kept.
            spine = self._spines.get(inv)
            if spine is None:
                self._spines[inv] = (sid, rid, tid)
            elif spine != (sid, rid, tid):
                self._issues.append(ToolLedgerIssue(INVOCATION_IDENTITY_CONFLICT, eid))
                self._spine_conflict = True
            # Step 3: the lane (step 4, partial events, is part of it: they are ordinary).
            lane = lane_of_parts(e, get("content"), actions)
        else:
            lane = CONFLICT
        if lane is CONFLICT:
            self._issues.append(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, eid))
            return None
        return lane

    def _calls_of(self, inv: Any) -> dict[Any, ScannedOperation]:
        """The invocation's tool calls by provider call id (calls are keyed by the pair)."""
        calls = self._by_call.get(inv)
        if calls is None:
            calls = self._by_call[inv] = {}
        return calls

    def _report(self, op: ScannedOperation, code: str, eid: Any, operation_id: Any, call_id: Any) -> None:
        """One issue, in the scan's list and on the operation it concerns."""
        issue = ToolLedgerIssue(code, eid, operation_id, call_id)
        self._issues.append(issue)
        op.issues.append(issue)

    # -- grouping: steps 5-8 ---------------------------------------------------------------
    def _group_call(self, e: dict, calls: dict[Any, ScannedOperation]) -> None:
        """Step 5: a function_call opens its operation, or completes one its dispatch opened."""
        content = e["content"]
        call_id = content.get("id")
        name = content.get("name")
        op = calls.get(call_id)
        if op is None:
            op = ScannedOperation(call_id, name, None, e)
            calls[call_id] = op
            self._operations.append(op)
        elif op.call_event is None:
            op.call_event = e
            if op.tool_name != name:
                self._report(op, IDENTITY_CONFLICT, e.get("id"), op.operation_id or None, call_id)
        else:
            self._report(op, DUPLICATE_CALL, e.get("id"), op.operation_id or None, call_id)

    def _group_dispatch(self, e: dict, calls: dict[Any, ScannedOperation]) -> None:
        """Step 6: a tool dispatch binds its operation id to the call and checks it against
        the call (name, refs, same execution, args hash) and against an earlier response."""
        eid = e.get("id")
        t = e["actions"]["toolDispatch"]
        t_op = t.get("operationId")
        t_call = t.get("providerToolCallId")
        t_name = t.get("toolName")
        op = calls.get(t_call)
        if op is None:
            op = ScannedOperation(t_call, t_name, t_op, None, e)
            calls[t_call] = op
            self._operations.append(op)
            self._report(op, EVENT_ORDER_CONFLICT, eid, t_op, t_call)
        elif op.dispatch_event is not None:
            self._report(op, DUPLICATE_DISPATCH, eid, t_op, t_call)
            return
        bound = self._by_operation.get(t_op)
        if bound is not None and bound is not op:
            issue = ToolLedgerIssue(DUPLICATE_OPERATION, eid, t_op, t_call)
            self._issues.append(issue)
            bound.issues.append(issue)
            op.issues.append(issue)
            return
        op.operation_id = t_op
        op.dispatch_event = e
        self._by_operation[t_op] = op
        refs = e["refs"]  # the lane guarantees an object holding both keys
        call_event = op.call_event
        if (
            op.tool_name != t_name
            or refs["operationId"] != t_op
            or refs["toolCallId"] != t_call
            or (call_event is not None and self._spine_conflict and not _same_execution(call_event, e))
        ):
            self._report(op, IDENTITY_CONFLICT, eid, t_op, t_call)
        if call_event is not None and _hash_of_call(call_event) != t.get("canonicalArgsHash"):
            self._report(op, CANONICAL_ARGS_HASH_CONFLICT, eid, t_op, t_call)
        response = op.response_event
        if response is not None:
            self._report(op, EVENT_ORDER_CONFLICT, eid, t_op, t_call)
            rrefs = _refs_of(response)
            if (
                rrefs.get("operationId", _MISSING) != t_op
                or rrefs.get("toolCallId", _MISSING) != t_call
                or not _same_execution(e, response)
            ):
                self._report(op, IDENTITY_CONFLICT, response.get("id"), t_op, t_call)

    def _group_response(self, e: dict, calls: dict[Any, ScannedOperation]) -> None:
        """Step 7: a function_response settles its call's operation (or is an orphan) and
        must match the call's name, execution and, once dispatched, the operation refs."""
        eid = e.get("id")
        content = e["content"]
        call_id = content.get("id")
        name = content.get("name")
        op = calls.get(call_id)
        if op is None:
            op = ScannedOperation(call_id, name, None, None, None, e)
            calls[call_id] = op
            self._operations.append(op)
            self._report(op, ORPHAN_RESPONSE, eid, None, call_id)
            return
        if op.response_event is not None:
            self._report(op, DUPLICATE_RESPONSE, eid, op.operation_id or None, call_id)
            return
        op.response_event = e
        call_event = op.call_event
        bad = (
            op.tool_name != name
            or call_event is None
            or (self._spine_conflict and not _same_execution(call_event, e))
        )
        if not bad and op.operation_id is not None:
            refs = _refs_of(e)
            bad = (
                refs.get("operationId", _MISSING) != op.operation_id
                or refs.get("toolCallId", _MISSING) != op.tool_call_id
            )
        if bad:
            self._report(op, IDENTITY_CONFLICT, eid, op.operation_id or None, call_id)

    def _bind_recovery_fact(self, e: dict, lane: str) -> None:
        """Step 8: a reconcile_result or recovery_decision binds by ``payload.operationId``
        to an operation already dispatched; otherwise it is out of order."""
        payload_op = e["actions"]["toolRecovery"]["payload"].get("operationId")
        op = self._by_operation.get(payload_op)
        if op is None:
            ref_call = _refs_of(e).get("toolCallId")
            self._issues.append(
                ToolLedgerIssue(
                    EVENT_ORDER_CONFLICT, e.get("id"), payload_op,
                    ref_call if isinstance(ref_call, str) and ref_call else None,
                )
            )
        elif lane is RECONCILE_RESULT:
            op.reconcile_events.append(e)
        else:
            op.decision_events.append(e)


__all__ = ["LedgerScanner", "scan_tool_ledger"]
