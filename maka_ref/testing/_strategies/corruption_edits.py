"""How each named corruption edits a healthy ledger's events, and the witness it yields.

One function, ``_apply``, with a branch per name of ``CORRUPTIONS``; kept apart from the
catalogue (:mod:`maka_ref.testing._strategies.corruptions`) because it is most of the code.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing._strategies.constants import T1
from maka_ref.testing._strategies.ledger_model import Ledger, OperationTruth


def _lane_of(e: dict[str, Any]) -> str:
    content = e.get("content") or {}
    actions = e.get("actions") or {}
    if content.get("kind") == "function_call":
        return "function_call"
    if content.get("kind") == "function_response":
        return "function_response"
    if "toolDispatch" in actions:
        return "tool_dispatch"
    if "toolRecovery" in actions:
        return "recovery"
    return "ordinary"


def _find(events: list[dict[str, Any]], event_id: str) -> int:
    return next(i for i, e in enumerate(events) if e["id"] == event_id)


def _fresh_id(events: Iterable[dict[str, Any]], base: str) -> str:
    used = {e["id"] for e in events}
    candidate = base
    n = 1
    while candidate in used:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _apply(draw: Callable[[Any], Any], ledger: Ledger, name: str) -> tuple[list[dict[str, Any]], str, tuple[str, str, str]]:
    ev = ledger.event_list()
    ops = ledger.operations

    def pick_op(pred: Callable[[OperationTruth], bool]) -> OperationTruth:
        return draw(st.sampled_from([op for op in ops if pred(op)]))

    def move_before(event_id: str, anchor_id: str) -> tuple[dict[str, Any], int]:
        """Move ``event_id`` to a drawn index at or before ``anchor_id``'s (taken once
        ``event_id`` is out of the list), i.e. somewhere before the anchor."""
        moved = ev.pop(_find(ev, event_id))
        j = draw(st.integers(0, _find(ev, anchor_id)))
        ev.insert(j, moved)
        return moved, j

    if name == "duplicate_event":
        i = draw(st.integers(0, len(ev) - 1))
        j = draw(st.integers(0, len(ev)))
        ev.insert(j, copy.deepcopy(ev[i]))
        return ev, f"copy of {ev[i if j > i else i + 1]['id']} inserted at {j}", ("issue", "duplicate_event_id", ev[j]["id"])

    if name == "reorder_dispatch_before_call":
        op = pick_op(lambda o: o.has_dispatch)
        d, j = move_before(op.dispatch_event_id, op.call_event_id)  # type: ignore[arg-type]
        return ev, f"{d['id']} moved to {j}", ("issue", "event_order_conflict", d["id"])

    if name == "reorder_response_before_call":
        op = pick_op(lambda o: o.has_response)
        r, j = move_before(op.response_event_id, op.call_event_id)  # type: ignore[arg-type]
        return ev, f"{r['id']} moved to {j}", ("issue", "orphan_response", r["id"])

    if name == "reorder_response_before_dispatch":
        op = pick_op(lambda o: o.has_response and o.has_dispatch)
        r = ev.pop(_find(ev, op.response_event_id))  # type: ignore[arg-type]
        c = _find(ev, op.call_event_id)
        d = _find(ev, op.dispatch_event_id)  # type: ignore[arg-type]
        j = draw(st.integers(c + 1, d))
        ev.insert(j, r)
        return ev, f"{r['id']} moved between call and dispatch", ("issue", "event_order_conflict", op.dispatch_event_id)  # type: ignore[return-value]

    if name == "reorder_reconcile_before_dispatch":
        op = pick_op(lambda o: o.bundle is not None)
        rc, j = move_before(op.reconcile_event_id, op.dispatch_event_id)  # type: ignore[arg-type]
        return ev, f"{rc['id']} moved to {j}", ("issue", "event_order_conflict", rc["id"])

    if name == "drop_call":
        op = pick_op(lambda o: o.has_dispatch or o.has_response)
        ev.pop(_find(ev, op.call_event_id))
        if op.has_dispatch:
            return ev, f"dropped call {op.call_event_id}", ("issue", "event_order_conflict", op.dispatch_event_id)  # type: ignore[return-value]
        return ev, f"dropped call {op.call_event_id}", ("issue", "orphan_response", op.response_event_id)  # type: ignore[return-value]

    if name == "drop_dispatch_of_bundle":
        op = pick_op(lambda o: o.bundle is not None)
        ev.pop(_find(ev, op.dispatch_event_id))  # type: ignore[arg-type]
        return ev, f"dropped dispatch {op.dispatch_event_id}", ("issue", "event_order_conflict", op.reconcile_event_id)  # type: ignore[return-value]

    if name == "drop_bundle_event":
        op = pick_op(lambda o: o.bundle is not None)
        victims = [op.reconcile_event_id, op.decision_event_id] + ([op.outcome_event_id] if op.outcome_event_id else [])
        victim = draw(st.sampled_from(victims))
        ev.pop(_find(ev, victim))  # type: ignore[arg-type]
        return ev, f"dropped bundle event {victim}", ("decision", "recovery_fact_corruption", op.call_event_id)

    if name == "identity_drift":
        counts: dict[str, list[int]] = {}
        for i, e in enumerate(ev):
            counts.setdefault(e["invocationId"], []).append(i)
        inv = draw(st.sampled_from(sorted(k for k, v in counts.items() if len(v) >= 2)))
        positions = counts[inv]
        k = draw(st.integers(0, len(positions) - 1))
        i = positions[k]
        key = draw(st.sampled_from(("runId", "turnId", "sessionId")))
        ev[i][key] = ev[i][key] + "-drifted"
        # The first event of the invocation fixes its spine; the first disagreeing one is flagged.
        flagged = ev[positions[1]]["id"] if k == 0 else ev[i]["id"]
        return ev, f"{key} of {ev[i]['id']} changed", ("issue", "invocation_identity_conflict", flagged)

    if name == "misplaced_marker":
        i = draw(st.integers(1, len(ev) - 1))
        actions = ev[i].setdefault("actions", {})
        actions["runtimeProtocol"] = {"toolBoundary": T1}
        return ev, f"marker added to event {i}", ("issue", "protocol_marker_invalid", ev[i]["id"])

    if name == "invalid_marker":
        value = draw(st.sampled_from(("future_protocol", "t1_after_preflight_v2", "T1_AFTER_PREFLIGHT_V1", "", " t1_after_preflight_v1")))
        ev[0].setdefault("actions", {})["runtimeProtocol"] = {"toolBoundary": value}
        return ev, f"first event marker = {value!r}", ("issue", "protocol_marker_invalid", ev[0]["id"])

    if name == "flipped_hash":
        op = pick_op(lambda o: o.has_dispatch)
        d = ev[_find(ev, op.dispatch_event_id)]  # type: ignore[arg-type]
        td = d["actions"]["toolDispatch"]
        old = td["canonicalArgsHash"]
        variant = draw(st.sampled_from(("flip", "other_args", "garbage")))
        if variant == "flip":
            pos = draw(st.integers(len("sha256:"), len(old) - 1))
            new_char = "0" if old[pos] != "0" else "1"
            new = old[:pos] + new_char + old[pos + 1 :]
        elif variant == "other_args":
            new = canonical_args_hash(op.tool_name, {"different": [op.args]})
        else:
            new = "sha256:wrong"
        td["canonicalArgsHash"] = new
        return ev, f"hash of {d['id']} {variant}", ("issue", "canonical_args_hash_conflict", d["id"])

    if name == "duplicate_call_id":
        op = pick_op(lambda o: True)
        c = _find(ev, op.call_event_id)
        dup = copy.deepcopy(ev[c])
        dup["id"] = _fresh_id(ev, f"{op.call_event_id}-again")
        if draw(st.booleans()):
            dup["content"]["args"] = {"retry": True}
        j = draw(st.integers(c + 1, len(ev)))
        ev.insert(j, dup)
        return ev, f"second call {dup['id']} for {op.tool_call_id}", ("issue", "duplicate_call", dup["id"])

    if name == "duplicate_response":
        op = pick_op(lambda o: o.has_response)
        r = _find(ev, op.response_event_id)  # type: ignore[arg-type]
        dup = copy.deepcopy(ev[r])
        dup["id"] = _fresh_id(ev, f"{op.response_event_id}-again")
        j = draw(st.integers(r + 1, len(ev)))
        ev.insert(j, dup)
        return ev, f"second response {dup['id']}", ("issue", "duplicate_response", dup["id"])

    if name == "mismatched_names":
        choices = []
        if any(o.has_response for o in ops):
            choices.append("response")
        if any(o.has_dispatch for o in ops):
            choices += ["dispatch", "call"]
        if any(o.has_response and not o.has_dispatch for o in ops):
            choices.append("call_of_pair")
        where = draw(st.sampled_from(choices))
        if where == "response":
            op = pick_op(lambda o: o.has_response)
            e = ev[_find(ev, op.response_event_id)]  # type: ignore[arg-type]
            e["content"]["name"] = op.tool_name + "_renamed"
            return ev, f"response {e['id']} renamed", ("issue", "identity_conflict", e["id"])
        if where == "dispatch":
            op = pick_op(lambda o: o.has_dispatch)
            e = ev[_find(ev, op.dispatch_event_id)]  # type: ignore[arg-type]
            e["actions"]["toolDispatch"]["toolName"] = op.tool_name + "_renamed"
            return ev, f"dispatch {e['id']} renamed", ("issue", "identity_conflict", e["id"])
        if where == "call":
            op = pick_op(lambda o: o.has_dispatch)
            e = ev[_find(ev, op.call_event_id)]
            e["content"]["name"] = op.tool_name + "_renamed"
            return ev, f"call {e['id']} renamed", ("issue", "identity_conflict", op.dispatch_event_id)  # type: ignore[return-value]
        op = pick_op(lambda o: o.has_response and not o.has_dispatch)
        e = ev[_find(ev, op.call_event_id)]
        e["content"]["name"] = op.tool_name + "_renamed"
        return ev, f"call {e['id']} renamed", ("issue", "identity_conflict", op.response_event_id)  # type: ignore[return-value]

    if name == "unbound_t2_response":
        op = pick_op(lambda o: o.has_response and o.has_dispatch)
        e = ev[_find(ev, op.response_event_id)]  # type: ignore[arg-type]
        if draw(st.booleans()):
            e["refs"] = {"toolCallId": op.tool_call_id}
        else:
            e.pop("refs", None)
        return ev, f"refs.operationId removed from {e['id']}", ("issue", "identity_conflict", e["id"])

    if name == "reused_operation_id":
        dispatched = [o for o in ops if o.has_dispatch]
        order = {o.dispatch_event_id: _find(ev, o.dispatch_event_id) for o in dispatched}  # type: ignore[arg-type]
        dispatched.sort(key=lambda o: order[o.dispatch_event_id])
        i = draw(st.integers(1, len(dispatched) - 1))
        first, second = dispatched[draw(st.integers(0, i - 1))], dispatched[i]
        e = ev[order[second.dispatch_event_id]]
        e["actions"]["toolDispatch"]["operationId"] = first.operation_id
        e["refs"]["operationId"] = first.operation_id
        return ev, f"{e['id']} reuses {first.operation_id}", ("issue", "duplicate_operation", e["id"])

    if name in ("lane_smuggling", "partial_tool_fact"):
        i = draw(st.sampled_from([k for k, e in enumerate(ev) if _lane_of(e) != "ordinary"]))
        e = ev[i]
        lane = _lane_of(e)
        if name == "partial_tool_fact":
            e["partial"] = True
            return ev, f"{e['id']} made partial", ("issue", "semantic_lane_conflict", e["id"])
        smuggle = ["status", "branch", "extra_action_key"]
        if lane == "function_call":
            smuggle += ["wrong_role", "artifactDelta", "empty_actions"]
        if lane == "function_response":
            smuggle += ["endInvocation", "wrong_author"]
        if lane in ("tool_dispatch", "recovery"):
            smuggle += ["content", "stepId_ref", "wrong_role"]
        how = draw(st.sampled_from(smuggle))
        if how == "status":
            e["status"] = draw(st.sampled_from(("completed", "streaming", "failed")))
        elif how == "branch":
            e["branch"] = "child-1"
        elif how == "extra_action_key":
            e.setdefault("actions", {})["transferToAgent"] = "other-agent"
        elif how == "wrong_role":
            e["role"] = "tool" if lane == "function_call" else "model"
        elif how == "artifactDelta":
            e.setdefault("actions", {})["artifactDelta"] = {"file": "v2"}
        elif how == "empty_actions":
            e["actions"] = {}
        elif how == "endInvocation":
            e.setdefault("actions", {})["endInvocation"] = True
        elif how == "wrong_author":
            e["author"] = "agent"
        elif how == "content":
            e["content"] = {"kind": "text", "text": "smuggled"}
        elif how == "stepId_ref":
            e["refs"]["stepId"] = "step-1"
        return ev, f"{how} on {lane} event {e['id']}", ("issue", "semantic_lane_conflict", e["id"])

    raise ValueError(f"unknown corruption {name!r}")
