"""Ledgers of the shapes real ledgers take beyond the spec's catalogue (``edge_ledgers``).

Why a generator of its own: the healthy strategy (:mod:`.ledgers`) keeps provider call ids
unique per invocation and every event in its own invocation, and the corruptions
(:mod:`.corruptions`) each apply one named edit to a healthy run. Real ledgers read from a
store that has lived through continuations, retries and provider quirks look different: a
provider reuses ``call_1`` in the next invocation, a response is committed under another
invocation than its call, one field of a call's identity drifts, a tool name is empty, an
operation id is dispatched twice with another name or hash. Compared with upstream, the
reference disagreed exactly on such shapes, and neither older generator produced them.

So identities here are drawn from *tiny pools* (two or three invocations, two call ids and
an empty one, three operation ids, a handful of tool names including ``""``), which makes
collisions the normal case; in half the ledgers the calls of an invocation get distinct call
ids instead (``call_1``, ``call_2``..., reused by the next invocation, as providers do) and
every operation its own id, so that healthy operations and valid recovery bundles survive for
the edits to act on. Then up to four *edge edits* (:data:`EDGE_FAMILIES`) move, rename, drift,
duplicate or reorder events. Every example records which families it used,
so a run can measure what it reached (``docs/fuzzing.md``). Events stay small and readable
(short ids, tiny args), which keeps shrunk failures legible.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing._strategies.constants import T1

__all__ = ["EDGE_FAMILIES", "EdgeLedger", "FATES", "ILL_TYPED_FAMILIES", "edge_ledgers"]

#: (sessionId, runId, turnId, invocationId) of the invocations a ledger may hold: a second
#: run of the same session (a continuation), another turn of the same run, another session.
_SPINES = (
    ("session-1", "run-1", "turn-1", "inv-1"),
    ("session-1", "run-2", "turn-2", "inv-2"),
    ("session-1", "run-1", "turn-2", "inv-3"),
    ("session-2", "run-3", "turn-3", "inv-4"),
)
_FIELDS = ("sessionId", "runId", "turnId", "invocationId")
#: Drift targets per identity field: a value of another spine, and one no spine has.
_DRIFT = {
    "sessionId": ("session-2", "session-x"),
    "runId": ("run-2", "run-x"),
    "turnId": ("turn-2", "turn-x"),
    "invocationId": ("inv-2", "inv-x"),
}
_CALL_IDS = ("call_1", "call_2", "")
_TOOL_NAMES = ("Write", "Read", "Bash", "exec", "", "write")
#: Tool names of the wrong JSON type: outside the contract's well-typed domain (see
#: :data:`ILL_TYPED_FAMILIES`), used only where any answer is acceptable.
_ODD_NAMES: tuple[Any, ...] = (7, None, ["Write"], {"name": "Write"}, True)
#: Keys an un-decoded event may lack (absent, never null): identity, lane and pairing fields.
_DROPPABLE = (("id",), ("invocationId",), ("sessionId",), ("runId",), ("turnId",), ("partial",), ("role",),
              ("author",), ("refs",), ("content", "id"), ("content", "name"), ("content", "args"),
              ("refs", "toolCallId"), ("refs", "operationId"), ("actions", "toolDispatch", "toolName"),
              ("actions", "toolDispatch", "operationId"), ("actions", "toolDispatch", "providerToolCallId"),
              ("actions", "toolRecovery", "payload", "operationId"))
_ARGS: tuple[Any, ...] = ({"path": "a.txt"}, {"path": "a.txt", "content": "x"}, {}, {"required": ["b", "a"]}, None)
_OP_IDS = ("op-1", "op-2", "op-3")
_DIGEST = "sha256:" + "a" * 64

#: What becomes of one tool call (before any edge edit).
FATES = ("t2", "t2_error", "t1_only", "unbound_pair", "call_only", "bundle_completed", "bundle_parked",
         "orphan_dispatch", "orphan_response")

#: The edge edits, each one family of real-ledger shapes (see the module docstring).
EDGE_FAMILIES = (
    "response_in_other_invocation",
    "dispatch_in_other_invocation",
    "response_in_other_run",
    "drift_sessionId",
    "drift_runId",
    "drift_turnId",
    "drift_invocationId",
    "duplicate_operation",
    "duplicate_operation_other_name",
    "duplicate_operation_other_hash",
    "dispatch_other_name",
    "dispatch_wrong_hash",
    "response_other_name",
    "reused_event_id",
    "repeated_event",
    "hidden_call",
    "hidden_response",
    "partial_tool_event",
    "late_marker",
    "invalid_marker",
    "swap_adjacent",
    "drop_event",
    "response_unbound",
    "response_refs_other_operation",
    "fact_other_operation",
    "terminal_before_tail",
    "missing_field",
)

#: Edits that leave the contract's domain: a field of the wrong JSON type (a tool name that is
#: a number, ``null``, a list...), or a recovery fact without its ``payload`` object. The
#: resolver and planners are compared on *well-typed* events (every field the spec names is
#: absent or has its JSON type, and a recovery fact has a payload object; ``docs/protocol.md``
#: §4.1); outside that domain any protocol-valid answer is acceptable, so these edits serve
#: robustness checks (never a crash, never a hang), not comparisons.
ILL_TYPED_FAMILIES = ("call_odd_name", "response_odd_name", "fact_without_payload")


@dataclass(frozen=True)
class EdgeLedger:
    """One generated ledger: its events (plain dicts), the call fates drawn and the edge
    families applied (in order). ``invocations`` is how many invocations it started with."""

    events: list[Any]
    fates: tuple[str, ...]
    families: tuple[str, ...]
    invocations: int
    marker: bool

    def __repr__(self) -> str:
        return (f"EdgeLedger(fates={list(self.fates)}, families={list(self.families)}, "
                f"{len(self.events)} events: {[_label(e) for e in self.events]})")


def _label(event: Any) -> str:
    if not isinstance(event, dict):
        return type(event).__name__
    content = event.get("content") if isinstance(event.get("content"), dict) else {}
    actions = event.get("actions") if isinstance(event.get("actions"), dict) else {}
    return f"{event.get('id')}:{content.get('kind') or next(iter(actions), None) or event.get('role')}@{event.get('invocationId')}"


@dataclass
class _Tool:
    """One tool call while the ledger is drawn: its identity and its events (if any)."""

    spine: tuple[str, str, str, str]
    call_id: str
    name: Any
    args: Any
    operation_id: str
    fate: str
    call: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    facts: tuple[dict[str, Any], ...] = ()


class _Draft:
    """The ledger being drawn: events in order, the tools, an event-id counter."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw
        self.events: list[Any] = []
        self.tools: list[_Tool] = []
        self.n = 0
        self.ts = 1

    def envelope(self, spine: tuple[str, str, str, str], role: str, author: str) -> dict[str, Any]:
        self.n += 1
        self.ts += 1
        session, run, turn, invocation = spine
        return {"id": f"e{self.n}", "invocationId": invocation, "runId": run, "sessionId": session, "turnId": turn,
                "ts": self.ts, "partial": False, "role": role, "author": author}

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event

    def pick(self, options: Any) -> Any:
        return self.draw(st.sampled_from(options))

    def index(self, n: int) -> int:
        return self.draw(st.integers(0, max(0, n - 1)))


def _user(d: _Draft, spine: tuple[str, str, str, str], marker: bool) -> dict[str, Any]:
    e = d.envelope(spine, "user", "user")
    e["content"] = {"kind": "text", "text": "do it"}
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def _call(d: _Draft, t: _Tool) -> dict[str, Any]:
    e = d.envelope(t.spine, "model", "agent")
    e["content"] = {"kind": "function_call", "id": t.call_id, "name": t.name, "args": copy.deepcopy(t.args)}
    if t.fate not in ("unbound_pair", "call_only"):
        e["refs"] = {"operationId": t.operation_id, "toolCallId": t.call_id}
    return e


def _hash(name: Any, args: Any) -> str:
    try:
        return canonical_args_hash(name, args)
    except Exception:  # noqa: BLE001 - an unhashable call (empty or odd name): any claim is wrong
        return "sha256:" + "0" * 64


def _dispatch(d: _Draft, t: _Tool, mode: str) -> dict[str, Any]:
    e = d.envelope(t.spine, "system", "system")
    e["id"] = f"{t.operation_id}_dispatch" if d.draw(st.booleans()) else e["id"]
    e["actions"] = {"toolDispatch": {"protocol": T1, "operationId": t.operation_id, "providerToolCallId": t.call_id,
                                     "toolName": t.name, "canonicalArgsHash": _hash(t.name, t.args),
                                     "recoveryMode": mode}}
    e["refs"] = {"operationId": t.operation_id, "toolCallId": t.call_id}
    return e


def _response(d: _Draft, t: _Tool, *, bound: bool, error: bool) -> dict[str, Any]:
    e = d.envelope(t.spine, "tool", "tool")
    e["content"] = {"kind": "function_response", "id": t.call_id, "name": t.name, "result": "failed" if error else "ok"}
    if error:
        e["content"]["isError"] = True
    if bound:
        e["refs"] = {"operationId": t.operation_id, "toolCallId": t.call_id}
    return e


def _fact(d: _Draft, t: _Tool, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = d.envelope(t.spine, "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": t.operation_id, "toolCallId": t.call_id}
    return e


def _bundle(d: _Draft, t: _Tool, completed: bool) -> None:
    assert t.call is not None and t.dispatch is not None
    observation = "matches_expected_state" if completed else d.pick(("matches_prior_state", "diverged", "unreadable"))
    reconcile = d.add(_fact(d, t, "maka.tool.reconcile_result", {
        "protocol": "tool_reconcile_v1", "operationId": t.operation_id, "observation": observation,
        "observationSchema": "state_identity_v1", "observationDigest": _DIGEST}))
    evidence = [t.call["id"], t.dispatch["id"], reconcile["id"]]
    if completed:
        outcome = t.response = d.add(_response(d, t, bound=True, error=False))
        payload = {"protocol": "tool_recovery_v1", "operationId": t.operation_id, "disposition": "completed",
                   "reasonCode": "reconcile_matches_expected_state", "outcomeEventId": outcome["id"],
                   "evidenceEventIds": evidence + [outcome["id"]]}
    else:
        payload = {"protocol": "tool_recovery_v1", "operationId": t.operation_id, "disposition": "parked",
                   "reasonCode": "reconcile_" + observation,
                   "evidenceEventIds": evidence}
    decision = d.add(_fact(d, t, "maka.tool.recovery_decision", payload))
    t.facts = (reconcile, decision)


def _tool_events(d: _Draft, t: _Tool) -> None:
    """The events of one tool call, in commit order, for its fate."""
    if t.fate == "orphan_response":
        t.response = d.add(_response(d, t, bound=False, error=False))
        return
    if t.fate != "orphan_dispatch":
        t.call = d.add(_call(d, t))
    if t.fate in ("call_only",):
        return
    if t.fate == "unbound_pair":
        t.response = d.add(_response(d, t, bound=False, error=d.draw(st.booleans())))
        return
    mode = "reconcile" if t.fate.startswith("bundle") else d.pick(("reconcile", "never_auto_retry", "replay_safe"))
    t.dispatch = d.add(_dispatch(d, t, mode))
    if t.fate in ("t2", "t2_error"):
        t.response = d.add(_response(d, t, bound=True, error=t.fate == "t2_error"))
    elif t.fate.startswith("bundle"):
        _bundle(d, t, t.fate == "bundle_completed")


# ---------------------------------------------------------------------------------------------
# Edge edits: each takes the draft and returns True when it changed something.
# ---------------------------------------------------------------------------------------------


def _tools_with(d: _Draft, attr: str) -> list[_Tool]:
    return [t for t in d.tools if getattr(t, attr) is not None]


def _move(event: dict[str, Any], spine: tuple[str, str, str, str]) -> None:
    for key, value in zip(_FIELDS, spine):
        event[key] = value


def _other_spine(d: _Draft, spine: tuple[str, str, str, str], same_run: bool | None = None) -> tuple[str, str, str, str]:
    options = [s for s in _SPINES if s != spine and (same_run is None or (s[1] == spine[1]) == same_run)]
    return d.pick(options) if options else _SPINES[0]


def _set_operation(t_events: list[dict[str, Any]], old: str, new: str) -> None:
    for e in t_events:
        refs = e.get("refs")
        if isinstance(refs, dict) and refs.get("operationId") == old:
            refs["operationId"] = new
        dispatch = (e.get("actions") or {}).get("toolDispatch")
        if isinstance(dispatch, dict):
            dispatch["operationId"] = new
        fact = (e.get("actions") or {}).get("toolRecovery")
        if isinstance(fact, dict) and isinstance(fact.get("payload"), dict):
            fact["payload"]["operationId"] = new


def _has_path(event: Any, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(event, dict) or key not in event:
            return False
        event = event[key]
    return True


def _edit(d: _Draft, family: str) -> bool:  # noqa: C901 - one branch per family reads best
    pick_tool = lambda ts: ts[d.index(len(ts))] if ts else None  # noqa: E731
    if family in ("response_in_other_invocation", "response_in_other_run"):
        t = pick_tool(_tools_with(d, "response"))
        if t is None:
            return False
        _move(t.response, _other_spine(d, t.spine, same_run=None if family.endswith("invocation") else False))
        return True
    if family == "dispatch_in_other_invocation":
        t = pick_tool(_tools_with(d, "dispatch"))
        if t is None:
            return False
        _move(t.dispatch, _other_spine(d, t.spine))
        return True
    if family.startswith("drift_"):
        field = family[len("drift_"):]
        candidates = [e for t in d.tools for e in (t.call, t.dispatch, t.response, *t.facts) if e is not None]
        if not candidates:
            return False
        event = candidates[d.index(len(candidates))]
        event[field] = d.pick(tuple(v for v in _DRIFT[field] if v != event.get(field)))
        return True
    if family.startswith("duplicate_operation"):
        dispatched = _tools_with(d, "dispatch")
        if len(dispatched) < 2:
            return False
        first, second = dispatched[0], dispatched[1 + d.index(len(dispatched) - 1)]
        events = [e for e in (second.call, second.dispatch, second.response, *second.facts) if e is not None]
        _set_operation(events, second.operation_id, first.operation_id)
        tool_dispatch = second.dispatch["actions"]["toolDispatch"]
        if family.endswith("other_name"):
            tool_dispatch["toolName"] = first.name if first.name != second.name else "Other"
        elif family.endswith("other_hash"):
            tool_dispatch["canonicalArgsHash"] = first.dispatch["actions"]["toolDispatch"]["canonicalArgsHash"]
        second.operation_id = first.operation_id
        return True
    if family in ("dispatch_other_name", "dispatch_wrong_hash"):
        t = pick_tool(_tools_with(d, "dispatch"))
        if t is None:
            return False
        tool_dispatch = t.dispatch["actions"]["toolDispatch"]
        if family == "dispatch_other_name":
            tool_dispatch["toolName"] = d.pick(tuple(n for n in _TOOL_NAMES if n != tool_dispatch.get("toolName")))
        else:
            tool_dispatch["canonicalArgsHash"] = _DIGEST
        return True
    if family in ("response_other_name", "response_odd_name"):
        t = pick_tool(_tools_with(d, "response"))
        if t is None:
            return False
        pool = _TOOL_NAMES if family == "response_other_name" else _ODD_NAMES
        t.response["content"]["name"] = d.pick(tuple(n for n in pool if n != t.response["content"].get("name")))
        return True
    if family == "fact_without_payload":
        t = pick_tool([t for t in d.tools if t.facts])
        if t is None:
            return False
        return t.facts[d.index(len(t.facts))]["actions"]["toolRecovery"].pop("payload", None) is not None
    if family == "call_odd_name":
        t = pick_tool(_tools_with(d, "call"))
        if t is None:
            return False
        t.call["content"]["name"] = d.pick(_ODD_NAMES)
        return True
    if family == "reused_event_id":
        if len(d.events) < 2:
            return False
        i = d.index(len(d.events) - 1)
        j = i + 1 + d.index(len(d.events) - i - 1)
        if "id" in d.events[i]:
            d.events[j]["id"] = d.events[i]["id"]
        else:
            d.events[j].pop("id", None)
        return True
    if family == "repeated_event":
        if not d.events:
            return False
        i = d.index(len(d.events))
        d.events.insert(i + 1 + d.index(len(d.events) - i), copy.deepcopy(d.events[i]))
        return True
    if family in ("hidden_call", "hidden_response"):
        t = pick_tool(_tools_with(d, "call" if family == "hidden_call" else "response"))
        if t is None:
            return False
        event = t.call if family == "hidden_call" else t.response
        event["modelVisibility"] = "hidden"
        if d.draw(st.booleans()):
            event["origin"] = "code_mode"
        return True
    if family == "partial_tool_event":
        candidates = [e for t in d.tools for e in (t.call, t.dispatch, t.response) if e is not None]
        if not candidates:
            return False
        candidates[d.index(len(candidates))]["partial"] = True
        return True
    if family in ("late_marker", "invalid_marker"):
        if not d.events:
            return False
        if family == "late_marker":
            if len(d.events) < 2:
                return False
            target = d.events[1 + d.index(len(d.events) - 1)]
            value: Any = T1
        else:
            target, value = d.events[0], d.pick(("future_protocol", "", 1))
        actions = target.setdefault("actions", {})
        if isinstance(actions, dict):
            actions["runtimeProtocol"] = {"toolBoundary": value}
        return True
    if family == "swap_adjacent":
        if len(d.events) < 2:
            return False
        i = d.index(len(d.events) - 1)
        d.events[i], d.events[i + 1] = d.events[i + 1], d.events[i]
        return True
    if family == "drop_event":
        if len(d.events) < 2:
            return False
        del d.events[d.index(len(d.events))]
        return True
    if family in ("response_unbound", "response_refs_other_operation"):
        t = pick_tool([t for t in _tools_with(d, "response") if t.dispatch is not None])
        if t is None:
            return False
        if family == "response_unbound":
            t.response.pop("refs", None)
        else:
            t.response["refs"] = {"operationId": d.pick(tuple(o for o in _OP_IDS if o != t.operation_id)),
                                  "toolCallId": t.call_id}
        return True
    if family == "fact_other_operation":
        t = pick_tool([t for t in d.tools if t.facts])
        if t is None:
            return False
        payload = t.facts[d.index(len(t.facts))]["actions"]["toolRecovery"].get("payload")
        if not isinstance(payload, dict):
            return False
        payload["operationId"] = d.pick(tuple(o for o in _OP_IDS if o != t.operation_id))
        return True
    if family == "missing_field":
        if not d.events:
            return False
        event = d.events[d.index(len(d.events))]
        paths = [p for p in _DROPPABLE if _has_path(event, p)]
        if not paths:
            return False
        path = paths[d.index(len(paths))]
        parent = event
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        return True
    if family == "terminal_before_tail":
        if len(d.events) < 2:
            return False
        first = d.events[0]
        e = d.envelope(tuple(first.get(f, "") for f in _FIELDS), "system", "system")  # type: ignore[arg-type]
        for field in _FIELDS:  # the first event's identity, absent keys included
            if field not in first:
                del e[field]
        e["status"] = d.pick(("completed", "failed", "cancelled"))
        e["actions"] = {"endInvocation": True}
        d.events.insert(1 + d.index(len(d.events) - 1), e)
        return True
    raise ValueError(f"unknown edge family {family!r}")


@st.composite
def edge_ledgers(draw: Callable[[Any], Any], *, max_tools: int = 4, max_edits: int = 4,
                 ill_typed: bool = False) -> EdgeLedger:
    """A ledger of 1–3 invocations whose identities collide (see the module docstring), with
    up to ``max_edits`` edge edits applied, as an :class:`EdgeLedger`. With ``ill_typed``
    the edits may also give fields the wrong JSON type (:data:`ILL_TYPED_FAMILIES`)."""
    d = _Draft(draw)
    marker = draw(st.booleans())
    # Half the ledgers draw call and operation ids from the tiny pools (collisions everywhere);
    # the others give each call of an invocation its own call id (``call_1``, ``call_2``...,
    # reused by the next invocation, as providers do) and each operation its own id, so that
    # healthy operations, valid bundles and T2 responses survive for the edits to act on.
    distinct = draw(st.booleans())
    n_invocations = draw(st.integers(1, 3))
    spines = [_SPINES[0]] + draw(st.lists(st.sampled_from(_SPINES[1:]), min_size=n_invocations - 1,
                                          max_size=n_invocations - 1, unique=True))
    fates: list[str] = []
    for index, spine in enumerate(spines):
        d.add(_user(d, spine, marker and index == 0))
        for position in range(draw(st.integers(0 if index else 1, max_tools))):
            fate = draw(st.sampled_from(FATES))
            name = draw(st.sampled_from(_TOOL_NAMES))
            if distinct:
                call_id, operation_id = f"call_{position + 1}", f"op-{len(d.tools) + 1}"
            else:
                call_id, operation_id = draw(st.sampled_from(_CALL_IDS)), draw(st.sampled_from(_OP_IDS))
            tool = _Tool(spine, call_id, name, draw(st.sampled_from(_ARGS)), operation_id, fate)
            d.tools.append(tool)
            fates.append(fate)
            _tool_events(d, tool)
        if draw(st.integers(0, 3)) == 0:
            model = d.add(d.envelope(spine, "model", "agent"))
            model["content"] = {"kind": "text", "text": "done"}
    families = []
    families_pool = EDGE_FAMILIES + ILL_TYPED_FAMILIES if ill_typed else EDGE_FAMILIES
    for family in draw(st.lists(st.sampled_from(families_pool), max_size=max_edits)):
        if _edit(d, family):
            families.append(family)
    return EdgeLedger(d.events, tuple(fates), tuple(families), n_invocations, marker)
