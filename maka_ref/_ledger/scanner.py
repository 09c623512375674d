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
        """Scan the next entries of the ledger (§4.3 steps 1–8 for each, in order)."""
        markers = self.markers
        operations = self._operations
        add_issue = self._issues.append
        seen = self._seen
        seen_add = seen.add
        by_call = self._by_call
        by_operation = self._by_operation
        spines = self._spines
        spine_conflict = self._spine_conflict
        lane_of = lane_of_parts
        str_ = str
        dict_ = dict

        for e in events:
            if not isinstance(e, dict_):
                add_issue(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, None))
                continue
            get = e.get
            eid = get("id")
            actions = get("actions")
            if (
                markers is not None
                and actions is not None
                and isinstance(actions, dict_)
                and "runtimeProtocol" in actions
            ):
                markers.append(eid if isinstance(eid, str_) else None)
            if eid is not None and not isinstance(eid, str_) or eid is None and "id" in e:
                add_issue(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, None))
                continue
            # Step 1: duplicate ids are skipped entirely (read side never dedups).
            if eid in seen:
                add_issue(ToolLedgerIssue(DUPLICATE_EVENT_ID, eid))
                continue
            seen_add(eid)
            inv = get("invocationId")
            sid = get("sessionId")
            rid = get("runId")
            tid = get("turnId")
            content = get("content")
            if (
                isinstance(inv, str_)
                and isinstance(sid, str_)
                and isinstance(rid, str_)
                and isinstance(tid, str_)
            ) or _absent_or_strings(e, inv, sid, rid, tid):
                # Step 2: the invocation's spine; the first recorded spine is kept.
                spine = spines.get(inv)
                if spine is None:
                    spines[inv] = (sid, rid, tid)
                elif spine != (sid, rid, tid):
                    add_issue(ToolLedgerIssue(INVOCATION_IDENTITY_CONFLICT, eid))
                    spine_conflict = True
                # Step 3: lane check.
                lane = lane_of(e, content, actions)
            else:
                lane = CONFLICT
            if lane is ORDINARY:  # lanes are the module's constants
                continue  # step 4 (partial) and ordinary events: nothing to group
            if lane is CONFLICT:
                add_issue(ToolLedgerIssue(SEMANTIC_LANE_CONFLICT, eid))
                continue
            calls = by_call.get(inv)
            if calls is None:
                calls = by_call[inv] = {}

            if lane is FUNCTION_CALL:
                # Step 5.
                call_id = content.get("id")
                name = content.get("name")
                op = calls.get(call_id)
                if op is None:
                    op = ScannedOperation(call_id, name, None, e)
                    calls[call_id] = op
                    operations.append(op)
                elif op.call_event is None:
                    op.call_event = e
                    if op.tool_name != name:
                        issue = ToolLedgerIssue(IDENTITY_CONFLICT, eid, op.operation_id or None, call_id)
                        add_issue(issue)
                        op.issues.append(issue)
                else:
                    issue = ToolLedgerIssue(DUPLICATE_CALL, eid, op.operation_id or None, call_id)
                    add_issue(issue)
                    op.issues.append(issue)
                continue

            if lane is TOOL_DISPATCH:
                # Step 6.
                t = actions["toolDispatch"]
                t_op = t.get("operationId")
                t_call = t.get("providerToolCallId")
                t_name = t.get("toolName")
                op = calls.get(t_call)
                if op is None:
                    op = ScannedOperation(t_call, t_name, t_op, None, e)
                    calls[t_call] = op
                    operations.append(op)
                    issue = ToolLedgerIssue(EVENT_ORDER_CONFLICT, eid, t_op, t_call)
                    add_issue(issue)
                    op.issues.append(issue)
                elif op.dispatch_event is not None:
                    issue = ToolLedgerIssue(DUPLICATE_DISPATCH, eid, t_op, t_call)
                    add_issue(issue)
                    op.issues.append(issue)
                    continue
                bound = by_operation.get(t_op)
                if bound is not None and bound is not op:
                    issue = ToolLedgerIssue(DUPLICATE_OPERATION, eid, t_op, t_call)
                    add_issue(issue)
                    bound.issues.append(issue)
                    op.issues.append(issue)
                    continue
                op.operation_id = t_op
                op.dispatch_event = e
                by_operation[t_op] = op
                refs = get("refs")  # the lane guarantees an object holding both keys
                call_event = op.call_event
                if (
                    op.tool_name != t_name
                    or refs["operationId"] != t_op
                    or refs["toolCallId"] != t_call
                    or (call_event is not None and spine_conflict and not _same_execution(call_event, e))
                ):
                    issue = ToolLedgerIssue(IDENTITY_CONFLICT, eid, t_op, t_call)
                    add_issue(issue)
                    op.issues.append(issue)
                if call_event is not None:
                    if _hash_of_call(call_event) != t.get("canonicalArgsHash"):
                        issue = ToolLedgerIssue(CANONICAL_ARGS_HASH_CONFLICT, eid, t_op, t_call)
                        add_issue(issue)
                        op.issues.append(issue)
                response = op.response_event
                if response is not None:
                    issue = ToolLedgerIssue(EVENT_ORDER_CONFLICT, eid, t_op, t_call)
                    add_issue(issue)
                    op.issues.append(issue)
                    rrefs = _refs_of(response)
                    if (
                        rrefs.get("operationId", _MISSING) != t_op
                        or rrefs.get("toolCallId", _MISSING) != t_call
                        or not _same_execution(e, response)
                    ):
                        issue = ToolLedgerIssue(IDENTITY_CONFLICT, response.get("id"), t_op, t_call)
                        add_issue(issue)
                        op.issues.append(issue)
                continue

            if lane is FUNCTION_RESPONSE:
                # Step 7.
                call_id = content.get("id")
                name = content.get("name")
                op = calls.get(call_id)
                if op is None:
                    op = ScannedOperation(call_id, name, None, None, None, e)
                    calls[call_id] = op
                    operations.append(op)
                    issue = ToolLedgerIssue(ORPHAN_RESPONSE, eid, None, call_id)
                    add_issue(issue)
                    op.issues.append(issue)
                    continue
                if op.response_event is not None:
                    issue = ToolLedgerIssue(DUPLICATE_RESPONSE, eid, op.operation_id or None, call_id)
                    add_issue(issue)
                    op.issues.append(issue)
                    continue
                op.response_event = e
                call_event = op.call_event
                bad = (
                    op.tool_name != name
                    or call_event is None
                    or (spine_conflict and not _same_execution(call_event, e))
                )
                if not bad and op.operation_id is not None:
                    refs = _refs_of(e)
                    bad = (
                        refs.get("operationId", _MISSING) != op.operation_id
                        or refs.get("toolCallId", _MISSING) != op.tool_call_id
                    )
                if bad:
                    issue = ToolLedgerIssue(IDENTITY_CONFLICT, eid, op.operation_id or None, call_id)
                    add_issue(issue)
                    op.issues.append(issue)
                continue

            # Step 8: reconcile_result / recovery_decision bind by payload.operationId.
            payload_op = actions["toolRecovery"]["payload"].get("operationId")
            op = by_operation.get(payload_op)
            if op is None:
                ref_call = _refs_of(e).get("toolCallId")
                add_issue(
                    ToolLedgerIssue(
                        EVENT_ORDER_CONFLICT,
                        eid,
                        payload_op,
                        ref_call if isinstance(ref_call, str) and ref_call else None,
                    )
                )
            elif lane is RECONCILE_RESULT:
                op.reconcile_events.append(e)
            else:
                op.decision_events.append(e)

        self._spine_conflict = spine_conflict


__all__ = ["LedgerScanner", "scan_tool_ledger"]
